package mirror

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"net/http/httptest"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestStatementCopiesAreDownloadedOnlyOnce: a statement is its payload
// (TRUST-19), so a file whose payload the store keeps is applied
// unchanged and not kept, and HasStatement, which knows the kept files
// only, says no for it. A hostile mirror with no key lists copies of a
// revocation the store applied, each co-signed by a throwaway key (any
// number, each up to 1 MiB): every sync downloaded every one of them, on
// every run. The store records each verified copy (resolver.StatementCopy,
// answered by RefusedAt at any generation), and sync reports it current
// without downloading it again: only the first run downloads them, even
// when the store's generation moves between runs (MIRROR-13).
func TestStatementCopiesAreDownloadedOnlyOnce(t *testing.T) {
	stranger := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	r := signedRevocation(t, []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}, nil, testKey)
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	const copies = 12
	hm := newRepeatMirror(t)
	for i := range copies {
		seed := make([]byte, ed25519.SeedSize)
		binary.BigEndian.PutUint64(seed, uint64(i)+1<<42)
		cp, err := bundle.CosignStatement(r, ed25519.NewKeyFromSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		hm.statement(cp)
	}
	ts := httptest.NewServer(hm)
	defer ts.Close()
	for run := 1; run <= 3; run++ {
		f0 := hm.fetches.Load()
		rep, err := syncOnce(t, s, ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := countStatements(rep.Statements, OutcomeCurrent); n != copies {
			t.Fatalf("run %d: %d of %d copies of an applied revocation reported current: %+v", run, n, copies, rep.Statements)
		}
		want := int32(0)
		if run == 1 {
			want = copies
		}
		if got := hm.fetches.Load() - f0; got != want {
			t.Fatalf("run %d downloaded %d copies of a statement the store keeps, want %d (a mirror listing 10,000 copies of 1 MiB has every sync download all of them)", run, got, want)
		}
		// The store moves between runs: a copy stays a copy.
		k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(90 + run)}, ed25519.SeedSize))
		if err := s.TrustAdd("run"+string(rune('0'+run)), k.Public().(ed25519.PublicKey), []string{"net.unrelated"}); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := s.RefusedAt(listedSum(hm.ix.Statements[0].SHA256)); err != nil || !ok || v != resolver.StatementCopy {
		t.Fatalf("RefusedAt(a copy) = %q %v %v, want %s", v, ok, err, resolver.StatementCopy)
	}
}

// countStatements counts the items of outcome o.
func countStatements(items []StatementItem, o Outcome) int {
	n := 0
	for _, it := range items {
		if it.Outcome == o {
			n++
		}
	}
	return n
}
