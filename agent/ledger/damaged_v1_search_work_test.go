package ledger

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// countedReads is a file whose reads are counted in bytes: the work an
// open does reading the log.
type countedReads struct {
	f *os.File
	n *atomic.Int64
}

func (c countedReads) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// nestedV1Candidates returns k version 1 groups nested in one another, as
// a caller's reply can hold them in a version 1 log (its groups carry no
// tag): each one's header checks and claims every byte to the end of the
// file (end: the file's size, the first group at start), its payload a
// done record whose reply runs to that end (holding the next ones), and
// only its payload checksum is wrong, so that whoever checks it reads to
// the end.
func nestedV1Candidates(start, k int) []byte {
	const each = walGroupHeaderV1 + walRecordFixed + 1
	end := start + k*each
	var b []byte
	for i := 0; i < k; i++ {
		at := start + len(b)
		plen := end - at - walGroupHeaderV1
		g := make([]byte, walGroupHeaderV1)
		g = append(g, stateDone)
		g = binary.BigEndian.AppendUint64(g, uint64(t0.Add(time.Hour).UnixMilli()))
		g = binary.BigEndian.AppendUint16(g, 1)
		g = append(g, 'x')
		g = append(g, make([]byte, 16)...)
		g = binary.BigEndian.AppendUint32(g, uint32(plen-walRecordFixed-1))
		binary.BigEndian.PutUint32(g[0:4], uint32(plen))
		binary.BigEndian.PutUint64(g[4:12], uint64(i+7))
		binary.BigEndian.PutUint32(g[12:16], 0xdeadbeef) // wrong
		binary.BigEndian.PutUint32(g[16:20], crc32Of(g[:16]))
		b = append(b, g...)
	}
	return b
}

func crc32Of(b []byte) uint32 {
	h := crc32New()
	h.Write(b)
	return h.Sum32()
}

// TestDamagedV1LogWhoseSearchWouldReadItQuadraticallyIsRefused: behind
// damage, the open searches every byte for an intact group, and reads
// the payload of every candidate whose header checks. A version 1 log's
// groups carry no tag, so a caller's reply can hold headers that check;
// nested, each claiming the rest of the file, they made the search read
// the rest of the file once per header: 3,000 of them in a 156 KB tail
// cost 234 MB of reads, and a 64 MiB tail more than anyone waits for
// (the agent never started). What should happen (AGENT-46): the search
// reads at most twice the bytes it searches, and a file it cannot judge
// within that is refused (ledger_corrupt), unchanged; an honest torn
// tail is still truncated.
func TestDamagedV1LogWhoseSearchWouldReadItQuadraticallyIsRefused(t *testing.T) {
	head := []byte(walFormatV1)
	wf := newWALFormat(nil)
	k := Key{Sender: "did:key:z6MkV1", ID: id(1)}
	g, _ := appendWALRecord(make([]byte, walGroupHeaderV1), stateDone, k, t0.Add(time.Hour).UnixMilli(), []byte("the reply"))
	wf.putGroupHeader(g, 1)
	intact := append(append([]byte{}, head...), g...)
	torn, _ := appendWALRecord(make([]byte, walGroupHeaderV1), stateDone, Key{Sender: "x", ID: id(2)}, t0.Add(time.Hour).UnixMilli(), bytes.Repeat([]byte("r"), 4000))
	wf.putGroupHeader(torn, 2)
	cases := []struct {
		name string
		data []byte
		want amp.ErrName // "": opens, truncated to intact
	}{
		{"nested candidates to the end", append(append(append([]byte{}, intact...), 0xff), nestedV1Candidates(len(intact)+1, 3000)...), ErrLedgerCorrupt},
		{"an honest torn last group", append(append([]byte{}, intact...), torn[:len(torn)/2]...), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.wal")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			var n atomic.Int64
			s, err := OpenWAL(path, WALOptions{Now: newClock().Now, readFile: func(f *os.File) io.ReaderAt { return countedReads{f, &n} }})
			size := int64(len(tc.data))
			t.Logf("the open read %d bytes of a %d-byte log", n.Load(), size)
			if bound := 4*size + 1<<16; n.Load() > bound {
				t.Errorf("the open read %d bytes of a %d-byte log, want at most %d", n.Load(), size, bound)
			}
			if tc.want != "" {
				if err == nil {
					s.Close()
				}
				if amp.NameOf(err) != tc.want {
					t.Fatalf("open: %v, want %s", err, tc.want)
				}
				if got, _ := os.ReadFile(path); !bytes.Equal(got, tc.data) {
					t.Fatal("the refused log was changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer s.Close()
			rec, ok, err := s.Lookup(k)
			if err != nil || !ok || string(rec.Reply) != "the reply" {
				t.Fatalf("the intact group's reply: %q %v %v", rec.Reply, ok, err)
			}
		})
	}
}
