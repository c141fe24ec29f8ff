package mcpbridge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
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
	// Tokens are the bearer tokens and their principals.
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
	// MaxBody bounds a request body (default 4 MiB).
	MaxBody int64
	// MaxInFlight and MaxPeerInFlight bound the requests (and open
	// notification streams, counted apart) at once, in all and from one
	// peer (transport.Peer); MaxInFlightBytes and MaxPeerInFlightBytes
	// their body bytes (defaults 64, 16, 64 MiB, 16 MiB).
	MaxInFlight, MaxPeerInFlight           int
	MaxInFlightBytes, MaxPeerInFlightBytes int64
	// SessionTimeout closes sessions idle this long (default 10 min).
	SessionTimeout time.Duration
}

// HTTPHandler returns the MCP streamable HTTP endpoint: never open (a
// request without a valid bearer token or client certificate is 401),
// Origin checked (403), bounded (413, 503 with Retry-After). Each
// principal has its own SDK handler, so a session id never crosses
// principals.
func (b *Bridge) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxBody <= 0 {
		o.MaxBody = 4 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.MaxPeerInFlight <= 0 {
		o.MaxPeerInFlight = max(1, o.MaxInFlight/4)
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = 64 << 20
	}
	o.MaxInFlightBytes = max(o.MaxInFlightBytes, o.MaxBody)
	if o.MaxPeerInFlightBytes <= 0 {
		o.MaxPeerInFlightBytes = o.MaxInFlightBytes / 4
	}
	o.MaxPeerInFlightBytes = min(max(o.MaxPeerInFlightBytes, o.MaxBody), o.MaxInFlightBytes)
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Minute
	}
	return &httpEndpoint{b: b, o: o,
		posts:    transport.NewAdmission(o.MaxInFlight, o.MaxPeerInFlight, o.MaxInFlightBytes, o.MaxPeerInFlightBytes),
		streams:  transport.NewAdmission(o.MaxInFlight, o.MaxPeerInFlight, 0, 0),
		handlers: map[string]*mcp.StreamableHTTPHandler{}}
}

type httpEndpoint struct {
	b              *Bridge
	o              HTTPOptions
	posts, streams *transport.Admission
	mu             sync.Mutex
	handlers       map[string]*mcp.StreamableHTTPHandler
}

// jsonError answers an HTTP-level refusal: a JSON object with the AMP
// code and name, never an echo of the request.
func jsonError(w http.ResponseWriter, status int, err *amp.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": uint16(err.Code), "name": string(err.Name), "message": amp.SafeMessage(err)}})
	w.Write(append(body, '\n'))
}

func (h *httpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(origin) {
		jsonError(w, http.StatusForbidden, amp.Named(amp.CodeUnauthorized, "origin_refused", "requests from this origin are refused"))
		return
	}
	principal := h.principal(r)
	if principal == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ampagent-mcp"`)
		jsonError(w, http.StatusUnauthorized, amp.Named(amp.CodeUnauthorized, "unauthenticated", "a bearer token or a client certificate is required"))
		return
	}
	if r.ContentLength > h.o.MaxBody {
		w.Header().Set("Connection", "close")
		jsonError(w, http.StatusRequestEntityTooLarge, amp.Named(amp.CodeInvalidMessage, "body_too_large", "the request is larger than %d bytes", h.o.MaxBody))
		return
	}
	peer := transport.Peer(r.RemoteAddr)
	adm := h.posts
	if r.Method == http.MethodGet {
		adm = h.streams // a notification stream stays open: counted apart
	}
	if what := adm.Enter(peer); what != "" {
		h.busy(w, what)
		return
	}
	held := int64(0)
	defer func() { adm.Leave(peer, held) }()
	if r.Method == http.MethodPost {
		n := r.ContentLength
		if n < 0 {
			n = h.o.MaxBody
		}
		if !adm.Charge(peer, n) {
			h.busy(w, "bytes")
			return
		}
		held = n
		r.Body = http.MaxBytesReader(w, r.Body, h.o.MaxBody)
	}
	sh := h.handler(principal)
	if sh == nil {
		h.busy(w, "principals")
		return
	}
	sh.ServeHTTP(w, r.WithContext(transport.WithPeer(r.Context(), peer)))
}

func (h *httpEndpoint) busy(w http.ResponseWriter, what string) {
	h.b.log.Warn("mcp request refused: busy", "limit", what)
	w.Header().Set("Retry-After", "1")
	jsonError(w, http.StatusServiceUnavailable, amp.Named(amp.CodeOverloaded, "busy", "the agent is busy; retry later"))
}

func (h *httpEndpoint) originAllowed(origin string) bool {
	for _, o := range h.o.AllowedOrigins {
		if o == origin {
			return true
		}
	}
	return false
}

// principal authenticates r: a verified client certificate's DID, else a
// bearer token (compared in constant time); "" when neither.
func (h *httpEndpoint) principal(r *http.Request) string {
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
	for _, t := range h.o.Tokens {
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

// handler is the SDK handler of a principal (one each: a session id is
// bound to the principal that opened it).
func (h *httpEndpoint) handler(principal string) *mcp.StreamableHTTPHandler {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sh := h.handlers[principal]; sh != nil {
		return sh
	}
	srv := h.b.Server(principal)
	if srv == nil {
		return nil
	}
	sh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: h.o.SessionTimeout, MaxRequestBodyBytes: h.o.MaxBody, JSONResponse: true})
	h.handlers[principal] = sh
	return sh
}
