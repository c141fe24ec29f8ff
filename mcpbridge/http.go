package mcpbridge

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/hostguard"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/transport"
)

// MinTokenLen is the shortest bearer token a token file may hold.
const MinTokenLen = 32

// MaxTokenFile bounds a token file, in bytes.
const MaxTokenFile = 1 << 20

// ErrTokenFile names a token file that does not parse.
const ErrTokenFile = "invalid_token_file"

// Token is one line of a token file: whoever presents its token is
// Principal. Only the token's SHA-256 is kept.
type Token struct {
	// Principal is the DID the allow rules name.
	Principal string
	sum       [32]byte
}

// ParseTokenFile parses a bearer-token file (docs/FORMAT.md, "MCP token
// file"): one "DID TOKEN" per line, separated by one or more spaces or
// tabs; blank lines and lines starting with "#" are skipped. A token is
// MinTokenLen to 1024 bytes of printable ASCII without spaces, and appears
// once. Errors name the line, never its content.
func ParseTokenFile(data []byte) ([]Token, error) {
	if len(data) > MaxTokenFile {
		return nil, amp.Named(0, ErrTokenFile, "the token file is larger than %d bytes", MaxTokenFile)
	}
	var out []Token
	seen := map[[32]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), MaxTokenFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, amp.Named(0, ErrTokenFile, "token file line %d is not \"DID TOKEN\"", n)
		}
		if !amp.ValidDID(f[0]) || amp.BareDID(f[0]) != f[0] {
			return nil, amp.Named(0, ErrTokenFile, "token file line %d: the principal is not a did (without fragment)", n)
		}
		if len(f[1]) < MinTokenLen || len(f[1]) > 1024 || !printable(f[1]) {
			return nil, amp.Named(0, ErrTokenFile, "token file line %d: a token is %d to 1024 printable ascii characters", n, MinTokenLen)
		}
		t := Token{Principal: f[0], sum: sha256.Sum256([]byte(f[1]))}
		if seen[t.sum] {
			return nil, amp.Named(0, ErrTokenFile, "token file line %d repeats a token", n)
		}
		seen[t.sum] = true
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, amp.Named(0, ErrTokenFile, "the token file has a line too long")
	}
	return out, nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// HTTPOptions configure the streamable HTTP endpoint.
type HTTPOptions struct {
	// Tokens are the bearer tokens and their principals
	// (HTTPEndpoint.SetTokens replaces them).
	Tokens []Token
	// ClientCerts: a request over TLS with a verified client certificate
	// is the principal its certificate names: the first URI SAN that is a
	// DID (the allow rules name it). The TLS config (client CAs, required
	// certificates) is the listener's.
	ClientCerts bool
	// AllowedOrigins are the Origin header values accepted; a request
	// with any other Origin is 403 (the MCP transport's DNS-rebinding
	// rule). A request without Origin (not from a browser) is accepted.
	AllowedOrigins []string
	// Hosts is the Host rule against DNS rebinding (internal/hostguard,
	// ampagent's --allow-host names), applied to connections that
	// arrived on a loopback address (Guard.OnLoopbackOnly): another Host
	// is 421 host_refused before anything else. The zero value serves
	// localhost and loopback IP literals there. The SDK's own check
	// (which takes no names) is off.
	Hosts hostguard.Guard
	// MaxBody bounds a request body (default 4 MiB). A POST's body is read
	// whole before the SDK sees it, at the bindings' minimum data rate
	// (transport.RateReader), and holds at most the Bridge's
	// Options.MaxParamItems JSON values in params.arguments and
	// MaxEnvelopeValues elsewhere, nested at most MaxBodyDepth (else 413);
	// a message whose method is "subscriptions/listen" is 400
	// ErrMethodNotServed (messageCounter).
	MaxBody int64
	// MaxInFlight and MaxPeerInFlight bound the authenticated requests
	// at once (POST, DELETE), in all and of one principal;
	// MaxInFlightBytes and MaxPeerInFlightBytes their body bytes
	// (defaults 64, 16, 64 MiB, 16 MiB). What comes before authentication
	// is bounded by peer (transport.Peer): MaxInFlight in all and
	// MaxPeerInFlight from one address. Open notification streams (GET)
	// are counted apart: one per session, MaxPeerInFlight per principal
	// and MaxSessions in all. The bridge's tool calls, and apart its
	// other requests, that outlive their POSTs are bounded the same:
	// MaxPeerInFlight of one principal, MaxInFlight in all (MCP-30,
	// MCP-41, MCP-47). A POST that carries a notification holds its
	// slot and bytes until the SDK has handled it (MCP-54); a session
	// that has not within 30 s is closed, the POST answered 404
	// ErrNotificationsUnhandled once it is done (MCP-56).
	MaxInFlight, MaxPeerInFlight           int
	MaxInFlightBytes, MaxPeerInFlightBytes int64
	// SessionTimeout closes sessions idle this long (default 10 min).
	SessionTimeout time.Duration
	// FreshSessionTimeout closes a session that had no request after the
	// one that opened it, this long after it opened (default 30 s).
	FreshSessionTimeout time.Duration
	// MaxSessions and MaxPrincipalSessions bound the live sessions, in
	// all and of one principal (defaults 1024 and 64): a request that
	// would open one more is 503 (in all) or 429 (the principal's), with
	// Retry-After and a JSON-RPC error body.
	MaxSessions, MaxPrincipalSessions int
	// MaxPrincipals bounds the principals with a server at once (default
	// the Bridge's Options.MaxPrincipals): the least recently used one
	// without a live session or a request in flight makes room.
	MaxPrincipals int

	// grace replaces admission.FrameGrace for the request bodies (tests).
	grace time.Duration
	// drainCut, closed, ends every drain's wait as drainTimeout does
	// (tests; nil otherwise).
	drainCut chan struct{}
}

