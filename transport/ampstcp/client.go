package ampstcp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"runtime"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/transport"
)

// ClientOptions configure a Transport.
type ClientOptions struct {
	// TLS is the TLS configuration for amps:// (RootCAs, ServerName ...).
	// nil uses the system roots and the URL's host. Its MinVersion is
	// raised to TLS 1.2.
	TLS *tls.Config
	// AllowPlainRemote allows amp:// (no TLS) to a host that is not a
	// loopback address. Off by default: plain TCP is for loopback only,
	// by the URL's host name and by the address dialed
	// (transport.LoopbackOnly: a final 3001 plain_remote).
	AllowPlainRemote bool
	// MaxMessageSize is the largest reply accepted, announced in the
	// handshake (default 16 MiB).
	MaxMessageSize int
	// DialTimeout bounds connecting, TLS included (10 s), and
	// HandshakeTimeout the HANDSHAKE exchange (10 s). Both end sooner
	// with the context of the call that dials.
	DialTimeout      time.Duration
	HandshakeTimeout time.Duration
	// WriteTimeout bounds the write of one frame (30 s).
	WriteTimeout time.Duration
	// DID is announced in the handshake (informational).
	DID string
	// Logger; nil discards.
	Logger *slog.Logger
}

// Transport is the client side of the binding: it sends each message as an
// AMP_MESSAGE frame on one connection, many in flight at once, and matches
// each reply to its request by the reply's reply_to (an ERROR frame by its
// message_id). It redials when the connection ends; after a GOAWAY the old
// connection finishes what it carries while new messages go to a new one.
// One dial at a time: callers that need a connection meanwhile wait for it,
// each only as long as its own context allows. It satisfies
// client.Transport. Safe for concurrent use.
type Transport struct {
	addr string
	tls  *tls.Config // nil for amp://
	opts ClientOptions
	log  *slog.Logger
	url  string

	mu      sync.Mutex
	cur     *clientConn              // where new messages go
	conns   map[*clientConn]struct{} // every live connection: cur and those draining after a GOAWAY
	dialing *dialCall                // the dial in progress, if any
	closed  bool

	// replies reuses the channels a RoundTrip waits on (chan result,
	// buffered 1): one goes back only once its reply was received, when
	// nothing can send on it any more (a registered channel is sent on
	// at most once, by whoever removes it from pending).
	replies sync.Pool

	// lastLinger bounds the write of a failed connection's last frame,
	// a connection-level ERROR frame: transport.AnswerLinger (tests
	// change it).
	lastLinger time.Duration
}

// dialCall is one dial, which every caller that needs a connection
// meanwhile waits for.
type dialCall struct {
	done   chan struct{} // closed when c or err is set
	cancel context.CancelFunc
	c      *clientConn
	err    error
	// abandoned: the dial ended because its context did (the caller
	// that dialed gave up, or Close), not because of the agent; a waiter
	// with time left dials again.
	abandoned bool
}

// NewTransport returns a transport to the agent at rawURL:
// "amps://host:port" (TLS) or "amp://host:port" (plain; loopback only
// unless opts.AllowPlainRemote). Nothing is dialed before the first
// message.
func NewTransport(rawURL string, opts ClientOptions) (*Transport, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "amp" && u.Scheme != "amps") || u.Host == "" || u.Port() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, amp.Named(amp.CodeInvalidMessage, "invalid_url", "the agent url must be amp://HOST:PORT or amps://HOST:PORT")
	}
	if u.Scheme == "amp" && !opts.AllowPlainRemote && !LoopbackHost(u.Hostname()) {
		return nil, amp.Named(amp.CodeUnauthorized, "plain_remote", "plain amp:// is for loopback addresses only; use amps:// (tls)")
	}
	limit.Default(&opts.MaxMessageSize, amp.DefaultMaxMessageSize)
	limit.Default(&opts.DialTimeout, 10*time.Second)
	limit.Default(&opts.HandshakeTimeout, 10*time.Second)
	limit.Default(&opts.WriteTimeout, 30*time.Second)
	t := &Transport{addr: u.Host, opts: opts, url: u.Scheme + "://" + u.Host, log: opts.Logger, conns: map[*clientConn]struct{}{},
		lastLinger: transport.AnswerLinger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if u.Scheme == "amps" {
		cfg := &tls.Config{}
		if opts.TLS != nil {
			cfg = opts.TLS.Clone()
		}
		cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		t.tls = cfg
	}
	return t, nil
}

