package transport

import (
	"io"
	"net"
	"time"
)

// How a connection refused with bytes of its peer unread is closed
// (CloseAfterAnswer): net/http's own delay and allowance for the same
// purpose.
const (
	// AnswerLinger is how long an answer is given to reach its peer
	// before the connection is closed.
	AnswerLinger = 500 * time.Millisecond
	// AnswerDrain is how much the peer may still send meanwhile that is
	// read and dropped.
	AnswerDrain = 256 << 10
)

// CloseAfterAnswer closes c, on which an answer (a refusal) was just
// written while the peer may still be sending, without losing that
// answer. Closed at once with unread bytes, a socket sends a TCP reset,
// and a peer still writing then sees "connection reset" instead of the
// answer. So c's sending side is shut (CloseWrite, where c has one: the
// peer reads the answer, then EOF), and what the peer sends is read and
// dropped, up to drain bytes, for at most linger or until the peer
// closes; past drain, nothing more is read until linger ends. Then c is
// closed. It returns after at most linger: shutting the sending side of
// a TLS connection writes a close_notify alert under tls.Conn's own 5 s
// write deadline, which a peer that reads nothing would hold; at linger
// the connection below TLS is closed, which ends that write
// (docs/SPEC-DECISIONS.md TRANSPORT-15).
func CloseAfterAnswer(c net.Conn, linger time.Duration, drain int64) {
	defer c.Close()
	deadline := time.Now().Add(linger)
	cut := time.AfterFunc(linger, func() { below(c).Close() })
	defer cut.Stop()
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(deadline)
	if n, _ := io.CopyN(io.Discard, c, drain); n == drain {
		// Still sending: stop reading and let its window close; the
		// answer has what remains of linger to be read.
		time.Sleep(time.Until(deadline))
	}
}

// below is the connection under c's TLS (tls.Conn.NetConn), or c.
func below(c net.Conn) net.Conn {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		return tc.NetConn()
	}
	return c
}