// ErrHostRefused names a request refused by HTTPOptions.Hosts: its Host
// is not one the endpoint serves (DNS rebinding).
const ErrHostRefused = "host_refused"

// ErrTooManySessions names a refused session: the caps of
// HTTPOptions.MaxSessions or MaxPrincipalSessions are reached.
const ErrTooManySessions = "too_many_sessions"

// HTTPStats are an HTTPEndpoint's counters.
type HTTPStats struct {
	// Sessions are the live sessions; Principals the principals with a
	// server.
	Sessions, Principals int
	// Opened, Closed and Refused count the sessions opened, closed (by
	// the client, idleness or the endpoint) and refused at a cap;
	// Evicted the idle principals whose server was dropped.
	Opened, Closed, Refused, Evicted uint64
}

// HTTPEndpoint is the MCP streamable HTTP endpoint of a Bridge.
type HTTPEndpoint struct {
	b *Bridge
	o HTTPOptions
	// pre counts the requests being authenticated, by peer address;
	// posts and streams the authenticated ones, by principal.
	pre, posts, streams *transport.Admission
	tokens              atomic.Pointer[[]Token]

	mu         sync.Mutex
	principals map[string]*principalEntry
	live       map[string]*liveSession // by session id
	pending    int                     // sessions being opened
	tick       uint64
	stats      HTTPStats
}

// principalEntry is one principal's SDK handler (one each: a session id is
// bound to the principal that opened it) and its use.
type principalEntry struct {
	principal string
	srv       *mcp.Server
	sh        *mcp.StreamableHTTPHandler
	// refs are the requests in flight; sessions and pending the live
	// sessions and those being opened; used the last use's tick.
	refs, sessions, pending int
	used                    uint64
}

// liveSession is a session the endpoint counts.
type liveSession struct {
	ent            *principalEntry
	ss             *mcp.ServerSession
	active, stream bool // named since it opened; a notification stream open
	fresh          *time.Timer
}