// LoopbackHost reports whether host is "localhost" or a loopback IP.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String describes the transport.
func (t *Transport) String() string { return "tcp " + t.url }

// Close closes every connection, those draining after a GOAWAY included,
// and ends a dial in progress; messages in flight fail with 2002, and so
// does every later call.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	conns := t.conns
	t.conns = nil
	t.cur = nil
	d := t.dialing
	t.mu.Unlock()
	if d != nil {
		d.cancel()
	}
	for c := range conns {
		c.fail(errClosed())
	}
}

func errClosed() error {
	return amp.NewError(amp.CodeEndpointUnreachable, "the transport was closed")
}

// forget drops c, which failed, from the live connections.
func (t *Transport) forget(c *clientConn) {
	t.mu.Lock()
	delete(t.conns, c)
	if t.cur == c {
		t.cur = nil
	}
	t.mu.Unlock()
}

// conn returns the current connection, dialing one when there is none or
// the current one is going away. t.mu is not held while dialing: a caller
// that finds a dial in progress waits for it or for the end of its own
// context, whichever comes first.
func (t *Transport) conn(ctx context.Context) (*clientConn, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, errClosed()
		}
		if c := t.cur; c != nil && c.usable() {
			t.mu.Unlock()
			return c, nil
		}
		d := t.dialing
		if d == nil {
			dctx, cancel := context.WithCancel(ctx)
			d = &dialCall{done: make(chan struct{}), cancel: cancel}
			t.dialing = d
			t.mu.Unlock()
			t.runDial(dctx, d)
		} else {
			t.mu.Unlock()
		}
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, amp.Wrap(amp.CodeTimeout, ctx.Err(), "no connection to the agent in time")
		}
		if d.err == nil {
			return d.c, nil
		}
		if !d.abandoned || ctx.Err() != nil {
			return nil, d.err
		}
		// The caller that dialed gave up before the agent answered; this
		// one has time left: dial again (or find Close).
	}
}

// runDial dials for d and makes the connection the current one.
func (t *Transport) runDial(ctx context.Context, d *dialCall) {
	c, err := t.dial(ctx)
	t.mu.Lock()
	if t.dialing == d {
		t.dialing = nil
	}
	if err == nil && t.closed {
		c.conn.Close()
		c, err = nil, errClosed()
	}
	if err == nil {
		t.conns[c] = struct{}{}
		t.cur = c
	}
	d.c, d.err, d.abandoned = c, err, err != nil && ctxEnded(ctx) != nil
	t.mu.Unlock()
	d.cancel()
	close(d.done)
	if c != nil {
		go c.readLoop()
		go c.writer()
	}
}

// dial connects and exchanges the handshake, each step ending with ctx.
// The connection's loops are not started.
func (t *Transport) dial(ctx context.Context) (*clientConn, error) {
	dctx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	if t.tls == nil && !t.opts.AllowPlainRemote {
		// The host name looked local (NewTransport): the address it
		// resolved to must be too.
		d.Control = transport.LoopbackOnly
	}
	raw, err := d.DialContext(dctx, "tcp", t.addr)
	if nl := (*transport.NotLoopbackError)(nil); errors.As(err, &nl) {
		e := amp.Named(amp.CodeUnauthorized, "plain_remote", "plain amp:// reached %s, not a loopback address; use amps:// (tls)", nl.Addr)
		e.Final = true
		return nil, e
	}
	if err != nil {
		return nil, dialErr(ctx, err, "cannot reach the agent")
	}
	nc := raw
	if t.tls != nil {
		tc := tls.Client(raw, t.tls)
		if err := tc.HandshakeContext(dctx); err != nil {
			raw.Close()
			return nil, dialErr(ctx, err, "tls handshake with the agent failed")
		}
		nc = tc
	}
	c := &clientConn{t: t, conn: nc, br: bufio.NewReaderSize(nc, 64<<10),
		pending: map[[16]byte]chan result{}, out: make(chan outFrame, 256), pong: make(chan []byte, 1), done: make(chan struct{})}
	if err := c.handshake(ctx); err != nil {
		nc.Close()
		return nil, dialErr(ctx, err, "")
	}
	return c, nil
}

