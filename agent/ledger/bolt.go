package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// The bbolt file (docs/FORMAT.md, "Idempotency ledger file"):
//
//	bucket "meta"     "format" -> "ampbundle-ledger/1"
//	bucket "entries"  sender DID | 0x00 | message id (16 bytes)
//	                  -> state (1 byte: 1 running, 2 done)
//	                     | expires (8 bytes, big-endian Unix ms)
//	                     | reply bytes (done only)
//	bucket "expiry"   expires (8 bytes, big-endian Unix ms) | entry key -> empty
const (
	// FormatID identifies the ledger file format.
	FormatID = "ampbundle-ledger/1"

	stateRunning byte = 1
	stateDone    byte = 2
	recordHeader      = 9
)

var (
	bMeta    = []byte("meta")
	bEntries = []byte("entries")
	bExpiry  = []byte("expiry")
	kFormat  = []byte("format")
)

// BoltOptions configures OpenBolt.
type BoltOptions struct {
	Limits
	// Now is the clock for reclaiming expired entries in each commit
	// (required).
	Now func() time.Time
	// LockTimeout bounds the wait for the file lock (default 1 s).
	LockTimeout time.Duration
}

// BoltStore is the durable Store: a bbolt file of its own (by convention
// the registry's file name + ".ledger"; never the registry file itself).
// Writes go through a leader-based group committer: the first writer to
// find no commit running commits everything queued, in its own goroutine;
// writers arriving meanwhile wait and are committed together by the next
// leader (one bbolt commit, two fdatasyncs, for many writes).
type BoltStore struct {
	db   *bolt.DB
	acct *accounts
	now  func() time.Time

	gc      *groupCommit[*boltOp]
	commits atomic.Int64 // bbolt write transactions, for benchmarks

	// rsv holds the reply reservation of each entry this process marked
	// running (one an earlier process left running has the default).
	rsvMu sync.Mutex
	rsv   map[Key]int64
}

// OpenBolt opens or creates the ledger file at path.
func OpenBolt(path string, opts BoltOptions) (*BoltStore, error) {
	if opts.Now == nil {
		return nil, amp.Named(0, "misconfigured", "the ledger needs a clock")
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is in use by another process")
		}
		return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "cannot open the ledger file").WithCause(err)
	}
	s := &BoltStore{db: db, acct: newAccounts(opts.Limits), now: opts.Now, rsv: map[Key]int64{}}
	s.gc = newGroupCommit(func(q []*boltOp) int { return min(len(q), maxGroup) }, s.run)
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bMeta)
		if err != nil {
			return err
		}
		if f := meta.Get(kFormat); f == nil {
			if err := meta.Put(kFormat, []byte(FormatID)); err != nil {
				return err
			}
		} else if string(f) != FormatID {
			return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file has an unknown format")
		}
		if _, err := tx.CreateBucketIfNotExists(bEntries); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(bExpiry)
		return err
	})
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bEntries).ForEach(func(k, v []byte) error {
				key, rec, ok := decodeEntry(k, v)
				if !ok {
					return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file holds a malformed entry")
				}
				s.acct.charge(key.Sender, recordCost(key, rec, s.acct.lim.ReplyReserve), true)
				return nil
			})
		})
	}
	if err != nil {
		db.Close()
		return nil, amp.AsError(err)
	}
	return s, nil
}

func decodeEntry(k, v []byte) (Key, Record, bool) {
	var key Key
	if len(k) < 18 || k[len(k)-17] != 0 || len(v) < recordHeader {
		return key, Record{}, false
	}
	key.Sender = string(k[:len(k)-17])
	copy(key.ID[:], k[len(k)-16:])
	rec := Record{Expires: time.UnixMilli(int64(binary.BigEndian.Uint64(v[1:9])))}
	switch v[0] {
	case stateRunning:
		if len(v) != recordHeader {
			return key, rec, false
		}
	case stateDone:
		rec.Reply = append([]byte{}, v[recordHeader:]...)
	default:
		return key, rec, false
	}
	return key, rec, true
}

