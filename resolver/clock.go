package resolver

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// kTimeFloor is the meta key of the time floor: the latest created_at (Unix
// seconds) of any bundle this store accepted.
const kTimeFloor = "time_floor"

// now is the clock expiry is judged by: the injected clock, but never
// earlier than the time floor. Publishers sign created_at; once a bundle
// created at T was accepted, this store knows it is at least T, so a clock
// set back (or reset to 1970 by a dead battery) cannot make an expired
// bundle valid again. A clock set forward expires bundles early: that fails
// closed, and the floor never takes the local clock's word for anything.
func (s *Store) now() time.Time {
	n := s.opts.Now()
	if f := s.floor.Load(); f > n.Unix() {
		return time.Unix(f, 0).UTC()
	}
	return n
}

// raiseFloor records a signed created_at inside a write transaction and
// returns the new floor.
func raiseFloor(tx *bolt.Tx, created time.Time) (int64, error) {
	meta := bucket(tx, bMeta)
	f := int64(getU64(meta.Get([]byte(kTimeFloor))))
	if c := created.Unix(); c > f {
		f = c
		if err := meta.Put([]byte(kTimeFloor), u64(uint64(f))); err != nil {
			return 0, err
		}
	}
	return f, nil
}

// loadFloor reads the time floor into memory.
func (s *Store) loadFloor(tx *bolt.Tx) {
	s.floor.Store(int64(getU64(bucket(tx, bMeta).Get([]byte(kTimeFloor)))))
}

// TimeFloor returns the latest created_at of the bundles this store
// accepted: the earliest "now" it will judge expiry by.
func (s *Store) TimeFloor() time.Time { return time.Unix(s.floor.Load(), 0).UTC() }
