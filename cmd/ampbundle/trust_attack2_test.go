package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustAddBadThresholdLeavesKeyTrusted (second review, r13): trust add
// with an out-of-range --threshold must change nothing; the key used to be
// trusted (committed) before the threshold was checked, and thresholds
// were set per scope in separate transactions.
func TestTrustAddBadThresholdLeavesKeyTrusted(t *testing.T) {
	_, pubs := officers(t, 2)
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "first", "--scope", "com.acme")
	for _, n := range []string{"0", "99"} {
		r := runCLI(t, nil, "trust", "add", pubs[1], "--db", db, "--name", "second", "--scope", "org.example", "--threshold", n, "--json")
		if r.code == 0 {
			t.Fatalf("threshold %s accepted", n)
		}
		if !strings.Contains(r.stdout, `"invalid_trust"`) {
			t.Errorf("threshold %s: want invalid_trust, got %s", n, r.stdout)
		}
		ls := mustRun(t, "trust", "ls", "--db", db)
		if strings.Contains(ls.stdout, "second") {
			t.Fatalf("threshold %s refused (%s) but the key is trusted anyway:\n%s", n, strings.TrimSpace(r.stdout), ls.stdout)
		}
	}
	// On a store that does not exist yet, the refusal creates none.
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	if r := runCLI(t, nil, "trust", "add", pubs[1], "--db", fresh, "--name", "second", "--scope", "org.example", "--threshold", "0"); r.code == 0 {
		t.Fatal("threshold 0 accepted on a new store")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("a refused trust add left a store behind: %v", err)
	}
	// In range: the key and the threshold of each of its scopes land together.
	mustRun(t, "trust", "add", pubs[1], "--db", db, "--name", "second", "--scope", "com.acme", "--threshold", "2")
	if ls := mustRun(t, "trust", "ls", "--db", db); !strings.Contains(ls.stdout, "second") {
		t.Fatalf("valid trust add --threshold did not trust the key:\n%s", ls.stdout)
	}
}
