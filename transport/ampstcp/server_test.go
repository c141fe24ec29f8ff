package ampstcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport"
)

// fakeMessage is the smallest envelope the binding can route: {id} or
// {id, reply_to}. The binding never authenticates; the agent does.
func fakeMessage(t testing.TB, id, replyTo []byte) []byte {
	return paddedMessage(t, id, replyTo, 0)
}

// paddedMessage is fakeMessage with a body of n bytes (none for 0).
func paddedMessage(t testing.TB, id, replyTo []byte, n int) []byte {
	m := map[string]any{"id": id}
	if replyTo != nil {
		m["reply_to"] = replyTo
	}
	if n > 0 {
		m["body"] = make([]byte, n)
	}
	b, err := amp.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newID() []byte {
	id := make([]byte, 16)
	rand.Read(id)
	return id
}

// echo answers every message with one whose reply_to is its id, after
// delay (random up to max when max > 0, so replies come back out of order).
func echo(t testing.TB, max time.Duration, count *atomic.Int64) Handler {
	return HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		id, _, err := amp.Limits{}.EnvelopeIDs(msg)
		if err != nil {
			return nil, err
		}
		if max > 0 {
			var b [1]byte
			rand.Read(b[:])
			time.Sleep(time.Duration(b[0]) * max / 256)
		}
		if count != nil {
			count.Add(1)
		}
		return fakeMessage(t, newID(), id), nil
	})
}

func startServer(t testing.TB, h Handler, opts ServerOptions) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, opts)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

func newTransport(t testing.TB, addr string, opts ClientOptions) *Transport {
	t.Helper()
	tr, err := NewTransport("amp://"+addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// roundTripAll sends n messages at once and checks that each reply
// answers its own request.
func roundTripAll(t *testing.T, tr *Transport, n int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := newID()
			reply, err := tr.RoundTrip(context.Background(), fakeMessage(t, id, nil))
			if err != nil {
				failed.Add(1)
				errs <- err
				return
			}
			_, rt, err := amp.Limits{}.EnvelopeIDs(reply)
			if err != nil || !bytes.Equal(rt, id) {
				failed.Add(1)
				errs <- errors.New("reply does not answer its request")
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d round trips failed, first: %v", failed.Load(), n, <-errs)
	}
}

func TestRepliesMatchedToRequestsWhenOutOfOrder(t *testing.T) {
	var count atomic.Int64
	srv, addr := startServer(t, echo(t, 2*time.Millisecond, &count), ServerOptions{MaxInFlight: 16})
	tr := newTransport(t, addr, ClientOptions{})
	roundTripAll(t, tr, 2000)
	if count.Load() != 2000 {
		t.Fatalf("handler ran %d times for 2000 messages", count.Load())
	}
	// Every reply was written: nothing stays charged to the byte budget.
	eventually(t, "in-flight bytes still accounted after every reply", func() (bool, string) {
		left := srv.InFlightBytes()
		return left == 0, fmt.Sprintf("%d bytes", left)
	})
}

// rawConn is a hand-driven client connection.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn { return dialRawFrom(t, addr, nil) }

// dialRawFrom is dialRaw from the local address from (nil: any).
func dialRawFrom(t *testing.T, addr string, from net.Addr) *rawConn {
	c, err := (&net.Dialer{LocalAddr: from}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) write(b []byte) { r.c.Write(b) }

func (r *rawConn) frame() (Frame, error) { return ReadFrame(r.br, 1<<24) }

func (r *rawConn) handshake(version uint64) HandshakeResponse {
	r.t.Helper()
	r.write(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: version, MaxMsgSize: 1 << 20})))
	f, err := r.frame()
	if err != nil || f.Type != FrameHandshake {
		r.t.Fatalf("handshake answer: %v type %d", err, f.Type)
	}
	resp, err := DecodeHandshakeResponse(f.Payload)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// expectError reads an ERROR frame named name, then the end of the
// connection.
func (r *rawConn) expectErrorThenClose(name amp.ErrName) {
	r.t.Helper()
	f, err := r.frame()
	if err != nil || f.Type != FrameError {
		r.t.Fatalf("want an ERROR frame, got type %d, %v", f.Type, err)
	}
	ef, err := DecodeErrorFrame(f.Payload)
	if err != nil {
		r.t.Fatal(err)
	}
	if name != "" && ef.Error.Message == "" {
		r.t.Fatalf("error frame without a message")
	}
	r.expectClosed()
}

func (r *rawConn) expectClosed() {
	r.t.Helper()
	if _, err := r.frame(); err != io.EOF && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			r.t.Fatalf("the connection stayed open")
		}
	}
}

