package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// officers makes n keys with keygen and returns their private and public
// key files.
func officers(t *testing.T, n int) (keys, pubs []string) {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		k, p := filepath.Join(dir, "k"+string(rune('a'+i))+".pem"), filepath.Join(dir, "k"+string(rune('a'+i))+".pub.pem")
		mustRun(t, "keygen", "-o", k, "--pub", p)
		keys, pubs = append(keys, k), append(pubs, p)
	}
	return keys, pubs
}

// TestCosignTwoRoomsThresholdTwo: two officers sign one release in two
// rooms; a store requiring 2 of 3 refuses the bundle with one signature
// (naming signer, scope, threshold and count, as fields under --json) and
// imports the co-signed one.
func TestCosignTwoRoomsThresholdTwo(t *testing.T) {
	keys, pubs := officers(t, 3)
	dir := t.TempDir()
	src := filepath.Join(testdata, "translate")
	one, both := filepath.Join(dir, "one.ampb"), filepath.Join(dir, "both.ampb")
	mustRun(t, "build", src, "-o", one, "--key", keys[0], "--created", "2026-11-01T00:00:00Z")
	mustRun(t, "build", src, "-o", both, "--key", keys[1], "--key", keys[0], "--created", "2026-11-01T00:00:00Z")
	signed := filepath.Join(dir, "signed.ampb")
	mustRun(t, "sign", one, "--key", keys[1], "-o", signed)
	a, _ := os.ReadFile(signed)
	b, _ := os.ReadFile(both)
	if !bytes.Equal(a, b) {
		t.Fatal("sign in a second room differs from a two-key build")
	}
	failsWith(t, "duplicate_signer", "sign", signed, "--key", keys[0], "-o", filepath.Join(dir, "x.ampb"))
	if _, err := os.Stat(filepath.Join(dir, "x.ampb")); err == nil {
		t.Fatal("a refused sign left a file behind")
	}

	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "officer-a", "--scope", "org.example", "--threshold", "2")
	mustRun(t, "trust", "add", pubs[1], "--db", db, "--name", "officer-b", "--scope", "org.example")
	mustRun(t, "trust", "add", pubs[2], "--db", db, "--name", "officer-c", "--scope", "com.acme")
	r := failsWith(t, "threshold_not_met", "import", one, "--db", db)
	var doc struct {
		Error struct {
			Message string `json:"message"`
			Details struct {
				Scope     string `json:"scope"`
				Threshold int    `json:"threshold"`
				Valid     int    `json:"valid_signatures"`
				Signers   []struct {
					Name       string   `json:"name"`
					TrustedFor []string `json:"trusted_for"`
				} `json:"signers"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Error.Details
	if d.Scope != "org.example" || d.Threshold != 2 || d.Valid != 1 || len(d.Signers) != 1 || d.Signers[0].Name != "officer-a" {
		t.Fatalf("details %+v", d)
	}
	if !strings.Contains(doc.Error.Message, "officer-a") || !strings.Contains(doc.Error.Message, "found 1") {
		t.Fatalf("message %q", doc.Error.Message)
	}
	var res struct {
		Signers []string `json:"signers"`
	}
	mustJSON(t, &res, "import", signed, "--db", db)
	if strings.Join(res.Signers, ",") != "officer-a,officer-b" && strings.Join(res.Signers, ",") != "officer-b,officer-a" {
		t.Fatalf("signers %v", res.Signers)
	}
	var ls struct {
		Thresholds map[string]int `json:"thresholds"`
	}
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if ls.Thresholds["org.example"] != 2 {
		t.Fatalf("thresholds %v", ls.Thresholds)
	}
}

// TestRepeatedFlagRefused: a flag that takes one value given twice is a
// usage error, not "the last one wins".
func TestRepeatedFlagRefused(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, nil, "build", filepath.Join(testdata, "geo"), "-o", filepath.Join(dir, "a"), "--out", filepath.Join(dir, "b"), "--key", sampleKey(t, "acme-publisher"))
	if r.code != 2 || !strings.Contains(r.stderr, "same flag") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "verify", sampleFile("geo"), "--trust", samplePub("acme-publisher"), "--json", "--json=false")
	if r.code != 2 || errorCode(t, r) != "usage" {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
	}
}
