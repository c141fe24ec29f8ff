package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
)

// Client talks to a running agent's admin socket: a Registry whose
// operations run in the agent.
type Client struct {
	Registry
	path  string
	store string // the store file every request names (DialStore); "": none
	http  *http.Client
	gen   atomic.Uint64
	wait  time.Duration // the longest the agent may keep a request waiting (watch)
}

// DefaultAnswerWait is the longest a Client waits for its agent to take
// the next part of a request, or to begin its answer once the request is
// sent (watch): an operation sends nothing while it runs (a store check
// hashing every blob, an import queued behind another's stream), so this
// is also the longest an operation may run before its answer. The answer
// itself is read at the minimum data rate (admission.MinDataRate after
// admission.FrameGrace), as the agent reads a request. Past either, the
// request fails admin_socket, code 5003, cause ErrNoAnswer
// (docs/SPEC-DECISIONS.md ADMIN-9).
const DefaultAnswerWait = time.Hour

// ProbeWait bounds DialStore's first request (GET /v1/generation, which
// an agent answers from memory, or 503 busy at once beyond MaxConns): a
// process that accepts connections at the socket's path and never
// answers is refused there, ErrNoAnswer, before the command goes on.
const ProbeWait = 10 * time.Second

// ErrNoAnswer is the cause of the admin_socket refusal (code 5003) of a
// request the agent did not take, or did not answer, within the Client's
// wait (DefaultAnswerWait; ProbeWait for DialStore's first request), or
// whose answer fell below the minimum data rate: an agent that hangs, or
// a process of this user that took the socket's path and accepts without
// answering, would otherwise hold the command for ever.
var ErrNoAnswer = errors.New("the agent did not answer on the admin socket in time")

// ImportAnswerGrace is how long past an import's deadline (its context's,
// the command's --timeout) a Client waits for the agent's answer: the
// agent ends the import at that deadline itself (timeout_ms), committed
// or rolled back, and answers which; cutting the request at the deadline
// instead would race the agent's commit and could say "nothing was
// imported" of a bundle the agent serves (docs/SPEC-DECISIONS.md CLI-22,
// ADMIN-10). The agent answers within cancelGrace of its deadline
// (resolver's import stream) unless its import still waits for the
// store's write lock, which another write holds.
const ImportAnswerGrace = 10 * time.Second

// agentDeadline returns the context an import with ctx is sent with, a
// function that releases it, and the time left to ctx's deadline (0:
// none to tell), which the agent is told as timeout_ms and ends the
// import at: without a deadline ctx itself; with one, a context that
// ends ImportAnswerGrace after it, or when ctx is cancelled otherwise (a
// cancellation is still the caller's to make).
//
// A deadline further away than the agent takes (maxImportTimeout, 30
// days) is not told: the agent refuses a larger timeout_ms bad_request,
// and an import with a year's --timeout, which an agent imported before
// timeout_ms existed, would fail. The agent then applies no deadline of
// its own, as an older agent does, and the request is still cut
// ImportAnswerGrace past ctx's deadline (pastDeadline). So the client
// sends no timeout_ms the agent refuses, for any deadline
// (docs/SPEC-DECISIONS.md ADMIN-11).
func agentDeadline(ctx context.Context) (context.Context, func(), time.Duration) {
	d, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}, 0
	}
	left := max(time.Until(d), time.Millisecond)
	if left.Milliseconds() > maxImportTimeout.Milliseconds() {
		left = 0 // beyond what the agent takes: told nothing
	}
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), d.Add(ImportAnswerGrace))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return rctx, func() { stop(); cancel() }, left
}

// pastDeadline is err, the failure of an import sent with ctx
// (agentDeadline), or, when ctx's own deadline cut it (the agent did not
// answer within ImportAnswerGrace of the import's deadline: an older
// agent that ignores timeout_ms, or one whose import still waits for the
// store's write lock), the refusal saying so: whether the agent imported
// the bundle is then unknown.
func pastDeadline(ctx context.Context, err error) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return cliutil.WithHint(amp.Named(amp.CodeTimeout, "admin_socket", "the agent did not answer within %v of the import's deadline; the request was cut, and whether the agent imported the bundle is unknown", ImportAnswerGrace).WithCause(err),
		"see the store's state with 'ampbundle ls' and 'ampbundle audit'")
}