// HTTPHandler returns the MCP streamable HTTP endpoint: Host checked on
// loopback (421), never open (a request without a valid bearer token or
// client certificate is 401), Origin checked (403), bounded (413; 503 or 429 with Retry-After; 409 for
// a session's second notification stream). Each principal has its own SDK
// handler, so a session id never crosses principals. The bridge's calls
// (and other requests) of one principal at once are lowered to
// MaxPeerInFlight, of all principals to MaxInFlight.
func (b *Bridge) HTTPHandler(o HTTPOptions) *HTTPEndpoint {
	limit.Default(&o.MaxBody, 4<<20)
	limit.Default(&o.MaxInFlight, 64)
	limit.Default(&o.MaxPeerInFlight, max(1, o.MaxInFlight/4))
	limit.Default(&o.MaxInFlightBytes, 64<<20)
	o.MaxInFlightBytes = max(o.MaxInFlightBytes, o.MaxBody)
	limit.Default(&o.MaxPeerInFlightBytes, o.MaxInFlightBytes/4)
	o.MaxPeerInFlightBytes = min(max(o.MaxPeerInFlightBytes, o.MaxBody), o.MaxInFlightBytes)
	limit.Default(&o.SessionTimeout, 10*time.Minute)
	limit.Default(&o.FreshSessionTimeout, 30*time.Second)
	o.FreshSessionTimeout = min(o.FreshSessionTimeout, o.SessionTimeout)
	limit.Default(&o.MaxSessions, 1024)
	limit.Default(&o.MaxPrincipalSessions, 64)
	o.MaxPrincipalSessions = min(o.MaxPrincipalSessions, o.MaxSessions)
	if o.MaxPrincipals <= 0 || o.MaxPrincipals > b.opts.MaxPrincipals {
		o.MaxPrincipals = b.opts.MaxPrincipals
	}
	o.Hosts = o.Hosts.OnLoopbackOnly()
	b.shareCalls(o.MaxPeerInFlight)
	b.totalCalls(o.MaxInFlight)
	h := &HTTPEndpoint{b: b, o: o,
		pre:        transport.NewAdmission(o.MaxInFlight, o.MaxPeerInFlight, 0, 0),
		posts:      transport.NewAdmission(o.MaxInFlight, o.MaxPeerInFlight, o.MaxInFlightBytes, o.MaxPeerInFlightBytes),
		streams:    transport.NewAdmission(o.MaxSessions, o.MaxPeerInFlight, 0, 0),
		principals: map[string]*principalEntry{}, live: map[string]*liveSession{}}
	h.SetTokens(o.Tokens)
	return h
}

// SetTokens replaces the bearer tokens (a reloaded token file): a request
// with a token no longer listed is 401 from now on; sessions it opened
// stay theirs until they end (a session id alone never authenticates).
func (h *HTTPEndpoint) SetTokens(tokens []Token) {
	t := slices.Clone(tokens)
	h.tokens.Store(&t)
}

// Stats returns the endpoint's counters.
func (h *HTTPEndpoint) Stats() HTTPStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.Sessions, s.Principals = len(h.live), len(h.principals)
	return s
}

// jsonError answers an HTTP-level refusal: a JSON object with the AMP
// code and name, never an echo of the request. The name and message go
// through amp.SafeName and amp.SafeMessage, the rule every printed error
// follows (docs/SPEC-DECISIONS.md TRANSPORT-24), though each caller
// names its refusal itself today.
func jsonError(w http.ResponseWriter, status int, err *amp.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": uint16(err.Code), "name": string(amp.SafeName(err)), "message": amp.SafeMessage(err)}})
	w.Write(append(body, '\n'))
}

