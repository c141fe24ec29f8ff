package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// waitTimeout bounds a wait for what must happen: generous, so that a
// machine under heavy load (a load average of 20 on 2 cores, -race)
// still gets there; what never happens fails the test, it is not timed.
// A wait for what must not happen stays short: load cannot make it fail.
const waitTimeout = 2 * time.Minute

// dialFrom connects to l from the loopback address from.
func dialFrom(t *testing.T, l net.Listener, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c (it reads EOF)
// within wait.
func closedByServer(c net.Conn, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// acceptAll accepts l's connections until it is closed, and hands them
// over (16 at most unread).
func acceptAll(l net.Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	return accepted
}

// TestOnePeerCannotTakeEveryConnection: a host that opens connections and
// sends nothing on them keeps at most its share open (threat: one host
// holding every connection a server accepts, so that nobody else
// connects): the next is closed at once, another host is still accepted,
// and a closed connection gives its peer's slot back.
func TestOnePeerCannotTakeEveryConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 8, 2)
	defer l.Close()
	accepted := acceptAll(l)
	a1, a2 := dialFrom(t, ln, "127.0.0.30"), dialFrom(t, ln, "127.0.0.30")
	first := []net.Conn{<-accepted, <-accepted}
	over := dialFrom(t, ln, "127.0.0.30")
	if !closedByServer(over, waitTimeout) {
		t.Fatal("a third connection from a peer with a share of 2 was kept open")
	}
	if l.Refused() != 1 {
		t.Fatalf("refused %d, want 1", l.Refused())
	}
	dialFrom(t, ln, "127.0.0.31")
	select {
	case <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("another peer was not accepted")
	}
	if closedByServer(a1, 100*time.Millisecond) || closedByServer(a2, 100*time.Millisecond) {
		t.Fatal("the connections within the share were closed")
	}
	first[0].Close()
	dialFrom(t, ln, "127.0.0.30")
	select {
	case <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("a closed connection did not give its peer's slot back")
	}
	if l.Open() != 3 {
		t.Fatalf("open %d, want 3", l.Open())
	}
}

// TestLimitedListenerCloseEndsAWaitingAccept: Accept waiting for a free
// slot returns once the listener is closed (a server shutting down is not
// held by a full listener).
func TestLimitedListenerCloseEndsAWaitingAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 1, 1)
	dialFrom(t, ln, "127.0.0.1")
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	time.Sleep(50 * time.Millisecond)
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Accept still waits after Close")
	}
}

// TestLimitedConnCanShutItsSendingSide: a connection of a limited
// listener still shuts its sending side alone (threat: the wrapper hiding
// CloseWrite, an HTTP server refusing a body closes outright, and the
// unread bytes turn its answer into a connection reset): the peer reads
// EOF while its own bytes still reach the server.
func TestLimitedConnCanShutItsSendingSide(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 4, 4)
	defer l.Close()
	c := dialFrom(t, ln, "127.0.0.1")
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cw, ok := s.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("a limited connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(c, waitTimeout) {
		t.Fatal("the peer does not read EOF after CloseWrite")
	}
	if _, err := c.Write([]byte("still sending")); err != nil {
		t.Fatal(err)
	}
	s.SetReadDeadline(time.Now().Add(waitTimeout))
	if b, err := io.ReadAll(io.LimitReader(s, 13)); err != nil || string(b) != "still sending" {
		t.Fatalf("the server reads %q, %v after CloseWrite", b, err)
	}
}

// TestWaitClosedWaitsForTakenOverConnections: WaitClosed returns once
// every accepted connection is closed, including one a server took over
// and closes on its own (threat: a server exiting while a refused
// connection still lingers, so that its answer is reset), and no later
// than its context.
func TestWaitClosedWaitsForTakenOverConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 4, 4)
	defer l.Close()
	dialFrom(t, ln, "127.0.0.1")
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.WaitClosed(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with a connection open: %v", err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.Close()
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel2()
	if err := l.WaitClosed(ctx2); err != nil {
		t.Fatalf("after the connection closed: %v", err)
	}
}