// ReportAsIs reports whether err, a DialStore error, must reach the
// operator as it is rather than as the store being in use: another
// user's socket (ErrForeignSocket, ADMIN-5), an agent of another store
// (ErrOtherStore, ADMIN-8) or a process at the socket's path that did not
// answer (ErrNoAnswer, ADMIN-9); each names what sits at the path.
func ReportAsIs(err error) bool {
	return errors.Is(err, ErrForeignSocket) || errors.Is(err, ErrOtherStore) || errors.Is(err, ErrNoAnswer)
}

// Dial connects to the admin socket at path; it fails fast when nothing
// listens there, and refuses (admin_socket) a socket served by a process
// of another user than this one's: every connection the Client makes is
// checked so (dialOwn) before a byte of a request is sent, as the server
// serves only its own user (peerCheck).
func Dial(path string) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	c, err := dialOwn(ctx, path)
	cancel()
	if err != nil {
		return nil, err
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialOwn(ctx, path)
	}}
	ac := &Client{path: path, http: &http.Client{Transport: tr}, wait: DefaultAnswerWait}
	ac.Registry.client = ac
	return ac, nil
}

// DialStore is Dial for a command about the store file db: every
// request names db's file (StoreFileHeader) and the agent refuses it
// when that is not the store it serves (storeCheck), before anything is
// done; DialStore asks once at once, so that the refusal comes before
// the command goes on (cause ErrOtherStore, with the operator's next
// step as its hint). The socket's path says nothing of the store behind
// it: a link put at DB.admin.sock to another agent of this user (of
// another store) passes Dial's user check, and the command's bundles,
// trust changes and statements went to that store
// (docs/SPEC-DECISIONS.md ADMIN-8). An agent older than this program
// ignores the name and serves as before.
func DialStore(path, db string) (*Client, error) {
	return dialStore(path, db, ProbeWait)
}

// dialStore is DialStore with probe the wait of its first request (a
// test that plays a silent process shortens it).
func dialStore(path, db string, probe time.Duration) (*Client, error) {
	id, err := storeFileID(db)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "cannot identify the store file to name it to the agent").WithCause(err)
	}
	c, err := Dial(path)
	if err != nil {
		return nil, err
	}
	c.store = id
	// The agent answers this from memory: a silent process at the path
	// is refused here, within ProbeWait, not after the command's first
	// operation waited DefaultAnswerWait (ADMIN-9).
	wait := c.wait
	c.wait = min(wait, probe)
	_, err = c.FetchGeneration()
	c.wait = wait
	if errors.Is(err, ErrOtherStore) || errors.Is(err, ErrNoAnswer) {
		c.Close()
		return nil, err
	}
	return c, nil
}

// otherStoreHint is the operator's next step after the agent at path
// refused the command's store as not its own (ErrOtherStore).
func otherStoreHint(path string) string {
	return fmt.Sprintf("the agent listening at %s serves another store than the one given with --db, and nothing was sent to it to do: give this store's agent socket with --admin-socket, or, if nothing of yours should be at %s (a link someone put there), remove it", path, path)
}

// ErrForeignSocket is the cause of the admin_socket refusal of a socket
// served by another user than this process's (errors.Is): not an agent
// of this store's user, whatever listens there.
var ErrForeignSocket = errors.New("the admin socket is another user's")

// ForeignSocketHint is the operator's next step after Dial refused the
// socket at path as another user's (ErrForeignSocket): nothing was sent
// to it. Dial's refusal carries it (cliutil.WithHint), so every command
// that reads a held store through the socket shows it by reporting that
// refusal (docs/SPEC-DECISIONS.md ADMIN-1, ADMIN-5), never the store's
// store_in_use, which sends the operator looking for a command or an
// agent instead.
func ForeignSocketHint(path string) string {
	return fmt.Sprintf("another user's process listens at %s, where the agent's admin socket should be, and nothing was sent to it: give the agent's socket with --admin-socket, keep stores out of folders others may write, and remove that socket", path)
}

// foreignListenerHint is the operator's next step after Listen refused
// to start where another user's process answers at path: the agent
// cannot serve its store's socket there, and that process is no agent of
// this user (ADMIN-5).
func foreignListenerHint(path string) string {
	return fmt.Sprintf("another user's process listens at %s, where this agent's admin socket goes, and it is no agent of this user: remove that socket (or have its user stop that process), keep stores out of folders others may write, or give this agent another socket with --admin-socket", path)
}

