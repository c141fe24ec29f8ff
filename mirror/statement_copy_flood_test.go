package mirror

import (
	"crypto/ed25519"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestCopiesOfOnePublishersStatementDoNotSilenceItsNextRevocation
// (review 10, finding 1, through a station): otherKey publishes one
// revocation R. Whoever relays statements to a station (an upstream
// mirror, a peer whose files the operator applies) co-signs R with
// throwaway keys nobody trusts, StatementShare times: each copy verifies
// with otherKey as its only trusted signer, changes nothing, but is
// another file. Kept and charged by its bytes, the copies spent
// otherKey's share, so its next revocation, the one that fails echo v1
// closed, was refused statement_share_exhausted at the station, never
// listed by its mirror, and never reached a syncing site: no key was
// needed. A statement is its payload (TRUST-19): the copies are not kept
// or charged, and the genuine revocation is applied.
func TestCopiesOfOnePublishersStatementDoNotSilenceItsNextRevocation(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	trustOther(t, p, "org.example")
	stranger := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	r := signedRevocation(t, []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}, nil, otherKey)
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	for i := range resolver.StatementShare {
		seed := make([]byte, ed25519.SeedSize)
		binary.BigEndian.PutUint64(seed, uint64(i)+1<<41)
		cp, err := bundle.CosignStatement(r, ed25519.NewKeyFromSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyRevocation(cp); err != nil {
			break // the share is spent: what follows shows the harm
		}
	}
	if _, err := s.ApplyRevocation(revokedEcho1(t, otherKey)); err != nil {
		t.Fatalf("otherKey's genuine revocation of echo v1 was refused after copies of its earlier statement, re-signed by keys nobody trusts, were charged to it: %v", err)
	}
}
