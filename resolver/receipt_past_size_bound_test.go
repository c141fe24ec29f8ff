package resolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

// TestAReceiptPastTheSizeAVerifierReadsIsNeverSigned: VerifyReceipt (and
// 'ampbundle receipt verify') reads at most MaxReceiptSize bytes, but
// BuildReceipt signed a range of any size: the default range of a log
// past the bound (some 250,000 entries of 270 bytes) gave a signed
// receipt no auditor could verify, which 'ampbundle receipt' then
// reported as its own invalid_receipt ("larger than 67108864 bytes"),
// after encoding and signing it all. A range past the bound is now
// refused before it is signed, and one that fits still is.
func TestAReceiptPastTheSizeAVerifierReadsIsNeverSigned(t *testing.T) {
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	big := strings.Repeat("s", 1<<20) // one entry of a little over 1 MiB
	var log []AuditEntry
	prev := make([]byte, sha256.Size)
	for i := range MaxReceiptSize>>20 + 1 {
		e := AuditEntry{Seq: uint64(i + 1), At: formatTime(now), Action: "import_refused", Verdict: "rollback", Source: big, Prev: prev}
		log = append(log, e)
		prev = AuditEntryHash(e)
	}
	data, err := BuildReceipt(log, 1, 0, site, now)
	if err == nil {
		t.Fatalf("signed a receipt of %d bytes, past the %d a verifier reads", len(data), MaxReceiptSize)
	}
	expectName(t, err, ErrInvalidReceipt)
	if !strings.Contains(err.Error(), "smaller ranges") {
		t.Fatalf("the refusal does not say what to do: %v", err)
	}
	data, err = BuildReceipt(log, 1, 8, site, now)
	if err != nil {
		t.Fatalf("a range that fits: %v", err)
	}
	if r, err := VerifyReceipt(data, pub(site)); err != nil || len(r.Entries) != 8 {
		t.Fatalf("a range that fits does not verify: %v", err)
	}
}
