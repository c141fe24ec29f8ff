package admission

import "time"

// MinDataRate is the default rate below which a body or frame being
// received is given up: a peer that declares n bytes has FrameGrace + n /
// MinDataRate to send them (never more than the binding's own read
// timeout). In-flight bytes are charged when the size is declared, so
// without it a peer could hold the charge of any message for the whole
// read timeout while sending nothing. 128 KiB/s serves links of 1 Mbit/s
// and faster; the largest message (16 MiB) needs about 560 KiB/s to fit
// in the 30 s read timeout anyway.
const MinDataRate = 128 << 10 // bytes per second

// FrameGrace is the time a body or frame gets before MinDataRate counts.
const FrameGrace = 5 * time.Second

// DataDeadline is how long n declared bytes may take to arrive: grace
// (FrameGrace when zero or less), then n at rate (bytes per second;
// MinDataRate when zero or less), at most limit (when above zero); a
// negative n counts as none.
func DataDeadline(n, rate int64, grace, limit time.Duration) time.Duration {
	if rate <= 0 {
		rate = MinDataRate
	}
	if grace <= 0 {
		grace = FrameGrace
	}
	if n < 0 {
		n = 0 // no caller passes one; a negative count must not wrap the deadline
	}
	// n / rate seconds, without overflowing for any n (whole seconds,
	// then the rest in nanoseconds).
	const most = time.Duration(1<<63 - 1)
	secs, rest := n/rate, n%rate
	d := most
	if secs < int64((most-grace)/time.Second)-1 {
		d = grace + time.Duration(secs)*time.Second + time.Duration(float64(rest)/float64(rate)*float64(time.Second))
	}
	if limit > 0 && d > limit {
		d = limit
	}
	return d
}
