package amphttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/transport"
)

// The HTTP binding of the public RFC 002 draft (Transport Bindings, v0.15;
// docs/SPEC-DECISIONS.md TRANSPORT-1).
const (
	// MessagesPath is where AMP messages are POSTed.
	MessagesPath = "/amp/v1/messages"
	// HealthPath answers GET with the agent's status.
	HealthPath = "/healthz"
	// ContentType of requests and replies.
	ContentType = "application/cbor"
	// TransportVersionHeader carries the binding version ("1").
	TransportVersionHeader = "X-AMP-Transport-Version"
	// DefaultMaxBody is the agent endpoint limit the RFC 002 draft recommends.
	DefaultMaxBody = 16 << 20
)

// Defaults of the binding's admission limits.
const (
	DefaultMaxInFlight      = 64
	DefaultMaxInFlightBytes = 64 << 20
	DefaultRetryAfter       = time.Second
)

// Handler answers one AMP message with the reply to send back (nil for
// none: the message was a report). An error whose type has a method
// Unverified() bool that returns true (agent.UnverifiedError) means the
// bytes did not verify, so no signed reply can be addressed: it is
// answered 400 with an unsigned error body. An *agent.Agent is a Handler.
type Handler interface {
	Handle(ctx context.Context, msg []byte) ([]byte, error)
	// DID is the agent's DID, shown by GET /healthz.
	DID() string
}

// Options configures the HTTP binding's server side.
type Options struct {
	// MaxBody caps a request body (default 16 MiB; at least 1 MiB is
	// required by the binding). A larger body is 413 and is not read.
	MaxBody int64
	// MaxInFlight caps the messages being read or processed at once
	// (default 64). Beyond it a request is answered 503 with Retry-After
	// at once: never queued.
	MaxInFlight int
	// MaxPeerInFlight caps the requests of one peer (an IP address, an
	// IPv6 /48: admission.Network of transport.Peer, every /64 of a site
	// together, as the listener counts its connections) among them
	// (default a quarter of MaxInFlight, at least 1, at most
	// MaxInFlight): beyond it, 503 with Retry-After, so that one host
	// cannot hold every slot (by sending bodies slowly, for example;
	// docs/SPEC-DECISIONS.md TRANSPORT-28). A share lent beyond it while
	// the server is idle would not come back while slow requests hold
	// it: it is strict. Behind a proxy, every caller is one peer: give
	// MaxInFlight.
	MaxPeerInFlight int
	// MaxInFlightBytes caps the request bytes held in memory at once, all
	// requests together (default 64 MiB, at least MaxBody + 1: a body is
	// charged a byte more than its length, to see a byte too many). A
	// body is charged as it is read; one that does not fit is 503 with
	// Retry-After.
	MaxInFlightBytes int64
	// MaxPeerInFlightBytes caps the bytes one peer (an IP address, an
	// IPv6 /64: transport.Peer) holds of them, all its requests together
	// (default a quarter of MaxInFlightBytes, at least MaxBody + 1, at
	// most MaxInFlightBytes): beyond it, 503 with Retry-After.
	MaxPeerInFlightBytes int64
	// MinDataRate is the slowest a body may arrive, in bytes per second
	// (default admission.MinDataRate, 128 KiB/s), the rule of
	// transport.RateReader: a body of declared length is charged at once;
	// after admission.FrameGrace (5 s), what has arrived must keep up
	// with MinDataRate on average, and no more than that grace may pass
	// without a byte, or the request is cut off and its charge given
	// back (and the whole body gets at most the server's 30 s read
	// timeout). The answer is written under the same rule
	// (transport.RateWriter), the peer now reading: once the agent
	// returned, the request's slot and bytes are given back and the
	// reply's bytes charged in their place, to the peer's share and the
	// server's, until it is written; a peer that reads it slower than
	// MinDataRate (after the grace), or stalls, has its connection
	// closed; the whole answer gets its size at MinDataRate plus the
	// grace, within the http.Server's WriteTimeout (NewServer's
	// writeTimeout), so a site on a slow link lowers MinDataRate to let
	// large replies through.
	MinDataRate int64
	// RetryAfter is the Retry-After of a 503 (default 1 s).
	RetryAfter time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Health adds fields to the GET /healthz answer.
	Health func() map[string]any
	// grace replaces admission.FrameGrace (tests).
	grace time.Duration
}

