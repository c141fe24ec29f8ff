package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRestartNeverChargesLeftRunningEntriesTheDefaultReservation: an
// entry left running by an earlier process (a crash, or a shutdown that
// gave up on an overdue handler) is charged, once the log is opened
// again, the store's default reservation (Limits.ReplyReserve), whatever
// it was reserved before: its running record does not carry it. Yet its
// only reply is the Lost ticket's small outcome_unknown answer (AGENT-3,
// AGENT-17: it needs no disk reservation). Attack: a caller fills its
// share with entries of a capability whose largest result is small (1 KiB,
// max_result_bytes), overdue handlers kept running (AGENT-15); after the
// restart each counts the default reservation instead (16 KiB here, 256
// KiB by default): its share is passed many times over and the budget
// with it, and every other caller is refused ledger_full until those
// entries expire. What should happen (docs/SPEC-DECISIONS.md AGENT-24):
// a restart charges no caller more than it held; an entry left running is
// charged what its one possible reply needs (MinReplyReserve), and that
// reply is still recorded.
func TestRestartNeverChargesLeftRunningEntriesTheDefaultReservation(t *testing.T) {
	c := newRestartClock()
	lim := Limits{Budget: 256 << 10, PerCaller: 64 << 10, ReplyReserve: 16 << 10}
	path := filepath.Join(t.TempDir(), "l.wal")
	s := c.openNoSync(t, path, lim)
	const sender = "did:key:zSmallResults"
	n := 0
	for ; ; n++ {
		err := s.MarkRunningWithin(Key{sender, id(n)}, c.wall.Now().Add(time.Hour), MinReplyReserve)
		if NoRoom(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	before := s.Usage()
	if err := s.Close(); err != nil { // a crash: the handlers left running
		t.Fatal(err)
	}
	s = c.openNoSync(t, path, lim)
	defer s.Close()
	if u := s.Usage(); u.Bytes > before.Bytes || u.Entries != before.Entries {
		t.Errorf("the caller's %d entries left running count %d bytes after the restart, %d before (budget %d, share %d)",
			n, u.Bytes, before.Bytes, lim.Budget, lim.PerCaller)
	}
	if err := s.MarkRunning(Key{"did:key:zOther", id(0)}, c.wall.Now().Add(time.Hour)); err != nil {
		t.Errorf("another caller, holding nothing, is refused after the restart: %v", err)
	}
	// The Lost ticket's answer (a small error result) is still recorded.
	if err := s.Finish(Key{sender, id(0)}, make([]byte, MinReplyReserve)); err != nil {
		t.Errorf("the outcome_unknown answer of an entry left running is refused: %v", err)
	}
	checkAccountsExact(t, s, "after the restart")
}