// dialOwn connects to the admin socket at path and keeps the connection
// only when the process that listens there is of this process's user
// (SO_PEERCRED, LOCAL_PEERCRED: the server's credentials, which no file
// mode or owner of the path can forge). A socket another user created
// where the agent's should be (a folder others may write, an agent
// listening elsewhere or not yet) would otherwise be sent the operator's
// bundles, trust changes and statements, and have its forged answers
// printed as the store's. Where the system cannot tell the peer, every
// socket is refused, as the server refuses every peer there.
func dialOwn(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "no agent answers on the admin socket").WithCause(err)
	}
	switch uid := connUID(c); {
	case uid < 0:
		c.Close()
		return nil, amp.Named(0, "admin_socket", "cannot tell which user serves the admin socket; refusing it")
	case uid != os.Getuid():
		c.Close()
		return nil, cliutil.WithHint(amp.Named(0, "admin_socket", "the admin socket is served by another user (uid %d), not this one (uid %d); refusing it", uid, os.Getuid()).WithCause(ErrForeignSocket),
			ForeignSocketHint(path))
	}
	return c, nil
}

// Path returns the socket path.
func (c *Client) Path() string { return c.path }

// Generation is the store's generation as of the last answer (0 before
// the first): FetchGeneration asks the agent for the current one.
func (c *Client) Generation() uint64 { return c.gen.Load() }

// Close releases the client's connections.
func (c *Client) Close() error { c.http.CloseIdleConnections(); return nil }

// Call sends req to the agent as op's route and decodes its answer.
func Call[Req, Resp any](c *Client, op *Op[Req, Resp], req Req) (Resp, error) {
	if op.send != nil {
		return op.send(c, req)
	}
	var resp Resp
	var body io.Reader
	path := op.Path
	switch {
	case op.Raw > 0:
		body = bytes.NewReader(any(req).([]byte))
	case op.Method == http.MethodGet:
		b, _ := json.Marshal(req)
		var q map[string]string
		json.Unmarshal(b, &q)
		v := url.Values{}
		for k, s := range q {
			v.Set(k, s)
		}
		path = withQuery(path, v)
	default:
		b, _ := json.Marshal(req)
		body = bytes.NewReader(b)
	}
	ct := op.Type
	if body != nil && ct == "" {
		ct = "application/json"
	}
	return resp, c.do(context.Background(), op.Method, path, body, ct, &resp)
}

// withQuery is path with the query q (none when q is empty).
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, ct string, out any) error {
	ctx, w := c.watch(ctx)
	defer w.stop()
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return amp.Named(0, "admin_socket", "cannot build the admin request").WithCause(err)
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &watchedBody{ReadCloser: req.Body, w: w} // ContentLength kept
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if c.store != "" {
		req.Header.Set(StoreFileHeader, c.store)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var refused *amp.Error
		if errors.As(err, &refused) && amp.NameOf(refused) == "admin_socket" {
			return refused // dialOwn's: no agent, or another user's socket
		}
		return w.failed(amp.Named(0, "admin_socket", "the agent did not answer on the admin socket").WithCause(err))
	}
	defer resp.Body.Close()
	answer := w.answer(resp.Body)
	if g, err := strconv.ParseUint(resp.Header.Get(GenerationHeader), 10, 64); err == nil {
		c.gen.Store(g)
	}
	if resp.StatusCode != http.StatusOK {
		var doc errorDoc
		if json.NewDecoder(io.LimitReader(answer, 1<<20)).Decode(&doc) != nil || doc.Error.Code == "" {
			if err := w.failed(nil); err != nil {
				return err
			}
			if resp.StatusCode == http.StatusNotFound {
				// No such route: an agent older than this program.
				return amp.Named(0, resolver.ErrUnsupported, "the agent's admin socket does not offer %s (an older agent: restart it with this version)", path)
			}
			return amp.Named(0, "admin_socket", "the agent answered http %d", resp.StatusCode)
		}
		e := amp.Named(amp.Code(doc.Error.AMPCode), amp.ErrName(doc.Error.Code), "%s", doc.Error.Message)
		if len(doc.Error.Details) > 0 {
			e = e.WithDetails(doc.Error.Details)
		}
		if c.store != "" && resp.StatusCode == statusOtherStore && doc.Error.Code == "admin_socket" {
			return cliutil.WithHint(e.WithCause(ErrOtherStore), otherStoreHint(c.path))
		}
		return e
	}
	if wr, ok := out.(io.Writer); ok {
		if _, err := io.Copy(wr, answer); err != nil {
			return w.failed(amp.Named(0, "admin_socket", "the agent's answer was cut off").WithCause(err))
		}
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(answer, 64<<20)).Decode(out); err != nil {
		return w.failed(amp.Named(0, "admin_socket", "the agent's answer does not decode").WithCause(err))
	}
	return nil
}