// NewHandler serves a on the HTTP binding:
//
//	POST /amp/v1/messages  one AMP message (application/cbor) -> 200 with the
//	                       signed reply (application/cbor)
//	GET  /healthz          200 {"status":"ok","did":...}
//
// Refusals without a signed answer carry an unsigned CBOR error body
// (docs/FORMAT.md, "Transport error body"): a body over MaxBody is 413
// (refused from Content-Length before it is read, and cut off while
// reading otherwise); a message that does not verify (malformed, stale,
// unknown sender key, bad signature) is 400, whatever sender it claims:
// nothing is signed in answer to what did not verify; an unsupported
// X-AMP-Transport-Version is 400 (1004); more than MaxInFlight requests or
// MaxInFlightBytes bytes at once, or than a peer's share of them
// (MaxPeerInFlight, MaxPeerInFlightBytes), is 503 with Retry-After (5004); a
// Content-Type other than application/cbor is 415; anything but POST is
// 405 with Allow: POST and a short JSON body (readable on a terminal;
// nothing of the request echoed); other paths 404. Transport success is not application success:
// refusals of verified messages are signed ERROR messages in a 200.
func NewHandler(a Handler, opts Options) http.Handler { return newServer(a, opts).routes() }

// newServer builds what NewHandler's routes share, its options defaulted.
func newServer(a Handler, opts Options) *server {
	opts = opts.withDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &server{
		a:          a,
		opts:       opts,
		log:        log,
		adm:        transport.NewAdmission(opts.MaxInFlight, opts.MaxPeerInFlight, opts.MaxInFlightBytes, opts.MaxPeerInFlightBytes),
		retryAfter: strconv.Itoa(int((opts.RetryAfter + time.Second - 1) / time.Second)),
	}
}

// routes is NewHandler's mux over s; the write of every answer that
// does not wait for the agent is bounded from the start (bound).
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(MessagesPath, s.messages)
	mux.HandleFunc(HealthPath, s.health)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, amp.NewError(amp.CodeEndpointUnreachable, "no such route"))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer but the agent's (a POST to MessagesPath, which
		// waits for the agent and is bounded once it begins: answer,
		// refuse) is ready at once: its write is bounded from here,
		// the mux's redirects to a clean path included (TRANSPORT-31).
		if r.Method != http.MethodPost || r.URL.Path != MessagesPath {
			s.bound(w, r)
		}
		mux.ServeHTTP(w, r)
	})
}

// withDefaults fills the limits left zero and brings the others into
// the ranges Options documents, so that the server reads each limit
// once, already valid.
func (opts Options) withDefaults() Options {
	limit.Default(&opts.MaxBody, DefaultMaxBody)
	limit.Default(&opts.MaxInFlight, DefaultMaxInFlight)
	limit.Default(&opts.MaxPeerInFlight, opts.MaxInFlight/4)
	opts.MaxPeerInFlight = min(max(opts.MaxPeerInFlight, 1), opts.MaxInFlight)
	limit.Default(&opts.MaxInFlightBytes, DefaultMaxInFlightBytes)
	// A body of MaxBody is charged one byte more (to see a byte too
	// many): both caps leave room for it.
	opts.MaxInFlightBytes = max(opts.MaxInFlightBytes, opts.MaxBody+1)
	limit.Default(&opts.MaxPeerInFlightBytes, opts.MaxInFlightBytes/4)
	opts.MaxPeerInFlightBytes = min(max(opts.MaxPeerInFlightBytes, opts.MaxBody+1), opts.MaxInFlightBytes)
	limit.Default(&opts.RetryAfter, DefaultRetryAfter)
	return opts
}

// methodNotAllowedBody answers anything but POST on MessagesPath (405).
// It has the shape of the serve command's other JSON errors
// ({"error":{"code","name","message"}}, docs/CLI.md).
const methodNotAllowedBody = `{"error":{"code":1001,"name":"method_not_allowed","message":"AMP messages are POSTed here, as application/cbor; GET ` +
	HealthPath + ` shows the agent's status"}}` + "\n"