// ctxEnded is ctx.Err(), or context.DeadlineExceeded once the deadline
// passed: a connection deadline set to the context's may fire before
// the context's own timer.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// dialErr is err, a failure to dial, as the caller sees it: the end of
// ctx is 5003, anything else 2002 with msg (an *amp.Error as it is when
// msg is empty).
func dialErr(ctx context.Context, err error, msg string) error {
	if cerr := ctxEnded(ctx); cerr != nil {
		return amp.Wrap(amp.CodeTimeout, cerr, "no connection to the agent in time")
	}
	if msg == "" {
		return err
	}
	return amp.Wrap(amp.CodeEndpointUnreachable, err, "%s", msg)
}

// RoundTrip sends msg and returns the reply whose reply_to is msg's id.
// Delivery failures are 2002 (retryable; a frame from the agent that
// stalls ends its connection with ErrReplyStalled); an ERROR frame about
// msg is unsigned, never the agent's word: transport.ErrUnsignedRefusal,
// 2002 when the frame says a retry may succeed and 1001 otherwise, its
// claims in the details (docs/SPEC-DECISIONS.md TRANSPORT-8); the end of
// ctx is 5003.
func (t *Transport) RoundTrip(ctx context.Context, msg []byte) ([]byte, error) {
	rawID := topBytes(msg, "id")
	if len(rawID) != 16 {
		return nil, amp.NewError(amp.CodeInvalidMessage, "the message has no 16-byte id to match its reply")
	}
	var id [16]byte
	copy(id[:], rawID)
	ch, _ := t.replies.Get().(chan result)
	if ch == nil {
		ch = make(chan result, 1)
	}
	var c *clientConn
	var err error
	for attempt := 0; ; attempt++ {
		if c, err = t.conn(ctx); err != nil {
			return nil, err
		}
		if len(msg) > c.peerMax {
			return nil, amp.Named(amp.CodeInvalidMessage, ErrFrameTooLarge, "the message is larger than the agent accepts (%d bytes)", c.peerMax)
		}
		err = c.register(id, ch)
		if err == nil {
			break
		}
		// A connection that began to go away since it was picked: take
		// the next one.
		if !errors.Is(err, errGoingAway) || attempt == 2 {
			return nil, err
		}
	}
	select {
	case c.out <- outFrame{typ: FrameMessage, payload: msg}:
	case <-c.done:
		c.unregister(id)
		return nil, c.err
	case <-ctx.Done():
		c.unregister(id)
		return nil, amp.Wrap(amp.CodeTimeout, ctx.Err(), "no reply in time")
	}
	select {
	case r := <-ch:
		t.replies.Put(ch)
		return r.reply, r.err
	case <-ctx.Done():
		c.unregister(id)
		return nil, amp.Wrap(amp.CodeTimeout, ctx.Err(), "no reply in time")
	}
}

type result struct {
	reply []byte
	err   error
}

// clientConn is one connection of a Transport.
type clientConn struct {
	t       *Transport
	conn    net.Conn
	br      *bufio.Reader
	peerMax int
	out     chan outFrame
	// pong holds the payload of the PONG the writer is to write next: at
	// most one waits, so that the reader never waits on the writer.
	pong chan []byte
	done chan struct{}

	mu        sync.Mutex
	pending   map[[16]byte]chan result
	goingAway bool
	failed    bool
	err       error // set before done is closed
	// last is the payload of a connection-level ERROR frame the writer
	// writes once done is closed, lastTimer the close that bounds it
	// (both set before done is closed; nil: none).
	last      []byte
	lastTimer *time.Timer
}

func (c *clientConn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.goingAway && !c.failed
}

func (c *clientConn) register(id [16]byte, ch chan result) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed {
		return c.err
	}
	if c.goingAway {
		return goingAway()
	}
	if _, dup := c.pending[id]; dup {
		return amp.NewError(amp.CodeInvalidMessage, "a message with this id is already in flight")
	}
	c.pending[id] = ch
	return nil
}

func (c *clientConn) unregister(id [16]byte) {
	c.mu.Lock()
	delete(c.pending, id)
	idle := c.goingAway && len(c.pending) == 0
	c.mu.Unlock()
	if idle {
		c.closeNow()
	}
}

// deliver hands r to the request with id; false when none waits for it.
func (c *clientConn) deliver(id []byte, r result) bool {
	if len(id) != 16 {
		return false
	}
	var k [16]byte
	copy(k[:], id)
	c.mu.Lock()
	ch, ok := c.pending[k]
	delete(c.pending, k)
	idle := c.goingAway && len(c.pending) == 0
	c.mu.Unlock()
	if ok {
		ch <- r
	}
	if idle {
		// Drained after GOAWAY: close, the server sees the end.
		c.closeNow()
	}
	return ok
}

