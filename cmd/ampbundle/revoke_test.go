package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRevocationReachesInstalledBundle: a 2-of-3 co-signed bundle is
// installed and served; a revocation of one of its signers, co-signed in
// two rooms, makes it fail closed (5002 bundle_revoked) at the next use,
// lists it in ls and check, and is audited; a statement below the
// threshold is refused and changes nothing.
func TestRevocationReachesInstalledBundle(t *testing.T) {
	keys, pubs := officers(t, 3)
	dir := t.TempDir()
	b := filepath.Join(dir, "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", b, "--key", keys[0], "--key", keys[1], "--created", "2026-11-01T00:00:00Z")
	db := filepath.Join(t.TempDir(), "store.db")
	for i, n := range []string{"officer-a", "officer-b", "officer-c"} {
		mustRun(t, "trust", "add", pubs[i], "--db", db, "--name", n, "--scope", "org.example")
	}
	mustRun(t, "trust", "threshold", "org.example", "2", "--db", db)
	mustRun(t, "import", b, "--db", db)
	key := "dids/translator.json"
	want, _ := os.ReadFile(filepath.Join(testdata, "translate", key))
	resolveArgs := []string{"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash", sha256hex(want)}
	mustRun(t, resolveArgs...)

	stmt := filepath.Join(dir, "revoke-a.cbor")
	mustRun(t, "revoke", "-o", stmt, "--scope", "org.example", "--revoke-key", pubs[0], "--key", keys[1], "--created", "2026-11-22T00:00:00Z")
	failsWith(t, "threshold_not_met", "import", stmt, "--db", db)
	mustRun(t, resolveArgs...) // a refused statement changes nothing
	mustRun(t, "sign", stmt, "--key", keys[2])
	var res struct {
		Revocation struct {
			FailedClosed []string `json:"failed_closed"`
			RemovedTrust []string `json:"removed_trust"`
		} `json:"revocation"`
	}
	mustJSON(t, &res, "import", stmt, "--db", db)
	if strings.Join(res.Revocation.FailedClosed, ",") != translateID+"@1" || strings.Join(res.Revocation.RemovedTrust, ",") != "officer-a" {
		t.Fatalf("revocation %+v", res)
	}
	r := failsWith(t, "bundle_revoked", resolveArgs...)
	if ampCode(t, r) != 5002 {
		t.Fatalf("amp code %d", ampCode(t, r))
	}
	if r := mustRun(t, "ls", "--db", db); !strings.Contains(r.stdout, "REVOKED") {
		t.Fatalf("ls does not list the revoked bundle:\n%s", r.stdout)
	}
	if r := failsWith(t, "bundle_revoked", "check", "--db", db); !strings.Contains(r.stdout, translateID+"@1") { // CLI-21
		t.Fatalf("check %s", r.stdout)
	}
	failsWith(t, "key_revoked", "trust", "add", pubs[0], "--db", db, "--name", "again", "--scope", "org.example")
	var log struct {
		Entries []struct {
			Action string `json:"action"`
		} `json:"entries"`
	}
	mustJSON(t, &log, "audit", "--db", db)
	if n := len(log.Entries); log.Entries[n-1].Action != "revoke" {
		t.Fatalf("audit %+v", log.Entries)
	}
}

// TestTrustRmFailClosed: trust rm says what it leaves installed, and with
// --fail-closed fails it closed.
func TestTrustRmFailClosed(t *testing.T) {
	db := storeWithSamples(t)
	r := mustRun(t, "trust", "rm", "acme", "--db", db, "--keep-serving")
	if !strings.Contains(r.stdout, "still installed and served") {
		t.Fatalf("%s", r.stdout)
	}
	var out struct {
		FailedClosed []string `json:"failed_closed"`
	}
	mustJSON(t, &out, "trust", "rm", "example", "--db", db, "--fail-closed")
	if strings.Join(out.FailedClosed, ",") != translateID+"@1" {
		t.Fatalf("%+v", out)
	}
}
