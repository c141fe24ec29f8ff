package logthrottle

import (
	"testing"
	"time"
)

// TestClockStepBackMutesKind: a clock that steps back (Options.Now, an
// injected clock; time.Now is monotonic) while a peer floods one kind.
// Before CLI-28 a kind's allowance refilled only once the clock passed
// the time of its last line, and summaries waited for the next sweep
// time: after a step back of an hour, a kind that was cut stayed cut for
// that hour, every line of it held back (the attacker's
// next lines, and the operator's evidence, unseen), and no summary line
// said so. What should happen: a step back counts as no time passed, and
// time counts again from there: ten seconds later the kind has ten
// seconds of allowance, and the count held back is reported.
func TestClockStepBackMutesKind(t *testing.T) {
	log, b, c := newLogger(Options{Rate: 1, Burst: 2})
	for range 10 {
		log.Warn("refused: bad signature")
	}
	if got := lines(t, b); len(got) != 2 {
		t.Fatalf("flood: %d lines, want the burst of 2", len(got))
	}
	c.t = c.t.Add(-time.Hour)
	log.Warn("refused: bad signature") // held back: no time has passed
	c.t = c.t.Add(10 * time.Second)
	log.Warn("refused: bad signature")
	got := lines(t, b)
	if len(got) != 1 {
		t.Fatalf("10 s after a step back of an hour: %d lines written, want 1 (%v)", len(got), got)
	}
	if n, _ := got[0][SuppressedKey].(float64); n != 9 {
		t.Errorf("suppressed=%v, want 9", got[0][SuppressedKey])
	}
	// A kind that held lines back and then went quiet is summarized
	// about a second later, not an hour later.
	log.Info("another kind")
	for range 5 {
		log.Warn("refused: bad signature")
	}
	lines(t, b)
	c.t = c.t.Add(-time.Hour)
	log.Info("another kind")
	c.t = c.t.Add(2 * time.Second)
	log.Info("another kind")
	held := false
	for _, l := range lines(t, b) {
		if l["msg"] == HeldBackMessage {
			held = true
		}
	}
	if !held {
		t.Errorf("no summary of the held-back lines after a step back")
	}
}
