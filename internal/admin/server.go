package admin

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
)

// SocketPath is the default socket of the store at db.
func SocketPath(db string) string { return db + ".admin.sock" }

// NewHandler serves the admin API over s: a route for each operation of
// Ops. Every request body is read, and every answer written, at the
// minimum data rate (rateBodies), before the peer check, the store check
// (storeCheck) and the routes: each operation still bounds its body's
// size.
func NewHandler(s *resolver.Store, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Every line says it came through the socket (and so from the
	// agent's own user): a log throttle keeps them all (docs/CLI.md, "Log
	// volume").
	log = log.With("via", "admin_socket")
	mux := http.NewServeMux()
	for _, op := range Ops() {
		spec := op.Describe()
		mux.HandleFunc(spec.Method+" "+spec.Path, func(w http.ResponseWriter, r *http.Request) {
			setGeneration(w, s)
			v, line, err := op.handle(s, w, r)
			setGeneration(w, s) // after a change, the new generation
			if err != nil {
				if spec.Method == http.MethodPost {
					log.Warn("admin request failed", "path", spec.Path, "err", err)
				}
				writeError(w, err)
				return
			}
			if line != nil {
				msg, args := line()
				log.Info(msg, args...)
			}
			if v != nil {
				writeJSON(w, http.StatusOK, v)
			}
		})
	}
	id, _ := storeFileID(s.Path()) // "": none, every named store refused
	return rateBodies(peerCheck(storeCheck(id, mux)))
}

// StoreFileHeader names, on a request, the store file the caller means
// (its device and inode, as a DialStore client sends it), and, on every
// answer, the one the agent serves.
const StoreFileHeader = "X-Store-File"

// ErrOtherStore is the cause of the admin_socket refusal of a request
// that names another store file than the agent's (errors.Is, through a
// Client): the socket at the store's path is an agent of this user, but
// of another store (a link put at the path, a wrong --admin-socket).
var ErrOtherStore = errors.New("the admin socket serves another store")

// statusOtherStore is the HTTP status of storeCheck's refusal, which no
// other answer of the socket has: a Client gives that refusal its cause,
// ErrOtherStore.
const statusOtherStore = http.StatusConflict

// storeCheck serves only requests that name no store file or the one the
// agent serves (id): a request naming another is refused admin_socket
// before any route runs (docs/SPEC-DECISIONS.md ADMIN-8). The peer check
// says the caller is this user; this says the caller's command is about
// this store, which its socket path alone does not (a link to another
// agent's socket of the same user passes the peer check).
func storeCheck(id string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id != "" {
			w.Header().Set(StoreFileHeader, id)
		}
		if want := r.Header.Get(StoreFileHeader); want != "" && want != id {
			var doc errorDoc
			doc.Error.Code = "admin_socket"
			doc.Error.Message = "this agent serves another store than the one the command names; nothing was done"
			writeJSON(w, statusOtherStore, doc)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// rateBodies reads the body of every request h serves at the minimum
// data rate (admission.MinDataRate after admission.FrameGrace, and no
// stall longer than that grace; transport.RateReader), past which the
// read fails: a caller that declares a body and then stalls would
// otherwise hold its connection, a goroutine and a descriptor of the
// agent for as long as it liked, whatever the route (an unknown route
// too: net/http reads what is left of a small body before it answers;
// the connection's read deadline the reader sets bounds that reading as
// well). An import reads its stream under the store's write lock, so a
// stalled one would hold every other import, sync and trust change too.
// Once the body is read whole the deadline is lifted: what the
// connection reads next is net/http's (the next request's head, under
// ReadHeaderTimeout and IdleTimeout).
//
// The body's clock starts when the agent first reads it, not with the
// request (rateBody): an import reads its body only once it holds the
// store's write lock, which another write may hold for as long as its
// own stream takes, and that wait is the agent's, never charged to the
// caller (a bundle sent at once, queued behind a long import, was cut).
// A caller that sends nothing is still cut FrameGrace after the agent
// begins to read; until then it holds one of MaxConns connections and
// nothing of the store. The clock starts at the latest with the
// answer's first byte or the handler's end, so that what net/http reads
// of an unread body before it answers is bounded too.
//
// It writes every answer at the same rate (rateAnswer): a caller that
// asks and never reads (an export staged into a temporary file and
// copied out, any answer larger than the socket's buffer) would hold the
// same, and the staged file, for as long as it liked.
func rateBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		var body *rateBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &rateBody{body: r.Body, set: rc.SetReadDeadline}
			r.Body = body
		}
		a := &rateAnswer{ResponseWriter: w, set: rc.SetWriteDeadline, body: body}
		h.ServeHTTP(a, r)
		a.begin() // what net/http reads and writes after the handler, bounded too
	})
}

