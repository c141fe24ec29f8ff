package transport

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// clockedReader is a RateReader over src with a clock the test moves and
// the last read deadline it set.
type clockedReader struct {
	rr       *RateReader
	clock    time.Time
	deadline time.Time
}

func newClockedReader(src io.Reader, grace, limit time.Duration) *clockedReader {
	c := &clockedReader{clock: time.Unix(1000, 0)}
	c.rr = newRateReader(src, func(t time.Time) error { c.deadline = t; return nil }, 0, grace, limit, func() time.Time { return c.clock })
	return c
}

// TestFastThenStalledBodiesAreCutWithinTheStallGrace: a body sent almost
// whole at once and then stalled is cut once no byte came for the stall
// grace, not when the average rate since the start falls behind (threat:
// four peers each declaring 16 MiB and sending all but a byte pinned the
// whole HTTP byte budget, and every small POST from another address got
// 503 for 29 s; on TCP, large frames waited 28-29 s). The writer is the
// test: 16 MiB - 1 arrive at once; the read deadline is then the stall
// grace from that moment, where the average alone gave the 30 s limit.
func TestFastThenStalledBodiesAreCutWithinTheStallGrace(t *testing.T) {
	const size = 16<<20 - 1
	c := newClockedReader(bytes.NewReader(make([]byte, size)), admission.FrameGrace, 30*time.Second)
	if want := c.clock.Add(admission.FrameGrace); !c.deadline.Equal(want) {
		t.Fatalf("first byte due at %v, want the grace, %v", c.deadline, want)
	}
	c.clock = c.clock.Add(time.Second)
	if _, err := io.ReadFull(c.rr, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if want := c.clock.Add(admission.FrameGrace); !c.deadline.Equal(want) {
		t.Fatalf("after %d bytes at once, the next is due at %v (%v after them); want the stall grace, %v", size, c.deadline, c.deadline.Sub(c.clock), admission.FrameGrace)
	}
}

// TestWaitingFrameHasABoundedLifetime: time a frame spends waiting for
// the server's budget (Exclude) moves its rate and stall clocks, but not
// its lifetime: the read deadline never passes Lifetime(limit) from the
// start, however long the waits (threat: on TCP a frame waiting for a
// full budget kept its charges with its clock stopped, with no bound,
// while docs/TRANSPORT.md promised the frame timeout).
func TestWaitingFrameHasABoundedLifetime(t *testing.T) {
	const limit = 30 * time.Second
	c := newClockedReader(bytes.NewReader(make([]byte, 1<<20)), admission.FrameGrace, limit)
	end := c.clock.Add(Lifetime(limit))
	for range 10 {
		c.clock = c.clock.Add(time.Minute)
		c.rr.Exclude(time.Minute)
		if c.deadline.After(end) {
			t.Fatalf("after waits, the read deadline is %v, past the lifetime's end %v", c.deadline, end)
		}
	}
	if !c.rr.End().Equal(end) {
		t.Fatalf("End is %v, want %v", c.rr.End(), end)
	}
	earlier := end.Add(-time.Hour)
	c.rr.EndBy(earlier)
	if !c.deadline.Equal(earlier) {
		t.Fatalf("after EndBy, the read deadline is %v, want %v", c.deadline, earlier)
	}
}

// TestSmallBodiesKeepAnEighthOfTheHTTPBudget: bodies larger than
// SmallBody, together, cannot take SmallReserve of the server's bytes, so
// a small message still fits while large ones sent fast then stalled hold
// the rest (threat: four peers each holding 16 MiB of a 64 MiB budget,
// and every small POST got 503); one large body alone may still use the
// whole budget.
func TestSmallBodiesKeepAnEighthOfTheHTTPBudget(t *testing.T) {
	const budget = 64 << 20
	a := NewAdmission(64, 16, budget, budget/4)
	held := map[string]int64{}
	for _, p := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		if a.Enter(p) != "" {
			t.Fatal("not admitted")
		}
		// Each sends all of a 16 MiB body but its last chunk.
		for held[p] < budget/4-SmallBody && a.ChargeServerLarge(SmallBody, held[p]) {
			held[p] += SmallBody
		}
	}
	if held["10.0.0.4"] == budget/4-SmallBody || a.Bytes() > budget-SmallReserve(budget) {
		t.Fatalf("large bodies hold %d bytes of %d, over all but an eighth", a.Bytes(), budget)
	}
	if a.Enter("10.0.0.9") != "" || !a.ChargeServer(SmallBody+1) {
		t.Fatalf("a small body does not fit while large ones hold %d of %d bytes", a.Bytes(), budget)
	}
	a.Leave("10.0.0.9", SmallBody+1)
	for p, n := range held {
		a.LeaveHeldLarge(p, 0, n, n)
	}
	if a.Enter("10.0.0.5") != "" {
		t.Fatal("not admitted")
	}
	alone := int64(0)
	for a.ChargeServerLarge(SmallBody, alone) {
		alone += SmallBody
	}
	if alone != budget {
		t.Fatalf("a large body alone got %d bytes of an idle budget of %d", alone, budget)
	}
}