var (
	errTooLarge = errors.New("body over the limit")
	errNoRoom   = errors.New("no room for the body")
)

// readTimeout bounds the reading of a request (NewServer), and so the
// time a body's charge may be held.
const readTimeout = 30 * time.Second

// idleTimeout closes a connection idle between requests.
const idleTimeout = 120 * time.Second

// maxStreams bounds the streams one HTTP/2 connection has open at once
// (NewServer): a peer's default share of the messages in flight
// (DefaultMaxInFlight / 4). net/http's default, 250, let one connection
// hold 250 handlers, each with its request and answer (about 12 KiB),
// until the write timeout: a peer that opens no flow-control window
// (SETTINGS_INITIAL_WINDOW_SIZE 0) and asks for anything with a body (a
// 503, a 404, /healthz) pins each one, and one address holds a quarter of
// the listener's connections (docs/SPEC-DECISIONS.md TRANSPORT-29).
const maxStreams = DefaultMaxInFlight / 4

// connKey is the context key of a request's connection (withConn).
type connKey struct{}

// withConn is NewServer's ConnContext: the request's context names its
// connection, which answer closes when the write of its answer passes
// its deadline (over HTTP/2 the stream's deadline alone does not end a
// write stuck behind the connection's).
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// readChunk is how much of a body of unknown length is charged at a time.
const readChunk = 64 << 10

// readBody reads a body of at most max bytes, charging every byte
// before it is held: the peer's share (declare) with the whole length at
// once when it is known (length >= 0), and the server's bytes (charge)
// readChunk at a time as the body arrives; a body of unknown length is
// charged to both chunk by chunk. The chunks are read into buffers of
// their own, so that what is held is what is charged (a buffer grown by
// doubling held up to twice what was charged), and joined once at the
// end: the joined copy is charged to the server's bytes too (force,
// without checking the cap: the body was admitted) before it is made,
// and the chunks' charge given back (release) once it is, so a body is
// held twice, and charged twice, only for that copy. It never reads more
// than max+1 bytes.
func readBody(r io.Reader, length, max int64, declare, charge func(int64) bool, force, release func(int64)) ([]byte, error) {
	limit := max + 1 // a byte too many shows the body is over max
	if length >= 0 {
		if !declare(length + 1) {
			return nil, errNoRoom
		}
		limit = length + 1
	}
	var chunks [][]byte
	var total, charged int64
	for {
		want := min(limit-total, readChunk)
		if want <= 0 {
			return nil, errTooLarge
		}
		if length < 0 && !declare(want) {
			return nil, errNoRoom
		}
		if !charge(want) {
			return nil, errNoRoom
		}
		charged += want
		c := make([]byte, want)
		n, err := io.ReadFull(r, c)
		total += int64(n)
		if n > 0 {
			chunks = append(chunks, c[:n])
		}
		switch {
		case err == nil:
			continue // more to come, or a byte too many (want <= 0 next)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		default:
			return nil, err
		}
		switch {
		case length >= 0 && total != length:
			return nil, io.ErrUnexpectedEOF
		case total > max:
			return nil, errTooLarge
		case len(chunks) == 0:
			return []byte{}, nil
		case len(chunks) == 1:
			return chunks[0], nil
		}
		force(total)
		body := make([]byte, 0, total)
		for i, c := range chunks {
			body = append(body, c...)
			chunks[i] = nil
		}
		release(charged)
		return body, nil
	}
}

// closeUnread closes the connection of a request refused with its body
// unread (413, 503), once the answer is out, without losing that answer
// and without waiting for the rest of the body: the answer is flushed,
// the connection taken over and closed by transport.CloseAfterAnswer, in
// its own goroutine so that the request ends with the answer (its
// duration and in-flight count leave the linger out; the connection is
// still counted by the listener's limits until it closes) (a
// socket closed at once with unread bytes resets the connection, and a
// client still sending its body sees "connection reset" instead of the
// answer; Go's own client reports the failed write when it notices it
// first). Where the connection cannot be taken over (HTTP/2: its stream
// ends with the answer), reading the rest of the body stops at once.
func closeUnread(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		rc.SetReadDeadline(time.Now())
		return
	}
	go transport.CloseAfterAnswer(conn, transport.AnswerLinger, transport.AnswerDrain)
}

