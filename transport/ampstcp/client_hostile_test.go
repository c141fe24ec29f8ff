package ampstcp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// hostileAgent is a TCP server under the test's control: for each
// connection (numbered from 0) it runs onConn, then closes it. Closing
// the agent closes the listener and every connection and waits for every
// onConn to return.
type hostileAgent struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newHostileAgent(t *testing.T, onConn func(i int, c net.Conn, br *bufio.Reader)) *hostileAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &hostileAgent{ln: ln}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns = append(a.conns, c)
			a.mu.Unlock()
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				defer c.Close()
				onConn(i, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(a.close)
	return a
}

func (a *hostileAgent) url() string { return "amp://" + a.ln.Addr().String() }

func (a *hostileAgent) close() {
	a.ln.Close()
	a.mu.Lock()
	for _, c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// acceptHandshake reads the client's HANDSHAKE and accepts it.
func acceptHandshake(c net.Conn, br *bufio.Reader) bool {
	if _, err := ReadFrame(br, MaxControlPayload+1); err != nil {
		return false
	}
	_, err := c.Write(AppendFrame(nil, FrameHandshake, EncodeHandshakeResponse(HandshakeResponse{Version: Version, Accepted: true, MaxMsgSize: 16 << 20})))
	return err == nil
}

// drain reads frames until the connection ends.
func drain(br *bufio.Reader) {
	for {
		if _, err := ReadFrame(br, 16<<20); err != nil {
			return
		}
	}
}

// goroutinesBackTo waits until at most n goroutines run, or 5 s.
func goroutinesBackTo(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}

func roundTripAsync(tr *Transport, ctx context.Context, msg []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(ctx, msg)
		done <- err
	}()
	return done
}

// waitErr returns what done delivers within limit, or fails the test.
func waitErr(t *testing.T, done <-chan error, limit time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s: still blocked after %v", what, limit)
		return nil
	}
}

// TestCloseEndsRequestsOnAConnectionThatGotGoaway: an agent sends GOAWAY
// on the first connection, then neither answers nor closes it. A request
// on it (a context without deadline) must end with 2002 when the
// transport is closed, after a newer connection replaced the first, and
// both connections and their goroutines must go; the transport forgot
// the first connection, so the request stayed blocked and it leaked.
func TestCloseEndsRequestsOnAConnectionThatGotGoaway(t *testing.T) {
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		if !acceptHandshake(c, br) {
			return
		}
		if i == 0 {
			if f, err := ReadFrame(br, 16<<20); err != nil || f.Type != FrameMessage {
				return
			}
			c.Write(AppendFrame(nil, FrameGoAway, nil)) // then silence
		}
		drain(br)
	})
	before := runtime.NumGoroutine()
	tr, err := NewTransport(a.url(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := roundTripAsync(tr, context.Background(), fakeMessage(t, newID(), nil))
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.mu.Lock()
		c := tr.cur
		tr.mu.Unlock()
		if c != nil && !c.usable() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the GOAWAY did not arrive")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The next request dials the second connection; nobody answers it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := tr.RoundTrip(ctx, fakeMessage(t, newID(), nil)); !errors.Is(err, amp.CodeTimeout) {
		t.Fatalf("request on the second connection: %v, want 5003", err)
	}
	cancel()
	tr.mu.Lock()
	live := len(tr.conns)
	tr.mu.Unlock()
	if live != 2 {
		t.Fatalf("%d live connections, want the draining one and the new one", live)
	}

	tr.Close()
	if err := waitErr(t, first, 2*time.Second, "request on the connection that got GOAWAY, after Close"); !errors.Is(err, amp.CodeEndpointUnreachable) {
		t.Errorf("request on the connection that got GOAWAY: %v, want 2002", err)
	}
	// Both connections closed: the agent's readers and the transport's
	// loops are gone.
	if n := goroutinesBackTo(before); n > before {
		t.Errorf("%d goroutines 5 s after Close, %d before", n, before)
	}
}

