package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

type auditOut struct {
	Verified bool        `json:"verified"`
	Count    int         `json:"count"`
	Head     string      `json:"head"`
	Entries  []auditJSON `json:"entries"`
}

// TestAuditOrder: every import, downgrade, removal and trust change is
// listed in order, the chain verifies, and the head is the one check
// reports.
func TestAuditOrder(t *testing.T) {
	db := storeWithSamples(t)
	mustRun(t, "import", translateVersion(t, 2), "--db", db)
	mustRun(t, "import", sampleFile("translate"), "--db", db, "--allow-downgrade")
	mustRun(t, "rm", geoID, "--db", db)
	mustRun(t, "trust", "rm", "acme", "--db", db)
	var a auditOut
	mustJSON(t, &a, "audit", "--db", db)
	want := []string{"trust_add example", "trust_add acme", "import org.example.translate 1", "import com.acme.geo 4",
		"import org.example.translate 2", "downgrade org.example.translate 1", "remove com.acme.geo 4", "trust_remove acme"}
	if !a.Verified || a.Count != len(want) || len(a.Entries) != len(want) || len(a.Head) != 64 {
		t.Fatalf("audit: %+v", a)
	}
	for i, e := range a.Entries {
		got := e.Action + " " + e.TrustName
		if e.TrustName == "" {
			got = e.Action + " " + e.BundleID + " " + strconv.FormatUint(e.Version, 10)
		}
		if e.Seq != uint64(i+1) || got != want[i] || e.At != "2026-11-22T12:00:00Z" || len(e.Prev) != 64 {
			t.Errorf("entry %d: %+v, want %s", i+1, e, want[i])
		}
	}
	if e := a.Entries[0]; e.Key != exampleDID || strings.Join(e.Scopes, ",") != "org.example" {
		t.Errorf("trust entry: %+v", e)
	}
	if e := a.Entries[2]; strings.Join(e.Signers, ",") != "example" || len(e.ManifestSHA256) != 64 {
		t.Errorf("import entry: %+v", e)
	}
	var c struct {
		AuditHead string `json:"audit_head"`
	}
	mustJSON(t, &c, "check", "--db", db)
	if c.AuditHead != a.Head {
		t.Fatalf("check head %s, audit head %s", c.AuditHead, a.Head)
	}
	r := mustRun(t, "audit", "--db", db)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(want)+2 || !strings.Contains(lines[5], "downgrade") || !strings.Contains(lines[5], "org.example.translate version 1 (was 2) signed by example") ||
		lines[len(lines)-2] != "audit chain verified: 8 entries" || lines[len(lines)-1] != "head sha256 "+a.Head {
		t.Fatalf("audit human:\n%s", r.stdout)
	}
}

// TestAuditBroken: an entry edited in the store file breaks the chain:
// audit fails with audit_broken (after listing the entries), and so does
// check.
func TestAuditBroken(t *testing.T) {
	db := newStore(t)
	mustRun(t, "trust", "rm", "acme", "--db", db)
	flipAll(t, db, []byte("trust_remove"))
	failsWith(t, "audit_broken", "audit", "--db", db)
	r := runCLI(t, nil, "audit", "--db", db)
	if r.code != 1 || !strings.Contains(r.stdout, "trust_add") || !strings.Contains(r.stderr, "audit") {
		t.Fatalf("human broken audit: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = failsWith(t, "store_damaged", "check", "--db", db)
	if !strings.Contains(r.stdout, `"kind": "audit"`) {
		t.Fatalf("check of a broken audit log: %s", r.stdout)
	}
	if r := mustRun(t, "audit", "--db", newStore(t)); !strings.Contains(r.stdout, "audit chain verified: 2 entries") {
		t.Fatalf("fresh store: %s", r.stdout)
	}
}

// TestAuditLineKeepsVerdictAndActorBesideLongFields: a long (valid) bundle
// id and several signers are each bounded on their own in the human audit
// trail, so the verdict and the actor, which an auditor reads the line
// for, are never cut off.
func TestAuditLineKeepsVerdictAndActorBesideLongFields(t *testing.T) {
	id := "org.example." + strings.Repeat("a", 243)
	did := "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
	var b bytes.Buffer
	printAudit(&b, resolver.AuditEntry{Seq: 7, At: "2026-11-27T10:00:00Z", Action: "import_unchanged", BundleID: id, Version: 3,
		Signers: []string{did, did + "2", did + "3", did + "4"}, Verdict: "unchanged", Actor: &resolver.Actor{UID: 1000, Host: "station-1"}})
	if !strings.Contains(b.String(), "verdict unchanged by uid 1000 on station-1") || !strings.Contains(b.String(), id) {
		t.Fatalf("audit line (%d bytes) lost a field:\n%s", b.Len(), b.String())
	}
}