func TestServerRefusesProtocolViolations(t *testing.T) {
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxMessageSize: 1 << 20})
	t.Run("message before the handshake", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
		r.expectErrorThenClose(ErrProtocol)
	})
	t.Run("unsupported binding version", func(t *testing.T) {
		r := dialRaw(t, addr)
		resp := r.handshake(2)
		if resp.Accepted || resp.Error == nil || resp.Error.Code != amp.CodeUnsupportedVersion {
			t.Fatalf("version 2 answered %+v", resp)
		}
		r.expectClosed()
	})
	t.Run("frame over max_msg_size", func(t *testing.T) {
		r := dialRaw(t, addr)
		if !r.handshake(1).Accepted {
			t.Fatal("handshake refused")
		}
		r.write(unhex(t, "00200000 01"))
		r.expectErrorThenClose(ErrFrameTooLarge)
	})
	t.Run("zero-length frame", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.handshake(1)
		r.write(unhex(t, "00000000"))
		r.expectErrorThenClose(ErrEmptyFrame)
	})
	t.Run("second handshake", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.handshake(1)
		r.write(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
		r.expectErrorThenClose(ErrProtocol)
	})
	t.Run("ping is echoed", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.handshake(1)
		r.write(AppendFrame(nil, FramePing, []byte("nonce-42")))
		f, err := r.frame()
		if err != nil || f.Type != FramePong || string(f.Payload) != "nonce-42" {
			t.Fatalf("pong: %v %d %q", err, f.Type, f.Payload)
		}
	})
}

func TestSlowPeersAreCutOffByTimeouts(t *testing.T) {
	opts := ServerOptions{HandshakeTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond, FrameTimeout: 100 * time.Millisecond}
	_, addr := startServer(t, echo(t, 0, nil), opts)
	for _, c := range []struct {
		name string
		do   func(r *rawConn)
	}{
		{"silent before the handshake", func(r *rawConn) {}},
		{"handshake trickled", func(r *rawConn) { r.write([]byte{0, 0}) }},
		{"idle after the handshake", func(r *rawConn) { r.handshake(1) }},
		{"frame trickled after the handshake", func(r *rawConn) { r.handshake(1); r.write(unhex(t, "00000064 01 a1")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			r.c.SetDeadline(time.Now().Add(5 * time.Second))
			c.do(r)
			start := time.Now()
			for {
				_, err := r.frame()
				if err == nil {
					continue
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("still open after %v", time.Since(start))
				}
				return
			}
		})
	}
}

func TestConnectionCapAnswersOverloadedRetryable(t *testing.T) {
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxConns: 1})
	first := newTransport(t, addr, ClientOptions{})
	roundTripAll(t, first, 1)
	second := newTransport(t, addr, ClientOptions{})
	_, err := second.RoundTrip(context.Background(), fakeMessage(t, newID(), nil))
	// The ERROR frame is unsigned: its 5004 is a claim, so the client
	// names it unsigned_refusal under the binding's retryable 2002
	// (TRANSPORT-8).
	if !errors.Is(err, amp.ErrName(transport.ErrUnsignedRefusal)) || amp.CodeOf(err) != amp.CodeEndpointUnreachable || !amp.CodeOf(err).Retryable() {
		t.Fatalf("second connection: %v, want a retryable 2002 unsigned_refusal", err)
	}
}