// rateBody is a request body read at the minimum data rate (rateBodies)
// from its first Read (begin), not from the request.
type rateBody struct {
	body io.ReadCloser
	set  func(time.Time) error
	in   *transport.RateReader // from begin
}

// begin starts the body's clock, once: the first byte is due
// FrameGrace from now.
func (b *rateBody) begin() {
	if b != nil && b.in == nil {
		b.in = transport.NewRateReader(b.body, b.set, 0, 0, 0)
	}
}

// Read reads the body; at its end it lifts the read deadline.
func (b *rateBody) Read(p []byte) (int, error) {
	b.begin()
	n, err := b.in.Read(p)
	if err == io.EOF {
		_ = b.set(time.Time{})
	}
	return n, err
}

// Close closes the body.
func (b *rateBody) Close() error { return b.body.Close() }

// rateAnswer is an answer written at the minimum data rate
// (transport.RateWriter on the connection's write deadline, the rule the
// body is read under; no bound on the whole, only on the rate): its
// clock starts with the answer's first byte (begin), not the request, so
// that an operation's own time (an import read at the rate, an export
// staged) is not charged to the caller's reading. A write past the
// deadline fails, the handler's copy stops (an export's staged file is
// removed then), and net/http closes the connection. The deadline last
// set also bounds what net/http writes after the handler (the buffered
// tail); between requests, Serve's connection hook sets its own
// (connLimit.state).
type rateAnswer struct {
	http.ResponseWriter
	set  func(time.Time) error
	out  *transport.RateWriter // from the answer's first byte
	body *rateBody             // the request's (nil: none)
}

// begin starts the answer's clock, once, and the body's if the handler
// has not read it (net/http may read what is left of it before the
// answer's head).
func (a *rateAnswer) begin() {
	a.body.begin()
	if a.out == nil {
		a.out = transport.NewRateWriter(a.ResponseWriter, a.set, 0, 0, 0)
	}
}

// WriteHeader starts the answer.
func (a *rateAnswer) WriteHeader(code int) {
	a.begin()
	a.ResponseWriter.WriteHeader(code)
}

// Write writes the answer at the minimum data rate.
func (a *rateAnswer) Write(p []byte) (int, error) {
	a.begin()
	return a.out.Write(p)
}

// Unwrap is the response writer answered through
// (http.ResponseController).
func (a *rateAnswer) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// handle serves one request of o: the request decoded (a JSON body, the
// query of a GET, or raw bytes), Run, and the answer to write as JSON.
func (o *Op[Req, Resp]) handle(s *resolver.Store, w http.ResponseWriter, r *http.Request) (any, func() (string, []any), error) {
	if o.serve != nil {
		return nil, nil, o.serve(s, w, r)
	}
	var req Req
	var err error
	switch {
	case o.read != nil:
		req, err = o.read(w, r)
	case o.Raw > 0:
		var data []byte
		if data, err = io.ReadAll(io.LimitReader(r.Body, o.Raw)); err != nil {
			err = amp.Named(0, "bad_request", "cannot read the request body")
		}
		req = any(data).(Req)
	case o.Method == http.MethodGet:
		err = decodeQuery(r, &req)
	default:
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if dec.Decode(&req) != nil {
			err = amp.Named(0, "bad_request", "the request body is not the expected json")
		}
	}
	if err != nil {
		return nil, nil, err
	}
	resp, err := o.Run(s, req)
	if err != nil {
		return nil, nil, err
	}
	var line func() (string, []any)
	if o.Log != nil {
		line = func() (string, []any) { return o.Log(req, resp) }
	}
	return resp, line, nil
}