// TestReplyWritesKeepTheMinimumDataRate: a reply is written step by step
// under RateReader's rule, the peer now reading: each step of at most
// SmallBody bytes must go by the rate's deadline, within the stall grace
// of the last, and the whole write within its limit (threat: a peer that
// reads nothing of a reply of a few MiB held the reply's bytes, and on
// HTTP its request's bytes and slot, for the whole write timeout).
func TestReplyWritesKeepTheMinimumDataRate(t *testing.T) {
	clock := time.Unix(1000, 0)
	var deadlines []time.Time
	const rate, grace, limit = 128 << 10, 5 * time.Second, 30 * time.Second
	var sink bytes.Buffer
	w := newRateWriter(&sink, func(d time.Time) error { deadlines = append(deadlines, d); return nil }, rate, grace, limit, func() time.Time { return clock })
	start := clock
	if want := start.Add(grace); !deadlines[0].Equal(want) {
		t.Fatalf("what is written before the body (headers) is due at %v, want the grace, %v", deadlines[0], want)
	}
	step := time.Duration(SmallBody) * time.Second / rate // 0.5 s at 128 KiB/s
	if _, err := w.Write(make([]byte, 3*SmallBody)); err != nil {
		t.Fatal(err)
	}
	if len(deadlines) != 4 || sink.Len() != 3*SmallBody {
		t.Fatalf("%d deadlines for 3 steps, %d bytes written", len(deadlines)-1, sink.Len())
	}
	if want := start.Add(grace + step); !deadlines[1].Equal(want) {
		t.Fatalf("the first step is due at %v, want grace + its time at the rate, %v", deadlines[1], want)
	}
	// The steps went at once: the next is due within the stall grace of
	// the last, not when the average since the start falls behind.
	if want := start.Add(grace + step); !deadlines[3].Equal(want) {
		t.Fatalf("after steps written at once, the next is due at %v, want the stall grace and its own time, %v", deadlines[3], want)
	}
	// However fast the peer reads, the write ends at the limit.
	clock = clock.Add(limit - time.Second)
	w.Write(make([]byte, SmallBody))
	if end := start.Add(limit); deadlines[len(deadlines)-1].After(end) {
		t.Fatalf("a step is due at %v, past the write's limit %v", deadlines[len(deadlines)-1], end)
	}
	// Reset starts the next frame's write.
	w.Reset()
	w.Write(make([]byte, 1))
	if want := clock.Add(grace + time.Duration(1)*time.Second/rate); !deadlines[len(deadlines)-1].Equal(want) {
		t.Fatalf("after Reset, the first step is due at %v, want %v", deadlines[len(deadlines)-1], want)
	}
}