// httpError answers with an unsigned CBOR error body (RFC 001 error-body):
// for failures that cannot be attributed to a sender, so no signed ERROR
// can be addressed.
func httpError(w http.ResponseWriter, status int, err error) {
	body, merr := amp.Marshal(amp.ErrorBodyOf(err))
	if merr != nil {
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// NewServer returns an http.Server for h with timeouts on headers,
// reads, writes and idle connections. writeTimeout counts from a
// request's headers and must exceed the longest time its handler may take
// to answer, plus a margin: for an agent, agent.Bounds.LongestAnswer (a
// BATCH: MaxBatchDuration plus one item's timeout), not only MaxTimeout.
// Past it an HTTP/2 stream is reset and its answer lost. The write of
// the answer itself is bounded on its own once the handler returned
// (the minimum data rate, whole within its size at that rate plus the
// grace, and within writeTimeout: NewHandler).
//
// Over HTTP/2 (ServeTLS) a stream's write deadline resets the stream only
// once its RST_STREAM frame is written, behind the frames already stuck
// in the connection's write, and net/http leaves the connection itself
// without a write deadline: a peer that opens a large flow-control window
// and stops reading would keep its reply's charge for as long as it keeps
// the connection. So the server (1) closes a connection to which nothing
// could be written for admission.FrameGrace (HTTP2Config.WriteByteTimeout:
// the stall rule of the minimum data rate), (2) pings a connection from
// which nothing came for the idle timeout and closes it when the ping is
// not answered within admission.FrameGrace (SendPingTimeout,
// PingTimeout), and (3) hands each request its connection (ConnContext),
// so that an answer whose write passes its deadline closes the
// connection a grace later whatever the protocol (answer), and a peer
// that trickles cannot hold its reply either. (4) One connection has at
// most maxStreams streams open (HTTP2Config.MaxConcurrentStreams), so
// that a peer that never opens a flow-control window pins at most that
// many handlers a connection, as HTTP/1.1 pins one.
func NewServer(h http.Handler, writeTimeout time.Duration, log *slog.Logger) *http.Server {
	limit.Default(&writeTimeout, 90*time.Second)
	s := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: maxStreams,
			WriteByteTimeout:     admission.FrameGrace,
			SendPingTimeout:      idleTimeout,
			PingTimeout:          admission.FrameGrace,
		},
		ConnContext: withConn,
	}
	if log != nil {
		s.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	return s
}

// Transport is the client side of the HTTP binding: it POSTs each
// message to BaseURL + /amp/v1/messages and returns the reply, reusing
// connections. It satisfies client.Transport. Safe for concurrent use.
type Transport struct {
	url    string
	client *http.Client
	max    int64
}

// NewTransport returns a transport to the agent at baseURL
// ("http://127.0.0.1:8080"). maxConns bounds idle connections kept per host
// (default 64: above the usual client concurrency, so connections are
// reused: net/http keeps only 2 idle connections per host by default).
// Replies over 16 MiB are refused.
func NewTransport(baseURL string, maxConns int) (*Transport, error) {
	return NewTransportWith(baseURL, TransportOptions{MaxConns: maxConns})
}

// TransportOptions configure NewTransportWith.
type TransportOptions struct {
	// MaxConns bounds idle connections kept per host (default 64).
	MaxConns int
	// PlainLoopbackOnly lets http:// (no TLS) connect to a loopback
	// address only, checked on the address dialed once the host name is
	// resolved (transport.LoopbackOnly): a name that looks local but
	// resolves elsewhere is refused, 3001 ErrPlainRemote, final. https://
	// is not concerned.
	PlainLoopbackOnly bool
}

// ErrPlainRemote names the refusal of a plain http:// connection to an
// address that is not loopback, under TransportOptions.PlainLoopbackOnly
// (the name of amp://'s refusal, ampstcp).
const ErrPlainRemote amp.ErrName = "plain_remote"

// NewTransportWith is NewTransport with options.
func NewTransportWith(baseURL string, o TransportOptions) (*Transport, error) {
	baseURL = strings.TrimRight(baseURL, "/")
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, amp.Named(0, "misconfigured", "the agent url must start with http:// or https://")
	}
	maxConns := o.MaxConns
	limit.Default(&maxConns, 64)
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if o.PlainLoopbackOnly && strings.HasPrefix(baseURL, "http://") {
		dialer.Control = transport.LoopbackOnly
	}
	tr := &http.Transport{
		Proxy:               nil, // never through a proxy: an air-gapped site has none to trust
		DialContext:         dialer.DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		// Invocations take their time before the answer's first byte
		// (the context bounds that wait); the headers, once begun, are
		// bounded by RoundTrip (headerStall) and their size here.
		ResponseHeaderTimeout:  0,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      true,
		// No gzip asked, so none inflated: the reply's bounds (its size,
		// the minimum data rate) count the bytes on the wire, never what
		// an agent's padding of empty deflate blocks inflates to
		// (docs/SPEC-DECISIONS.md TRANSPORT-33, as MIRROR-27 for sync).
		DisableCompression: true,
		// Over HTTP/2 the first response byte is reported only once the
		// header block is whole, and the connection's one reader waits
		// for a CONTINUATION that never comes: a connection from which
		// nothing came for the grace is pinged, and closed when the ping
		// is not answered within the grace (an agent's server answers at
		// once, a peer in the middle of a header block cannot).
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: admission.FrameGrace,
			PingTimeout:     admission.FrameGrace,
		},
	}
	// Redirects are never followed: the message goes to the URL the user
	// gave and nowhere else (a hostile agent would otherwise have the
	// signed message re-posted to any host, a local service included, or
	// make the client fetch a URL of its choosing).
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Transport{url: baseURL + MessagesPath, client: &http.Client{Transport: tr, CheckRedirect: noRedirect}, max: DefaultMaxBody}, nil
}