// fail ends the connection: every waiting request gets err.
func (c *clientConn) fail(err error) { c.failWith(err, nil) }

// failWith ends the connection: every waiting request gets err at once.
// last, when not nil, is the payload of a connection-level ERROR frame:
// the writer, the only one that writes on the connection, writes it
// after the frame it may be writing and closes the connection, which is
// closed after lastLinger in any case (docs/SPEC-DECISIONS.md
// TRANSPORT-34).
func (c *clientConn) failWith(err error, last []byte) {
	c.mu.Lock()
	if c.failed {
		c.mu.Unlock()
		return
	}
	c.failed = true
	c.err = err
	pending := c.pending
	c.pending = map[[16]byte]chan result{}
	if last != nil {
		c.last = last
		c.lastTimer = time.AfterFunc(c.t.lastLinger, c.closeNow)
	}
	c.mu.Unlock()
	close(c.done)
	if last == nil {
		c.closeNow()
	}
	c.t.forget(c)
	for _, ch := range pending {
		ch <- result{err: err}
	}
}

// handshake exchanges the HANDSHAKE frames within HandshakeTimeout or
// until ctx ends, which closes the connection.
func (c *clientConn) handshake(ctx context.Context) error {
	o := c.t.opts
	deadline := time.Now().Add(o.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.conn.SetDeadline(deadline)
	defer c.conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	defer stop()
	req := EncodeHandshakeRequest(HandshakeRequest{Version: Version, MaxMsgSize: uint64(o.MaxMessageSize), DID: o.DID})
	if _, err := c.conn.Write(AppendFrame(nil, FrameHandshake, req)); err != nil {
		return amp.Wrap(amp.CodeEndpointUnreachable, err, "cannot send the handshake")
	}
	f, err := ReadFrame(c.br, MaxControlPayload+1)
	if err != nil {
		if errors.As(err, new(*amp.Error)) {
			return err
		}
		return amp.Wrap(amp.CodeEndpointUnreachable, err, "no handshake answer from the agent")
	}
	switch f.Type {
	case FrameHandshake:
	case FrameError:
		ef, err := DecodeErrorFrame(f.Payload)
		if err != nil {
			return err
		}
		// Unsigned, as every ERROR frame: a claimed 5004 is no more the
		// agent's word than a claimed 3001 (TRANSPORT-8).
		return unsignedFrame(ef.Error)
	default:
		return amp.Named(amp.CodeInvalidMessage, ErrProtocol, "the agent did not answer the handshake first")
	}
	resp, err := DecodeHandshakeResponse(f.Payload)
	if err != nil {
		return err
	}
	if resp.Version != Version {
		// The client's own finding (the binding versions differ), whatever
		// the response claims besides.
		return amp.Named(amp.CodeUnsupportedVersion, ErrHandshakeRefused, "the agent answered with version %d of the tcp binding", resp.Version)
	}
	if !resp.Accepted {
		// The response is unsigned: its error steers nothing, its code
		// and message are details only (TRANSPORT-8).
		var b amp.ErrorBody
		if resp.Error != nil {
			b = *resp.Error
		}
		return unsignedFrame(b)
	}
	c.peerMax = int(min(resp.MaxMsgSize, 1<<31-1))
	if !stop() {
		// ctx ended as the handshake did: the connection is closed.
		return amp.Wrap(amp.CodeTimeout, ctx.Err(), "no connection to the agent in time")
	}
	return nil
}

// writer writes queued frames (and the PONG waiting, if any), flushing
// when the queue is empty. Once the connection failed it writes no
// more of them: only its last frame, if any (writeLast).
func (c *clientConn) writer() {
	bw := bufio.NewWriterSize(c.conn, 64<<10)
	for {
		var f outFrame
		select {
		case <-c.done:
			c.writeLast(bw)
			return
		default:
		}
		select {
		case f = <-c.out:
		case p := <-c.pong:
			f = outFrame{typ: FramePong, payload: p}
		case <-c.done:
			c.writeLast(bw)
			return
		}
		c.conn.SetWriteDeadline(time.Now().Add(c.t.opts.WriteTimeout))
		err := f.writeTo(bw)
		if err == nil && len(c.out) == 0 && len(c.pong) == 0 {
			// Let callers about to send queue first: one write for
			// many frames.
			runtime.Gosched()
			if len(c.out) == 0 && len(c.pong) == 0 {
				err = bw.Flush()
			}
		}
		if err != nil {
			c.fail(amp.Wrap(amp.CodeEndpointUnreachable, err, "the connection to the agent failed"))
			return
		}
	}
}

// writeLast writes the failed connection's last frame, a
// connection-level ERROR frame if failWith left one, behind the whole
// frames written before it, within lastLinger of the failure (its
// timer closes the connection then), and closes the connection.
func (c *clientConn) writeLast(bw *bufio.Writer) {
	c.mu.Lock()
	last, timer := c.last, c.lastTimer
	c.mu.Unlock()
	if last == nil {
		return // closed by fail
	}
	// The deadline of the last frame written may have passed long ago
	// (an idle connection): the ERROR frame gets its own, the linger.
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.t.lastLinger))
	if err := (outFrame{typ: FrameError, payload: last}).writeTo(bw); err == nil {
		bw.Flush()
	}
	timer.Stop()
	c.closeNow()
}