// decodeQuery fills req, a flat object of strings, from the query of r
// (parameters it does not name are ignored, as an older agent ignores
// newer ones).
func decodeQuery(r *http.Request, req any) error {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	b, _ := json.Marshal(q)
	if json.Unmarshal(b, req) != nil {
		return amp.Named(0, "bad_request", "the query is not the expected one")
	}
	return nil
}

// errorDoc is the error document of the socket (and of the CLI contract).
type errorDoc struct {
	Error struct {
		Code    string          `json:"code"`
		AMPCode uint16          `json:"amp_code,omitempty"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	e := amp.AsError(err)
	var doc errorDoc
	doc.Error.Code, doc.Error.AMPCode, doc.Error.Message = string(amp.NameOf(e)), uint16(e.Code), e.Message
	if e.Details != nil {
		if d, err := json.Marshal(e.Details); err == nil {
			doc.Error.Details = d
		}
	}
	status := http.StatusBadRequest
	switch {
	case e.Code == amp.CodeInternalError || errors.Is(err, resolver.ErrStoreIO):
		status = http.StatusInternalServerError
	case e.Code == amp.CodeOverloaded:
		status = http.StatusServiceUnavailable // busy: retry, as beyond MaxConns
	case errors.Is(err, resolver.ErrUnknownBundle) || errors.Is(err, resolver.ErrUnknownTrust):
		status = http.StatusNotFound
	}
	writeJSON(w, status, doc)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// GenerationHeader carries the store's generation (resolver.Store.Generation)
// after the request, on every answer.
const GenerationHeader = "X-Store-Generation"

func setGeneration(w http.ResponseWriter, s *resolver.Store) {
	w.Header().Set(GenerationHeader, strconv.FormatUint(s.Generation(), 10))
}

// peerCheck serves only connections from this process's user, as recorded
// by ConnContext; a request whose peer is unknown is refused (the socket's
// mode already restricts it; this holds where modes are not enforced).
func peerCheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if uid, ok := r.Context().Value(peerUIDKey{}).(int); !ok || uid < 0 || uid != os.Getuid() {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{"code": "forbidden", "message": "only the agent's user may administer it"}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

type peerUIDKey struct{}

// Listen creates the admin socket at path, mode 0600. A socket file left by
// an agent that is gone is replaced; one that answers belongs to a running
// agent, and Listen refuses (two agents on one store cannot both run), or
// to another user's process, refused as ErrForeignSocket with the
// operator's next step as its hint (cliutil.WithHint: ADMIN-5).
func Listen(path string) (net.Listener, error) { return listen(path, nil) }

// listen is Listen; afterBind, when not nil, runs between the socket's
// creation and its check: a test moves what is at the path there, as
// another user who may write the folder could.
func listen(path string, afterBind func(string)) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, amp.Named(0, "admin_socket", "the admin socket path exists and is not a socket")
		}
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			uid := connUID(c)
			c.Close()
			if uid >= 0 && uid != os.Getuid() {
				// Not an agent of this user: say so (ADMIN-1), the
				// operator must remove it, not look for an agent.
				return nil, cliutil.WithHint(amp.Named(0, "admin_socket", "another user's process (uid %d) listens on the admin socket path", uid).WithCause(ErrForeignSocket),
					foreignListenerHint(path))
			}
			return nil, amp.Named(0, "admin_socket", "another agent already listens on the admin socket")
		}
		if err := os.Remove(path); err != nil {
			return nil, amp.Named(0, "admin_socket", "cannot remove a stale admin socket").WithCause(err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, amp.Named(0, "admin_socket", "cannot check the admin socket path").WithCause(err)
	}
	// Create it inaccessible to others from the start, then make sure,
	// changing nothing through the path: a chmod would follow a link put
	// there meanwhile (ADMIN-7).
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "cannot listen on the admin socket").WithCause(err)
	}
	if afterBind != nil {
		afterBind(path)
	}
	if err := checkPrivate(path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