// readReply reads a reply body of at most max+1 bytes (one more shows
// it is over max). A declared length within max bounds how far the
// buffer grows ahead of the bytes, never funds it: the buffer starts at
// readChunk (or the length, when smaller: a small reply is read into one
// buffer), and doubles as bytes fill it, up to the length (threat: 200
// with a Content-Length of 16 MiB and nothing after cost the client
// 16 MiB per call; ampstcp.ReadFrame's rule, memory grows with the bytes
// that arrive). Nor is the length trusted as a bound: the buffer grows
// past it, to max+1 at most, if more bytes come.
func readReply(r io.Reader, length, max int64) ([]byte, error) {
	r = io.LimitReader(r, max+1)
	if length < 0 || length > max {
		return io.ReadAll(r)
	}
	buf := make([]byte, 0, min(length, readChunk)+1) // +1: the EOF is seen without growing
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			if next := min(2*int64(cap(buf)), length+1); next > int64(cap(buf)) {
				buf = append(make([]byte, 0, next), buf...) // within the length: double
			} else {
				buf = append(buf, 0)[:len(buf)] // more than declared: grow
			}
		}
	}
}

// ErrRedirect names the refusal of a redirect: the client never follows
// one. It is final (amp.Error.Final): the same message to the same URL
// gets the same answer.
const ErrRedirect amp.ErrName = "redirect_refused"

// MaxRefusalBody bounds the bytes of a reply body read when the status
// is not 200: an unsigned error body is a CBOR ErrorBody of a few hundred
// bytes, and a longer body is dropped unread with its connection, so that
// a refusal (a retryable 503 above all) never costs the client its
// message bound per attempt (docs/SPEC-DECISIONS.md TRANSPORT-8).
const MaxRefusalBody = 64 << 10

// ErrReplyStalled names a reply that stopped arriving: its headers must
// be whole within admission.FrameGrace of their first byte, and the body
// then come under the minimum data rate the agent applies to requests
// (transport.RateReader: admission.MinDataRate after admission.FrameGrace,
// and no stall longer than the grace). 2002, retryable.
const ErrReplyStalled amp.ErrName = "reply_stalled"

// maxHeaderBytes bounds the headers of a request the server reads
// (NewServer) and of a reply the client reads (NewTransport): 64 KiB.
// A reply whose headers pass it is a delivery failure, 2002, not read
// further (docs/SPEC-DECISIONS.md TRANSPORT-8).
const maxHeaderBytes = 64 << 10

