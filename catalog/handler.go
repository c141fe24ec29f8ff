package catalog

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/transport"
)

// Prefix is the path the catalog is served under.
const Prefix = "/ui/"

// Bounds of the pages.
const (
	// PageSize is the most rows of one list page.
	PageSize = 200
	// MaxQuery is the longest search query, in bytes.
	MaxQuery = 128
	// DefaultRefresh is how often the handler looks for a new store
	// generation, at most.
	DefaultRefresh = 5 * time.Second
	// DefaultMaxAge is how old a model may get before it is read again
	// even at the same generation (its expiry warnings follow the clock).
	DefaultMaxAge = time.Hour
	// DefaultMaxInFlight bounds the pages rendered at once. A page shows
	// at most two schemas of at most MaxRenderBytes each, or
	// MaxRenderBytes of a matrix's findings, and lists of PageSize rows,
	// so the pages in flight hold a few tens of MiB at most.
	DefaultMaxInFlight = 16
	// DefaultPeerShare: one peer holds at most a quarter of the pages in
	// flight.
	DefaultPeerShare = 4
)

// ContentSecurityPolicy is sent with every answer: nothing but the
// page's own stylesheet and images, no script at all.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed assets/style.css templates/*.html
var files embed.FS

// Options configure a Handler. Exactly one of Source and Open is set.
type Options struct {
	// Source is a store held open by the caller (an agent's).
	Source Source
	// Open opens the store for one read; what it returns is closed after
	// the read when it is an io.Closer (the mirror's way).
	Open func() (Source, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Refresh, MaxAge, MaxInFlight: defaults DefaultRefresh,
	// DefaultMaxAge, DefaultMaxInFlight.
	Refresh     time.Duration
	MaxAge      time.Duration
	MaxInFlight int
	// PeerShare: one peer (an IP address or IPv6 /48, TRANSPORT-28) holds at most
	// 1/PeerShare of MaxInFlight (at least one page); 0 is
	// DefaultPeerShare. A server passes its own --peer-share (1 behind a
	// proxy, where every caller is one address).
	PeerShare int
	// ComputeBurst and ComputeRate bound the compute time of the
	// matrices the pages compute: at once and sustained (seconds a
	// second), all peers together; one peer has 1/PeerShare of each.
	// Defaults DefaultComputeBurst, DefaultComputeRate.
	ComputeBurst time.Duration
	ComputeRate  float64
	// MaxComputing bounds the matrices computed at once, all peers
	// together; one peer computes 1/PeerShare of them (at least one).
	// Default DefaultMaxComputing.
	MaxComputing int
	// RenderBurst and RenderRate bound the time the pages spend
	// rendering schemas (CATALOG-26) and kept matrices' findings
	// (CATALOG-30), as ComputeBurst and ComputeRate bound the
	// matrices' computations. Defaults DefaultRenderBurst,
	// DefaultRenderRate.
	RenderBurst time.Duration
	RenderRate  float64
	// MinDataRate is the slowest a client may read an answer, in bytes a
	// second, after admission.FrameGrace: below it the answer is cut off
	// and its page slot freed (transport.RateWriter, as the mirror writes
	// its files). Default admission.MinDataRate; a server passes its own
	// --min-rate. Over HTTP/2 the slot of a peer whose connection is
	// stuck comes back only when the server closes that connection: serve
	// the handler from a server with HTTP2Config.WriteByteTimeout set (as
	// mirror.NewHTTPServer's is), or without HTTP/2.
	MinDataRate int64
	// Logger; nil discards.
	Logger *slog.Logger
}

// Handler serves the catalog pages under Prefix.
type Handler struct {
	opts  Options
	log   *slog.Logger
	pages map[string]*template.Template
	css   []byte
	slots *transport.Admission // pages rendered at once, in all and by peer
	share *computeShare        // compute time of the matrices, in all and by peer
	shown *computeShare        // rendering time of the schemas, in all and by peer

	mu        sync.Mutex // one refresh at a time
	cur       atomic.Pointer[Model]
	lastCheck atomic.Int64 // unix nanoseconds
}

// NewHandler checks opts, parses the embedded templates and takes the
// first model.
func NewHandler(opts Options) (*Handler, error) {
	if (opts.Source == nil) == (opts.Open == nil) {
		return nil, amp.Named(0, ErrMisconfigured, "catalog: give exactly one of source and open")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	limit.Default(&opts.Refresh, DefaultRefresh)
	limit.Default(&opts.MaxAge, DefaultMaxAge)
	limit.Default(&opts.MaxInFlight, DefaultMaxInFlight)
	limit.Default(&opts.PeerShare, DefaultPeerShare)
	limit.Default(&opts.ComputeBurst, DefaultComputeBurst)
	limit.Default(&opts.ComputeRate, DefaultComputeRate)
	limit.Default(&opts.MaxComputing, DefaultMaxComputing)
	limit.Default(&opts.RenderBurst, DefaultRenderBurst)
	limit.Default(&opts.RenderRate, DefaultRenderRate)
	limit.Default(&opts.MinDataRate, admission.MinDataRate)
	h := &Handler{opts: opts, log: opts.Logger,
		slots: transport.NewAdmission(opts.MaxInFlight, max(1, opts.MaxInFlight/opts.PeerShare), 0, 0),
		share: newComputeShare(compareKind, opts.Now, opts.ComputeBurst, opts.ComputeRate, opts.MaxComputing, opts.PeerShare),
		shown: newComputeShare(renderKind, opts.Now, opts.RenderBurst, opts.RenderRate, opts.MaxInFlight, opts.PeerShare)}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}
	if h.css, err = files.ReadFile("assets/style.css"); err != nil {
		return nil, err
	}
	if err := h.refresh(true); err != nil {
		return nil, err
	}
	return h, nil
}

// Model returns the model the pages show now.
func (h *Handler) Model() *Model { return h.cur.Load() }

// withSource runs f on the store: the one held, or one opened for it.
func (h *Handler) withSource(f func(Source) error) error {
	if h.opts.Source != nil {
		return f(h.opts.Source)
	}
	src, err := h.opts.Open()
	if err != nil {
		return err
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	return f(src)
}

// refresh takes the model again when the store generation moved, the
// model is older than MaxAge, a bundle's state changed by the clock since
// the read (it expired, or came within ExpiryWarning of it: the model's
// turnsAt), or force. Without force it costs a clock
// read until the refresh interval has passed, and a request that finds a
// refresh under way is served the current model rather than wait for it.
func (h *Handler) refresh(force bool) error {
	now := h.opts.Now()
	if force {
		h.mu.Lock()
	} else if now.UnixNano()-h.lastCheck.Load() < int64(h.opts.Refresh) || !h.mu.TryLock() {
		return nil
	}
	defer h.mu.Unlock()
	h.lastCheck.Store(now.UnixNano())
	cur := h.cur.Load()
	return h.withSource(func(src Source) error {
		if cur != nil && now.Sub(cur.ReadAt) < h.opts.MaxAge && (cur.turnsAt.IsZero() || now.Before(cur.turnsAt)) {
			if g, err := generationOf(src); err != nil || g == cur.Generation {
				return err
			}
		}
		// What the model served derived of a schema is reused for the
		// same bytes: an unchanged schema is not parsed again
		// (CATALOG-44).
		opts := PageReadOptions(h.opts.Now)
		opts.Previous = cur
		m, err := Read(src, opts)
		if err != nil {
			return err
		}
		h.cur.Store(m)
		h.log.Info("catalog read", "generation", m.Generation, "capabilities", len(m.Capabilities))
		return nil
	})
}

// setHeaders sets the headers of every answer.
func setHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
	// A page of another site that opened the catalog in a window (a
	// link with a target, window.open) keeps no handle on it: it cannot
	// send that window to one catalog address after another, nor
	// anywhere else later (CATALOG-37).
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// ErrCrossSite: a request a document of another site made for anything
// but a top-level navigation (an image, a frame, a stylesheet, a fetch,
// a prefetch: Fetch Metadata's Sec-Fetch-Site, Sec-Fetch-Mode and
// Sec-Fetch-Dest) is refused, 403, before the store is read
// (CATALOG-34); so is a top-level navigation the user's activation did
// not start (Sec-Fetch-User), by a page linking the address (CATALOG-36).
const ErrCrossSite amp.ErrName = "cross_site_refused"

// Kinds of a request of another site (crossSite).
const (
	// ownSite: a request without Sec-Fetch-Site (curl, an older
	// browser), one the user made (none), or one of the catalog's own
	// pages (same-origin).
	ownSite = iota
	// embedded: anything of another site but a top-level navigation
	// (an image, a frame, a fetch, a prefetch), refused as text.
	embedded
	// unclicked: a top-level navigation of another site the user's
	// activation did not start (no Sec-Fetch-User: ?1), refused by a
	// page that links the catalog's own address for it (CATALOG-36).
	unclicked
	// clicked: a link of another site the user followed.
	clicked
)

// crossSite says what kind of request of another site r is (W3C Fetch
// Metadata Request Headers): the catalog never embeds nor fetches its
// pages from elsewhere, and a page of another site has no reason to.
// Any value of Sec-Fetch-Site but same-origin and none counts as another
// site. A navigation the browser makes ahead of the user (Sec-Purpose or
// Purpose: a speculation-rules prefetch or prerender, which a page may
// fire by the dozen without leaving) is no link followed
// (CATALOG-34 amended), and neither is one a script started without the
// user's activation (no Sec-Fetch-User: ?1): a page that starts a
// navigation and stops it (window.stop, or the next one) fires any
// number of them without leaving (CATALOG-36).
func crossSite(r *http.Request) int {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return ownSite
	}
	if r.Header.Get("Sec-Purpose") != "" || r.Header.Get("Purpose") != "" ||
		r.Header.Get("Sec-Fetch-Mode") != "navigate" || r.Header.Get("Sec-Fetch-Dest") != "document" {
		return embedded
	}
	if r.Header.Get("Sec-Fetch-User") != "?1" {
		return unclicked
	}
	return clicked
}

// ServeHTTP serves GET and HEAD of the catalog pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setHeaders(w)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength != 0 {
		// net/http watches for the client's departure (the request's
		// context) only once a body was read to its end, which no page
		// does: a GET declaring a body and then gone would be rendered
		// whole for no reader (CATALOG-25). Closing the connection
		// spares reading the body too.
		w.Header().Set("Connection", "close")
		http.Error(w, "a page request has no body", http.StatusBadRequest)
		return
	}
	switch crossSite(r) {
	case embedded:
		// A page of another site embeds or fetches the catalog: its
		// answer is never read there, but rendering it would spend the
		// operator's own share (the browser is the operator's address)
		// and its timing tells that page what the store holds
		// (CATALOG-34). Refused before the store is read.
		h.log.Debug("catalog request of another site refused", "err", string(ErrCrossSite))
		http.Error(w, "a page of another site cannot load the catalog: open it directly", http.StatusForbidden)
		return
	case unclicked:
		// A page of another site navigates to the catalog without the
		// user's click, maybe to stop the navigation and start the next
		// (CATALOG-36): refused before the store is read, by a page
		// that links the address, so that one click of the user's opens
		// it (a same-origin request).
		h.log.Debug("catalog navigation of another site without the user's activation refused", "err", string(ErrCrossSite))
		name, data, code := errorPage(h.cur.Load(), http.StatusForbidden, "A page of another site opened this address without a click of yours, so the catalog did not open it.")
		data.Continue = continueLink(r)
		h.render(w, r, name, data, code)
		return
	}
	peer := transport.Peer(r.RemoteAddr)
	if h.slots.Enter(peer) != "" {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return
	}
	defer h.slots.Leave(peer, 0)
	if r.URL.Path == Prefix+"style.css" {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=3600")
		h.write(w, r, http.StatusOK, h.css)
		return
	}
	if err := h.refresh(false); err != nil {
		h.log.Warn("catalog refresh failed; serving the last model", "err", err)
	}
	m := h.cur.Load()
	if m.expiredSince(h.opts.Now()) {
		// The store was not read again since a bundle of the model
		// expired (it cannot be read, or a read is under way): the
		// model would show that bundle in use. Fail closed.
		w.Header().Set("Retry-After", "1")
		name, data, code := errorPage(m, http.StatusServiceUnavailable, "the catalog cannot be read now; try again later")
		h.render(w, r, name, data, code)
		return
	}
	// A schema of the page streams its rendering to out (schemaView.Body),
	// so route's views find it in the request's context.
	out := &pageOut{h: h, w: w, r: r, peer: peer}
	defer out.settle() // a page admitted and not executed (abandoned)
	r = r.WithContext(context.WithValue(r.Context(), pageOutKey{}, out))
	name, data, code := route(m, r, h.admitter(peer))
	h.render(w, r, name, data, code)
}

