package resolver

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestOneScopeCannotFillTheHeartbeatCapForEveryOtherScope: the cap on
// heartbeats of lines not installed (MaxHeartbeatsNotInstalled, lowered
// here) was store-wide. One org.example key (threshold 1) fills it with
// heartbeats of names under its own scope that will never be installed;
// com.acme's publisher's heartbeat of its own new line must not then be
// refused limit_exceeded: the cap is a share per operator-trusted key
// (docs/SPEC-DECISIONS.md TRUST-17), so one scope's heartbeats cannot
// refuse another's.
func TestOneScopeCannotFillTheHeartbeatCapForEveryOtherScope(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = 3 })
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	for _, id := range []string{"org.example.junk1", "org.example.junk2", "org.example.junk3"} {
		if _, err := s.ApplyHeartbeat(heartbeat(t, id, 1, testNow, example)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "com.acme.newline", 1, testNow, acme)); err != nil {
		t.Fatalf("com.acme's heartbeat of its own line was refused because org.example's key filled the store-wide cap: %v", err)
	}
	// The key that filled its share is still bounded.
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.junk4", 1, testNow, example)); err == nil {
		t.Fatal("a key past its share of heartbeats of lines not installed had one more kept: the cap bounds nothing")
	} else {
		expectName(t, err, bundle.ErrTooLarge)
	}
}

// TestScopeOwnerCannotMultiplyItsHeartbeatShareByMintingKeys: TRUST-17
// bounded the heartbeats kept for lines not installed at a share per key,
// "at most 10,000 per key it trusts or trusted (the keys are the
// operator's)". But the keys need not be the operator's: a publisher
// trusted for org.example (threshold 1) signs a trust statement adding
// keys for its own scope (64 per statement, statements without number),
// and each key it mints brings a fresh share. Once the publisher's own
// share is spent, its minted keys have the store keep as many more lines
// again each, every one with its file, and every later heartbeat of a
// new line decodes all of them under the write lock (the count grows with
// every share minted). Share lowered to 2 here; the publisher mints 3
// keys. The share is now the account's: a key a statement added is
// charged to the operator-trusted key its signers descend from
// (trust.Key.Origin), so the lines one scope's authority can have kept do
// not grow with the keys it mints, and the charges are stored counters.
func TestScopeOwnerCannotMultiplyItsHeartbeatShareByMintingKeys(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = 2 })
	example := sampleKey(t, "example-publisher")
	line := 0
	beat := func(k ed25519.PrivateKey) error {
		line++
		_, err := s.ApplyHeartbeat(heartbeat(t, fmt.Sprintf("org.example.junk%d", line), 1, testNow, k))
		return err
	}
	for i := 0; i < s.lim.heartbeats; i++ {
		if err := beat(example); err != nil {
			t.Fatal(err)
		}
	}
	if err := beat(example); err == nil {
		t.Fatal("precondition: the publisher's own share is bounded")
	}
	minted := map[string]ed25519.PrivateKey{"m1": testKeyN(92), "m2": testKeyN(93), "m3": testKeyN(94)}
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, minted, nil, example)); err != nil {
		t.Fatalf("the publisher adds keys for its own scope: %v", err)
	}
	extra := 0
	for _, k := range minted {
		for i := 0; i < s.lim.heartbeats; i++ {
			if beat(k) == nil {
				extra++
			}
		}
	}
	if extra > 0 {
		t.Fatalf("after spending its share of %d, the org.example publisher minted %d keys with one trust statement and had %d more "+
			"heartbeats of lines never installed kept: the bound grows with keys the publisher itself creates (64 per statement, unbounded statements)",
			s.lim.heartbeats, len(minted), extra)
	}
}

// TestHeartbeatShareCountersStayInStepWithTheKeptRecords: the share is
// read from stored counters, not a scan of every kept record under the
// write lock (TRUST-17). A forgotten heartbeat frees its place; records
// kept by a build before charges (no charge, no counters) still count,
// and are charged once, with the first change; the counters always equal
// a recount of the records.
func TestHeartbeatShareCountersStayInStepWithTheKeptRecords(t *testing.T) {
	s := newStore(t)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = 2 })
	example := sampleKey(t, "example-publisher")
	inStep := func(t *testing.T) {
		t.Helper()
		if err := s.db.View(func(tx *bolt.Tx) error {
			if bucket(tx, bMeta).Get([]byte(kChargesCounted)) == nil {
				return fmt.Errorf("no counters written")
			}
			got, recount := chargeCounts(tx, s.lim.heartbeats), map[string]int{}
			_ = bucket(tx, bHeartbeat).ForEach(func(_, v []byte) error {
				var r heartbeatRecord
				if decode(v, &r) == nil && r.Charged != "" {
					recount[r.Charged]++
				}
				return nil
			})
			if fmt.Sprint(got) != fmt.Sprint(recount) {
				return fmt.Errorf("counters %v, records %v", got, recount)
			}
			return nil
		}); err != nil {
			t.Fatalf("the heartbeat charge counters are out of step with the kept records: %v", err)
		}
	}
	// What a build before charges left: two kept heartbeats of lines not
	// installed, signed by example, with no charge and no counters.
	did := pub(example)
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for _, id := range []string{"org.example.old1", "org.example.old2"} {
			r := heartbeatRecord{Version: 1, CreatedAt: "2026-11-01T00:00:00Z", StatementSHA256: make([]byte, 32), At: "2026-11-01T00:00:00Z",
				Signers: []string{amp.DIDKey(did)}}
			if err := bucket(tx, bHeartbeat).Put([]byte(id), encode(r)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.new1", 1, testNow, example)); err == nil {
		t.Fatal("heartbeats kept before charges were recorded no longer count for the share")
	} else {
		expectName(t, err, bundle.ErrTooLarge)
	}
	if _, err := s.ResetHeartbeat("org.example.old1"); err != nil {
		t.Fatal(err)
	}
	inStep(t)
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.new1", 1, testNow, example)); err != nil {
		t.Fatalf("a forgotten heartbeat did not free its place in the share: %v", err)
	}
	inStep(t)
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.new2", 1, testNow, example)); err == nil {
		t.Fatal("the share is full again, yet one more heartbeat of a line not installed was kept")
	} else {
		expectName(t, err, bundle.ErrTooLarge)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.new1", 2, testNow, example)); err != nil {
		t.Fatalf("a newer heartbeat of a line already kept was refused by the share: %v", err)
	}
	inStep(t)
}