// headerStall ends a request whose reply headers began but are not
// whole within grace of their first byte (httptrace's
// GotFirstResponseByte): the agent may take its time before it answers,
// but once it does, it has the answer whole (TRANSPORT-8), so its
// headers come at once. An interim 1xx head that is whole is not the
// answer: the watch ends with it, as if nothing had come yet, and at
// most maxInformational of them are read. Safe for concurrent use: the
// trace calls start and informational from the transport's goroutine.
type headerStall struct {
	mu    sync.Mutex
	grace time.Duration
	end   func() // ends the request, its cause errStalled
	timer *time.Timer
	done  bool
	info  int // interim 1xx heads read
}

// maxInformational bounds the interim 1xx heads read before a reply
// (net/http leaves the count to whoever watches them, each under its own
// header bound): the limit net/http itself kept before Go 1.24.
const maxInformational = 5

// errTooManyInformational ends a request whose agent sends more than
// maxInformational interim 1xx heads.
var errTooManyInformational = fmt.Errorf("more than %d interim (1xx) answers before the reply", maxInformational)

// informational is httptrace's Got1xxResponse: the interim head is
// whole, so the watch ends (GotFirstResponseByte is reported once, at
// the first head's first byte); the next head is the agent's to send when
// it holds the answer, within the caller's deadline.
func (h *headerStall) informational(int, textproto.MIMEHeader) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.info++
	if h.info > maxInformational {
		return errTooManyInformational
	}
	h.done = true
	if h.timer != nil {
		h.timer.Stop()
	}
	return nil
}

// start begins the grace at the answer's first byte (once).
func (h *headerStall) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done && h.timer == nil {
		h.timer = time.AfterFunc(h.grace, h.end)
	}
}

// stop ends the watch once the headers are whole (or the request
// failed); a start that comes later does nothing.
func (h *headerStall) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	if h.timer != nil {
		h.timer.Stop()
	}
}

// MaxRetryAfter bounds the Retry-After the transport passes on (a client
// caps it again at its own Retry.Max).
const MaxRetryAfter = time.Hour

// retryAfter is the cause of a busy refusal that carried Retry-After: its
// RetryAfter method is what client.Client reads to wait at least as long
// before the next attempt (docs/SPEC-DECISIONS.md TRANSPORT-8).
type retryAfter time.Duration

func (r retryAfter) Error() string {
	return "the agent asks to retry after " + time.Duration(r).String()
}

// RetryAfter is the wait the agent asked for, at most MaxRetryAfter.
func (r retryAfter) RetryAfter() time.Duration { return time.Duration(r) }

// parseRetryAfter reads a Retry-After header (delay-seconds, or an
// HTTP-date, RFC 9110 §10.2.3), bounded by MaxRetryAfter; 0 when absent
// or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		if n > uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(now), 0), MaxRetryAfter)
}

// errStalled is the cause with which a stalled reply's request is ended.
var errStalled = errors.New("the reply body stalled")