// admitter lets a request of peer start a matrix computation within
// the peer's compute share, and logs a refusal.
func (h *Handler) admitter(peer string) func() (func(), *refusal) {
	admit := h.share.admitter(peer)
	return func() (func(), *refusal) {
		end, no := admit()
		if no != nil {
			h.log.Debug("catalog comparisons refused", "peer", peer, "err", string(no.name))
		}
		return end, no
	}
}

// render executes a page and writes it. The page is rendered only for a
// GET whose client is still there: a HEAD gets the status and headers
// alone (its Content-Length would cost the whole rendering), and a client
// gone, before or while the page renders (the printer checks every
// renderCheck tokens), gets its connection closed with no answer
// (abandon). A page is buffered, and written with its Content-Length,
// until a schema of it is rendered: from there it streams (pageOut), so
// that a client gone unseen by the context (a pipelined request) fails
// the writes and stops the printing within a streamChunk or two
// (CATALOG-26). A failure before the first byte went out is a 500, after
// it an abort: never a page cut off that reads as whole.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data page, code int) {
	if data.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(data.retryAfter/time.Second)))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		w.WriteHeader(code)
		return
	}
	if r.Context().Err() != nil {
		h.abandon(name)
	}
	out := pageOutOf(r.Context())
	if out == nil {
		out = &pageOut{h: h, w: w, r: r}
	}
	out.code = code
	err := h.pages[name].ExecuteTemplate(out, "layout", data)
	out.settle()
	switch {
	case out.refused != nil && out.rw == nil:
		// The peer's share of the renderings is spent: the refusal
		// instead of the page, before any byte of it went.
		no := out.refused
		h.log.Debug("catalog rendering refused", "peer", out.peer, "err", string(no.name))
		out.buf.Reset()
		out.refused = nil
		name, data, code := errorPage(data.Model, no.status, no.text)
		data.retryAfter = no.retry
		h.render(w, r, name, data, code)
	case out.err != nil || r.Context().Err() != nil:
		h.abandon(name)
	case err != nil && out.rw == nil:
		h.log.Error("catalog page failed", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	case err != nil:
		h.log.Error("catalog page failed", "page", name, "err", err)
		panic(http.ErrAbortHandler)
	case out.rw == nil:
		h.write(w, r, code, out.buf.Bytes())
	default:
		if out.Flush() != nil {
			h.abandon(name)
		}
	}
}

