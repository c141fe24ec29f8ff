package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReceiptExportVerifyAndTamper: every import, refusal and trust change
// is in the log with actor and verdict; the receipt verifies against the
// site key and a head kept from before; a flipped byte, another site key
// and an unknown head are refused; audit --expect-head accepts an old head
// and refuses a foreign one.
func TestReceiptExportVerifyAndTamper(t *testing.T) {
	db := newStore(t)
	var before struct {
		Head string `json:"head"`
	}
	mustJSON(t, &before, "audit", "--db", db)
	mustRun(t, "import", translateVersion(t, 2), "--db", db)
	failsWith(t, "rollback", "import", sampleFile("translate"), "--db", db)
	var log struct {
		Head    string `json:"head"`
		Entries []struct {
			Action     string `json:"action"`
			Verdict    string `json:"verdict"`
			FileSHA256 string `json:"file_sha256"`
			Actor      *struct {
				UID  int64  `json:"uid"`
				Host string `json:"host"`
			} `json:"actor"`
		} `json:"entries"`
	}
	mustJSON(t, &log, "audit", "--db", db, "--expect-head", before.Head)
	last := log.Entries[len(log.Entries)-1]
	if last.Action != "import_refused" || last.Verdict != "rollback" || len(last.FileSHA256) != 64 || last.Actor == nil || last.Actor.UID != int64(os.Getuid()) {
		t.Fatalf("refusal entry %+v", last)
	}
	failsWith(t, "audit_broken", "audit", "--db", db, "--expect-head", "00"+before.Head[2:])

	keys, pubs := officers(t, 2)
	out := filepath.Join(t.TempDir(), "r.receipt")
	mustRun(t, "receipt", "--db", db, "--key", keys[0], "-o", out)
	var v struct {
		Verified bool   `json:"verified"`
		Head     string `json:"head"`
		At       int    `json:"expected_head_seq"`
	}
	mustJSON(t, &v, "receipt", "verify", out, "--site", pubs[0], "--expect-head", before.Head)
	if !v.Verified || v.Head != log.Head || v.At != 2 {
		t.Fatalf("verify %+v, store head %s", v, log.Head)
	}
	failsWith(t, "invalid_receipt", "receipt", "verify", out, "--site", pubs[1])
	failsWith(t, "invalid_receipt", "receipt", "verify", out, "--site", pubs[0], "--expect-head", "11"+before.Head[2:])
	data, _ := os.ReadFile(out)
	data[len(data)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.receipt")
	os.WriteFile(bad, data, 0o644)
	failsWith(t, "invalid_receipt", "receipt", "verify", bad, "--site", pubs[0])
}

// TestReceiptSignedByAnyoneNotVerifiedWithoutSite: a receipt proves only
// who signed it; without --site, verify must not say "verified" for a
// receipt anyone could have signed with a key of their own: it fails
// (site_key_required, exit 1) naming the key the receipt claims.
func TestReceiptSignedByAnyoneNotVerifiedWithoutSite(t *testing.T) {
	db := newStore(t)
	keys, pubs := officers(t, 2)
	out := filepath.Join(t.TempDir(), "r.receipt")
	mustRun(t, "receipt", "--db", db, "--key", keys[1], "-o", out) // a stranger's key
	failsWith(t, "site_key_required", "receipt", "verify", out)
	if r := runCLI(t, nil, "receipt", "verify", out); r.code != 1 || strings.Contains(r.stdout, "verified") || !strings.Contains(r.stderr, "--site") {
		t.Fatalf("without --site: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	failsWith(t, "invalid_receipt", "receipt", "verify", out, "--site", pubs[0])
	mustRun(t, "receipt", "verify", out, "--site", pubs[1])
}
