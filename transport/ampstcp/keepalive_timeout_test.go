package ampstcp

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// keepaliveDeadListener wraps the connections it accepts so that, once
// dead is set, a read fails as a socket whose TCP keepalive probes went
// unanswered does (ETIMEDOUT: the peer's host vanished, a NAT dropped
// the flow), once, then reads EOF as a dead socket does.
type keepaliveDeadListener struct {
	net.Listener
	dead *atomic.Bool
}

func (l keepaliveDeadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &keepaliveDeadConn{Conn: c, dead: l.dead}, nil
}

type keepaliveDeadConn struct {
	net.Conn
	dead     *atomic.Bool
	reported atomic.Bool
}

func (c *keepaliveDeadConn) Read(p []byte) (int, error) {
	if c.dead.Load() {
		if c.reported.CompareAndSwap(false, true) {
			return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
		}
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	if err != nil && c.dead.Load() {
		return c.Read(p)
	}
	return n, err
}

// TestKeepaliveTimeoutIsAPeerGoneNotADeadline: a peer pipelines messages
// and vanishes without a reset (its host powered off, a NAT or firewall
// drops the flow). The kernel's TCP keepalive (Go's listener enables it)
// gives up and the read fails with ETIMEDOUT, whose Timeout() is true
// like a deadline's. Were it taken for one of the server's own deadlines
// (which are not departures), the context of its messages would not end
// and the read loop (messages in flight) would go on as if the peer were
// merely quiet. Only the server's deadlines (os.ErrDeadlineExceeded) are
// exempt: ETIMEDOUT ends the context of the connection's messages as a
// reset does.
func TestKeepaliveTimeoutIsAPeerGoneNotADeadline(t *testing.T) {
	h, called, ended := contextWatcher(1, 3*time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := new(atomic.Bool)
	srv := NewServer(h, ServerOptions{})
	go srv.Serve(keepaliveDeadListener{Listener: ln, dead: dead})
	t.Cleanup(func() { srv.Close() })
	r := dialRaw(t, ln.Addr().String())
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not called")
	}
	dead.Store(true)
	// The read loop is blocked in a read: wake it as the keepalive would.
	r.write(AppendFrame(nil, FramePing, []byte("x")))
	if !<-ended {
		t.Fatal("the connection's read failed with ETIMEDOUT (keepalive: the peer is gone), and the context of its message in flight " +
			"was still live 3 s later: ETIMEDOUT was taken for one of the server's deadlines")
	}
}
