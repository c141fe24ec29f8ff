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
	r io.Reader
	rateClock
}

// rateClock is the one deadline rule of RateReader and RateWriter: the
// earliest of the rate (start + admission.DataDeadline of the bytes moved
// and those pending), the stall (once bytes moved, the next within grace,
// plus the pending bytes' time at rate) and the lifetime (end).
type rateClock struct {
	set          func(time.Time) error
	now          func() time.Time
	start        time.Time // the rate's origin, moved on by Exclude
	last         time.Time // the last progress: bytes, or the end of a wait
	end          time.Time // the lifetime's end; zero: none
	rate         int64
	grace, limit time.Duration
	got          int64 // the bytes moved (read or written)
}

// newRateClock starts the clock now (grace and rate defaulted); the
// lifetime ends life from now (0: none).
func newRateClock(set func(time.Time) error, rate int64, grace, limit, life time.Duration, now func() time.Time) rateClock {
	if grace <= 0 {
		grace = admission.FrameGrace
	}
	if rate <= 0 {
		rate = admission.MinDataRate
	}
	t := now()
	c := rateClock{set: set, now: now, start: t, last: t, rate: rate, grace: grace, limit: limit}
	if life > 0 {
		c.end = t.Add(life)
	}
	return c
}

// deadline is the deadline for pending more bytes to move (0 for a
// read: the next byte): the earliest of the three bounds.
func (c *rateClock) deadline(pending int64) time.Time {
	d := c.start.Add(admission.DataDeadline(c.got+pending, c.rate, c.grace, c.limit))
	if s := c.last.Add(c.grace + (admission.DataDeadline(pending, c.rate, c.grace, 0) - c.grace)); c.got > 0 && s.Before(d) {
		d = s
	}
	if !c.end.IsZero() && c.end.Before(d) {
		d = c.end
	}
	return d
}

// moved counts n bytes that just moved.
func (c *rateClock) moved(n int) {
	if n > 0 {
		c.got += int64(n)
		c.last = c.now()
	}
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
	rr := &RateReader{r: r, rateClock: newRateClock(set, rate, grace, limit, Lifetime(limit), now)}
	rr.move()
	return rr
}

// move sets the read deadline.
func (rr *RateReader) move() { rr.set(rr.deadline(0)) }

// Read reads from the underlying reader and moves the read deadline by
// what arrived.
func (rr *RateReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if n > 0 {
		rr.moved(n)
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

// RateWriter writes a reply (an HTTP answer, a TCP frame) to a peer
// under the minimum data rate of RateReader, the peer now being the one
// that reads: the connection's write deadline (set) is moved before every
// step of at most SmallBody bytes, to the earliest of the rate (what has
// been written, this step included, must keep up with rate on average
// after grace), the stall (once bytes went, the next step within grace
// and its own time at rate) and the end (limit from the start: no wait
// of the server's is left out of a write). A peer that reads nothing, or
// trickles, is cut off within moments, and the reply's charge with it,
// not after the whole write timeout. The write that times out fails with
// the connection's deadline error; the binding then closes the connection.
// A connection that writes one reply after another keeps one clock for
// the replies it has waiting (Next), and starts a new one only when it
// had nothing to write (Reset).
type RateWriter struct {
	w io.Writer
	rateClock
	whole time.Duration // the end of each write (Reset, Next); 0: none
}

// NewRateWriter writes to w, a connection (or a response writer over
// one) whose write deadline set moves; rate, grace and limit are as for
// NewRateReader, but the whole write ends at most limit from now (0: no
// bound). It sets the first deadline (grace from now) at once, so that
// what the binding writes before the body (the headers) is bounded too.
func NewRateWriter(w io.Writer, set func(time.Time) error, rate int64, grace, limit time.Duration) *RateWriter {
	return newRateWriter(w, set, rate, grace, limit, time.Now)
}

// newRateWriter is NewRateWriter with its clock (tests inject one).
func newRateWriter(w io.Writer, set func(time.Time) error, rate int64, grace, limit time.Duration, now func() time.Time) *RateWriter {
	// Unlike a RateReader's, the rate is not capped at limit: across
	// the writes of one stretch (Next) its origin stays while each
	// write's end moves on, so the end alone bounds a write at limit
	// (for a single write, the same deadline as the cap).
	rw := &RateWriter{w: w, rateClock: newRateClock(set, rate, grace, 0, limit, now), whole: limit}
	rw.set(rw.deadline(0))
	return rw
}

// Reset starts a new write now, as a new RateWriter would: the rate, the
// stall and the end count from here. A connection resets its writer
// only when the writer had nothing left to write (every byte handed to
// the connection, no reply waiting), so that the time it waited for a
// reply is not the peer's.
func (rw *RateWriter) Reset() {
	c := &rw.rateClock
	*c = newRateClock(c.set, c.rate, c.grace, 0, rw.whole, c.now)
}

// Next starts the next write of the same stretch (the next frame of a
// connection that has more waiting, or the flush after it): its end is
// limit from now, while the rate and the stall go on counting across
// the writes since the last Reset. Restarting the whole clock per write
// instead gave each step of SmallBody bytes a fresh grace, so a peer
// taking one step a grace drained a backlog of replies at about a tenth
// of the rate (docs/SPEC-DECISIONS.md TRANSPORT-38).
func (rw *RateWriter) Next() {
	if rw.whole > 0 {
		rw.end = rw.now().Add(rw.whole)
	}
}

// Write writes p step by step, each step under the deadline above.
func (rw *RateWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		step := p[:min(len(p), SmallBody)]
		rw.set(rw.deadline(int64(len(step))))
		n, err := rw.w.Write(step)
		written += n
		rw.moved(n)
		if err != nil {
			return written, err
		}
		p = p[len(step):]
	}
	return written, nil
}