// abandon ends the answer of a client gone: net/http closes the
// connection without an answer (http.ErrAbortHandler), so that no 200 is
// sent, logged or counted for a page never rendered (CATALOG-26).
func (h *Handler) abandon(name string) {
	h.log.Debug("catalog page abandoned by its client", "page", name)
	panic(http.ErrAbortHandler)
}

// write sends the answer code with body, which the client must read at
// MinDataRate after admission.FrameGrace (rateWriter).
func (h *Handler) write(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	out := h.rateWriter(w, r)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		out.Write(body)
	}
}

// rateWriter is what an answer is written through from now: the client
// must read it at MinDataRate after admission.FrameGrace
// (transport.RateWriter), so that a peer reading nothing is cut off
// within moments, and its page slot freed, not held for the server's
// whole write timeout; that timeout bounds the writing from now, which
// moves the connection's write deadline (CATALOG-24).
func (h *Handler) rateWriter(w http.ResponseWriter, r *http.Request) *transport.RateWriter {
	return transport.ResponseRateWriter(w, r, h.opts.MinDataRate, admission.FrameGrace)
}

// streamChunk is how many bytes of a streamed page are buffered before
// they are written out (each write a look at whether the client is still
// there: a write to a connection its peer closed fails).
const streamChunk = 32 << 10

