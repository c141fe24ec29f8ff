package resolver

import (
	"math"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// TestDamagedFloorChargeAndThresholdValuesFailClosed:
// Attack: the readers of the floor, charge and threshold values read them
// with getU64, which returns 0 for any value that is not 8 bytes (a torn
// or edited store file, a bit flip), and pinnedFloor read a value of
// fewer than 16 bytes as "no pin": 0 is the loosest value each can have
// (no key floor, no time floor, no pin, no charge, a threshold of 1).
// Defence (TSTATE-6): a floor or threshold of the wrong size is store_io
// (the trust state is not read; ampbundle check reports it), a charge
// counter of the wrong size counts as a full share.
func TestDamagedFloorChargeAndThresholdValuesFailClosed(t *testing.T) {
	s := newStore(t)
	example := sampleKey(t, "example-publisher")
	did := amp.DIDKey(pub(example))
	floor := u64(uint64(testNow.Unix()))
	cases := []struct {
		name   string
		bucket string // bMeta when empty
		key    []byte
		good   []byte
		// loose reports whether what the store read of the damaged value
		// is the loosest one (0 / none).
		loose func(tx *bolt.Tx) (bool, error)
	}{
		{"key_floor", "", keyFloorKey(did), floor, func(tx *bolt.Tx) (bool, error) {
			st, err := s.loadState(tx, selTrust)
			if err != nil {
				return false, err
			}
			return st.KeyFloors[did] == 0, nil
		}},
		{"time_floor", "", []byte(kTimeFloor), floor, func(tx *bolt.Tx) (bool, error) {
			st, err := s.loadState(tx, selTrust)
			if err != nil {
				return false, err
			}
			return st.TimeFloor == 0, nil
		}},
		{"bundle_floor", "", bundleFloorKey("org.example.pinned"), append(u64(1), floor...), func(tx *bolt.Tx) (bool, error) {
			f, _, err := pinnedFloor(tx, "org.example.pinned", 1)
			return f == 0, err
		}},
		{"heartbeat_charge", "", chargeKey(did), u64(uint64(math.MaxInt32)), func(tx *bolt.Tx) (bool, error) {
			share := defaultLimits().heartbeats
			return chargeCounts(tx, share)[did] < share, nil
		}},
		{"statement_charge", "", statementChargeKey(did), u64(1), func(tx *bolt.Tx) (bool, error) {
			share := defaultLimits().statements.Share
			return chargeCount(bucket(tx, bMeta).Get(statementChargeKey(did)), share) < share, nil
		}},
		// The operator's threshold of 3 for org.example, read as 0: the
		// policy would need 1 signature.
		{"threshold", bTrustPolicy, []byte("org.example"), u64(3), func(tx *bolt.Tx) (bool, error) {
			st, err := s.loadState(tx, selTrust)
			if err != nil {
				return false, err
			}
			return st.Policy().Thresholds["org.example"] < 3, nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.bucket
			if b == "" {
				b = bMeta
			}
			bad := c.good[:len(c.good)-1] // one byte short: a torn or edited value
			if err := s.db.Update(func(tx *bolt.Tx) error {
				if err := bucket(tx, bMeta).Put([]byte(kChargesCounted), u64(1)); err != nil {
					return err
				}
				return bucket(tx, b).Put(c.key, bad)
			}); err != nil {
				t.Fatal(err)
			}
			var loose bool
			err := s.db.View(func(tx *bolt.Tx) error {
				var err error
				loose, err = c.loose(tx)
				return err
			})
			if err == nil && loose {
				t.Fatalf("a damaged %s value (%d bytes) was read as 0 / none, the loosest value it can have, without error", c.name, len(bad))
			}
			if err != nil {
				expectName(t, err, ErrStoreIO)
			}
			ps, cerr := s.Check()
			found := false
			for _, p := range ps {
				found = found || p.Kind == "meta"
			}
			if cerr != nil || !found {
				t.Errorf("ampbundle check did not report the damaged %s value: %v %v", c.name, ps, cerr)
			}
			// Drop it, so that the next case and the cleanup's check see
			// one damaged value at a time.
			if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, b).Delete(c.key) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDamagedTimeFloorNeverSkipsTheFloorCheck: the store's time floor in
// memory is an upper bound of every bundle's floor, consulted to skip
// computing one (judge.staleExpired); a damaged value read as 0 would skip every
// floor check, so it is read as the largest.
func TestDamagedTimeFloorNeverSkipsTheFloorCheck(t *testing.T) {
	s := storeAt(t)
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bMeta).Put([]byte(kTimeFloor), make([]byte, 7))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := Open(s.path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f := r.floor.Load(); f != math.MaxInt64 {
		t.Fatalf("a damaged time floor was read as %d, not the largest floor", f)
	}
}
