package resolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestReceiptVerifyRefusesUnknownAction: a receipt is the site's word on
// what changed its store, read by an auditor who cannot see the store. An
// entry whose action is not one docs/FORMAT.md §20.1 defines (well chained
// and well signed) claims a change the format has no meaning for: it is
// refused as invalid_receipt naming the entry, not listed as verified.
func TestReceiptVerifyRefusesUnknownAction(t *testing.T) {
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	chain := func(actions ...string) []AuditEntry {
		var log []AuditEntry
		prev := make([]byte, sha256.Size)
		for i, a := range actions {
			e := AuditEntry{Seq: uint64(i + 1), At: formatTime(now), Action: a, Verdict: verdictAccepted, Prev: prev}
			log = append(log, e)
			prev = AuditEntryHash(e)
		}
		return log
	}
	good, err := BuildReceipt(chain("trust_add", "import"), 1, 0, site, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyReceipt(good, pub(site)); err != nil {
		t.Fatalf("a receipt of known actions: %v", err)
	}
	for _, action := range []string{"launch", "", "Import", "import "} {
		r, err := BuildReceipt(chain("trust_add", action), 1, 0, site, now)
		if err != nil {
			t.Fatal(err)
		}
		_, err = VerifyReceipt(r, pub(site))
		expectName(t, err, ErrInvalidReceipt)
		if !strings.Contains(err.Error(), "receipt entry 2 ") || !strings.Contains(err.Error(), "action") {
			t.Fatalf("action %q: error does not name entry 2's action: %v", action, err)
		}
	}
}

// TestAuditActionsAreThoseFormatDocumentLists keeps the receipt check and
// docs/FORMAT.md §20.1 on one list of actions.
func TestAuditActionsAreThoseFormatDocumentLists(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `action` | tstr |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/FORMAT.md §20.1 has no action row")
	}
	var documented []string
	for i, part := range strings.Split(row, "`") {
		if i%2 == 1 && part != "action" && part != "tstr" {
			documented = append(documented, part)
		}
	}
	code := auditActions()
	sort.Strings(documented)
	sort.Strings(code)
	if strings.Join(documented, ",") != strings.Join(code, ",") {
		t.Fatalf("docs/FORMAT.md §20.1 lists %v, the code knows %v", documented, code)
	}
}
