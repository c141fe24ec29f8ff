package resolver

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// Attack: a store written before heartbeat charges were recorded keeps
// heartbeats of lines not installed with no charge. When the first trust
// change after the upgrade was a newer heartbeat of one of those lines,
// the State was loaded before countCharges gave the record its charge
// (loadLine read Charged ""), trust.ApplyHeartbeat carried "" forward,
// and saveCharges moved the charge to nobody: a publisher with a share of
// 2 kept 3 lines. Defence: the charges are counted before the State is
// read (changeTrust), and a version 2 store has them counted at its
// upgrade (recountCharges, TSTATE-5).

// legacyHeartbeats writes, in tx, heartbeats of lines not installed
// signed by did, as a build before charges left them (no charge).
func legacyHeartbeats(tx *bolt.Tx, did string, ids ...string) error {
	for _, id := range ids {
		r := heartbeatRecord{Version: 1, CreatedAt: "2026-11-01T00:00:00Z", StatementSHA256: make([]byte, 32), At: "2026-11-01T00:00:00Z",
			Signers: []string{did}}
		if err := bucket(tx, bHeartbeat).Put([]byte(id), encode(r)); err != nil {
			return err
		}
	}
	return bucket(tx, bMeta).Delete([]byte(kChargesCounted))
}

// newerHeartbeatOfALegacyLineThenANewLine applies a newer heartbeat of a
// legacy line, then one of a new line: the share (2) is spent by the two
// legacy lines, so the new line is limit_exceeded.
func newerHeartbeatOfALegacyLineThenANewLine(t *testing.T, s *Store) {
	t.Helper()
	example := sampleKey(t, "example-publisher")
	did := amp.DIDKey(pub(example))
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.old1", 2, testNow, example)); err != nil {
		t.Fatalf("a newer heartbeat of a kept line: %v", err)
	}
	var counted int
	_ = s.db.View(func(tx *bolt.Tx) error { counted = chargeCounts(tx, s.lim.heartbeats)[did]; return nil })
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.new1", 1, testNow, example)); err == nil {
		t.Fatalf("share %d, two legacy lines kept, yet a third line not installed was kept (counters say %d for the publisher)",
			s.lim.heartbeats, counted)
	} else {
		expectName(t, err, bundle.ErrTooLarge)
	}
}

// TestLegacyHeartbeatChargeKeptWhenItsLineMigrates: the migration run by
// the first trust change (a store whose counters are not written).
func TestLegacyHeartbeatChargeKeptWhenItsLineMigrates(t *testing.T) {
	s := newStore(t)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = 2 })
	did := amp.DIDKey(pub(sampleKey(t, "example-publisher")))
	if err := s.db.Update(func(tx *bolt.Tx) error { return legacyHeartbeats(tx, did, "org.example.old1", "org.example.old2") }); err != nil {
		t.Fatal(err)
	}
	newerHeartbeatOfALegacyLineThenANewLine(t, s)
}

// TestLegacyHeartbeatChargeKeptAcrossTheUpgrade: the same store, of
// version 2, upgraded at its first writable open.
func TestLegacyHeartbeatChargeKeptAcrossTheUpgrade(t *testing.T) {
	const share = 2
	s := storeAt(t)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = share })
	did := amp.DIDKey(pub(sampleKey(t, "example-publisher")))
	r, err := asV2(t, s, func(tx *bolt.Tx) error { return legacyHeartbeats(tx, did, "org.example.old1", "org.example.old2") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer checkClose(t, r)
	lowerLimits(r, func(l *storeLimits) { l.heartbeats = share })
	newerHeartbeatOfALegacyLineThenANewLine(t, r)
}
