package amphttp

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport"
)

// server is what NewHandler's routes share: the handler, the limits
// (already defaulted by Options.withDefaults) and the admission that
// every request of MessagesPath enters. It is built once per handler;
// a request allocates none of it.
type server struct {
	a    Handler
	opts Options
	log  *slog.Logger
	adm  *transport.Admission
	// retryAfter is the Retry-After of a 503, in whole seconds, formatted
	// once.
	retryAfter string
}

// messages answers MessagesPath: anything but POST is 405 with a JSON
// body, and a POST refused with its body unread has its connection
// closed once the answer is out (closeUnread), after serve has given its
// admission back.
func (s *server) messages(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(TransportVersionHeader, "1")
	if r.Method != http.MethodPost {
		// Readable where a newcomer looks (a browser, curl on a
		// terminal): JSON, not CBOR, and nothing of the request
		// echoed.
		w.Header().Set("Allow", http.MethodPost)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, methodNotAllowedBody)
		return
	}
	if s.serve(w, r) {
		closeUnread(w)
	}
}

// health answers HealthPath (GET or HEAD) with the agent's DID and the
// fields of Options.Health, as JSON.
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	doc := map[string]any{"status": "ok", "did": s.a.DID()}
	if s.opts.Health != nil {
		for k, v := range s.opts.Health() {
			doc[k] = v
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

// busy answers 503 with Retry-After: the admission limit named by what
// (a count or "bytes") is reached.
func (s *server) busy(w http.ResponseWriter, r *http.Request, what string) {
	admission.Log(r.Context(), s.log).Warn("request refused: agent busy", "limit", what)
	w.Header().Set("Retry-After", s.retryAfter)
	s.refuse(w, r, http.StatusServiceUnavailable, amp.Named(amp.CodeOverloaded, "busy", "the agent is busy; retry later"))
}

// serve answers one POST; true means the body was left unread and
// the connection must be closed without losing the answer (refused):
// the caller does it once serve's admission is given back. The steps run
// in order, each before anything of the next is spent: the headers
// (refuseHeaders), the admission of the peer, the body read under its
// charge (readCharged), the agent, the answer (answer). The admission is
// held until the agent returns; from then the server holds the reply,
// not the request: the request's slot and bytes are given back, and the
// reply's bytes charged in their place until it is written
// (held.answered), the write itself bounded by the minimum data rate
// (answer).
func (s *server) serve(w http.ResponseWriter, r *http.Request) (refused bool) {
	if answered, refused := s.refuseHeaders(w, r); answered {
		return refused
	}
	peer := transport.Peer(r.RemoteAddr)
	if what := s.adm.Enter(peer); what != "" {
		w.Header().Set("Connection", "close")
		s.busy(w, r, what)
		return true
	}
	// A body over transport.SmallBody, or of unknown length, is
	// large: the large ones leave transport.SmallReserve of the
	// server's bytes to small ones, as on the TCP binding.
	h := held{adm: s.adm, peer: peer, large: r.ContentLength < 0 || r.ContentLength > transport.SmallBody}
	defer h.leave()
	body, err := s.readCharged(w, r, &h)
	if err != nil {
		return s.refuseBody(w, r, err)
	}
	// The agent hands out its processing slots by peer
	// (admission.Fair): the context names this one.
	reply, err := s.a.Handle(admission.WithPeer(r.Context(), peer), body)
	body = nil
	h.answered(int64(len(reply)))
	s.answer(w, r, reply, err)
	return false
}

// refuseHeaders answers a request whose headers alone refuse it: an
// unsupported transport version (400), a content type other than
// application/cbor (415), a declared length over MaxBody (413, the body
// left unread: refused). answered is false when the headers pass.
func (s *server) refuseHeaders(w http.ResponseWriter, r *http.Request) (answered, refused bool) {
	if v := r.Header.Get(TransportVersionHeader); v != "" && v != "1" {
		s.refuse(w, r, http.StatusBadRequest, amp.NewError(amp.CodeUnsupportedVersion, "this agent speaks transport version 1 only"))
		return true, false
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, ContentType) {
		s.refuse(w, r, http.StatusUnsupportedMediaType, amp.NewError(amp.CodeInvalidMessage, "content type must be application/cbor"))
		return true, false
	}
	if r.ContentLength > s.opts.MaxBody {
		admission.Log(r.Context(), s.log).Info("request refused: body over the limit", "length", r.ContentLength)
		w.Header().Set("Connection", "close")
		s.refuse(w, r, http.StatusRequestEntityTooLarge, amp.NewError(amp.CodeInvalidMessage, "message is larger than %d bytes", s.opts.MaxBody))
		return true, true
	}
	return false, false
}

// readCharged reads the body of r, every byte charged to h before it is
// held (readBody). What is charged must keep coming, at the minimum data
// rate (transport.RateReader: the same rule as the TCP binding's). The
// declared length is charged to the peer's share at once, the server's
// bytes as they arrive (as on the TCP binding). Once the body is whole
// its read deadline is cleared: over HTTP/1.1 net/http watches the
// connection from the body's end with a read of its own (the client's
// departure ends the request's context), which the RateReader's last
// deadline, set after net/http cleared it, timed out a grace later, and
// net/http then ended the context of a message whose caller still
// waited (docs/SPEC-DECISIONS.md TRANSPORT-30).
func (s *server) readCharged(w http.ResponseWriter, r *http.Request, h *held) ([]byte, error) {
	rc := http.NewResponseController(w)
	in := transport.NewRateReader(r.Body, rc.SetReadDeadline, s.opts.MinDataRate, s.opts.grace, readTimeout)
	body, err := readBody(in, r.ContentLength, s.opts.MaxBody, h.declare, h.charge, h.force, h.release)
	if err == nil {
		rc.SetReadDeadline(time.Time{})
	}
	return body, err
}

// refuseBody answers a body that could not be read whole: over MaxBody
// (413) or beyond the bytes admitted (503), both with the rest left
// unread (refused), or cut off (400).
func (s *server) refuseBody(w http.ResponseWriter, r *http.Request, err error) (refused bool) {
	switch {
	case errors.Is(err, errTooLarge):
		w.Header().Set("Connection", "close")
		s.refuse(w, r, http.StatusRequestEntityTooLarge, amp.NewError(amp.CodeInvalidMessage, "message is larger than %d bytes", s.opts.MaxBody))
		return true
	case errors.Is(err, errNoRoom):
		w.Header().Set("Connection", "close")
		s.busy(w, r, "bytes")
		return true
	default:
		s.refuse(w, r, http.StatusBadRequest, amp.NewError(amp.CodeInvalidMessage, "cannot read the request body"))
		return false
	}
}

// answer writes what the agent made of a message: its signed reply (200),
// nothing for a report (202), or an unsigned error body whose status
// says whether the bytes verified (400 if not: nothing is signed in
// answer to them), whether a retry may succeed (503 with Retry-After),
// or neither (500). The peer must read it at the minimum data rate
// (transport.RateWriter: the rule its body was read under, and the TCP
// binding's for its reply frames), and whole within its size at that
// rate plus the grace (at most the http.Server's WriteTimeout: a slow
// link's site lowers MinDataRate), or the write fails and the
// connection is closed: a peer that reads nothing holds its reply's
// charge for moments, not for the server's write timeout. Where the
// request names its connection (NewServer's ConnContext), that
// connection is also closed a grace after the write's deadline if the
// write has not returned by then: over HTTP/2 the deadline resets only
// the stream, once its reset is written behind a stuck connection.
func (s *server) answer(w http.ResponseWriter, r *http.Request, reply []byte, err error) {
	rc := http.NewResponseController(w)
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	whole := answerBound(int64(len(reply)), s.opts.MinDataRate, s.opts.grace, srv)
	set := rc.SetWriteDeadline
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		g := newWriteGuard(c, rc.SetWriteDeadline, s.opts.grace)
		defer g.stop()
		set = g.set
	}
	out := transport.NewRateWriter(w, set, s.opts.MinDataRate, s.opts.grace, whole)
	if err != nil {
		var ue interface{ Unverified() bool }
		status := http.StatusBadRequest
		switch {
		case errors.As(err, &ue) && ue.Unverified():
		case amp.CodeOf(err) == amp.CodeUnavailable, amp.CodeOf(err) == amp.CodeOverloaded, amp.CodeOf(err) == amp.CodeTimeout:
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", s.retryAfter)
		default:
			status = http.StatusInternalServerError
		}
		httpError(w, status, err)
		return
	}
	if reply == nil {
		// A report (ACK, PROC_*, ERROR, PROCESSING) or a BATCH of
		// reports: taken, never answered (the asynchronous path of the
		// binding).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
	w.WriteHeader(http.StatusOK)
	out.Write(reply)
}

// refuse answers status with the unsigned error body of err (httpError),
// under the write bound of the binding's own answers (bound).
func (s *server) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.bound(w, r)
	httpError(w, status, err)
}

// bound gives an answer the binding writes itself (a refusal, a 404 or
// 405, /healthz, net/http's own redirect to a clean path: a few hundred
// bytes, ready at once) the grace to be written whole, within the
// http.Server's WriteTimeout (answerBound of nothing), as the agent's
// answers are bounded by the minimum data rate (answer). Without it such
// an answer had the write timeout alone: over HTTP/2 a peer that opens no
// flow-control window held each stream, its handler and the unread body
// bytes the server had buffered for it (up to the connection's receive
// window, charged to no share) for 90 s, 150 s under ampagent serve
// (docs/SPEC-DECISIONS.md TRANSPORT-31). Past the deadline the stream is
// reset (HTTP/2), or the connection closed.
func (s *server) bound(w http.ResponseWriter, r *http.Request) {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	d := answerBound(0, s.opts.MinDataRate, s.opts.grace, srv)
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// answerBound is the longest the write of an answer of n bytes may take
// in all: n at the minimum data rate plus the grace (admission.DataDeadline,
// the bound of a body of that size), so that a site on a slow link that
// lowers MinDataRate lets large replies through, at most srv's
// WriteTimeout when srv has one (nil: none).
func answerBound(n, rate int64, grace time.Duration, srv *http.Server) time.Duration {
	var most time.Duration
	if srv != nil {
		most = srv.WriteTimeout
	}
	return admission.DataDeadline(n, rate, grace, most)
}

// writeGuard closes a connection whose answer's write is still going a
// grace after the write deadline last set (answer).
type writeGuard struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	c       net.Conn
	inner   func(time.Time) error
	grace   time.Duration
}

// newWriteGuard guards the writes to c whose deadline inner sets; grace
// is admission.FrameGrace when zero or less.
func newWriteGuard(c net.Conn, inner func(time.Time) error, grace time.Duration) *writeGuard {
	if grace <= 0 {
		grace = admission.FrameGrace
	}
	return &writeGuard{c: c, inner: inner, grace: grace}
}

// set sets the write deadline t and arms the close for t + grace.
func (g *writeGuard) set(t time.Time) error {
	g.mu.Lock()
	d := time.Until(t) + g.grace
	switch {
	case g.stopped:
	case g.timer == nil:
		g.timer = time.AfterFunc(d, g.close)
	default:
		g.timer.Reset(d)
	}
	g.mu.Unlock()
	return g.inner(t)
}

// close closes the connection unless the write ended meanwhile.
func (g *writeGuard) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.c.Close()
	}
}