// ServeHTTP authenticates r, admits it under its principal's bounds,
// reads its body (POST) under the minimum data rate and the JSON value
// budget, and hands it to the principal's SDK handler. Every refusal
// before the body is read closes the connection: the body is never
// waited for.
func (h *HTTPEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	adm := h.posts
	if r.Method == http.MethodGet {
		adm = h.streams // a notification stream stays open: counted apart
	}
	if what := adm.Enter(principal); what != "" {
		h.busy(w, what, principal)
		return
	}
	held := int64(0)
	defer func() { adm.Leave(principal, held) }()
	if r.Method != http.MethodPost && r.ContentLength != 0 {
		closeAfter(w) // a body only a POST has is never read, nor waited for
	}
	if r.Method == http.MethodPost {
		n := r.ContentLength
		if n < 0 {
			n = h.o.MaxBody
		}
		if !adm.Charge(principal, n) {
			h.busy(w, "bytes", principal)
			return
		}
		held = n
	}
	sid := r.Header.Get(sessionHeader)
	opens := r.Method == http.MethodPost && sid == ""
	req, refused := h.enter(principal, opens, r.Method == http.MethodGet, sid)
	if refused != 0 {
		h.refuse(w, refused, principal)
		return
	}
	sw := &safeWriter{ResponseWriter: w, grace: h.o.grace}
	defer func() { h.leave(req, sw.Header().Get(sessionHeader)) }()
	if r.Method == http.MethodPost {
		if ok, sw.holdAccepted = h.readBody(w, r); !ok {
			return
		}
	}
	// The agent hands out its processing slots by the peer of the
	// context (admission.Fair): here the principal, as the bounds above.
	r = r.WithContext(admission.WithPeer(r.Context(), principal))
	req.ent.sh.ServeHTTP(sw, r)
	if sw.holdAccepted {
		// Still holding the POST's slot and bytes (MCP-54, MCP-56).
		sw.endAccepted(h.drain(req.ent, r, cmp.Or(sid, sw.Header().Get(sessionHeader))))
	}
	sw.finish()
	sw.settle()
}

// drainTimeout bounds how long drain waits for a session's notifications
// to be handled before it closes the session.
const drainTimeout = 30 * time.Second

// ErrNotificationsUnhandled names a POST of notifications whose session
// did not handle them within drainTimeout, or could not be asked
// whether it had (docs/SPEC-DECISIONS.md MCP-56): the session is closed,
// and the POST is answered 404, as for a session that ended, once the
// session's connection is done.
const ErrNotificationsUnhandled = "notifications_unhandled"

// drain waits until the SDK has handled every notification handed so far
// to session sid: go-sdk v1.8.0 answers a POST of notifications 202 once
// it has queued them (mcp/streamable.go, servePOST) and handles a
// session's notifications one at a time, each before the next message,
// in an unbounded queue (internal/jsonrpc2, handleAsync), so the POST's
// request slot and bytes, given back with the answer, bounded nothing
// that was queued (docs/SPEC-DECISIONS.md MCP-54). It posts the session
// a ping of its own, under a fresh random id, in r's context (the
// principal's, admission.WithPeer; MCP-58): the ping is answered only
// once every message queued before it has been handled. Its answer is
// not the client's (the SDK answers it on this POST, which drain
// discards). The ping carries none of r's headers but the session id:
// the SDK refuses a ping at once under a protocol version it queues
// notifications under (MCP-57). It waits at most drainTimeout, whatever
// becomes of r's client (a client that hangs up must not get its slot
// back sooner). Only an answer (200) drains, and so does a session the
// SDK no longer holds (nothing of it is queued). Otherwise (the wait ran
// out, the ping was refused) the session is closed, and drain returns
// false once its
// connection is done, its queue handled and its calls in flight returned
// (ServerSession.Close waits for both: a tools/call of the session holds
// the slot until it ends, at most its own deadline): the slot is never
// given back while what it bounded is still queued (MCP-56).
func (h *HTTPEndpoint) drain(ent *principalEntry, r *http.Request, sid string) bool {
	if sid == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), drainTimeout)
	defer cancel()
	if h.o.drainCut != nil {
		go func() {
			select {
			case <-h.o.drainCut:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	body := `{"jsonrpc":"2.0","id":"ampbundle-drain-` + rand.Text() + `","method":"ping"}`
	ping, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL.String(), strings.NewReader(body))
	if err != nil {
		return false // not reached: a fixed method and a parsed URL
	}
	ping.Header.Set("Content-Type", "application/json")
	ping.Header.Set("Accept", "application/json, text/event-stream")
	ping.Header.Set(sessionHeader, sid)
	answer := &discardWriter{header: http.Header{}}
	ent.sh.ServeHTTP(answer, ping)
	if answer.status == http.StatusOK {
		return true
	}
	ss := serverSession(ent.srv, sid)
	if ss == nil {
		return true // its connection is done: nothing of it is queued
	}
	h.b.log.Warn("mcp session closed: its notifications were not handled", "limit", ErrNotificationsUnhandled, "principal", ent.principal)
	ss.Close()
	return false
}

// serverSession is srv's session sid while the SDK holds it (its
// connection not done yet), else nil.
func serverSession(srv *mcp.Server, sid string) *mcp.ServerSession {
	for s := range srv.Sessions() {
		if s.ID() == sid {
			return s
		}
	}
	return nil
}

// discardWriter is the http.ResponseWriter of drain's ping: the answer
// is not sent anywhere, only its status kept.
type discardWriter struct {
	header http.Header
	status int
}

// Header implements http.ResponseWriter.
func (d *discardWriter) Header() http.Header { return d.header }

// Write implements http.ResponseWriter: p is dropped.
func (d *discardWriter) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return len(p), nil
}

