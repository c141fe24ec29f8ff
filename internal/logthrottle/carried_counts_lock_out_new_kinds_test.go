package logthrottle

import (
	"testing"
	"time"
)

// TestNewKindLockedOutForADayByCarriedCounts: the attack is to
// fill the table of kinds with kinds that each have a line held back
// (one line past the burst of each), then write one line of a new kind,
// so that the table is walked for a place while every kind has a count
// held back: reclaim skips those kinds and, finding none to take the
// place of, sets the next walk a day ahead. Then, before the sweep
// reports them (a kind must be quiet for a second), one more line of
// each kind passes and carries its count itself ("suppressed" on the
// line), which cleared the count without the sweep (before CLI-30 a
// summary line was the only thing that brought the next walk nearer).
// Every kind of the table was
// quiet with its burst back within seconds, yet for 24 hours no new kind
// got a place: a new attack's lines shared the one overflow allowance
// with the attacker's own new kind, whose flood held back the attack's
// first line (reported only as "(other kinds)"), what CLI-28 meant to
// end. What should happen: a kind whose held-back count is carried by
// its own next line gives its place once its burst is back, like any
// other (CLI-30).
func TestNewKindLockedOutForADayByCarriedCounts(t *testing.T) {
	log, b, c := newLogger(Options{Rate: 10, Burst: 2, MaxKinds: 4})
	kinds := []string{"refused a", "refused b", "refused c", "refused d"}
	for _, m := range kinds {
		for range 3 { // the burst of 2, and one held back
			log.Info(m)
		}
	}
	log.Info("one line of a new kind") // the walk: every kind has a count held back
	c.t = c.t.Add(500 * time.Millisecond)
	for _, m := range kinds {
		log.Info(m) // passes, carrying its count of 1: no summary line, no sweep
	}
	lines(t, b)
	c.t = c.t.Add(time.Hour) // every kind quiet, its whole burst back
	for range 100 {
		log.Warn("flood of a new kind")
	}
	log.Warn("first line of a new attack")
	attack := 0
	for _, l := range lines(t, b) {
		if l["msg"] == "first line of a new attack" {
			attack++
		}
	}
	if attack != 1 {
		t.Errorf("an hour after every kind went quiet, a new kind still found no place: its first line was held back behind another new kind's flood (%d written, want 1)", attack)
	}
}
