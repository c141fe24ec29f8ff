package ledger

import (
	"os"
	"testing"
	"time"
)

// TestUpgradeWithClockAheadNeverRunsAMigratedInvocationTwice: AGENT-22
// keeps, at a restart with the wall clock ahead, the entries expired
// since the log's last write, but the bbolt migration (AGENT-10) copied
// only the entries unexpired on the clock at the upgrade. Attack (no
// caller needed: the upgrade's boot with NTP stepped wrongly, an RTC an
// hour ahead): an old agent ran a handler and recorded its reply (and
// left another running), the agent is upgraded and starts with the clock
// an hour ahead, the clock is corrected, and the sender retries (its
// ts + ttl + skew is ahead again, so the receiver accepts the copy).
// Before the fix the migration had left both entries behind: the retries
// got Fresh and the handlers ran a second time. What should happen
// (docs/SPEC-DECISIONS.md AGENT-26): the migration copies what was
// unexpired at the old file's last write (its mtime) and gives the log
// that time, so its open sets them aside: the retry gets the recorded
// reply, the running one Lost, and neither is charged to a quota.
func TestUpgradeWithClockAheadNeverRunsAMigratedInvocationTwice(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			c := newClock()
			reg, old, _, o := layout(t, lay.explicit, c)
			done := Key{Sender: "did:key:zVictim", ID: id(1)}
			running := Key{Sender: "did:key:zVictim", ID: id(2)}
			writeBoltLedger(t, old, []boltRow{
				{done, Record{Expires: c.Now().Add(runLifetime), Reply: []byte("ran once")}},
				{running, Record{Expires: c.Now().Add(runLifetime)}},
			})
			if err := os.Chtimes(old, c.Now(), c.Now()); err != nil { // the old agent's last write
				t.Fatal(err)
			}

			c.Add(time.Hour) // the upgrade's start, with the clock an hour ahead
			s, _, err := OpenFile(reg, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if u := s.Usage(); u.Entries != 2 {
				t.Fatalf("the migrated log holds %d entries, want the 2 the old agent recorded", u.Entries)
			}
			if u := s.(*WALStore).acct.usage(); u.Entries != 0 || u.Bytes != 0 {
				t.Fatalf("entries expired on the clock at the upgrade were charged to the quotas (%+v), want set aside", u)
			}

			c.Add(-time.Hour + 10*time.Second) // corrected: 10 s after the run
			l, err := New(s, Options{Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct {
				k     Key
				reply []byte
			}{{done, []byte("ran once")}, {running, nil}} {
				retryFinds(t, l, want.k, c.Now().Add(runLifetime), want.reply,
					"a retry 10 s after the run, once the clock was corrected after the upgrade,")
			}
		})
	}
}