// WriteHeader implements http.ResponseWriter.
func (d *discardWriter) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}

// sessionHeader is the streamable HTTP transport's session id header.
const sessionHeader = "Mcp-Session-Id"

// authenticate returns the principal of r, or answers its refusal (421
// host, 403 origin, 401, 413 over MaxBody, 503 busy) at once, closing the
// connection. The Host rule comes first; the rest runs under the bound of
// what comes before authentication: per peer address.
func (h *HTTPEndpoint) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !h.o.Hosts.Allows(r) {
		closeAfter(w)
		jsonError(w, http.StatusMisdirectedRequest, amp.Named(amp.CodeUnauthorized, ErrHostRefused, "the Host header names no host this endpoint serves; use 127.0.0.1, localhost, or a name given with --allow-host"))
		return "", false
	}
	peer := transport.Peer(r.RemoteAddr)
	if what := h.pre.Enter(peer); what != "" {
		h.b.log.Warn("mcp request refused: busy", "limit", "unauthenticated_"+what, "remote", peer)
		closeAfter(w)
		w.Header().Set("Retry-After", "1")
		jsonError(w, http.StatusServiceUnavailable, amp.Named(amp.CodeOverloaded, "busy", "the agent is busy; retry later"))
		return "", false
	}
	defer h.pre.Leave(peer, 0)
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(origin) {
		closeAfter(w)
		jsonError(w, http.StatusForbidden, amp.Named(amp.CodeUnauthorized, "origin_refused", "requests from this origin are refused"))
		return "", false
	}
	principal := h.principal(r)
	if principal == "" {
		closeAfter(w)
		w.Header().Set("WWW-Authenticate", `Bearer realm="ampagent-mcp"`)
		jsonError(w, http.StatusUnauthorized, amp.Named(amp.CodeUnauthorized, "unauthenticated", "a bearer token or a client certificate is required"))
		return "", false
	}
	if r.ContentLength > h.o.MaxBody {
		closeAfter(w)
		jsonError(w, http.StatusRequestEntityTooLarge, amp.Named(amp.CodeInvalidMessage, ErrBodyTooLarge, "the request is larger than %d bytes", h.o.MaxBody))
		return "", false
	}
	return principal, true
}

