package mcpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport"
)

// request is a request enter admitted: what leave gives back.
type request struct {
	ent   *principalEntry
	opens bool
	// stream is the live session whose notification stream this GET is
	// (nil: none, or a session not counted yet).
	stream *liveSession
}

// enter admits one request of principal to its SDK handler (made on first
// use, the least recently used idle principal evicted when
// MaxPrincipals have one). A request that opens a session (opens) takes a
// slot under the session caps, or is refused with the status to answer
// (429: the principal's cap; 503: the total; noRoom: no principal can
// make room). A request naming a live session (sid) marks it active; a
// notification stream (stream) of a live session takes the session's
// one stream, or is refused (409: it has one open).
func (h *HTTPEndpoint) enter(principal string, opens, stream bool, sid string) (request, int) {
	h.mu.Lock()
	ent := h.principals[principal]
	if ent == nil && len(h.principals) >= h.o.MaxPrincipals && !h.evictLocked() {
		h.mu.Unlock()
		return request{}, noRoom
	}
	h.mu.Unlock()
	var srv *mcp.Server
	if ent == nil {
		// Outside h.mu: the first use of a principal may verify the
		// tools of a new catalog generation.
		if srv = h.b.Server(principal); srv == nil {
			return request{}, noRoom
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tick++
	if ent = h.principals[principal]; ent == nil {
		if srv == nil || !h.b.holds(principal, srv) {
			// The entry seen above was evicted while h.mu was let go (no
			// server was made for it), or the server made was dropped
			// meanwhile (another first request of the principal made an
			// entry with it, which was evicted: Bridge.forget), which
			// Refresh would never bring up to date again: the request is
			// answered busy (retryable) rather than served by an entry
			// without a server or with a forgotten one
			// (docs/SPEC-DECISIONS.md MCP-37). Bridge.forget runs only
			// under h.mu, so the server checked is the one kept.
			h.stats.Refused++
			return request{}, http.StatusServiceUnavailable
		}
		if len(h.principals) >= h.o.MaxPrincipals && !h.evictLocked() {
			// Another new principal took the room meanwhile.
			h.b.forget(principal, srv)
			return request{}, noRoom
		}
		ent = &principalEntry{principal: principal, srv: srv}
		ent.sh = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			// The Host rule is h.o.Hosts, checked before authentication:
			// the SDK's check (no names, the Host echoed) is off.
			&mcp.StreamableHTTPOptions{SessionTimeout: h.o.SessionTimeout, MaxRequestBodyBytes: h.o.MaxBody, JSONResponse: true,
				DisableLocalhostProtection: true})
		h.principals[principal] = ent
	}
	req := request{ent: ent, opens: opens}
	if opens {
		switch {
		case ent.sessions+ent.pending >= h.o.MaxPrincipalSessions:
			h.stats.Refused++
			return request{}, http.StatusTooManyRequests
		case len(h.live)+h.pending >= h.o.MaxSessions:
			h.stats.Refused++
			return request{}, http.StatusServiceUnavailable
		}
		ent.pending++
		h.pending++
	} else if ls := h.live[sid]; ls != nil && ls.ent == ent {
		if stream {
			if ls.stream {
				return request{}, http.StatusConflict
			}
			ls.stream, req.stream = true, ls
		}
		ls.active = true
	}
	ent.refs++
	ent.used = h.tick
	return req, 0
}

// noRoom is enter's refusal when no principal can make room.
const noRoom = -1

// leave ends a request enter admitted. When it opened a session that is
// live (sid, the id the SDK answered with), the session is counted until
// it ends and closed early if no other request names it within
// FreshSessionTimeout.
func (h *HTTPEndpoint) leave(req request, sid string) {
	ent, opens := req.ent, req.opens
	var ss *mcp.ServerSession
	if opens && sid != "" {
		ss = serverSession(ent.srv, sid)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ent.refs--
	if req.stream != nil {
		req.stream.stream = false
	}
	if opens {
		ent.pending--
		h.pending--
	}
	if ss == nil || h.live[sid] != nil {
		return // not opened, or already closed again (a failed initialize)
	}
	ls := &liveSession{ent: ent, ss: ss}
	h.live[sid] = ls
	ent.sessions++
	h.stats.Opened++
	ls.fresh = time.AfterFunc(h.o.FreshSessionTimeout, func() {
		h.mu.Lock()
		idle := !ls.active
		h.mu.Unlock()
		if idle {
			ss.Close()
		}
	})
	go h.watch(sid, ls)
}

// watch uncounts a session once it ended.
func (h *HTTPEndpoint) watch(sid string, ls *liveSession) {
	ls.ss.Wait()
	ls.fresh.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live[sid] == ls {
		delete(h.live, sid)
		ls.ent.sessions--
		h.stats.Closed++
	}
}

// evictLocked drops the least recently used principal without a live
// session or a request in flight (its server too); false when every
// principal is in use. h.mu is held.
func (h *HTTPEndpoint) evictLocked() bool {
	var victim *principalEntry
	for _, e := range h.principals {
		if e.refs == 0 && e.sessions == 0 && e.pending == 0 && (victim == nil || e.used < victim.used) {
			victim = e
		}
	}
	if victim == nil {
		return false
	}
	delete(h.principals, victim.principal)
	h.b.forget(victim.principal, victim.srv)
	h.stats.Evicted++
	return true
}

// safeWriter replaces the error bodies of the SDK's HTTP handler, which
// may quote the request (a malformed payload's decoding error, a
// Last-Event-ID, a Host header, an Mcp-Protocol-Version or Mcp-Method
// header, a method name), status kept (docs/SPEC-DECISIONS.md MCP-12,
// MCP-22): a JSON-RPC error (application/json) keeps its id and code and
// gets its code's fixed text, without data (finish writes it); any other
// error body becomes the JSON error of its status. A 200
// application/json answer passes its results as they are, and its errors
// rewritten the same way (safeAnswer: the SDK's -32602 for params it
// cannot decode quotes them, escaped again), written at the minimum data
// rate (out). Other responses pass through, streamed (Flush, Unwrap for
// http.ResponseController).
type safeWriter struct {
	http.ResponseWriter
	wrote, swallow bool
	// answer: a 200 application/json answer, each Write of it one whole
	// JSON-RPC answer (safeAnswer).
	answer bool
	// grace is the rate's grace of the answer (HTTPOptions.grace; 0:
	// admission.FrameGrace); out writes the answer, made at its first
	// byte (rated).
	grace time.Duration
	out   io.Writer
	// rpc: a JSON-RPC error held until finish; status its status, held
	// its body (at most maxHeldError bytes).
	rpc    bool
	status int
	held   []byte
	// holdAccepted: a POST holding a notification (drain), whose 202 is
	// held, accepted, until endAccepted.
	holdAccepted, accepted bool
}

// maxHeldError bounds the JSON error body of the SDK that safeWriter
// holds to rewrite.
const maxHeldError = 64 << 10

func (s *safeWriter) WriteHeader(code int) {
	if s.wrote {
		return
	}
	s.wrote = true
	if code == http.StatusAccepted && s.holdAccepted {
		s.accepted = true
		return
	}
	if code < 400 {
		if code == http.StatusOK && strings.HasPrefix(s.Header().Get("Content-Type"), "application/json") {
			s.answer = true
			s.Header().Del("Content-Length")
		}
		s.ResponseWriter.WriteHeader(code)
		return
	}
	s.swallow = true
	s.Header().Del("X-Content-Type-Options")
	if strings.HasPrefix(s.Header().Get("Content-Type"), "application/json") {
		s.rpc, s.status = true, code
		return
	}
	jsonError(s.ResponseWriter, code, statusError(code))
}

func (s *safeWriter) Write(p []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	if s.rpc {
		s.held = append(s.held, p[:min(len(p), maxHeldError-len(s.held))]...)
	}
	if s.swallow {
		return len(p), nil
	}
	if s.answer {
		if _, err := s.rated().Write(safeAnswer(p)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return s.ResponseWriter.Write(p)
}

// rated is the writer of a 200 answer: transport.RateWriter on the
// connection's write deadline, the bindings' one rule for answers (the
// AMP HTTP binding's, the mirror's; admission.MinDataRate after the
// grace, no stall longer than the grace), its clock started at the
// answer's first byte, so that the request's own run (a tools/call) is
// not charged to the reader. A peer that reads nothing, or trickles,
// has the write fail within moments: the request ends and gives back
// its slot, and net/http closes the connection (docs/SPEC-DECISIONS.md
// MCP-43). The whole write needs no bound of its own: the answer is one
// Write of a bounded size, which the rate bounds.
func (s *safeWriter) rated() io.Writer {
	if s.out == nil {
		s.out = transport.NewRateWriter(s.ResponseWriter, http.NewResponseController(s.ResponseWriter).SetWriteDeadline, 0, s.grace, 0)
	}
	return s.out
}

// settle ends a rated answer's write: what net/http still buffers is
// flushed under the answer's deadline, which is then cleared, since the
// server sets none for the connection's next request (ampagent's has no
// WriteTimeout) and a deadline past would cut its answer at once. A
// flush that fails leaves the deadline: the connection is closed.
func (s *safeWriter) settle() {
	if s.out == nil {
		return
	}
	rc := http.NewResponseController(s.ResponseWriter)
	if rc.Flush() == nil {
		rc.SetWriteDeadline(time.Time{})
	}
}

// safeAnswer is a 200 application/json body of the SDK made safe to send:
// its results as they are, each error with its id and code and the code's
// fixed text (rpcErrorBody). In JSON mode go-sdk v1.8.0 writes the whole
// answer, one message or a batch's array, in one Write; a body that is
// not a whole answer is replaced by an internal error rather than sent
// unread. A result is never copied: an answer with no error is p itself,
// and a batch with one is copied once, its results as written
// (safeBatch).
func safeAnswer(p []byte) []byte {
	t := bytes.TrimSpace(p)
	if len(t) > 0 && t[0] == '[' {
		return safeBatch(p)
	}
	if isError, ok := answerKind(t); !ok || isError {
		return rpcErrorBody(t)
	}
	return p
}

// answerDepth bounds the nesting of an answer safeBatch steps over: the
// SDK's own encoding of what the bridge and the agent bounded, so this
// is encoding/json's own bound, the one its decoding of a batch had.
const answerDepth = 10000

// safeBatch is safeAnswer of a batch's array: each element that is a
// result is kept as written, each other one replaced by its
// rpcErrorBody. The elements are stepped over with the body counter,
// which copies nothing; p is returned when nothing is replaced, else
// one copy with the replacements (docs/SPEC-DECISIONS.md MCP-45: the
// batch used to be decoded into one copy of each element and encoded
// again, HTML characters of the results escaped, at about 3.5 bytes
// allocated per answer byte).
func safeBatch(p []byte) []byte {
	c := &bodyCounter{s: p, args: math.MaxInt, other: math.MaxInt, maxDepth: answerDepth}
	c.space()
	c.i++ // '['
	if c.space(); c.i < len(c.s) && c.s[c.i] == ']' {
		c.i++
		return wholeOr(c, p)
	}
	var out []byte
	kept := 0 // p[kept:] is not in out yet
	for {
		c.space()
		start := c.i
		if c.value(2, roleOther) != nil {
			return rpcErrorBody(nil)
		}
		if isError, ok := answerKind(p[start:c.i]); !ok || isError {
			if out == nil {
				// Room for rewrites longer than what they replace
				// (a fixed text, busyData).
				out = make([]byte, 0, len(p)+1<<10)
			}
			out = append(append(out, p[kept:start]...), rpcErrorBody(p[start:c.i])...)
			kept = c.i
		}
		if done, err := c.next(']'); err != nil {
			return rpcErrorBody(nil)
		} else if done {
			break
		}
	}
	if out == nil {
		return wholeOr(c, p)
	}
	return wholeOr(c, append(out, p[kept:]...))
}

// wholeOr is answer once c has read the whole of its text (whitespace
// may follow), else the internal error of an answer that is not whole.
func wholeOr(c *bodyCounter, answer []byte) []byte {
	if c.space(); c.i != len(c.s) {
		return rpcErrorBody(nil)
	}
	return answer
}

// answerKind reads a JSON-RPC answer's members up to its "result" (false)
// or "error" (true); ok is false when it reaches neither (not an answer,
// or not whole). The SDK writes "jsonrpc" and "id" first, so a result is
// told from its first bytes; the members before it are stepped over with
// the body counter, which copies nothing (an id the SDK echoes may be
// megabytes).
func answerKind(m []byte) (isError, ok bool) {
	c := &bodyCounter{s: m, args: math.MaxInt, other: math.MaxInt, maxDepth: MaxBodyDepth}
	c.space()
	if c.i >= len(c.s) || c.s[c.i] != '{' {
		return false, false
	}
	c.i++
	for {
		c.space()
		if c.i >= len(c.s) || c.s[c.i] != '"' {
			return false, false
		}
		key, ok := c.str()
		if !ok {
			return false, false
		}
		c.space()
		if c.i >= len(c.s) || c.s[c.i] != ':' {
			return false, false
		}
		c.i++
		c.space()
		switch string(key) {
		case "result":
			return false, true
		case "error":
			return true, true
		}
		if c.value(2, roleOther) != nil {
			return false, false
		}
		if done, err := c.next('}'); done || err != nil {
			return false, false
		}
	}
}

// rpcErrorBody is the JSON-RPC error answer m made safe: its id (a plain
// one) and code, the code's fixed text, no data (but the fixed text and
// data of CodeBusy, ErrTooManyRequests, of the principal's share or of
// the total as its AMP code says); for m that is not such an error, an
// internal error (-32603) with a null id.
func rpcErrorBody(m []byte) []byte {
	type rpcError struct {
		Code int64           `json:"code"`
		Data json.RawMessage `json:"data"` // any JSON: read for CodeBusy only
	}
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error *rpcError       `json:"error"`
	}
	if m == nil || json.Unmarshal(m, &msg) != nil || msg.Error == nil || !plainID(msg.ID) {
		msg.ID, msg.Error = nil, &rpcError{Code: -32603}
	}
	if len(msg.ID) == 0 {
		msg.ID = json.RawMessage("null")
	}
	e := map[string]any{"code": msg.Error.Code, "message": rpcErrorText(msg.Error.Code)}
	if msg.Error.Code == jsonrpc.CodeInvalidParams && sessionParamsRefusal(msg.Error.Data) {
		// The bridge's own refusal of params a session would keep
		// (MCP-51): its fixed text and data, never the answer's.
		e["message"], e["data"] = sessionParamsText, sessionParamsData
	}
	if msg.Error.Code == CodeBusy {
		// The bridge's own refusal (the SDK uses no CodeBusy): its
		// fixed text and data, never the answer's; only its AMP code
		// picks which (MCP-47: 5004 past the total of all principals).
		e["data"] = busyData
		var data struct {
			Code uint16 `json:"code"`
		}
		if json.Unmarshal(msg.Error.Data, &data) == nil && data.Code == uint16(amp.CodeOverloaded) {
			e["message"], e["data"] = tooManyRequestsAllText, busyAllData
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": e})
	return body
}

// sessionParamsRefusal reports whether data is an error's data naming
// ErrSessionParamsTooLarge.
func sessionParamsRefusal(data json.RawMessage) bool {
	var d struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(data, &d) == nil && d.Name == ErrSessionParamsTooLarge
}

// finish writes the JSON-RPC error held: its id and code, the code's
// fixed text; a body that is not one is the JSON error of its status.
func (s *safeWriter) finish() {
	if !s.rpc {
		return
	}
	s.rpc = false
	if isError, ok := answerKind(s.held); !ok || !isError {
		jsonError(s.ResponseWriter, s.status, statusError(s.status))
		return
	}
	s.Header().Set("Cache-Control", "no-store")
	s.Header().Del("Content-Length")
	s.ResponseWriter.WriteHeader(s.status)
	s.ResponseWriter.Write(append(rpcErrorBody(s.held), '\n'))
}

// endAccepted writes the 202 held, when drained (HTTPEndpoint.drain),
// else ErrNotificationsUnhandled: the session is closed (404, as the SDK
// answers a session that ended). Any other answer was written as it came.
func (s *safeWriter) endAccepted(drained bool) {
	if !s.accepted {
		return
	}
	s.accepted = false
	if drained {
		s.ResponseWriter.WriteHeader(http.StatusAccepted)
		return
	}
	jsonError(s.ResponseWriter, http.StatusNotFound, amp.Named(amp.CodeOverloaded, ErrNotificationsUnhandled,
		"the session did not handle its notifications in time and is closed; open a new session"))
}

// plainID reports whether id is a JSON-RPC id as the SDK writes one: a
// number, a string, null, or absent.
func plainID(id json.RawMessage) bool {
	var v any
	if len(id) == 0 {
		return true
	}
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case nil, string, float64:
		return true
	}
	return false
}

// rpcErrorText is the text a JSON-RPC error code is told with.
func rpcErrorText(code int64) string {
	switch code {
	case -32700:
		return "parse error"
	case -32600:
		return "invalid request"
	case -32601:
		return "method not found"
	case -32602:
		return "invalid params"
	case -32603:
		return "internal error"
	case mcp.CodeHeaderMismatch:
		return "the request's mcp headers do not match its body"
	case mcp.CodeUnsupportedProtocolVersion:
		return "unsupported protocol version"
	case CodeBusy:
		return tooManyRequestsText
	}
	if code <= -32000 && code >= -32099 {
		return "server error"
	}
	return "the request is refused"
}

// Flush sends what was written (a notification stream).
func (s *safeWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok && !s.swallow {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (s *safeWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// statusError is the error an SDK refusal with an HTTP status is told as.
func statusError(code int) *amp.Error {
	switch code {
	case http.StatusNotFound:
		return amp.Named(amp.CodeBadRequest, "session_not_found", "no such session (it ended or never existed)")
	case http.StatusRequestEntityTooLarge:
		return amp.Named(amp.CodeInvalidMessage, ErrBodyTooLarge, "the request is too large")
	case http.StatusMethodNotAllowed:
		return amp.Named(amp.CodeBadRequest, "method_not_allowed", "the http method is not allowed here")
	case http.StatusUnsupportedMediaType:
		return amp.Named(amp.CodeBadRequest, "unsupported_media_type", "the request is not application/json")
	case http.StatusForbidden:
		return amp.Named(amp.CodeUnauthorized, "forbidden", "the request is refused")
	}
	if code >= 500 {
		return amp.Named(amp.CodeInternalError, "internal_error", "internal error")
	}
	return amp.Named(amp.CodeBadRequest, "bad_request", "the request is not a valid mcp request")
}
