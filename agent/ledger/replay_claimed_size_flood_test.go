package ledger

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestReplayOfAGroupClaimingGigabytesAllocatesNothingAhead: opening a log
// read each group's payload into a buffer of the length its header
// claimed, bounded only by the file's size. Attack: a hostile, damaged or
// sparse ledger file (a hole of zeros is free on disk) whose first group
// header, intact, claims 1 GiB: the open allocated 1 GiB and read it
// before any checksum could fail (4 GiB for the largest length a header
// holds; on a small machine the agent died at every start). What should
// happen (docs/SPEC-DECISIONS.md AGENT-20): payloads are checked and
// decoded as a stream through fixed buffers, so the open costs memory
// only for the records actually read; here it finds the intact group
// behind the damage and fails with ErrLedgerCorrupt.
func TestReplayOfAGroupClaimingGigabytesAllocatesNothingAhead(t *testing.T) {
	const claim = 1 << 30
	path := filepath.Join(t.TempDir(), "l.wal")
	wf := newWALFormat(testWALKey)
	b := testWALHeader()
	g1 := make([]byte, walGroupHeader) // claims 1 GiB of payload
	binary.BigEndian.PutUint32(g1[0:4], claim)
	binary.BigEndian.PutUint64(g1[4:12], 1)
	binary.BigEndian.PutUint32(g1[16:20], crc32.Checksum(g1[:16], castagnoli))
	copy(g1[20:], wf.tag(g1))
	b = append(b, g1...)
	k := Key{Sender: "did:key:zHostile", ID: id(1)}
	g2, _ := appendWALRecord(make([]byte, walGroupHeader), stateRunning, k, t0.Add(time.Hour).UnixMilli(), nil)
	wf.putGroupHeader(g2, 2)
	b = append(b, g2...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(walFileHeader+walGroupHeader+claim)); err != nil { // a hole
		t.Fatal(err)
	}
	clock := newClock()
	var err error
	got := testalloc.Least(func() { // each open fails and leaves the log as it was
		var s *WALStore
		if s, err = OpenWAL(path, WALOptions{Now: clock.Now}); err == nil {
			s.Close()
		}
	})
	if got > 16<<20 {
		t.Fatalf("opening a log whose group header claims %d bytes allocated %d bytes", claim, got)
	}
	if amp.NameOf(err) != ErrLedgerCorrupt {
		t.Fatalf("opening a log damaged before an intact group: %v, want %s", err, ErrLedgerCorrupt)
	}
}

// TestReplayIndexBoundedByBudget: the index rebuilt on open held every
// unexpired entry of the file, however many. Attack: a hostile log (or
// one written by an agent given a far larger budget) of many small
// distinct entries: the index, and the accounts charged beyond the budget
// at open, grew with the file. What should happen (AGENT-20): the index
// holds at most what the budget can account for (Budget / the smallest
// entry's cost), plus the dead records the slack allows (AGENT-21);
// beyond, the open fails with ErrLedgerCorrupt, naming the budget.
func TestReplayIndexBoundedByBudget(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c, WALOptions{})
	per := entryCost(Key{Sender: "x"}, 0)
	const allowed = 10
	// A slack of 1 byte: slack/32 + 2 dead records of a 1-byte sender
	// (AGENT-21).
	const slack, dead = 1, 2
	for i := 0; i <= allowed+dead; i++ {
		if err := s.insertDoneForTest(Key{Sender: "x", ID: id(i)}, c.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	small, err := OpenWAL(path, WALOptions{Now: c.Now, Slack: slack, Limits: Limits{Budget: allowed * per}})
	if err == nil {
		small.Close()
		t.Fatalf("a log of %d entries opened under a budget that accounts for %d and a slack for %d", allowed+dead+1, allowed, dead)
	}
	if amp.NameOf(err) != ErrLedgerCorrupt {
		t.Fatalf("got %v, want %s", err, ErrLedgerCorrupt)
	}
	// Within the budget it opens.
	ok, err := OpenWAL(path, WALOptions{Now: c.Now, Slack: slack, Limits: Limits{Budget: (allowed + 1) * per}})
	if err != nil {
		t.Fatalf("a log within its budget: %v", err)
	}
	ok.Close()
}

// insertDoneForTest writes a done record with an empty reply for k, as the
// migration does.
func (s *WALStore) insertDoneForTest(k Key, expires time.Time) error {
	return s.commit(&walOp{kind: stateDone, k: k, expires: expires.UnixMilli(), insert: true})
}

// TestReplayGroupOfManyRecordsBoundedByBudget: the records of one group
// are kept until its checksum is checked, so a group of many tiny records
// (a hostile file; a group's length may reach 4 GiB) grew the open's
// memory with the group before the index bound was checked between
// groups (here every record names one key, so the index stays small
// and the open succeeded). What should happen (AGENT-20): a group of
// more records than the budget can account for, or than a commit writes
// (maxGroup), fails the open with ErrLedgerCorrupt as soon as the bound
// is passed.
func TestReplayGroupOfManyRecordsBoundedByBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.wal")
	wf := newWALFormat(testWALKey)
	g := make([]byte, walGroupHeader)
	for i := 0; i < maxGroup+1; i++ {
		g, _ = appendWALRecord(g, stateRunning, Key{Sender: "x", ID: id(0)}, t0.Add(time.Hour).UnixMilli()+int64(i), nil)
	}
	wf.putGroupHeader(g, 1)
	if err := os.WriteFile(path, append(testWALHeader(), g...), 0o600); err != nil {
		t.Fatal(err)
	}
	per := entryCost(Key{Sender: "x"}, 0)
	_, err := OpenWAL(path, WALOptions{Now: newClock().Now, Slack: 1, Limits: Limits{Budget: 10 * per}})
	if amp.NameOf(err) != ErrLedgerCorrupt {
		t.Fatalf("a group of %d records under a budget of 10 entries: %v, want %s", maxGroup+1, err, ErrLedgerCorrupt)
	}
	s, err := OpenWAL(path, WALOptions{Now: newClock().Now, Limits: Limits{Budget: (maxGroup + 1) * per}})
	if err != nil {
		t.Fatalf("the same group under a budget that holds it: %v", err)
	}
	s.Close()
}
