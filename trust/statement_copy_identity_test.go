package trust_test

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestACopyOfAnAppliedRevocationIsTheSameStatement (review 10, finding
// 1): a's revocation R is applied. Anyone co-signs R with a key no store
// trusts (bundle.CosignStatement): the copy verifies with the same trusted
// signer, changes nothing, but is another file. Told apart by its bytes,
// it asked to be kept as a new statement charged to a, and copies made
// with fresh throwaway keys spent a's whole share (TRUST-18). Its
// Effects name it by its payload (StatementID, TRUST-19), the same as
// R's, so a store keeping R keeps and charges nothing for it; a
// revocation of other content has another identity.
func TestACopyOfAnAppliedRevocationIsTheSameStatement(t *testing.T) {
	a := seedKey(41)
	st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
	r := revocation(t, "org.example", []string{did(seedKey(43))}, a)
	next, first, err := trust.ApplyRevocation(st, r, now)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := bundle.CosignStatement(r, seedKey(200))
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := trust.ApplyRevocation(next, cp, now)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Unchanged || res.Changed {
		t.Fatalf("the copy changed the state: %+v", res)
	}
	if len(first.StatementID) != 32 || !bytes.Equal(res.StatementID, first.StatementID) {
		t.Fatalf("a copy of an applied revocation, re-signed by a key nobody trusts, is another statement (%x, R is %x): a store would keep and charge it again", res.StatementID, first.StatementID)
	}
	_, other, err := trust.ApplyRevocation(next, revocation(t, "org.example", []string{did(seedKey(44))}, a), now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other.StatementID, first.StatementID) {
		t.Fatal("two revocations of other content have one identity")
	}
}
