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