// pageOutKey is the context key of a request's pageOut.
type pageOutKey struct{}

// pageOut is where a page is executed: a buffer until Flush starts the
// answer (status code, no Content-Length), then every streamChunk bytes
// are written through the rate writer and flushed. The first failed write
// is kept and returned by every later one, which stops the template and
// the printer.
type pageOut struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	peer string
	code int
	buf  bytes.Buffer
	rw   *transport.RateWriter // nil until the answer started
	err  error
	// admitted: the page is rendered within the peer's share
	// (Handler.shown) since since, charged rendering() once the page is
	// done; refused: the refusal that stopped the page instead; waited:
	// the time spent in Flush, which is the client's, not the rendering's
	// (waitedAt: as of since).
	admitted bool
	refused  *refusal
	since    time.Time
	waited   time.Duration
	waitedAt time.Duration
}

// settle ends the page's admission, if any, charging what it took: once
// the page is executed, and for one admitted but never executed (a
// client gone; a HEAD is never admitted, CATALOG-39), so that its place
// is given back.
func (o *pageOut) settle() {
	if o.admitted {
		o.h.shown.charge(o.peer, o.rendering())
		o.admitted = false
	}
}

// rendering is the time the page took since it was admitted, but for
// the writes' waits.
func (o *pageOut) rendering() time.Duration {
	return o.h.opts.Now().Sub(o.since) - (o.waited - o.waitedAt)
}