func TestRefusedMessageGetsErrorForItsIDAndConnectionLives(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		id, _, _ := amp.Limits{}.EnvelopeIDs(msg)
		if id[0]&1 == 1 {
			return nil, amp.NewError(amp.CodeInvalidSignature, "signature does not verify")
		}
		return fakeMessage(t, newID(), id), nil
	})
	_, addr := startServer(t, h, ServerOptions{})
	tr := newTransport(t, addr, ClientOptions{})
	for i := 0; i < 20; i++ {
		id := newID()
		reply, err := tr.RoundTrip(context.Background(), fakeMessage(t, id, nil))
		if id[0]&1 == 1 {
			// The ERROR frame is unsigned: its code is a claim, kept as a
			// detail (TRANSPORT-8), never the error's code.
			var claim transport.UnsignedRefusal
			if e := amp.AsError(err); e != nil {
				claim, _ = e.Details.(transport.UnsignedRefusal)
			}
			if amp.NameOf(err) != transport.ErrUnsignedRefusal || amp.Code(claim.ClaimedCode) != amp.CodeInvalidSignature || amp.CodeOf(err).Retryable() {
				t.Fatalf("refused message: %v", err)
			}
			continue
		}
		if _, rt, _ := (amp.Limits{}).EnvelopeIDs(reply); err != nil || !bytes.Equal(rt, id) {
			t.Fatalf("accepted message after a refusal: %v", err)
		}
	}
}

func TestPlainTCPOnlyToLoopbackUnlessAllowed(t *testing.T) {
	for _, c := range []struct {
		url   string
		opts  ClientOptions
		valid bool
	}{
		{"amp://127.0.0.1:7000", ClientOptions{}, true},
		{"amp://[::1]:7000", ClientOptions{}, true},
		{"amp://localhost:7000", ClientOptions{}, true},
		{"amp://10.0.0.5:7000", ClientOptions{}, false},
		{"amp://agents.example.org:7000", ClientOptions{}, false},
		{"amp://10.0.0.5:7000", ClientOptions{AllowPlainRemote: true}, true},
		{"amps://agents.example.org:7000", ClientOptions{}, true},
		{"amps://agents.example.org", ClientOptions{}, false},
		{"http://127.0.0.1:7000", ClientOptions{}, false},
		{"amp://127.0.0.1:7000/x", ClientOptions{}, false},
		{"amp://user@127.0.0.1:7000", ClientOptions{}, false},
	} {
		_, err := NewTransport(c.url, c.opts)
		if (err == nil) != c.valid {
			t.Errorf("%s: %v", c.url, err)
		}
	}
}

// switchListener hands the connections of one real listener to the
// server currently serving, so that a second server takes over while the
// first drains (a rolling restart).
type switchListener struct {
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
	addr   net.Addr
}

func (l *switchListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *switchListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *switchListener) Addr() net.Addr { return l.addr }

func TestGoAwayDuringLoadLosesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var count atomic.Int64
	newSwitch := func() *switchListener {
		return &switchListener{ch: make(chan net.Conn), closed: make(chan struct{}), addr: ln.Addr()}
	}
	var mu sync.Mutex
	cur := newSwitch()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			for {
				mu.Lock()
				l := cur
				mu.Unlock()
				select {
				case l.ch <- c:
				case <-l.closed:
					time.Sleep(time.Millisecond)
					continue
				}
				break
			}
		}
	}()
	a := NewServer(echo(t, 3*time.Millisecond, &count), ServerOptions{MaxInFlight: 32})
	go a.Serve(cur)
	tr := newTransport(t, ln.Addr().String(), ClientOptions{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		roundTripAll(t, tr, 3000)
	}()
	// a handles some of them first (only a counts until b starts).
	eventually(t, "no round trip reached the first server", func() (bool, string) {
		return count.Load() > 0, "none handled"
	})
	// Rolling restart: b takes new connections, a says GOAWAY and drains.
	b := NewServer(echo(t, 3*time.Millisecond, &count), ServerOptions{MaxInFlight: 32})
	defer b.Close()
	next := newSwitch()
	go b.Serve(next)
	mu.Lock()
	cur = next
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	<-done
	if count.Load() != 3000 {
		t.Fatalf("handled %d of 3000", count.Load())
	}
}

