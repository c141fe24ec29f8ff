package transport

import (
	"bytes"
	"testing"
	"time"
)

// TestReplyBacklogStepsGetNoFreshGraceEach: a connection writes a
// backlog of replies, one frame after another, and the peer takes each
// step of SmallBody bytes just inside a fresh grace. Threat: restarting
// the clock per frame (Reset) gave every step grace + its own time at
// the rate (5.5 s at 128 KiB/s), so the backlog drained at about
// 12 KiB/s. Next keeps the rate's origin and the bytes already written:
// the fourth step, a grace after the third, is due by the rate counted
// from the first frame (already past), while each frame's end is still
// the limit from its own start.
func TestReplyBacklogStepsGetNoFreshGraceEach(t *testing.T) {
	clock := time.Unix(1000, 0)
	var deadlines []time.Time
	const rate, grace, limit = 128 << 10, 5 * time.Second, 30 * time.Second
	var sink bytes.Buffer
	w := newRateWriter(&sink, func(d time.Time) error { deadlines = append(deadlines, d); return nil }, rate, grace, limit, func() time.Time { return clock })
	start := clock
	step := time.Duration(SmallBody) * time.Second / rate // 0.5 s at 128 KiB/s
	for i := range 4 {
		if i > 0 {
			clock = clock.Add(grace)
			w.Next()
		}
		if _, err := w.Write(make([]byte, SmallBody)); err != nil {
			t.Fatal(err)
		}
	}
	last := deadlines[len(deadlines)-1]
	if want := start.Add(grace + 4*step); !last.Equal(want) {
		t.Fatalf("the fourth frame's step, %v after the first, is due at %v, want the rate from the first frame, %v "+
			"(a fresh grace would give %v)", clock.Sub(start), last, want, clock.Add(grace+step))
	}
	if !last.Before(clock) {
		t.Fatalf("a peer taking a step a grace is not behind the rate: due %v at %v", last, clock)
	}
	// Each frame still ends the limit after its own start, not the
	// first's: a peer that keeps up with the rate is not cut however
	// long its backlog (here twice the limit).
	w.Reset()
	start = clock
	for clock.Sub(start) < 2*limit {
		clock = clock.Add(step)
		w.Next()
		w.Write(make([]byte, SmallBody))
		if due := deadlines[len(deadlines)-1]; !due.After(clock) {
			t.Fatalf("a peer that kept up with the rate for %v is due at %v, now %v", clock.Sub(start), due, clock)
		}
	}
}
