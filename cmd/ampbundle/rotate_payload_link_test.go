package main

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestRotateLinksTheStatementBeforeByItsPayload: rotate --after names
// statement n-1 by the SHA-256 of its payload (docs/FORMAT.md §22), not of
// its file, so that a copy of statement 1 co-signed by a key nobody
// trusts ('ampbundle sign', which anyone can run), imported first at a
// store, does not fork the chain there: statement 2 still applies (review
// 10, finding 3; TRUST-19).
func TestRotateLinksTheStatementBeforeByItsPayload(t *testing.T) {
	keys, pubs := officers(t, 4) // keys[3]: a stranger nobody trusts
	dir := t.TempDir()
	s1, s2, cp := filepath.Join(dir, "s1.cbor"), filepath.Join(dir, "s2.cbor"), filepath.Join(dir, "s1-copy.cbor")
	mustRun(t, "rotate", "-o", s1, "--scope", "org.example", "--add", "b="+pubs[1], "--key", keys[0], "--created", "2026-11-20T00:00:00Z")
	mustRun(t, "rotate", "-o", s2, "--scope", "org.example", "--after", s1, "--add", "c="+pubs[2], "--key", keys[1], "--created", "2026-11-21T00:00:00Z")
	first, err := os.ReadFile(s1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(s2)
	if err != nil {
		t.Fatal(err)
	}
	_, obj, err := bundle.ParseRotation(first)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := bundle.ParseRotation(second)
	if err != nil {
		t.Fatal(err)
	}
	if file := sha256.Sum256(first); !bytes.Equal(r.Prev, obj.PayloadSHA256()) || bytes.Equal(r.Prev, file[:]) {
		t.Fatalf("statement 2's prev is %x, want the SHA-256 of statement 1's payload %x (not of its file %x)", r.Prev, obj.PayloadSHA256(), file)
	}
	if err := os.WriteFile(cp, first, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "sign", cp, "--key", keys[3])
	if signed, err := os.ReadFile(cp); err != nil || bytes.Equal(signed, first) {
		t.Fatalf("test setup: the copy was not co-signed (%v)", err)
	}
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "a", "--scope", "org.example")
	mustRun(t, "import", cp, "--db", db)
	mustRun(t, "import", s1, "--db", db)
	mustRun(t, "import", s2, "--db", db)
	var ls struct {
		Chains map[string]uint64 `json:"chains"`
	}
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if ls.Chains["org.example"] != 2 {
		t.Fatalf("after a re-signed copy of statement 1 was imported first, the chain stands at %d, want 2", ls.Chains["org.example"])
	}
}