// RoundTrip implements client.Transport. Delivery failures are 2002
// (retryable; a reply whose headers or body stall is 2002 reply_stalled,
// headers over 64 KiB a failure to deliver); a redirect
// is never followed (2002 redirect_refused, final); a 413 or 400 is the
// agent refusing the bytes (1001); 429 and 503 are 2003 (retryable, with
// the Retry-After the agent sent as the cause); 5xx is 5001. A CBOR error
// body never stands for the agent's word: it is unsigned, so the error is
// transport.ErrUnsignedRefusal with the status's code and the body's
// claims as details only.
func (t *Transport) RoundTrip(ctx context.Context, msg []byte) ([]byte, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, t.url, bytes.NewReader(msg))
	if err != nil {
		return nil, amp.Wrap(amp.CodeEndpointUnreachable, err, "cannot build the request")
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", ContentType)
	req.Header.Set(TransportVersionHeader, "1")
	hs := &headerStall{grace: admission.FrameGrace, end: func() { cancel(errStalled) }}
	req = req.WithContext(httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{GotFirstResponseByte: hs.start, Got1xxResponse: hs.informational}))
	resp, err := t.client.Do(req)
	hs.stop()
	if err != nil {
		if nl := (*transport.NotLoopbackError)(nil); errors.As(err, &nl) {
			e := amp.Named(amp.CodeUnauthorized, ErrPlainRemote, "plain http:// reached %s, not a loopback address: use https://", nl.Addr)
			e.Final = true
			return nil, e
		}
		if ctx.Err() != nil {
			return nil, amp.Wrap(amp.CodeTimeout, err, "no reply in time")
		}
		if errors.Is(context.Cause(rctx), errStalled) {
			return nil, amp.Named(amp.CodeEndpointUnreachable, ErrReplyStalled, "the reply's headers stopped arriving (not whole %v after their first byte)", hs.grace)
		}
		if errors.Is(err, errTooManyInformational) {
			return nil, amp.NewError(amp.CodeEndpointUnreachable, "the agent sent more than %d interim (1xx) answers before its reply", maxInformational)
		}
		return nil, amp.Wrap(amp.CodeEndpointUnreachable, err, "cannot reach the agent")
	}
	defer resp.Body.Close()
	// The agent sends the headers once it holds the whole reply: the body
	// comes at the minimum data rate, or the request ends.
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	set := func(at time.Time) error {
		if stall == nil {
			stall = time.AfterFunc(time.Until(at), func() { cancel(errStalled) })
		} else {
			stall.Reset(time.Until(at))
		}
		return nil
	}
	// Only a 200 carries a reply: any other status is read under
	// MaxRefusalBody (an error body is a few hundred bytes), the rest
	// dropped unread, which closes the connection (TRANSPORT-8).
	bound := t.max
	if resp.StatusCode != http.StatusOK {
		bound = min(bound, MaxRefusalBody)
	}
	body, err := readReply(transport.NewRateReader(resp.Body, set, 0, 0, 0), resp.ContentLength, bound)
	if err != nil {
		if ctx.Err() != nil {
			return nil, amp.Wrap(amp.CodeTimeout, err, "no reply in time")
		}
		if errors.Is(context.Cause(rctx), errStalled) {
			return nil, amp.Named(amp.CodeEndpointUnreachable, ErrReplyStalled, "the reply stopped arriving (below %d bytes/s after %v)", admission.MinDataRate, admission.FrameGrace)
		}
		return nil, amp.Wrap(amp.CodeEndpointUnreachable, err, "the reply was cut off")
	}
	if int64(len(body)) > bound {
		if resp.StatusCode == http.StatusOK {
			return nil, amp.NewError(amp.CodeInvalidMessage, "the reply is larger than %d bytes", t.max)
		}
		body = nil // no error body: the status alone speaks
	}
	if resp.StatusCode == http.StatusAccepted {
		// Taken without a reply: the message was a report.
		return nil, nil
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Whatever body it carries: a redirect is refused as such.
		e := amp.Named(amp.CodeEndpointUnreachable, ErrRedirect, "the agent answered with a redirect (http %d), which is not followed: give the agent's own url", resp.StatusCode)
		e.Final = true
		return nil, e
	}
	var e *amp.Error
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		e = amp.NewError(amp.CodeRelayRejected, "the agent is busy or unavailable (http %d)", resp.StatusCode)
		if d := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
			e.Err = retryAfter(d)
		}
		return nil, e
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		e = amp.NewError(amp.CodeInvalidMessage, "the message is too large for the agent")
	case resp.StatusCode == http.StatusNotFound:
		e = amp.NewError(amp.CodeEndpointUnreachable, "no amp endpoint at this url (http 404)")
	case resp.StatusCode >= 500:
		e = amp.NewError(amp.CodeInternalError, "the agent failed (http %d)", resp.StatusCode)
	default:
		e = amp.NewError(amp.CodeInvalidMessage, "the agent refused the message (http %d)", resp.StatusCode)
	}
	// A CBOR error body, when the agent sent one, is unsigned: what it
	// claims is kept as details, under the status's code.
	if eb, derr := amp.DecodeError(body); derr == nil {
		u := transport.NewUnsignedRefusal(uint16(eb.Code), eb.Message)
		return nil, amp.Named(e.Code, transport.ErrUnsignedRefusal, "%s", u.Message()).WithDetails(u).WithCause(e)
	}
	return nil, e
}

// Close closes idle connections.
func (t *Transport) Close() { t.client.CloseIdleConnections() }

// String describes the transport.
func (t *Transport) String() string { return fmt.Sprintf("http %s", t.url) }