func encodeRecord(state byte, expires int64, reply []byte) []byte {
	v := make([]byte, recordHeader, recordHeader+len(reply))
	v[0] = state
	binary.BigEndian.PutUint64(v[1:9], uint64(expires))
	return append(v, reply...)
}

func expiryKey(expires int64, key []byte) []byte {
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(expires))
	return append(k, key...)
}

func ioError(err error) error {
	var ae *amp.Error
	if errors.As(err, &ae) {
		return ae
	}
	return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the idempotency ledger is unavailable").WithCause(err)
}

// Lookup implements Store.
func (s *BoltStore) Lookup(k Key) (Record, bool, error) {
	var rec Record
	var found bool
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bEntries).Get(k.bytes())
		if v == nil {
			return nil
		}
		var ok bool
		if _, rec, ok = decodeEntry(k.bytes(), v); !ok {
			return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file holds a malformed entry")
		}
		found = true
		return nil
	})
	if err != nil {
		return Record{}, false, ioError(err)
	}
	return rec, found, nil
}

// MarkRunning implements Store.
func (s *BoltStore) MarkRunning(k Key, expires time.Time) error {
	return s.MarkRunningWithin(k, expires, 0)
}

// Limits implements ReservingStore.
func (s *BoltStore) Limits() Limits { return s.acct.lim }

// reserveOf is the reservation of k's reply, k running; take removes it.
func (s *BoltStore) reserveOf(k Key, take bool) int64 {
	s.rsvMu.Lock()
	defer s.rsvMu.Unlock()
	r, ok := s.rsv[k]
	if !ok {
		return s.acct.lim.ReplyReserve
	}
	if take {
		delete(s.rsv, k)
	}
	return r
}

// MarkRunningWithin implements ReservingStore.
func (s *BoltStore) MarkRunningWithin(k Key, expires time.Time, reserve int64) error {
	reserve = s.acct.lim.reserveOf(reserve)
	cost := entryCost(k, reserve)
	s.rsvMu.Lock()
	_, dup := s.rsv[k]
	s.rsvMu.Unlock()
	if dup {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry already exists")
	}
	if err := s.acct.reserve(k.Sender, cost, true); err != nil {
		return err
	}
	s.rsvMu.Lock()
	s.rsv[k] = reserve
	s.rsvMu.Unlock()
	key, exp := k.bytes(), expires.UnixMilli()
	var exists bool
	err := s.commit(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEntries)
		if exists = b.Get(key) != nil; exists {
			return nil
		}
		if err := b.Put(key, encodeRecord(stateRunning, exp, nil)); err != nil {
			return err
		}
		return tx.Bucket(bExpiry).Put(expiryKey(exp, key), nil)
	})
	if err != nil || exists {
		s.acct.release(k.Sender, cost)
		s.reserveOf(k, true)
	}
	if err != nil {
		return ioError(err)
	}
	if exists {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry already exists")
	}
	return nil
}

// Finish implements Store.
func (s *BoltStore) Finish(k Key, reply []byte) error {
	reserve := s.reserveOf(k, false)
	delta := int64(len(reply)) - reserve
	if err := s.acct.settle(k.Sender, delta, reserve); err != nil {
		return err
	}
	key := k.bytes()
	var missing bool
	err := s.commit(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEntries)
		v := b.Get(key)
		if missing = v == nil || len(v) < recordHeader; missing {
			return nil
		}
		return b.Put(key, encodeRecord(stateDone, int64(binary.BigEndian.Uint64(v[1:9])), reply))
	})
	if err != nil || missing {
		s.acct.lock()
		s.acct.charge(k.Sender, -delta, false)
		s.acct.unlock()
	}
	if err != nil {
		return ioError(err)
	}
	s.reserveOf(k, true)
	if missing {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry is not running")
	}
	return nil
}

