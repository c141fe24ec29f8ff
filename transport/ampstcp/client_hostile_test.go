package ampstcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
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

// goroutinesBackTo waits until at most n goroutines run, or waitTimeout.
func goroutinesBackTo(n int) int {
	deadline := time.Now().Add(waitTimeout)
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
	eventually(t, "the GOAWAY did not arrive", func() (bool, string) {
		tr.mu.Lock()
		c := tr.cur
		tr.mu.Unlock()
		return c != nil && !c.usable(), "the first connection is still usable"
	})
	// The next request dials the second connection; nobody answers it.
	// Its context ends once that connection is live: a deadline could
	// end it during the dial, and the connection with it.
	ctx, cancel := context.WithCancel(context.Background())
	second := roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil))
	eventually(t, "the second connection was not dialed", func() (bool, string) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.conns) == 2 && tr.cur != nil && tr.cur.usable(), fmt.Sprintf("%d live connections", len(tr.conns))
	})
	cancel()
	if err := waitErr(t, second, waitTimeout, "request on the second connection"); !errors.Is(err, amp.CodeTimeout) {
		t.Fatalf("request on the second connection: %v, want 5003", err)
	}
	tr.mu.Lock()
	live := len(tr.conns)
	tr.mu.Unlock()
	if live != 2 {
		t.Fatalf("%d live connections, want the draining one and the new one", live)
	}

	tr.Close()
	if err := waitErr(t, first, waitTimeout, "request on the connection that got GOAWAY, after Close"); !errors.Is(err, amp.CodeEndpointUnreachable) {
		t.Errorf("request on the connection that got GOAWAY: %v, want 2002", err)
	}
	// Both connections closed: the agent's readers and the transport's
	// loops are gone.
	if n := goroutinesBackTo(before); n > before {
		t.Errorf("%d goroutines %v after Close, %d before", n, waitTimeout, before)
	}
}

// TestSilentHandshakeHonorsTheCallerContext: an agent that accepts the TCP
// connection and never answers the HANDSHAKE holds a RoundTrip only as
// long as its context, a deadline or a cancel, not HandshakeTimeout; the
// end of the context closes the connection (the agent sees it), and the
// error is 5003. HandshakeTimeout is an hour: only the context can end
// the call within waitTimeout, however loaded the machine. The cancel
// comes once the agent has the HANDSHAKE; a deadline cannot wait for it,
// so one that ended before the HANDSHAKE reached the agent (a loaded
// machine) is tried again, twice as long.
func TestSilentHandshakeHonorsTheCallerContext(t *testing.T) {
	var accepted, closed atomic.Int64
	got := make(chan struct{}, 64) // a HANDSHAKE reached the agent
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		accepted.Add(1)
		defer closed.Add(1)
		if _, err := ReadFrame(br, MaxControlPayload+1); err == nil {
			got <- struct{}{}
		}
		drain(br) // answers nothing
	})
	tr, err := NewTransport(a.url(), ClientOptions{HandshakeTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	silent := func(name string, ctx context.Context) {
		t.Helper()
		err := waitErr(t, roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil)), waitTimeout,
			name+": a silent handshake held RoundTrip past its context (HandshakeTimeout 1 h)")
		if !errors.Is(err, amp.CodeTimeout) {
			t.Errorf("%s: %v, want 5003", name, err)
		}
	}
	allClosed := func(name string) {
		t.Helper()
		eventually(t, name+": the connection stayed open after the context ended", func() (bool, string) {
			n, m := accepted.Load(), closed.Load()
			return n == m, fmt.Sprintf("%d of %d connections closed", m, n)
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }()
	silent("cancel", ctx)
	cancel()
	allClosed("cancel")

	reached := false
	for d := 100 * time.Millisecond; !reached && d < waitTimeout; d *= 2 {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		silent(fmt.Sprintf("deadline %v", d), ctx)
		cancel()
		select {
		case <-got:
			reached = true
		default:
		}
	}
	if !reached {
		t.Fatal("deadline: no HANDSHAKE reached the agent before its context ended")
	}
	allClosed("deadline")
}

// TestSilentHandshakeDoesNotHoldOtherCallersOrClose: while one caller
// (without deadline) waits for a silent agent's HANDSHAKE, another caller
// gives up when its own context ends, and Close returns at once and ends
// the first caller with 2002; the dial held the transport's lock for
// HandshakeTimeout, blocking both. HandshakeTimeout is an hour: only the
// fix lets them end within waitTimeout, however loaded the machine.
func TestSilentHandshakeDoesNotHoldOtherCallersOrClose(t *testing.T) {
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) { drain(br) })
	before := runtime.NumGoroutine()
	tr, err := NewTransport(a.url(), ClientOptions{HandshakeTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	first := roundTripAsync(tr, context.Background(), fakeMessage(t, newID(), nil))
	waitDialing(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = waitErr(t, roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil)), waitTimeout, "second caller (100 ms context)")
	if !errors.Is(err, amp.CodeTimeout) {
		t.Errorf("second caller (100 ms context): %v, want 5003", err)
	}
	closed := make(chan error, 1)
	go func() { tr.Close(); closed <- nil }()
	waitErr(t, closed, waitTimeout, "Close during a silent handshake")
	if err := waitErr(t, first, waitTimeout, "first caller, after Close"); !errors.Is(err, amp.CodeEndpointUnreachable) {
		t.Errorf("first caller: %v, want 2002 (closed)", err)
	}
	if n := goroutinesBackTo(before); n > before {
		t.Errorf("%d goroutines %v after Close, %d before", n, waitTimeout, before)
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
	ctx, cancel2 := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel2()
	waiter := roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil))
	time.Sleep(20 * time.Millisecond) // the waiter waits on the dial
	cancel()
	if err := waitErr(t, dialer, waitTimeout, "dialer"); !errors.Is(err, amp.CodeTimeout) {
		t.Errorf("dialer: %v, want 5003", err)
	}
	if err := waitErr(t, waiter, waitTimeout, "waiter"); err != nil {
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
