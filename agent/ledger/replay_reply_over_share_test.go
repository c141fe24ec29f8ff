package ledger

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestReplayOfAReplyLargerThanOneCallersShareIsRefused: replay kept a
// done record's reply whatever its length, though no writer under the
// limits the log is opened with records a reply larger than one caller's
// share (a reply fits its reservation, which fits the share). Attack: a
// log written under a larger share (the limits lowered since), or a
// planted one (a hole of zeros is free on disk), holding a 4 MiB or 64
// MiB reply, opened under a 1 MiB budget (a 128 KiB share): the open
// succeeded, charged the reply past the budget, and every Lookup of it
// (a retry of its message, any number at once) allocated the whole reply,
// as did the first compaction. What should happen (docs/SPEC-DECISIONS.md
// AGENT-42): an unexpired done record whose entry would cost more than
// one caller's share (at most maxReply bytes of reply) fails the open
// with ErrLedgerCorrupt, naming the share; the file is unchanged; a log
// opened under the limits it was written with answers the reply; a
// large reply expired at the log's last write is dropped, not refused.
func TestReplayOfAReplyLargerThanOneCallersShareIsRefused(t *testing.T) {
	const budget = 1 << 20 // a share of 128 KiB
	k := Key{Sender: "did:key:zBig", ID: id(1)}
	cases := []struct {
		name    string
		write   func(t *testing.T, path string, c *clock) // the log, closed
		refused bool
	}{
		{"a 4 MiB reply written under a 64 MiB budget", func(t *testing.T, path string, c *clock) {
			writeReply(t, path, c, k, 4<<20, 64<<20, time.Hour)
		}, true},
		{"a planted 64 MiB reply of a hole", func(t *testing.T, path string, c *clock) {
			plantHoleReply(t, path, k, t0.Add(time.Hour).UnixMilli(), 64<<20)
		}, true},
		{"a reply of 120 KiB, within the share", func(t *testing.T, path string, c *clock) {
			writeReply(t, path, c, k, 120<<10, budget, time.Hour)
		}, false},
		{"a 4 MiB reply expired at the log's last write", func(t *testing.T, path string, c *clock) {
			writeReply(t, path, c, k, 4<<20, 64<<20, time.Minute)
			c.Add(2 * time.Minute)
			if err := os.Chtimes(path, time.Time{}, c.Now()); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			path := filepath.Join(t.TempDir(), "l.wal")
			tc.write(t, path, c)
			data := mustRead(t, path)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := OpenWAL(path, WALOptions{Now: c.Now, Limits: Limits{Budget: budget}})
			if !tc.refused {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				u := s.Usage()
				s.Close()
				t.Fatalf("a log holding a reply over one caller's share opened (%d bytes accounted under a budget of %d)", u.Bytes, budget)
			}
			if amp.NameOf(err) != ErrLedgerCorrupt || !strings.Contains(err.Error(), "share") {
				t.Fatalf("open: %v, want %s naming the share", err, ErrLedgerCorrupt)
			}
			if got := mustRead(t, path); !bytes.Equal(got, data) {
				t.Fatalf("a refused log was changed: %d bytes, were %d", len(got), len(data))
			}
			if after, _ := os.Stat(path); !after.ModTime().Equal(fi.ModTime()) {
				t.Fatal("a refused log's time of last write was changed")
			}
			// Under limits whose share holds the reply, it is answered.
			s, err = OpenWAL(path, WALOptions{Now: c.Now, Limits: Limits{Budget: 1 << 30}})
			if err != nil {
				t.Fatalf("open under limits that hold the reply: %v", err)
			}
			defer s.Close()
			if rec, ok, err := s.Lookup(k); err != nil || !ok || len(rec.Reply) < 4<<20 {
				t.Fatalf("the reply: %d bytes %v %v", len(rec.Reply), ok, err)
			}
		})
	}
}

// writeReply writes a log under a budget of budget bytes holding k's
// reply of n bytes, expiring after ttl, and closes it.
func writeReply(t *testing.T, path string, c *clock, k Key, n int, budget int64, ttl time.Duration) {
	t.Helper()
	s := openTestWAL(t, path, c, WALOptions{Limits: Limits{Budget: budget}})
	defer s.Close()
	if err := s.MarkRunningWithin(k, c.Now().Add(ttl), int64(n)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, bytes.Repeat([]byte{'r'}, n)); err != nil {
		t.Fatal(err)
	}
}

// plantHoleReply writes a log of one group, intact (its checksums and tag
// check), holding k's done record with a reply of n zero bytes, left a
// hole of the file.
func plantHoleReply(t *testing.T, path string, k Key, expires int64, n int) {
	t.Helper()
	rec, _ := appendWALRecord(nil, stateDone, k, expires, nil)
	binary.BigEndian.PutUint32(rec[len(rec)-4:], uint32(n))
	crc := crc32.Update(0, castagnoli, rec)
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zeros) {
		crc = crc32.Update(crc, castagnoli, zeros[:min(left, len(zeros))])
	}
	g := make([]byte, walGroupHeader)
	binary.BigEndian.PutUint32(g[0:4], uint32(len(rec)+n))
	binary.BigEndian.PutUint64(g[4:12], 1)
	binary.BigEndian.PutUint32(g[12:16], crc)
	binary.BigEndian.PutUint32(g[16:20], crc32.Checksum(g[:16], castagnoli))
	copy(g[20:], newWALFormat(testWALKey).tag(g))
	b := append(append(testWALHeader(), g...), rec...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(b)+n)); err != nil {
		t.Fatal(err)
	}
}