// requestWatch bounds one request of a Client (docs/SPEC-DECISIONS.md
// ADMIN-9): its context ends, with the cause ErrNoAnswer, when the agent
// takes no part of the request's body for the Client's wait, sends no
// answer within that wait after the body's last part was taken (or after
// the request began, without a body), or, once the answer began, falls
// below the minimum data rate (transport.RateReader, the rule the agent
// reads requests by). An HTTP client without a timeout, over a socket
// whose server accepts and says nothing, waits for ever.
type requestWatch struct {
	wait     time.Duration
	t        *time.Timer
	mu       sync.Mutex
	answered bool // from the answer's head: the rate rules
	cancel   context.CancelCauseFunc
	ctx      context.Context
}

// watch starts the watch of a request made with the returned context.
func (c *Client) watch(parent context.Context) (context.Context, *requestWatch) {
	ctx, cancel := context.WithCancelCause(parent)
	w := &requestWatch{wait: c.wait, cancel: cancel, ctx: ctx}
	w.t = time.AfterFunc(w.wait, func() { cancel(ErrNoAnswer) })
	return ctx, w
}

// again gives the agent its wait once more, from now, until the answer
// begins: a part of the body was taken.
func (w *requestWatch) again() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answered {
		w.t.Reset(w.wait)
	}
}

// answer is the answer's body, read at the minimum data rate from now
// (its grace, and the longest stall, admission.FrameGrace, or the wait
// when shorter).
func (w *requestWatch) answer(body io.Reader) io.Reader {
	w.mu.Lock()
	w.answered = true
	w.mu.Unlock()
	return transport.NewRateReader(body, func(t time.Time) error {
		w.t.Reset(time.Until(t))
		return nil
	}, 0, min(w.wait, admission.FrameGrace), 0)
}

// failed is err, or, when the watch ended the request, the refusal
// naming that (ErrNoAnswer; nil when it did not and err is nil).
func (w *requestWatch) failed(err error) error {
	if errors.Is(context.Cause(w.ctx), ErrNoAnswer) {
		return cliutil.WithHint(amp.Named(amp.CodeTimeout, "admin_socket", "the agent took no part of the request, or sent no answer, within %v, or its answer fell below the minimum data rate; nothing more was waited for", w.wait).WithCause(ErrNoAnswer),
			"the agent may be hung, or another process of this user listens at the admin socket's path: check the agent (its log, its process), restart it, or give its socket with --admin-socket")
	}
	return err
}

// stop ends the watch (the request is over).
func (w *requestWatch) stop() {
	w.t.Stop()
	w.cancel(nil)
}

// watchedBody is a request's body whose every part read (what the HTTP
// client then writes to the agent) gives the agent its wait again.
type watchedBody struct {
	io.ReadCloser
	w *requestWatch
}

// Read reads the next part of the body.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.again()
	return n, err
}

// ownBytes refuses an answer that lists a statement (what names it)
// whose bytes data do not hash to its SHA-256 sum.
func ownBytes(data, sum []byte, what string) error {
	if got := sha256.Sum256(data); !bytes.Equal(got[:], sum) {
		return amp.Named(0, "admin_socket", "the agent's answer lists a %s whose bytes are not its own", what)
	}
	return nil
}

func didKeyPublic(s string) (ed25519.PublicKey, error) {
	doc, err := amp.DIDKeyDocument(s)
	if err == nil {
		for _, m := range doc.Methods {
			if m.KeyType == amp.KeyEd25519 {
				return ed25519.PublicKey(m.PublicKey), nil
			}
		}
	}
	return nil, amp.Named(0, resolver.ErrInvalidTrust, "the key must be an ed25519 did:key")
}

type progressReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.fn(p.n)
	return n, err
}
