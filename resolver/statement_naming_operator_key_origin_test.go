package resolver

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStatementNamingTheOperatorsKeyGivesItNoOrigin: a statement adding
// a key the store already trusts for its scope is applied as a no-op for
// that key. A publisher trusted for org.example signs one naming the
// operator's own key for org.example (its public bytes, under the
// operator's name for it). The upgrade to schema 3 (migrateKeyOrigins)
// must not give the operator's key the publisher's account as origin: its
// heartbeats and statements would then be charged to the publisher's
// share, which the publisher spends first. The operator's key keeps no
// origin, and its heartbeat of a line not installed is accepted after the
// publisher spent its share.
func TestStatementNamingTheOperatorsKeyGivesItNoOrigin(t *testing.T) {
	const share = 2
	s := storeAt(t)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = share })
	example := sampleKey(t, "example-publisher")
	ops := testKeyN(95)
	if err := s.TrustAdd("ops", pub(ops), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"ops": ops}, nil, example)); err != nil {
		t.Fatalf("the publisher's statement naming the operator's key: %v", err)
	}
	r, err := asV2(t, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer checkClose(t, r)
	lowerLimits(r, func(l *storeLimits) { l.heartbeats = share })
	origin := ""
	_ = r.db.View(func(tx *bolt.Tx) error {
		origin = string(bucket(tx, bMeta).Get(keyOriginKey(amp.DIDKey(pub(ops)))))
		return nil
	})
	if origin != "" {
		t.Fatalf("the operator's own key, named by a publisher's no-op statement, was given origin %q at the upgrade", origin)
	}
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
	if err := beat(ops); err != nil {
		t.Fatalf("the operator's key's heartbeat after the publisher spent its share: %v", err)
	}
}