// stop disarms the close: the answer's write returned.
func (g *writeGuard) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
	}
}

// held is what one request holds of the admission, so that leave gives
// back exactly that: the bytes charged to its peer's share and to the
// server's, and whether those are large (charged against the large
// bodies' part of the server's bytes); once answered, only its reply's
// bytes (reply), no slot. Its methods are readBody's declare, charge,
// force and release.
type held struct {
	adm         *transport.Admission
	peer        string
	large       bool
	peerBytes   int64
	serverBytes int64
	answer      bool
	reply       int64
}

// declare charges n bytes to the peer's share.
func (h *held) declare(n int64) bool {
	if !h.adm.ChargePeer(h.peer, n) {
		return false
	}
	h.peerBytes += n
	return true
}

// charge charges n bytes to the server's, within the part a body of
// its size may take.
func (h *held) charge(n int64) bool {
	ok := false
	if h.large {
		ok = h.adm.ChargeServerLarge(n, h.serverBytes)
	} else {
		ok = h.adm.ChargeServer(n)
	}
	if ok {
		h.serverBytes += n
	}
	return ok
}

// force charges n bytes to the server's without checking its cap (the
// joined copy of a body already admitted).
func (h *held) force(n int64) {
	h.adm.ForceServer(n, h.large)
	h.serverBytes += n
}

// release gives n of the server's bytes back.
func (h *held) release(n int64) {
	h.adm.ReleaseServer(n, h.large)
	h.serverBytes -= n
}

// largeHeld is the part of the server's bytes held as a large body.
func (h *held) largeHeld() int64 {
	if h.large {
		return h.serverBytes
	}
	return 0
}

// answered ends the request, whose handler returned a reply of n bytes:
// its slot and its bytes are given back, and the reply charged in their
// place (transport.Admission.Answer) until leave.
func (h *held) answered(n int64) {
	h.adm.Answer(h.peer, h.peerBytes, h.serverBytes, h.largeHeld(), n)
	h.answer, h.reply = true, n
	h.peerBytes, h.serverBytes = 0, 0
}

// leave gives back the request's slot and every byte it still holds, or,
// once answered, its reply's bytes.
func (h *held) leave() {
	if h.answer {
		h.adm.ReleaseReply(h.peer, h.reply)
		return
	}
	h.adm.LeaveHeldLarge(h.peer, h.peerBytes, h.serverBytes, h.largeHeld())
}