// closeNow closes the connection at once: a TLS connection below TLS
// first, so that tls.Conn.Close writes no close_notify alert under TLS's
// own 5 s write deadline, which an agent that reads nothing (the socket
// full, no write of the writer's in progress) would hold: the calls
// waiting on a connection that failed, and Transport.Close, one
// connection after another (docs/SPEC-DECISIONS.md TRANSPORT-36; the
// server's serverConn.kill, TRANSPORT-26).
func (c *clientConn) closeNow() {
	if tc, ok := c.conn.(interface{ NetConn() net.Conn }); ok {
		tc.NetConn().Close()
	}
	c.conn.Close()
}

// ErrReplyStalled (2002, retryable) names a connection cut because a
// frame from the agent stopped arriving: once its first byte came, the
// frame must come under the minimum data rate the agent's own server
// applies to frames (transport.RateReader: admission.MinDataRate after
// admission.FrameGrace, and no stall longer than the grace), the rule of
// the HTTP binding's reply (amphttp.ErrReplyStalled). Every request on
// the connection fails with it; the next attempt dials anew
// (docs/SPEC-DECISIONS.md TRANSPORT-8).
const ErrReplyStalled amp.ErrName = "reply_stalled"

// readFrame reads the next frame from the agent. The wait for its first
// byte has no bound (an agent may take its time to answer, and an idle
// connection waits for nothing: the caller's context bounds its own
// wait); from that byte on, the frame is read under the minimum data rate
// (transport.RateReader, whose first deadline, the grace, also bounds
// the rest of the frame header).
func (c *clientConn) readFrame() (Frame, error) {
	c.conn.SetReadDeadline(time.Time{})
	if _, err := c.br.Peek(1); err != nil {
		return Frame{}, err
	}
	rr := transport.NewRateReader(c.br, c.conn.SetReadDeadline, 0, 0, 0)
	typ, size, err := readFrameHeader(c.br, c.t.opts.MaxMessageSize+1)
	if err != nil {
		return Frame{}, err
	}
	payload, err := readPayload(rr, size)
	if err != nil {
		return Frame{}, err
	}
	return Frame{Type: typ, Payload: payload}, nil
}

func (c *clientConn) readLoop() {
	for {
		f, err := c.readFrame()
		if isDeadline(err) {
			c.t.log.Info("tcp reply stalled: connection closed")
			c.fail(amp.Named(amp.CodeEndpointUnreachable, ErrReplyStalled, "a frame from the agent stopped arriving (below %d bytes/s after %v)", admission.MinDataRate, admission.FrameGrace).WithCause(err))
			return
		}
		if err != nil {
			c.mu.Lock()
			drained := c.goingAway && len(c.pending) == 0
			c.mu.Unlock()
			if !drained {
				c.t.log.Info("tcp connection ended", "err", err)
			}
			var last []byte
			if errors.As(err, new(*amp.Error)) {
				// A frame violation (docs/TRANSPORT.md §2): answered by
				// a connection-level ERROR frame, which the writer writes
				// (TRANSPORT-34).
				last = EncodeErrorFrame(err, nil)
			}
			c.failWith(amp.Wrap(amp.CodeEndpointUnreachable, err, "the connection to the agent ended"), last)
			return
		}
		switch f.Type {
		case FrameMessage:
			if !c.deliver(topBytes(f.Payload, "reply_to"), result{reply: f.Payload}) {
				// A late reply (its caller gave up) or one that answers
				// nothing we sent: dropped.
				c.t.log.Debug("tcp reply matches no request: dropped")
			}
		case FrameError:
			ef, err := DecodeErrorFrame(f.Payload)
			if err != nil {
				c.fail(err)
				return
			}
			if ef.MessageID == nil {
				c.fail(unsignedFrame(ef.Error))
				return
			}
			c.deliver(ef.MessageID, result{err: unsignedFrame(ef.Error)})
		case FramePing:
			// Answered unless the answer to an earlier PING still waits
			// for the writer: the reader never waits on the writer
			// (docs/SPEC-DECISIONS.md TRANSPORT-35).
			select {
			case c.pong <- f.Payload:
			default:
				c.t.log.Debug("tcp ping while a pong waits: not answered")
			}
		case FramePong:
		case FrameGoAway:
			c.mu.Lock()
			c.goingAway = true
			idle := len(c.pending) == 0
			c.mu.Unlock()
			if idle {
				c.closeNow()
			}
		case FrameHandshake:
			// A connection error (docs/TRANSPORT.md §5): answered by a
			// connection-level ERROR frame, and what is in flight fails
			// as delivery uncertain (2002), as on a frame violation.
			e := amp.Named(amp.CodeInvalidMessage, ErrProtocol, "a second HANDSHAKE from the agent")
			c.failWith(amp.Wrap(amp.CodeEndpointUnreachable, e, "the connection to the agent ended"), EncodeErrorFrame(e, nil))
			return
		}
	}
}

