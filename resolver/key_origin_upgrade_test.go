package resolver

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// TestKeyAddedByStatementBeforeOriginsSharesItsAccount:
// Attack: key_origin (trust.Key.Origin) is written only for keys a trust
// statement adds from the build that kept origins on. On a store of an
// older build, every key a publisher minted with a trust statement had no
// origin, so trust.State.Account counted it as its own operator-trusted
// account with a fresh share: the multiplication TRUST-17 closes.
// Defence (TSTATE-5): the upgrade of a version 2 store gives each such
// key the account of the signers of the statement that added it
// (migrateKeyOrigins): after the publisher's share of 2 is spent, none of
// its 3 earlier-minted keys has another line kept.
func TestKeyAddedByStatementBeforeOriginsSharesItsAccount(t *testing.T) {
	const share = 2
	s := storeAt(t)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = share })
	example := sampleKey(t, "example-publisher")
	minted := map[string]ed25519.PrivateKey{"m1": testKeyN(92), "m2": testKeyN(93), "m3": testKeyN(94)}
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, minted, nil, example)); err != nil {
		t.Fatalf("the publisher adds keys for its own scope: %v", err)
	}
	// What an older build left: the same keys, no key_origin.
	r, err := asV2(t, s, func(tx *bolt.Tx) error {
		for _, k := range minted {
			if err := bucket(tx, bMeta).Delete(keyOriginKey(amp.DIDKey(pub(k)))); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer checkClose(t, r)
	lowerLimits(r, func(l *storeLimits) { l.heartbeats = share })
	line := 0
	beat := func(k ed25519.PrivateKey) error {
		line++
		_, err := r.ApplyHeartbeat(heartbeat(t, fmt.Sprintf("org.example.junk%d", line), 1, testNow, k))
		return err
	}
	for i := 0; i < share; i++ {
		if err := beat(example); err != nil {
			t.Fatal(err)
		}
	}
	if err := beat(example); err == nil {
		t.Fatal("precondition: the publisher's own share is bounded")
	}
	extra := 0
	for _, k := range minted {
		for i := 0; i < share; i++ {
			if beat(k) == nil {
				extra++
			}
		}
	}
	if extra > 0 {
		t.Fatalf("on a store upgraded from a build before key origins, the %d keys the publisher minted earlier each got a share: "+
			"%d more heartbeats of lines never installed kept past the publisher's share of %d",
			len(minted), extra, share)
	}
}
