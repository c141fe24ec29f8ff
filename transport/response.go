package transport

import (
	"net/http"
	"time"
)

// ResponseRateWriter is a RateWriter over the answer w to r, from now: on
// the connection's write deadline (http.ResponseController), at rate
// bytes a second after grace (admission.MinDataRate and
// admission.FrameGrace when zero or less), with no stall longer than
// grace, and whole within r's http.Server's WriteTimeout (none when it has
// none). The one rule by which the servers write an answer of some size:
// a peer that reads none of it, or trickles, is cut off within moments,
// not after the whole write timeout.
func ResponseRateWriter(w http.ResponseWriter, r *http.Request, rate int64, grace time.Duration) *RateWriter {
	var most time.Duration
	if srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server); srv != nil {
		most = srv.WriteTimeout
	}
	return NewRateWriter(w, http.NewResponseController(w).SetWriteDeadline, rate, grace, most)
}

// RatedBody returns w whose body is written through ResponseRateWriter,
// its clock started at the body's first byte, so that what the handler
// did before (a build, a trim of an expired snapshot) is not charged to
// the client. A write that misses its deadline fails, which ends the
// request and gives its slot back.
func RatedBody(w http.ResponseWriter, r *http.Request, rate int64, grace time.Duration) http.ResponseWriter {
	return &rateBody{ResponseWriter: w, r: r, rate: rate, grace: grace}
}

// RateBodies returns next with every answer's body written as RatedBody
// writes it: for the routes a server mounts beside its own that write an
// answer of some size without a rate, so that a peer that reads none of
// it (a zero TCP window) holds the handler, and whatever the handler
// holds while it writes (a build slot), for moments instead of the whole
// write timeout (docs/SPEC-DECISIONS.md TRANSPORT-32). A handler that
// bounds its own writes is best mounted outside it: the deadline last set
// wins. The writer it hands on is no http.Flusher: a handler that streams
// flushes through http.NewResponseController, which reaches the
// connection (Unwrap).
func RateBodies(next http.Handler, rate int64, grace time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(RatedBody(w, r, rate, grace), r)
	})
}

// rateBody is RatedBody's writer.
type rateBody struct {
	http.ResponseWriter
	r     *http.Request
	rate  int64
	grace time.Duration
	out   *RateWriter
}

// Unwrap gives http.ResponseController the connection's writer.
func (b *rateBody) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// Write writes p under the rate, starting its clock on the first call.
func (b *rateBody) Write(p []byte) (int, error) {
	if b.out == nil {
		b.out = ResponseRateWriter(b.ResponseWriter, b.r, b.rate, b.grace)
	}
	return b.out.Write(p)
}
