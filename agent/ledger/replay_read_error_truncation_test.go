package ledger

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// badSector is a file whose bytes from bad on cannot be read: a read
// reaching them returns what lies before them and EIO, as a disk's media
// error does. reads counts the reads that failed.
type badSector struct {
	f     *os.File
	bad   int64
	reads int
	// nth, when not 0: the sector fails only the nth read that reaches
	// it (a transient fault).
	nth     int
	touched int
}

func (b *badSector) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= b.bad {
		return b.f.ReadAt(p, off)
	}
	if b.touched++; b.nth != 0 && b.touched != b.nth {
		return b.f.ReadAt(p, off)
	}
	b.reads++
	n := 0
	if off < b.bad {
		n, _ = b.f.ReadAt(p[:b.bad-off], off)
	}
	return n, &os.PathError{Op: "read", Path: b.f.Name(), Err: syscall.EIO}
}

// TestOpenWhoseReadFailsIsRefusedNeverTruncated: the open took a read the
// file system failed (a bad sector, a flaky device) for the torn tail of
// a write, and truncated the log there, acknowledged groups after it
// included: the next retry of an invocation recorded in them ran its
// handler a second time. Whether it failed reading a group or scanning
// past a damaged one for an intact group, the open now fails
// (ledger_unavailable) and leaves the file as it was; read again once the
// disk answers, the log recovers every acknowledged reply (AGENT-40).
func TestOpenWhoseReadFailsIsRefusedNeverTruncated(t *testing.T) {
	c := newClock()
	h := writeHistory(t, c)
	last := h.marks[len(h.marks)-1]
	cases := []struct {
		name string
		bad  int64 // the first byte that cannot be read
		flip int64 // a byte damaged before it (0: none; negative: the version line's byte -flip, made version 1's)
		nth  int   // it fails only the nth read that reaches it (0: every one)
	}{
		{"a middle group's header", h.marks[3].size + 5, 0, 0},
		{"a middle group's payload", h.marks[3].size + walGroupHeader + 20, 0, 0},
		{"the last group's payload", last.size - 2, 0, 0},
		{"behind a damaged group, where an intact one lies", h.marks[3].size + 3, h.marks[2].size + walGroupHeader + 12, 0},
		// The header's version line damaged into version 1's ('2' ^ 0x03
		// is '1'), and its key behind it unreadable at the read that
		// checks it (the second to reach it, after the buffered first
		// line's): read as version 1's log of torn groups, it was
		// truncated.
		{"a version 2 header read as version 1, its key unreadable at the header's read", int64(len(WALFormatID)) + 4, -(int64(len(WALFormatID)) - 2), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(h.data)
			switch {
			case tc.flip > 0:
				data[tc.flip] ^= 0x40
			case tc.flip < 0:
				data[-tc.flip] ^= 0x03
			}
			path := filepath.Join(t.TempDir(), "l.wal")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var disk *badSector
			_, err := OpenWAL(path, WALOptions{Now: c.Now, readFile: func(f *os.File) io.ReaderAt {
				disk = &badSector{f: f, bad: tc.bad, nth: tc.nth}
				return disk
			}})
			if amp.NameOf(err) != ErrLedgerIO || !amp.CodeOf(err).Retryable() {
				t.Fatalf("open over a failed read: %v, want a retryable ledger_unavailable", err)
			}
			if disk == nil || disk.reads == 0 {
				t.Fatal("the open never reached the bytes that cannot be read")
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("a log the open could not read was changed: %d bytes, were %d", len(got), len(data))
			}
			if tc.flip == 0 {
				checkRecovered(t, c, path, last, h.keys)
			}
		})
	}
}
