package logthrottle

import (
	"testing"
	"time"
)

// TestNewKindFirstLineHiddenOnceKindTableFull: the attack is to
// fill the table of kinds once (MaxKinds lines of distinct kinds: one
// refusal of each message type and error name a peer can provoke), then,
// however much later, flood one kind that is new. Before CLI-28 a kind,
// once counted, was kept for the life of the process, so every later new
// kind shared the one overflow allowance: the flood spent it, and the
// first line of any other new kind (a new attack, a new failure) was held
// back, reported only as "(other kinds)". What should happen: a kind that has
// been quiet long enough to have its whole burst back is no different from
// one never seen, and gives its place to a new kind, so that the new kind
// gets an allowance of its own and its first line is written; the flood is
// still cut to its burst.
func TestNewKindFirstLineHiddenOnceKindTableFull(t *testing.T) {
	log, b, c := newLogger(Options{Rate: 1, Burst: 2, MaxKinds: 4})
	for _, m := range []string{"refused a", "refused b", "refused c", "refused d"} {
		log.Info(m)
	}
	if got := lines(t, b); len(got) != 4 {
		t.Fatalf("filler kinds: %d lines, want 4", len(got))
	}
	c.t = c.t.Add(time.Hour)
	for range 100 {
		log.Warn("flood of a new kind")
	}
	log.Warn("first line of a new attack")
	flood, attack := 0, 0
	for _, l := range lines(t, b) {
		switch l["msg"] {
		case "flood of a new kind":
			flood++
		case "first line of a new attack":
			attack++
		}
	}
	if flood != 2 {
		t.Errorf("the flood wrote %d lines, want its burst of 2", flood)
	}
	if attack != 1 {
		t.Errorf("the first line of a new kind was held back behind another new kind's flood (%d written, want 1)", attack)
	}
}

// TestCyclingKindsGetNoFreshBursts: what CLI-28 must not open. An
// attacker cycling through more kinds than the table holds, so that each
// kind's place is taken again and again, must not get a fresh burst per
// line: a place changes hands only once its kind has its burst back, so
// all that is written stays within MaxKinds places, plus the shared
// allowance, each its burst plus the rate over time.
func TestCyclingKindsGetNoFreshBursts(t *testing.T) {
	log, b, c := newLogger(Options{Rate: 1, Burst: 2, MaxKinds: 4})
	kinds := []string{"refused a", "refused b", "refused c", "refused d", "refused e", "refused f", "refused g", "refused h"}
	written := 0
	for i := range 1000 {
		log.Warn(kinds[i%len(kinds)])
		c.t = c.t.Add(100 * time.Millisecond)
		if i%100 == 99 {
			for _, l := range lines(t, b) {
				if l["msg"] != HeldBackMessage {
					written++
				}
			}
		}
	}
	if most := (4 + 1) * (2 + 100); written > most {
		t.Errorf("8 kinds cycled through 4 places for 100 s wrote %d lines, more than the %d of 5 allowances", written, most)
	}
	t.Logf("%d of 1000 lines written", written)
}
