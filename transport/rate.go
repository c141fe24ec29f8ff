package transport

import (
	"io"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// RateReader reads a body or frame whose declared size is already charged
// while keeping the minimum data rate, the one rule both bindings apply
// (amphttp, ampstcp). Three bounds make the read deadline, the earliest
// of which cuts the reading:
//
//   - Rate: after grace, what has arrived must keep up with rate on
//     average since the reading began: start + admission.DataDeadline(got, rate,
//     grace, limit), moved on by every byte that arrives. A peer that
//     trickles a large frame is cut off a moment after grace, when it
//     falls behind, and gives its charge back then, not once the whole
//     declared size would be overdue (for 16 MiB at 128 KiB/s, 128 s).
//   - Stall: once bytes came, the next must come within grace (the stall
//     grace) of the last ones. An average alone let a body sent almost
//     whole at once and then stalled keep its charge until limit (threat:
//     four hosts each sending all but a byte of 16 MiB pinned the whole
//     byte budget for 29 s).
//   - Lifetime: the whole reading, waits the reader imposed (Exclude)
//     included, ends at most Lifetime(limit) after it began (or at the
//     end EndBy sets), so that a frame waiting for a full budget cannot
//     hold its charges for ever.
type RateReader struct {
	r            io.Reader
	set          func(time.Time) error
	now          func() time.Time
	start        time.Time // the rate's origin, moved on by Exclude
	last         time.Time // the last progress: bytes, or the end of a wait
	end          time.Time // the lifetime's end; zero: none
	rate         int64
	grace, limit time.Duration
	got          int64
}

// Lifetime is the most wall-clock time a body or frame may take, waits
// for the server's budget included, when its reading is bounded by limit
// (0: no bound): twice limit.
func Lifetime(limit time.Duration) time.Duration { return 2 * limit }

// NewRateReader reads from r, a connection's reader (or a body read from
// one) whose read deadline set moves: set is called now, with the
// deadline of the first byte (grace from now), and after every read that
// brings bytes. rate, grace and limit are as for admission.DataDeadline (the
// defaults admission.MinDataRate and admission.FrameGrace when zero or less; limit 0: no
// bound); grace is also the stall grace, and the reading ends at most
// Lifetime(limit) from now.
func NewRateReader(r io.Reader, set func(time.Time) error, rate int64, grace, limit time.Duration) *RateReader {
	return newRateReader(r, set, rate, grace, limit, time.Now)
}

// newRateReader is NewRateReader with its clock (tests inject one).
func newRateReader(r io.Reader, set func(time.Time) error, rate int64, grace, limit time.Duration, now func() time.Time) *RateReader {
	if grace <= 0 {
		grace = admission.FrameGrace
	}
	t := now()
	rr := &RateReader{r: r, set: set, now: now, start: t, last: t, rate: rate, grace: grace, limit: limit}
	if limit > 0 {
		rr.end = t.Add(Lifetime(limit))
	}
	rr.move()
	return rr
}

// deadline is the read deadline now: the earliest of the three bounds.
func (rr *RateReader) deadline() time.Time {
	d := rr.start.Add(admission.DataDeadline(rr.got, rr.rate, rr.grace, rr.limit))
	if s := rr.last.Add(rr.grace); rr.got > 0 && s.Before(d) {
		d = s
	}
	if !rr.end.IsZero() && rr.end.Before(d) {
		d = rr.end
	}
	return d
}

// move sets the read deadline.
func (rr *RateReader) move() { rr.set(rr.deadline()) }

// Read reads from the underlying reader and moves the read deadline by
// what arrived.
func (rr *RateReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if n > 0 {
		rr.got += int64(n)
		rr.last = rr.now()
		rr.move()
	}
	return n, err
}

// Exclude leaves d, which just ended, out of the time the reading has
// taken for its rate and its stall grace: time in which the reader made
// the peer wait (not reading, its budget full), which the peer must not
// be cut off for. The lifetime still counts it.
func (rr *RateReader) Exclude(d time.Duration) {
	if d <= 0 {
		return
	}
	rr.start = rr.start.Add(d)
	rr.last = rr.now()
	rr.move()
}

// EndBy ends the reading at t at the latest (when earlier than the end
// it has): a binding that began counting a frame's lifetime before the
// reader was made passes that end on.
func (rr *RateReader) EndBy(t time.Time) {
	if rr.end.IsZero() || t.Before(rr.end) {
		rr.end = t
		rr.move()
	}
}

// End is when the reading ends at the latest, waits included (zero: no
// bound).
func (rr *RateReader) End() time.Time { return rr.end }
