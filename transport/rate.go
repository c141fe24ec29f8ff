package transport

import (
	"io"
	"time"
)

// RateReader reads a body or frame whose declared size is already charged
// while keeping the minimum data rate, the one rule both bindings apply
// (amphttp, ampstcp): after grace, what has arrived must keep up with
// rate on average since the reading began. Having received got bytes, the
// read deadline is start + DataDeadline(got, rate, grace, limit), moved
// on by every byte that arrives: a peer that trickles a large frame is
// cut off a moment after grace, when it falls behind, and gives its
// charge back then, not once the whole declared size would be overdue
// (for 16 MiB at 128 KiB/s, 128 s: the read timeout, 30 s). limit still
// bounds the whole reading.
type RateReader struct {
	r            io.Reader
	set          func(time.Time) error
	start        time.Time
	rate         int64
	grace, limit time.Duration
	got          int64
}

// NewRateReader reads from r, a connection's reader (or a body read from
// one) whose read deadline set moves: set is called now, with the
// deadline of the first byte (grace from now), and after every read that
// brings bytes. rate, grace and limit are as for DataDeadline (the
// defaults MinDataRate and FrameGrace when zero or less; limit 0: no
// bound).
func NewRateReader(r io.Reader, set func(time.Time) error, rate int64, grace, limit time.Duration) *RateReader {
	rr := &RateReader{r: r, set: set, start: time.Now(), rate: rate, grace: grace, limit: limit}
	set(rr.start.Add(DataDeadline(0, rate, grace, limit)))
	return rr
}

// Read reads from the underlying reader and moves the read deadline by
// what arrived.
func (rr *RateReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if n > 0 {
		rr.got += int64(n)
		rr.set(rr.start.Add(DataDeadline(rr.got, rr.rate, rr.grace, rr.limit)))
	}
	return n, err
}

// Exclude leaves d out of the time the reading has taken: time in which
// the reader made the peer wait (not reading, its budget full), which
// the peer must not be cut off for. The read deadline moves by d.
func (rr *RateReader) Exclude(d time.Duration) {
	if d <= 0 {
		return
	}
	rr.start = rr.start.Add(d)
	rr.set(rr.start.Add(DataDeadline(rr.got, rr.rate, rr.grace, rr.limit)))
}