// TestDeclaredFrameNotSentGivesItsChargeBack: a peer that declares a
// large frame and then sends almost nothing holds the declared bytes of
// the in-flight budget only until the frame is overdue at the minimum
// data rate, not for the whole frame timeout (threat: four such
// connections pinning the budget for every other peer, at no cost).
func TestDeclaredFrameNotSentGivesItsChargeBack(t *testing.T) {
	opts := ServerOptions{FrameTimeout: time.Minute, MinDataRate: 8 << 20, frameGrace: 200 * time.Millisecond}
	srv, addr := startServer(t, echo(t, 0, nil), opts)
	r := dialRaw(t, addr)
	r.c.SetDeadline(time.Now().Add(waitTimeout))
	r.handshake(1)
	// A MESSAGE frame declaring 8 MiB, of which one byte comes.
	r.write(append(binary.BigEndian.AppendUint32(nil, 8<<20+1), FrameMessage, 0xa1))
	held := func() int64 { return srv.peerInFlightBytes("127.0.0.1") }
	eventually(t, "the declared frame was not charged to its peer", func() (bool, string) {
		return held() >= 8<<20, fmt.Sprintf("%d bytes", held())
	})
	start := time.Now()
	eventually(t, "the declared frame's charge was not given back", func() (bool, string) {
		return held() == 0 && srv.InFlightBytes() == 0, fmt.Sprintf("%d bytes still charged after %v", held(), time.Since(start))
	})
	// 200 ms of grace + 1 s for 8 MiB at 8 MiB/s, then the connection
	// goes; the bound is loose (a loaded machine is slow), yet half the
	// FrameTimeout the charge was otherwise held for.
	if took := time.Since(start); took > opts.FrameTimeout/2 {
		t.Fatalf("the charge was held %v, the frame timeout (%v) rather than the minimum data rate", took, opts.FrameTimeout)
	}
	if _, err := r.frame(); err == nil {
		t.Fatal("the connection is still open")
	}
}

// TestOnePeerCannotTakeEveryConnection: a host that opens connections and
// sends nothing on them keeps at most its share open (threat: one host
// holding every connection, idle for IdleTimeout and renewed, so that
// nobody else connects): the next is answered with a retryable ERROR
// frame and closed, another host still connects and is served.
func TestOnePeerCannotTakeEveryConnection(t *testing.T) {
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxConns: 8, MaxPeerConns: 2})
	from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 40)}
	held := []*rawConn{dialRawFrom(t, addr, from), dialRawFrom(t, addr, from)}
	for _, r := range held {
		if !r.handshake(1).Accepted {
			t.Fatal("a connection within the share was refused")
		}
	}
	over := dialRawFrom(t, addr, from)
	f, err := over.frame()
	if err != nil || f.Type != FrameError {
		t.Fatalf("a connection over the peer's share: frame type %d, %v; want an ERROR frame", f.Type, err)
	}
	ef, err := DecodeErrorFrame(f.Payload)
	if err != nil || ef.Error.Code != amp.CodeOverloaded || !ef.Error.Code.Retryable() {
		t.Fatalf("error frame %+v %v, want 5004 (retryable)", ef, err)
	}
	over.expectClosed()
	other := dialRawFrom(t, addr, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 41)})
	if !other.handshake(1).Accepted {
		t.Fatal("another peer was refused")
	}
	held[0].c.Close()
	deadline := time.Now().Add(waitTimeout)
	for {
		again := dialRawFrom(t, addr, from)
		again.write(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
		if f, err := again.frame(); err == nil && f.Type == FrameHandshake {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection did not give its peer's slot back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
