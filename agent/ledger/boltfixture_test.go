package ledger

import (
	"encoding/binary"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// boltRow is one entry of a bbolt ledger written by writeBoltLedger.
type boltRow struct {
	k   Key
	rec Record // Reply nil: running
}

// encodeRecord is the bbolt ledger's record (docs/FORMAT.md): what the
// retired store wrote, kept to write old ledgers in tests.
func encodeRecord(state byte, expires int64, reply []byte) []byte {
	v := make([]byte, recordHeader, recordHeader+len(reply))
	v[0] = state
	binary.BigEndian.PutUint64(v[1:9], uint64(expires))
	return append(v, reply...)
}

// writeBoltLedger writes a bbolt ledger at path holding rows, as the
// retired bbolt store laid it out (docs/FORMAT.md).
func writeBoltLedger(t *testing.T, path string, rows []boltRow) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(kFormat, []byte(boltFormatID)); err != nil {
			return err
		}
		entries, err := tx.CreateBucketIfNotExists(bEntries)
		if err != nil {
			return err
		}
		expiry, err := tx.CreateBucketIfNotExists([]byte("expiry"))
		if err != nil {
			return err
		}
		for _, r := range rows {
			state, exp := stateDone, r.rec.Expires.UnixMilli()
			if r.rec.Reply == nil {
				state = stateRunning
			}
			if err := entries.Put(r.k.bytes(), encodeRecord(state, exp, r.rec.Reply)); err != nil {
				return err
			}
			ik := binary.BigEndian.AppendUint64(nil, uint64(exp))
			if err := expiry.Put(append(ik, r.k.bytes()...), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