// TestSilentHandshakeHonorsTheCallerContext: an agent that accepts the TCP
// connection and never answers the HANDSHAKE holds a RoundTrip only as
// long as its context, a deadline or a cancel, not HandshakeTimeout; the
// end of the context closes the connection (the agent sees it), and the
// error is 5003.
func TestSilentHandshakeHonorsTheCallerContext(t *testing.T) {
	closed := make(chan struct{}, 4)
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		drain(br) // reads the HANDSHAKE, answers nothing
		closed <- struct{}{}
	})
	tr, err := NewTransport(a.url(), ClientOptions{HandshakeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}},
	} {
		ctx, cancel := tc.ctx()
		start := time.Now()
		_, err := tr.RoundTrip(ctx, fakeMessage(t, newID(), nil))
		cancel()
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("%s: a silent handshake held RoundTrip for %v (context of 100 ms, HandshakeTimeout 5 s)", tc.name, el)
		}
		if !errors.Is(err, amp.CodeTimeout) {
			t.Errorf("%s: %v, want 5003", tc.name, err)
		}
		select {
		case <-closed:
		case <-time.After(2 * time.Second):
			t.Errorf("%s: the connection stayed open after the context ended", tc.name)
		}
	}
}

// TestSilentHandshakeDoesNotHoldOtherCallersOrClose: while one caller
// (without deadline) waits for a silent agent's HANDSHAKE, another caller
// gives up when its own context ends, and Close returns at once and ends
// the first caller with 2002; the dial held the transport's lock for
// HandshakeTimeout, blocking both.
func TestSilentHandshakeDoesNotHoldOtherCallersOrClose(t *testing.T) {
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) { drain(br) })
	before := runtime.NumGoroutine()
	tr, err := NewTransport(a.url(), ClientOptions{HandshakeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first := roundTripAsync(tr, context.Background(), fakeMessage(t, newID(), nil))
	waitDialing(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tr.RoundTrip(ctx, fakeMessage(t, newID(), nil))
	if el := time.Since(start); el > 2*time.Second || !errors.Is(err, amp.CodeTimeout) {
		t.Errorf("second caller (100 ms context): %v after %v, want 5003 at once", err, el)
	}
	start = time.Now()
	tr.Close()
	if el := time.Since(start); el > time.Second {
		t.Errorf("Close took %v during a silent handshake", el)
	}
	if err := waitErr(t, first, 2*time.Second, "first caller, after Close"); !errors.Is(err, amp.CodeEndpointUnreachable) {
		t.Errorf("first caller: %v, want 2002 (closed)", err)
	}
	if n := goroutinesBackTo(before); n > before {
		t.Errorf("%d goroutines 5 s after Close, %d before", n, before)
	}
}

// TestWaiterDialsAgainWhenTheDialerGivesUp: a caller that waits for
// another's dial does not inherit that caller's short context: when the
// dialer gives up, the waiter dials again and gets its reply.
func TestWaiterDialsAgainWhenTheDialerGivesUp(t *testing.T) {
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		if i == 0 {
			drain(br) // the first connection: a handshake never answered
			return
		}
		if !acceptHandshake(c, br) {
			return
		}
		for {
			f, err := ReadFrame(br, 16<<20)
			if err != nil {
				return
			}
			if f.Type == FrameMessage {
				c.Write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), topBytes(f.Payload, "id"))))
			}
		}
	})
	tr, err := NewTransport(a.url(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	short, cancel := context.WithCancel(context.Background())
	dialer := roundTripAsync(tr, short, fakeMessage(t, newID(), nil))
	waitDialing(tr)
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	waiter := roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil))
	time.Sleep(20 * time.Millisecond) // the waiter waits on the dial
	cancel()
	if err := waitErr(t, dialer, 2*time.Second, "dialer"); !errors.Is(err, amp.CodeTimeout) {
		t.Errorf("dialer: %v, want 5003", err)
	}
	if err := waitErr(t, waiter, 5*time.Second, "waiter"); err != nil {
		t.Errorf("waiter: %v, want its reply", err)
	}
}

// waitDialing waits until tr has a dial in progress.
func waitDialing(tr *Transport) {
	for {
		tr.mu.Lock()
		dialing := tr.dialing != nil
		tr.mu.Unlock()
		if dialing {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
