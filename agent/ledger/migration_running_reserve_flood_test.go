package ledger

import (
	"os"
	"testing"
	"time"
)

// TestMigratedRunningEntriesReserveNoDisk: the bolt migration must not
// trust the old file's count of running entries with the disk. Attack: a
// bbolt ledger (damaged, hostile, or one an old agent left with many
// handlers in flight) holding N running entries. Before the fix the
// migration committed them as if this process had marked them running,
// and the log wrote a reply's reservation for each, N x 256 KiB of zeros
// (64 entries: 16 MiB; a million: 256 GiB, a full disk and a migration
// that fails at every start), for entries that are Lost: no handler of
// this process records a reply for them. What should happen: a migrated
// running entry reserves no disk; the migrated log is its records and the
// writer's fixed reserve (1 MiB), whatever N (docs/SPEC-DECISIONS.md
// AGENT-17).
func TestMigratedRunningEntriesReserveNoDisk(t *testing.T) {
	c := newClock()
	reg, old, _, o := layout(t, false, c)
	const n = 64
	rows := make([]boltRow, n)
	for i := range rows {
		rows[i] = boltRow{Key{Sender: "did:key:zHostile", ID: id(i)}, Record{Expires: c.Now().Add(time.Hour)}}
	}
	writeBoltLedger(t, old, rows)
	var written int64
	o.fault = func(step string) error {
		if step == stepSync { // the migrated log, synced under its temporary name
			if fi, err := os.Stat(reg + ".ledger.wal.migrating"); err == nil {
				written = fi.Size()
			}
		}
		return nil
	}
	s, _, err := OpenFile(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if written == 0 {
		t.Fatal("the migrated log was not seen at its sync step")
	}
	if max := int64(walReserve + 64<<10); written > max {
		t.Fatalf("migrating %d running entries wrote a %d-byte log, want at most %d (no reply reservation for entries no handler of this process runs)", n, written, max)
	}
}
