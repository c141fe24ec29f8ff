package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ampbundle/ampbundle/amp"
)

// The retired bbolt ledger file (docs/FORMAT.md, "Idempotency ledger file
// (retired bbolt store)"), read only to migrate it to the write-ahead log:
//
//	bucket "meta"     "format" -> "ampbundle-ledger/1"
//	bucket "entries"  sender DID | 0x00 | message id (16 bytes)
//	                  -> state (1 byte: 1 running, 2 done)
//	                     | expires (8 bytes, big-endian Unix ms)
//	                     | reply bytes (done only)
//	bucket "expiry"   expires (8 bytes, big-endian Unix ms) | entry key -> empty
//
// The state bytes are also the write-ahead log's record kinds.
const (
	boltFormatID = "ampbundle-ledger/1"

	stateRunning byte = 1
	stateDone    byte = 2
	recordHeader      = 9
)

var (
	bMeta    = []byte("meta")
	bEntries = []byte("entries")
	kFormat  = []byte("format")
)

// readBolt opens the bbolt ledger at path read-only (a shared lock: an
// agent still writing it makes the open wait, at most lockTimeout, and
// fail) and calls fn with each entry, in key order. The file is never
// written. Any layout the format does not allow, including a file damaged
// badly enough that the bbolt library panics on it, is an error.
func readBolt(path string, lockTimeout time.Duration, fn func(Key, Record) error) (err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the bbolt ledger is in use by another process; stop the agent that uses it")
		}
		return amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "cannot read the bbolt ledger").WithCause(err)
	}
	defer db.Close()
	defer func() {
		if r := recover(); r != nil {
			err = amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the bbolt ledger is damaged").WithCause(fmt.Errorf("%v", r))
		}
	}()
	return db.View(func(tx *bolt.Tx) error {
		meta, entries := tx.Bucket(bMeta), tx.Bucket(bEntries)
		if meta == nil || entries == nil || string(meta.Get(kFormat)) != boltFormatID {
			return amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the bbolt file is not a ledger (%q)", boltFormatID)
		}
		return entries.ForEach(func(k, v []byte) error {
			key, rec, ok := decodeEntry(k, v)
			if !ok {
				return amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the bbolt ledger holds a malformed entry")
			}
			return fn(key, rec)
		})
	})
}

// decodeEntry decodes one row of the bbolt ledger's "entries" bucket.
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
