package ledger

import (
	"bytes"
	"testing"
)

// FuzzDecodeEntry: the ledger file's entry parser on arbitrary keys and
// values. Threats: a crash on a damaged file, and an entry accepted that
// does not re-encode to its own bytes (two readings of one file).
func FuzzDecodeEntry(f *testing.F) {
	key := Key{Sender: "did:key:z6MkExample", ID: [16]byte{1, 2, 3}}.bytes()
	f.Add(key, encodeRecord(stateDone, 1795348800000, []byte{0xa1, 0x01, 0x02}))
	f.Add(key, encodeRecord(stateRunning, 1795348800000, nil))
	f.Add(key, []byte{3, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0}, []byte{})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		got, rec, ok := decodeEntry(k, v)
		if !ok {
			return
		}
		if !bytes.Equal(got.bytes(), k) {
			t.Fatalf("key %x decodes to %+v, which encodes to %x", k, got, got.bytes())
		}
		state := stateRunning
		if rec.Reply != nil {
			state = stateDone
		}
		if !bytes.Equal(encodeRecord(state, rec.Expires.UnixMilli(), rec.Reply), v) {
			t.Fatalf("value %x does not re-encode", v)
		}
	})
}