// Sweep implements Store.
func (s *BoltStore) Sweep(now time.Time, max int) (int, error) {
	if max <= 0 {
		max = 1 << 30
	}
	total := 0
	for {
		batch := max - total
		if batch > 10_000 {
			batch = 10_000
		}
		var n int
		err := s.commit(func(tx *bolt.Tx) error {
			var err error
			n, err = s.reclaim(tx, now, batch)
			return err
		})
		if err != nil {
			return total, ioError(err)
		}
		total += n
		if n < batch || total >= max {
			return total, nil
		}
	}
}

// reclaim deletes up to max entries expired at now, inside tx, and
// releases their bytes from the accounts (the commit may still fail: the
// accounts then undercount until the next reclaim finds them again, which
// only makes the budget looser by those entries until then).
func (s *BoltStore) reclaim(tx *bolt.Tx, now time.Time, max int) (int, error) {
	idx, entries := tx.Bucket(bExpiry), tx.Bucket(bEntries)
	limit := expiryKey(now.UnixMilli(), nil)
	var drop [][]byte
	c := idx.Cursor()
	for k, _ := c.First(); k != nil && len(k) >= 8 && bytes.Compare(k[:8], limit) < 0 && len(drop) < max; k, _ = c.Next() {
		drop = append(drop, append([]byte{}, k...))
	}
	n := 0
	for _, ik := range drop {
		if err := idx.Delete(ik); err != nil {
			return n, err
		}
		key := ik[8:]
		v := entries.Get(key)
		if v == nil {
			continue
		}
		k, rec, ok := decodeEntry(key, v)
		if !ok || !bytes.Equal(expiryKey(rec.Expires.UnixMilli(), key), ik) {
			continue
		}
		if err := entries.Delete(key); err != nil {
			return n, err
		}
		reserve := s.acct.lim.ReplyReserve
		if rec.Reply == nil {
			reserve = s.reserveOf(k, true)
		}
		s.acct.release(k.Sender, recordCost(k, rec, reserve))
		n++
	}
	return n, nil
}

// Usage implements Store.
func (s *BoltStore) Usage() Usage { return s.acct.usage() }

// SetPrincipal implements PrincipalStore.
func (s *BoltStore) SetPrincipal(principal func(sender string) string) {
	s.acct.setPrincipal(principal)
}

// setActive implements activeSetter.
func (s *BoltStore) setActive(active func() int) { s.gc.active = active }

// FileSize returns the size of the ledger file in bytes.
func (s *BoltStore) FileSize() int64 {
	var n int64
	s.db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return n
}

// Close implements Store.
func (s *BoltStore) Close() error { return s.db.Close() }

// Group commit.

type boltOp struct {
	fn  func(*bolt.Tx) error
	err error
}

// maxGroup bounds one commit; reclaimPerOp is how many expired entries
// each write reclaims, so that reclamation keeps pace with insertion.
const (
	maxGroup     = 1024
	reclaimPerOp = 2
)

// commit runs fn in a write transaction shared with whatever else is
// queued, and returns when that transaction is durable. fn must be
// idempotent: when a shared transaction fails, each function is retried
// alone, so that one failure fails only itself.
func (s *BoltStore) commit(fn func(*bolt.Tx) error) error {
	op := &boltOp{fn: fn}
	if !s.gc.do(op) {
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the idempotency ledger is closed")
	}
	return op.err
}

// run commits batch in one transaction.
func (s *BoltStore) run(batch []*boltOp) {
	s.commits.Add(1)
	now := s.now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		// Keys of one sender grow with time (ids begin with their
		// timestamp): fill pages before splitting them.
		tx.Bucket(bEntries).FillPercent = 0.9
		tx.Bucket(bExpiry).FillPercent = 0.95
		for _, o := range batch {
			if err := o.fn(tx); err != nil {
				return err
			}
		}
		_, err := s.reclaim(tx, now, reclaimPerOp*len(batch))
		return err
	})
	if err == nil {
		return
	}
	for _, o := range batch {
		o.err = s.db.Update(o.fn)
	}
}
