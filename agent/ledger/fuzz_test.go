package ledger

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
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

// FuzzWALGroup: the write-ahead log's group and record parsers on
// arbitrary bytes (seed corpus in testdata/fuzz/FuzzWALGroup). Threats: a
// crash or an allocation beyond the input on a damaged log, and a group
// or payload accepted that does not re-encode to its own bytes (two
// readings of one file).
func FuzzWALGroup(f *testing.F) {
	k := Key{Sender: "did:key:z6MkExample", ID: [16]byte{1, 2, 3}}
	wf := newWALFormat(testWALKey)
	g, _ := appendWALRecord(make([]byte, walGroupHeader), stateRunning, k, 1795348800000, nil)
	g, _ = appendWALRecord(g, stateDone, k, 1795348800000, []byte{0xa1, 0x01, 0x02})
	wf.putGroupHeader(g, 7)
	f.Add(g)
	f.Add(g[walGroupHeader:])
	f.Add(g[:walGroupHeader+3])
	f.Fuzz(func(t *testing.T, b []byte) {
		if recs, err := parseWALRecords(b); err == nil {
			if !bytes.Equal(encodeWALRecords(recs), b) {
				t.Fatalf("payload %x does not re-encode", b)
			}
		}
		n, seq, crc, err := wf.parseGroupHeader(b)
		if err != nil || int64(n) > int64(len(b)-walGroupHeader) {
			return
		}
		recs, err := parseWALPayload(b[walGroupHeader:walGroupHeader+int(n)], crc)
		if err != nil {
			return
		}
		again := append(make([]byte, walGroupHeader), encodeWALRecords(recs)...)
		wf.putGroupHeader(again, seq)
		if !bytes.Equal(again, b[:walGroupHeader+int(n)]) {
			t.Fatalf("group %x does not re-encode", b)
		}
	})
}

// testWALKey is the group key of the files these tests write by hand.
var testWALKey = bytes.Repeat([]byte{0x5a}, walKeySize)

// testWALHeader is the file header of a log with testWALKey.
func testWALHeader() []byte {
	h := append([]byte(WALFormatID), testWALKey...)
	return binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
}

func encodeWALRecords(recs []walRecord) []byte {
	var out []byte
	for _, r := range recs {
		out, _ = appendWALRecord(out, r.typ, r.key, r.expires, r.reply)
	}
	return out
}

// FuzzWALReplay: any bytes after the header and key, opened as a log.
// Threats: a crash or a hang on a damaged file, and a recovery that is not
// stable (a file accepted, possibly truncated, must reopen to the same
// state and size: a torn tail is cut once, never misread differently the
// next time).
func FuzzWALReplay(f *testing.F) {
	k := Key{Sender: "did:key:z6MkExample", ID: [16]byte{1, 2, 3}}
	wf := newWALFormat(testWALKey)
	g1, _ := appendWALRecord(make([]byte, walGroupHeader), stateRunning, k, 1795352400000, nil)
	wf.putGroupHeader(g1, 1)
	g2, _ := appendWALRecord(make([]byte, walGroupHeader), stateDone, k, 1795352400000, []byte{0xa1, 0x01, 0x02})
	wf.putGroupHeader(g2, 2)
	f.Add(append(append([]byte{}, g1...), g2...))
	f.Add(append(append([]byte{}, g1...), g2[:30]...))
	f.Add(append(append([]byte{}, g2...), g1...))
	f.Add(make([]byte, 64))
	c := newClock()
	f.Fuzz(func(t *testing.T, body []byte) {
		path := filepath.Join(t.TempDir(), "l.wal")
		if err := os.WriteFile(path, append(testWALHeader(), body...), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenWAL(path, WALOptions{Now: c.Now})
		if err != nil {
			if n := amp.NameOf(err); n != ErrLedgerCorrupt && n != ErrLedgerIO {
				t.Fatalf("open failed with %v", err)
			}
			return
		}
		size, usage := s.FileSize(), s.Usage()
		rec, ok, _ := s.Lookup(k)
		s.Close()
		s, err = OpenWAL(path, WALOptions{Now: c.Now})
		if err != nil {
			t.Fatalf("an accepted log does not reopen: %v", err)
		}
		defer s.Close()
		rec2, ok2, _ := s.Lookup(k)
		if s.FileSize() != size || s.Usage() != usage || ok != ok2 || !bytes.Equal(rec.Reply, rec2.Reply) {
			t.Fatalf("reopened differently: %d %+v %v / %d %+v %v", size, usage, ok, s.FileSize(), s.Usage(), ok2)
		}
	})
}
