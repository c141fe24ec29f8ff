package mirror

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestStoreNeverKeepsMoreStatementsThanAnIndexLists: a store refuses a
// statement past resolver.MaxStatements (docs/SPEC-DECISIONS.md TRUST-18)
// so that it never holds more than an index lists (MIRROR-8: a mirror
// whose store holds more serves no new snapshot), and one authority's
// share cannot reach it.
func TestStoreNeverKeepsMoreStatementsThanAnIndexLists(t *testing.T) {
	if resolver.MaxStatements != MaxIndexStatements {
		t.Fatalf("a store keeps up to %d statements, an index lists %d", resolver.MaxStatements, MaxIndexStatements)
	}
	if resolver.StatementShare >= MaxIndexStatements {
		t.Fatalf("one authority's share (%d) fills the index (%d)", resolver.StatementShare, MaxIndexStatements)
	}
}

// floodRevocations returns n revocations for org.example, each of a
// different key nobody trusts (seeded by its index), signed by signer.
func floodRevocations(t *testing.T, n int, signer ed25519.PrivateKey) [][]byte {
	t.Helper()
	out := make([][]byte, 0, n)
	for i := range n {
		seed := make([]byte, ed25519.SeedSize)
		binary.BigEndian.PutUint64(seed, uint64(i)+1<<40)
		stranger := ed25519.NewKeyFromSeed(seed)
		out = append(out, signedRevocation(t, []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}, nil, signer))
	}
	return out
}

// TestOneAuthorityFloodingStatementsDoesNotFreezeTheMirror: testKey,
// trusted by the station for org.example, applies valid revocations of
// keys nobody uses. Before, nothing bounded them: past MaxIndexStatements
// the mirror served no new snapshot (MIRROR-8), and another publisher's
// revocation never reached a syncing site. Now the store refuses the
// flood at testKey's share (resolver.StatementShare, real value:
// statement_share_exhausted, nothing kept), and otherKey's revocation of
// echo version 1, applied after it, is listed by the mirror and fails
// the bundle closed at a syncing site (which holds the flood already:
// a copy of the station's store).
func TestOneAuthorityFloodingStatementsDoesNotFreezeTheMirror(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	trustOther(t, p, "org.example")
	flood := floodRevocations(t, resolver.StatementShare+1, testKey)
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range flood[:resolver.StatementShare] {
		if _, err := s.ApplyRevocation(st); err != nil {
			t.Fatalf("revocation %d, within the share: %v", i+1, err)
		}
	}
	_, err = s.ApplyRevocation(flood[resolver.StatementShare])
	if amp.NameOf(err) != resolver.ErrStatementShare {
		s.Close()
		t.Fatalf("the revocation past testKey's share: %v, want %s", err, resolver.ErrStatementShare)
	}
	s.Close()
	// The syncing site: the station's store as it is now, flood included.
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "site.db")
	if err := os.WriteFile(q, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	other := revokedEcho1(t, otherKey)
	applyStatements(t, p, other)
	_, ts := startMirror(t, p, nil)
	site, err := resolver.Open(q, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	rep, err := syncOnce(t, site, ts.URL, nil)
	if err != nil || len(rep.Statements) != resolver.StatementShare+1 {
		t.Fatalf("sync: %v, %d statements listed (want %d)", err, len(rep.Statements), resolver.StatementShare+1)
	}
	if last := rep.Statements[len(rep.Statements)-1]; last.Outcome != OutcomeImported {
		t.Fatalf("the other publisher's revocation after the flood: %+v", last)
	}
	sum := sha256.Sum256(other)
	if has, _ := site.HasStatement(sum[:]); !has || !echoRevoked(t, site) {
		t.Fatalf("the other publisher's revocation did not reach the syncing site (kept %v, echo revoked %v)", has, echoRevoked(t, site))
	}
}
