package mcpbridge

import (
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
)

// enter admits one request of principal to its SDK handler (made on first
// use, the least recently used idle principal evicted when
// MaxPrincipals have one). A request that opens a session (opens) takes a
// slot under the session caps, or is refused with the status to answer
// (429: the principal's cap; 503: the total, or no room for a principal).
// (noRoom: no principal can make room). A request naming a live session
// (sid) marks it active.
func (h *HTTPEndpoint) enter(principal string, opens bool, sid string) (*principalEntry, int) {
	h.mu.Lock()
	ent := h.principals[principal]
	if ent == nil && len(h.principals) >= h.o.MaxPrincipals && !h.evictLocked() {
		h.mu.Unlock()
		return nil, noRoom
	}
	h.mu.Unlock()
	var srv *mcp.Server
	if ent == nil {
		// Outside h.mu: the first use of a principal may verify the
		// tools of a new catalog generation.
		if srv = h.b.Server(principal); srv == nil {
			return nil, noRoom
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tick++
	if ent = h.principals[principal]; ent == nil {
		ent = &principalEntry{principal: principal, srv: srv}
		ent.sh = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{SessionTimeout: h.o.SessionTimeout, MaxRequestBodyBytes: h.o.MaxBody, JSONResponse: true})
		h.principals[principal] = ent
	}
	if opens {
		switch {
		case ent.sessions+ent.pending >= h.o.MaxPrincipalSessions:
			h.stats.Refused++
			return nil, http.StatusTooManyRequests
		case len(h.live)+h.pending >= h.o.MaxSessions:
			h.stats.Refused++
			return nil, http.StatusServiceUnavailable
		}
		ent.pending++
		h.pending++
	} else if ls := h.live[sid]; ls != nil && ls.ent == ent {
		ls.active = true
	}
	ent.refs++
	ent.used = h.tick
	return ent, 0
}

// noRoom is enter's refusal when no principal can make room.
const noRoom = -1

// leave ends a request enter admitted. When it opened a session that is
// live (sid, the id the SDK answered with), the session is counted until
// it ends and closed early if no other request names it within
// FreshSessionTimeout.
func (h *HTTPEndpoint) leave(ent *principalEntry, opens bool, sid string) {
	var ss *mcp.ServerSession
	if opens && sid != "" {
		for s := range ent.srv.Sessions() {
			if s.ID() == sid {
				ss = s
				break
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ent.refs--
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

// safeWriter replaces the plain-text error bodies of the SDK's HTTP
// handler, which may quote the request (a malformed payload's decoding
// error, a Last-Event-ID, a Host header), by a JSON error that names the
// status only (docs/SPEC-DECISIONS.md MCP-12). Other responses pass
// through, streamed (Flush, Unwrap for http.ResponseController).
type safeWriter struct {
	http.ResponseWriter
	wrote, swallow bool
}

func (s *safeWriter) WriteHeader(code int) {
	if s.wrote {
		return
	}
	s.wrote = true
	if code >= 400 && strings.HasPrefix(s.Header().Get("Content-Type"), "text/plain") {
		s.swallow = true
		s.Header().Del("X-Content-Type-Options")
		jsonError(s.ResponseWriter, code, statusError(code))
		return
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *safeWriter) Write(p []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	if s.swallow {
		return len(p), nil
	}
	return s.ResponseWriter.Write(p)
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
		return amp.Named(amp.CodeInvalidMessage, "body_too_large", "the request is too large")
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