// unsignedFrame is the error of an ERROR frame, or of a HANDSHAKE response
// that refuses (its error, or none): unsigned, so never the agent's word
// (transport.ErrUnsignedRefusal). Its code is the binding's:
// 2002 when the frame says a retry may succeed (a delivery that failed),
// 1001 otherwise (the agent's transport refused the bytes); the frame's
// code and message are details only (docs/SPEC-DECISIONS.md TRANSPORT-8).
func unsignedFrame(b amp.ErrorBody) *amp.Error {
	retry := b.Code.Retryable()
	if b.Retry != nil {
		retry = *b.Retry
	}
	code := amp.CodeInvalidMessage
	if retry {
		code = amp.CodeEndpointUnreachable
	}
	u := transport.NewUnsignedRefusal(uint16(b.Code), b.Message)
	return amp.Named(code, transport.ErrUnsignedRefusal, "%s", u.Message()).WithDetails(u)
}

// topBytes returns the byte string under key in the top-level map of the
// AMP message msg, or nil (no such key, not a byte string, not a map,
// malformed CBOR). It reads with amp's strict head reader but checks no
// more than the route needs: the binding only matches a reply to its
// request by it, and the caller verifies the reply in full (signature,
// canonical encoding, reply_to) before using it. The full check of every
// message here cost a twentieth of the CPU of a TCP round trip.
func topBytes(msg []byte, key string) []byte {
	h, err := amp.ReadHead(msg, 0)
	if err != nil || h.Major != amp.MajorMap {
		return nil
	}
	off := h.Size
	for i := uint64(0); i < h.Arg; i++ {
		k, err := amp.ReadHead(msg, off)
		if err != nil {
			return nil
		}
		match := false
		if k.Major == amp.MajorText && k.Arg == uint64(len(key)) && uint64(len(msg)-off-k.Size) >= k.Arg {
			start := off + k.Size
			match = string(msg[start:start+len(key)]) == key
		}
		if off, err = amp.SkipItem(msg, off); err != nil {
			return nil
		}
		if match {
			v, err := amp.ReadHead(msg, off)
			if err != nil || v.Major != amp.MajorBytes || v.Arg > uint64(len(msg)-off-v.Size) {
				return nil
			}
			start := off + v.Size
			return msg[start : start+int(v.Arg)]
		}
		if off, err = amp.SkipItem(msg, off); err != nil {
			return nil
		}
	}
	return nil
}

// errGoingAway names the refusal of a connection that received GOAWAY:
// the caller sends on another (RoundTrip does, twice).
const errGoingAway = amp.ErrName("going_away")

// goingAway is the refusal of a message on a connection that received
// GOAWAY, in the shape of every other refusal of the binding: its name,
// code 2002 (retryable: the message was not sent, another connection
// may take it; docs/TRANSPORT.md §6) and a fixed text. A bare name
// carried no code, so amp.CodeOf and amp.NameOf read it as 5001
// internal_error (docs/SPEC-DECISIONS.md TRANSPORT-39).
func goingAway() error {
	return amp.Named(amp.CodeEndpointUnreachable, errGoingAway, "the connection to the agent is going away (goaway); send on another")
}

var _ fmt.Stringer = (*Transport)(nil)