// errRenderRefused stops a page whose schema rendering its peer's share
// refused (pageOut.refused says why).
var errRenderRefused = errors.New("catalog: schema rendering refused")

// admit lets the page render within its peer's share of the rendering
// time (its schemas, or a kept matrix's findings, CATALOG-30), once for
// the page: what it takes from now on is charged; false when refused
// (refused says why).
func (o *pageOut) admit() bool {
	if o.admitted {
		return true
	}
	if o.refused = o.h.shown.admit(o.peer); o.refused != nil {
		return false
	}
	o.admitted, o.since, o.waitedAt = true, o.h.opts.Now(), o.waited
	return true
}

// pageOutOf is the pageOut of a request's context; nil outside a
// request of the handler.
func pageOutOf(ctx context.Context) *pageOut {
	o, _ := ctx.Value(pageOutKey{}).(*pageOut)
	return o
}

// streams says whether the page may stream: its answer's end is then
// marked (HTTP/1.1's last chunk, HTTP/2's end of stream), and a page cut
// off cannot be taken for a whole one. An answer to HTTP/1.0 without
// Content-Length ends with the connection, which a cut page ends with
// too: that page stays buffered and goes with its Content-Length; its
// rendering is bounded by the render budget and the request's context
// (CATALOG-27).
func (o *pageOut) streams() bool {
	return o.r.ProtoAtLeast(1, 1)
}

// Write buffers p, and writes the buffer out once the answer started and
// it holds streamChunk bytes.
func (o *pageOut) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	o.buf.Write(p)
	if o.rw != nil && o.buf.Len() >= streamChunk {
		if err := o.Flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush starts the answer when it has not started, writes out what is
// buffered and flushes the connection.
func (o *pageOut) Flush() error {
	if o.err != nil {
		return o.err
	}
	start := o.h.opts.Now()
	defer func() { o.waited += o.h.opts.Now().Sub(start) }()
	if o.rw == nil {
		o.rw = o.h.rateWriter(o.w, o.r)
		o.w.WriteHeader(o.code)
	}
	_, err := o.rw.Write(o.buf.Bytes())
	o.buf.Reset()
	if err == nil {
		err = http.NewResponseController(o.w).Flush()
	}
	o.err = err
	return err
}

// parsePages parses the layout with each page.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"t": short, "long": long, "join": join, "unusable": Bundle.FailsClosed}
	out := map[string]*template.Template{}
	for _, p := range []string{"index", "bundles", "bundle", "cap", "version", "compat", "trust", "schema", "search", "error"} {
		t, err := template.New(p).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, err
		}
		out[p] = t
	}
	return out, nil
}