// closeAfter marks the answer as the connection's last: net/http then
// sends it without reading, or waiting for, the request's body.
func closeAfter(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// bodyReadLimit bounds the reading of one request body, as the AMP HTTP
// binding's read timeout does (transport.RateReader's limit).
const bodyReadLimit = 30 * time.Second

// readBody reads the body of a POST whole before the SDK sees it: through
// transport.RateReader (the bindings' minimum data rate: a read deadline
// FrameGrace + n / MinDataRate, moved on as bytes arrive, and a stall
// grace), at most MaxBody, then counted (messageCounter). A refusal is
// answered (413, 400) and ok is false; the SDK then reads the bytes
// held here. notes reports whether the body holds a notification
// (drain).
func (h *HTTPEndpoint) readBody(w http.ResponseWriter, r *http.Request) (ok, notes bool) {
	rc := http.NewResponseController(w)
	in := transport.NewRateReader(http.MaxBytesReader(w, r.Body, h.o.MaxBody), rc.SetReadDeadline, 0, h.o.grace, bodyReadLimit)
	var body []byte
	var err error
	if n := r.ContentLength; n >= 0 {
		body = make([]byte, n)
		if _, err = io.ReadFull(in, body); err == nil {
			// Read on to the end, so that net/http sees the body whole
			// (and clears the read deadline).
			var one [1]byte
			if _, err = in.Read(one[:]); err == io.EOF {
				err = nil
			}
		}
	} else {
		body, err = io.ReadAll(in)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		closeAfter(w)
		jsonError(w, http.StatusRequestEntityTooLarge, amp.Named(amp.CodeInvalidMessage, ErrBodyTooLarge, "the request is larger than %d bytes", h.o.MaxBody))
		return false, false
	case err != nil:
		closeAfter(w)
		jsonError(w, http.StatusBadRequest, amp.Named(amp.CodeInvalidMessage, "body_unreadable", "cannot read the request body"))
		return false, false
	}
	// The body is read whole: the rate reader's read deadline must not
	// outlive it (net/http cancels the request when a read deadline
	// passes, so a call running longer than the deadline was answered
	// empty while its handler ran on).
	rc.SetReadDeadline(time.Time{})
	c := messageCounter(body, h.b.opts.MaxParamItems, true)
	if err := c.text(roleRoot); err != nil {
		refused := err.(*amp.Error) // messageCounter's errors are errBody's
		h.b.log.Warn("mcp request refused", "limit", refused.Name)
		jsonError(w, bodyStatus(refused), refused)
		return false, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true, c.notes > 0
}

func (h *HTTPEndpoint) busy(w http.ResponseWriter, what, principal string) {
	h.b.log.Warn("mcp request refused: busy", "limit", what, "principal", principal)
	closeAfter(w)
	w.Header().Set("Retry-After", "1")
	jsonError(w, http.StatusServiceUnavailable, amp.Named(amp.CodeOverloaded, "busy", "the agent is busy; retry later"))
}

// refuse answers a refusal of enter, the body unread.
func (h *HTTPEndpoint) refuse(w http.ResponseWriter, refused int, principal string) {
	switch refused {
	case noRoom:
		h.busy(w, "principals", principal)
	case http.StatusConflict:
		closeAfter(w)
		jsonError(w, http.StatusConflict, amp.Named(amp.CodeBadRequest, "stream_open", "this session has a notification stream open"))
	default:
		h.refuseSession(w, refused, principal)
	}
}

// refuseSession answers a request that would open a session over a cap:
// status (503 in all, 429 for the principal) with Retry-After and a
// JSON-RPC error (id null: the request is not read), data naming the AMP
// code and ErrTooManySessions.
func (h *HTTPEndpoint) refuseSession(w http.ResponseWriter, status int, principal string) {
	limit, code := "sessions", amp.CodeOverloaded
	if status == http.StatusTooManyRequests {
		limit, code = "principal_sessions", amp.CodeRateLimited
	}
	h.b.log.Warn("mcp session refused", "limit", limit, "principal", principal)
	closeAfter(w)
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": CodeBusy, "message": "too many sessions; retry later",
		"data": map[string]any{"code": uint16(code), "name": ErrTooManySessions}}})
	w.Write(append(body, '\n'))
}

func (h *HTTPEndpoint) originAllowed(origin string) bool {
	return slices.Contains(h.o.AllowedOrigins, origin)
}

// principal authenticates r: a verified client certificate's DID, else a
// bearer token (compared in constant time); "" when neither.
func (h *HTTPEndpoint) principal(r *http.Request) string {
	if h.o.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		if did := certDID(r.TLS.VerifiedChains[0][0]); did != "" {
			return did
		}
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(auth[len(prefix):])))
	who := ""
	for _, t := range *h.tokens.Load() {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			who = t.Principal
		}
	}
	return who
}

// certDID is the first URI SAN of c that is a DID (without fragment).
func certDID(c *x509.Certificate) string {
	for _, u := range c.URIs {
		if s := u.String(); amp.ValidDID(s) && amp.BareDID(s) == s {
			return s
		}
	}
	return ""
}
