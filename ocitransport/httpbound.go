package ocitransport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// Bounds of the registry's answers other than blobs (a blob is bounded by
// its descriptor and read through a blobReader).
const (
	// MaxReferrersPageSize bounds one page of the referrers API (and the
	// referrers tag schema's index): MaxReferrers descriptors of ~250
	// bytes, doubled.
	MaxReferrersPageSize = 512 << 10
	// MaxTagPageSize bounds one page of the tag list (DefaultMaxTags tags
	// of up to 128 bytes, quoted, with room).
	MaxTagPageSize = 2 << 20
	// MaxOtherResponseSize bounds any other answer: /v2/, a token, an
	// error, an upload step.
	MaxOtherResponseSize = 256 << 10
)

// responseKind classifies a request by the path of the first request of
// its redirect chain.
type responseKind int

const (
	respOther responseKind = iota
	respBlob
	respManifest
	respReferrers
	respTags
)

// intentKey is the context key of the kind of answer the client asked
// for (withIntent).
type intentKey struct{}

// withIntent marks ctx with what the requests made on it are for: respBlob
// by openBlob, respTags by a tag listing, respReferrers by a referrers
// listing. oras-go follows a listing's next-page Link, a path the
// registry writes: the mark, not that path, says what the request is.
func withIntent(ctx context.Context, kind responseKind) context.Context {
	return context.WithValue(ctx, intentKey{}, kind)
}

// kindOf returns the kind of answer req expects. A request is a blob GET
// only when openBlob made it (its context says so, withIntent) and its
// path is a blob's (classify); a request a listing made (its first page,
// or the next page its registry's Link names, whatever the path) is a page
// of that listing; anything else is known by its path
// (docs/SPEC-DECISIONS.md OCI-11, amended).
func (t *boundedTransport) kindOf(req *http.Request) responseKind {
	kind := t.classify(req)
	intent, _ := req.Context().Value(intentKey{}).(responseKind)
	switch {
	case intent == respTags || intent == respReferrers:
		if kind == respOther {
			return respOther // a token realm, a path off the repository
		}
		return intent
	case kind == respBlob && intent != respBlob:
		return respOther
	}
	return kind
}

// classify returns the kind of answer req's path names: by the first
// request of its redirect chain, which must go to the registry itself,
// under the repository the client asked for (/v2/REPO/…), and not be a
// token realm the registry named (docs/SPEC-DECISIONS.md OCI-11). Anything
// else (the API root, a token realm on any path and host) is respOther.
// Who made the request (kindOf) decides whether it is read as that kind.
func (t *boundedTransport) classify(req *http.Request) responseKind {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	u := first.URL
	if !t.isRegistry(u) || t.isRealm(u) {
		return respOther
	}
	rest, ok := strings.CutPrefix(u.Path, "/v2/"+t.repo+"/")
	if !ok {
		return respOther
	}
	kind, ref, _ := strings.Cut(rest, "/")
	if kind == "tags" && ref == "list" {
		return respTags
	}
	if ref == "" || strings.Contains(ref, "/") {
		return respOther // blobs/uploads/…, or no API path of a read
	}
	switch kind {
	case "blobs":
		return respBlob
	case "referrers":
		return respReferrers
	case "manifests":
		if IsReferrersTag(ref) {
			return respReferrers
		}
		return respManifest
	}
	return respOther
}

// isRegistry says whether u is on the registry (scheme, host and port).
func (t *boundedTransport) isRegistry(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, schemeOf(t.plain)) && strings.EqualFold(hostPort(u), t.registryHostPort())
}

func (t *boundedTransport) registryHostPort() string {
	return hostPort(&url.URL{Scheme: schemeOf(t.plain), Host: t.registry})
}

// MaxRealms bounds the token realms one registry may name (a genuine one
// names one): past it, a challenge naming another is oci_registry_error.
const MaxRealms = 8

// realmKey is the part of a realm URL a token request keeps (the client
// replaces the query).
func realmKey(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(hostPort(u)) + u.EscapedPath()
}

// isRealm says whether u is a token realm the registry named.
func (t *boundedTransport) isRealm(u *url.URL) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.realms[realmKey(u)]
	return ok
}

// noteRealm records the token realm a 401 answer of the registry names,
// so that the token request is bounded as any other answer, whatever its
// path (OCI-11), and refuses it on a host the operator did not allow
// (OCI-12), before any request leaves for it.
func (t *boundedTransport) noteRealm(resp *http.Response) error {
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	realm, ok := bearerRealm(resp.Header.Get("Www-Authenticate"))
	if !ok {
		return nil
	}
	u, err := url.Parse(realm)
	if err != nil || u.Host == "" {
		return nil // the client refuses it too, and sends nothing
	}
	if !t.allowedHost(u) {
		h := cliSafe(u.Hostname())
		return optionRefusal(ErrAuthHost, &OptionHint{Field: OptionAllowAuthHosts, Host: h,
			Refusal: fmt.Sprintf("the registry's token realm is on the host %q, not allowed", h)})
	}
	key := realmKey(u)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.realms[key]; ok {
		return nil
	}
	if len(t.realms) >= MaxRealms {
		return fail(ErrRegistry, "the registry named more than %d token realms", MaxRealms)
	}
	if t.realms == nil {
		t.realms = map[string]struct{}{}
	}
	t.realms[key] = struct{}{}
	return nil
}

// allowedHost says whether a request to u, the first of its redirect
// chain, may go: to the registry itself, or a host named with
// --allow-auth-host or --allow-redirect. Besides the registry's API, the
// client makes only token requests to a realm the registry named (and
// oras-go follows an upload's Location), so no host of the registry's
// choosing is dialed unless the operator allowed it (OCI-12).
func (t *boundedTransport) allowedHost(u *url.URL) bool {
	return t.isRegistryHost(u) || hostIn(u.Host, t.o.AllowAuthHosts) || hostIn(u.Host, t.o.AllowRedirectHosts)
}

// isRegistryHost says whether u names the registry's host and port, in
// either scheme.
func (t *boundedTransport) isRegistryHost(u *url.URL) bool {
	return strings.EqualFold(hostPort(u), t.registryHostPort())
}

// cliSafe is s when it is a plain host name or address (letters, digits,
// '.', '-', ':', '[', ']', at most 253 bytes), else "(unprintable)": a
// peer's host is never echoed raw.
func cliSafe(s string) string {
	if len(s) == 0 || len(s) > 253 {
		return "(unprintable)"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)) {
			return "(unprintable)"
		}
	}
	return s
}

// boundedTransport is the round tripper of a registry's client: it refuses
// to send credentials where they may not go (docs/SPEC-DECISIONS.md
// OCI-8), and bounds every answer but a blob in bytes and in time (the
// minimum data rate after the grace period).
type boundedTransport struct {
	base     http.RoundTripper
	registry string // host[:port] of the registry
	repo     string // the repository the client asked for
	plain    bool   // the registry is spoken to in plain HTTP
	o        *Options

	mu     sync.Mutex
	realms map[string]struct{} // the token realms the registry named (realmKey), at most MaxRealms
}

// RoundTrip implements http.RoundTripper.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.checkCredentials(req); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if req.URL.Scheme != "https" && !(t.plain && strings.EqualFold(req.URL.Host, t.registry)) && !hostIn(req.URL.Host, t.o.PlainHTTPHosts) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, optionRefusal(ErrPlainHTTP, &OptionHint{Field: OptionPlainHTTPHosts, Host: cliSafe(req.URL.Hostname()),
			Refusal: "a request in plain HTTP to a host neither the registry nor named for it"})
	}
	if budgetSpentBy(req.Context()) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fail(ErrTooSlow, "the requests took longer than their budget").WithCause(errBudgetSpent)
	}
	if req.Response == nil && !t.allowedHost(req.URL) {
		// Not a redirect (CheckRedirect polices those): a token realm the
		// challenge check missed, or an upload location oras-go follows.
		if req.Body != nil {
			req.Body.Close()
		}
		h := cliSafe(req.URL.Hostname())
		return nil, optionRefusal(ErrAuthHost, &OptionHint{Field: OptionAllowAuthHosts, Host: h,
			Refusal: fmt.Sprintf("the registry sends the client to the host %q, not allowed", h)})
	}
	kind := t.kindOf(req)
	if kind == respBlob && req.Method == http.MethodGet {
		return t.blobAnswer(req)
	}
	limit, name := int64(MaxOtherResponseSize), ErrRegistry
	switch kind {
	case respManifest:
		limit, name = t.o.MaxManifestSize, ErrManifestTooBig
	case respReferrers:
		limit, name = MaxReferrersPageSize, ErrTooMany
	case respTags:
		limit, name = MaxTagPageSize, ErrTooMany
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	req = req.WithContext(ctx)
	var sent *sentBody
	if req.Body != nil && req.Body != http.NoBody {
		sent = &sentBody{rc: req.Body, cancel: cancel, o: t.o}
		req.Body = sent
		if get := req.GetBody; get != nil {
			// The transport sends the body again on a connection it
			// found closed: that body too, on a clock of its own.
			req.GetBody = func() (io.ReadCloser, error) {
				rc, err := get()
				if err != nil {
					return nil, err
				}
				return sent.again(rc), nil
			}
		}
	}
	resp, err := t.answer(t.base.RoundTrip(req))
	if sent != nil {
		sent.stop() // the answer came (or the request failed): its own bounds now
	}
	if err != nil {
		cancel(nil)
		if errors.Is(context.Cause(ctx), errStalled) {
			return nil, fail(ErrTooSlow, "the registry took a request's body slower than %d bytes per second", t.o.MinDataRate)
		}
		return nil, err
	}
	resp.Body = newBoundedBody(resp.Body, ctx, cancel, limit, name, t.o)
	if kind == respTags {
		resp.Body = listingBytesOf(req.Context(), resp.Body)
	}
	if resp.StatusCode == http.StatusOK {
		resp.Body = t.countedPage(kind, resp.Body)
	}
	return resp, nil
}

// countedPage bounds the names a listing's page (a referrers page, or the
// referrers tag schema's index, or a tag page) may hold as it arrives:
// MaxReferrers descriptors, ListedTagsPerKept × MaxTags tags, what the
// listing refuses past anyway. oras-go decodes a page whole before the
// listing counts it, so a 512 KiB page of "{}," decoded 174,743
// descriptors (116 MB allocated), and a 2 MiB tag page of `"",` 699,031
// names (67 MB), before the refusal (docs/SPEC-DECISIONS.md OCI-38).
// Other answers are returned as they are.
func (t *boundedTransport) countedPage(kind responseKind, rc io.ReadCloser) io.ReadCloser {
	switch kind {
	case respReferrers:
		return &countedBody{ReadCloser: rc, c: elementCounter{max: MaxReferrers},
			refusal: fmt.Sprintf("a referrers page of the registry names more than %d manifests", MaxReferrers)}
	case respTags:
		n := ListedTagsPerKept * t.o.MaxTags
		return &countedBody{ReadCloser: rc, c: elementCounter{max: n},
			refusal: fmt.Sprintf("a tag page of the registry names more than %d tags, more than one listing reads", n)}
	}
	return rc
}

// listingBytesKey is the context key of a tag listing's byte count
// (withListingBytes).
type listingBytesKey struct{}

// listingBytes counts the bytes of every answer to one tag listing's
// requests, its pages in turn, up to max.
type listingBytes struct {
	n   atomic.Int64
	max int64
}

// withListingBytes marks ctx, a tag listing's, with a count of the bytes
// its answers may hold in all, max: each page is bounded on its own
// (MaxTagPageSize), and TagListMaxPages pages of nearly 2 MiB that name
// nothing were 82 MiB read on the registry's pace (docs/SPEC-DECISIONS.md
// OCI-39).
func withListingBytes(ctx context.Context, max int64) context.Context {
	return context.WithValue(ctx, listingBytesKey{}, &listingBytes{max: max})
}

// listingBytesOf is rc counted against the listing ctx is marked with
// (withListingBytes), or rc as it is when it is marked with none.
func listingBytesOf(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	if c, ok := ctx.Value(listingBytesKey{}).(*listingBytes); ok {
		return &listingBody{ReadCloser: rc, c: c}
	}
	return rc
}

// listingBody is an answer to a listing's request whose bytes count
// against the listing's (listingBytes): past them Read fails with
// oci_too_many.
type listingBody struct {
	io.ReadCloser
	c *listingBytes
}

func (b *listingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.c.n.Add(int64(n)) > b.c.max {
		return 0, fail(ErrTooMany, "the tag pages of the registry hold more than %d bytes in all, more than one listing reads", b.c.max)
	}
	return n, err
}

// countedBody is a page's body whose elements (elementCounter) are
// counted as they are read: past the bound, Read fails with
// oci_too_many, before the page is decoded.
type countedBody struct {
	io.ReadCloser
	c       elementCounter
	refusal string
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.c.scan(p[:n]) {
		return 0, fail(ErrTooMany, "%s", b.refusal)
	}
	return n, err
}

// elementCounter counts, byte by byte as a JSON text arrives, the
// elements of the arrays that are members of its top object (a
// listing's "manifests" or "tags"), n, in constant memory; nested values
// and strings (escapes included) are skipped. It judges no syntax: the
// decoder that reads the text after it does.
type elementCounter struct {
	depth, n, max     int
	top, arr, want    bool // the top is an object; the member read an array; an element may start
	inString, escaped bool
}

// scan counts the elements in p, the text's next bytes, and says whether
// they are now more than c.max.
func (c *elementCounter) scan(p []byte) (over bool) {
	for _, ch := range p {
		if c.inString {
			switch {
			case c.escaped:
				c.escaped = false
			case ch == '\\':
				c.escaped = true
			case ch == '"':
				c.inString = false
			}
			continue
		}
		if ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' {
			continue
		}
		if c.depth == 2 && c.top && c.arr && c.want && ch != ']' {
			c.n, c.want = c.n+1, false
		}
		switch ch {
		case '"':
			c.inString = true
		case '{', '[':
			c.depth++
			if c.depth == 1 {
				c.top = ch == '{'
			} else if c.depth == 2 {
				c.arr, c.want = ch == '[', true
			}
		case '}', ']':
			c.depth--
		case ',':
			c.want = c.want || c.depth == 2
		}
	}
	return c.n > c.max
}

// sentBody is the body of a request (an upload, a manifest, a token
// request's form) as the transport reads it to send it: from its first
// read on, after the grace period, it must be read at the minimum data
// rate, else its request is cancelled (cause errStalled). The transport
// reads it as fast as the registry takes the bytes (plus the buffers of
// the connection), so a registry that takes an upload at 1 B/s, or not at
// all, ends it as a blob sent at that pace would (docs/SPEC-DECISIONS.md
// OCI-31). Its clock stops at its end, at Close, or when the answer came
// (stop): the wait for the answer's headers is the client's
// ResponseHeaderTimeout, the answer's body a boundedBody's.
type sentBody struct {
	rc     io.ReadCloser
	cancel context.CancelCauseFunc
	o      *Options

	mu    sync.Mutex
	timer *time.Timer // nil until the first read
	start time.Time
	n     int64
	done  bool
	gen   int // again's count: a read of a body sent before counts nothing
}

// Read reads from the body and moves the rate clock on.
func (b *sentBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if !b.done && b.timer == nil {
		b.start = b.o.Now()
		b.timer = time.AfterFunc(b.o.Grace, func() { b.cancel(errStalled) })
	}
	rc, gen := b.rc, b.gen
	b.mu.Unlock()
	n, err := rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || gen != b.gen {
		return n, err
	}
	b.n += int64(n)
	if err != nil {
		b.stopLocked()
	} else if n > 0 {
		b.timer.Reset(b.o.due(b.start, b.n).Sub(b.o.Now()))
	}
	return n, err
}

// again is b reading rc, the body sent again, on a new clock.
func (b *sentBody) again(rc io.ReadCloser) *sentBody {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
	b.rc, b.timer, b.n, b.done = rc, nil, 0, false
	b.gen++
	return b
}

// Close stops the rate clock and closes the body; the request goes on.
func (b *sentBody) Close() error {
	b.mu.Lock()
	b.stopLocked()
	rc := b.rc
	b.mu.Unlock()
	return rc.Close()
}

// stop stops the rate clock for good.
func (b *sentBody) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
}

func (b *sentBody) stopLocked() {
	b.done = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// due is when n bytes, started at start, are late: after the grace
// period, at the minimum data rate.
func (o *Options) due(start time.Time, n int64) time.Time {
	return start.Add(o.Grace + time.Duration(float64(n)/float64(o.MinDataRate)*float64(time.Second)))
}

// blobAnswer sends a blob GET. The blob itself is bounded by the
// blobReader that reads it: a 200 answer, or a 206 answer to a request
// for a range (isBlobBody), what oras-go returns as the blob; any other
// answer (an error, a redirect, a 206 to a request for no range, which
// oras-go parses as an error body) is read here whole, bounded in bytes
// and in time from its first byte, before oras-go parses it or net/http
// follows the redirect, so that no answer to a blob GET is read at a pace
// of the registry's choosing (docs/SPEC-DECISIONS.md OCI-11, OCI-28).
func (t *boundedTransport) blobAnswer(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.answer(t.base.RoundTrip(req.WithContext(ctx)))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if isBlobBody(req, resp) {
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	body := newBoundedBody(resp.Body, ctx, cancel, MaxOtherResponseSize, ErrRegistry, t.o)
	data, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		var ae *amp.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, fail(ErrRegistry, "cannot read the registry's answer to a blob request").WithCause(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// isBlobBody says whether resp, the answer to the blob GET req, is the
// blob oras-go reads (its blob store's Fetch): a 200, or a 206 only to a
// request that asked for a range (oras-go's seek); a 206 to a request for
// the whole blob is an error to oras-go, whose body it parses unpaced.
func isBlobBody(req *http.Request, resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent && req.Header.Get("Range") != ""
}

// cancelBody ends its request's context when closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

// Close closes the body and ends its request.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// answer notes the token realm of a 401 answer (noteRealm), or refuses it.
func (t *boundedTransport) answer(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	if err := t.noteRealm(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// credentialsIn says whether req carries credentials: an Authorization
// header, or a form POST (the OAuth2 token request carries the password or
// the refresh token in its body).
func credentialsIn(req *http.Request) bool {
	return req.Header.Get("Authorization") != "" || req.Method == http.MethodPost && strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
}

// checkCredentials refuses a request that would carry credentials to a
// host other than the registry and those named by --allow-redirect or
// --allow-auth-host, or in plain HTTP other than to the registry itself
// when it is spoken to in plain HTTP (a loopback or named host).
func (t *boundedTransport) checkCredentials(req *http.Request) error {
	if !credentialsIn(req) {
		return nil
	}
	u := req.URL
	same := strings.EqualFold(hostPort(u), hostPort(&url.URL{Scheme: schemeOf(t.plain), Host: t.registry}))
	if !same && !hostIn(u.Host, t.o.AllowAuthHosts) && !hostIn(u.Host, t.o.AllowRedirectHosts) {
		return optionRefusal(ErrAuthHost, &OptionHint{Field: OptionAllowAuthHosts,
			Refusal: "the registry asks for credentials to be sent to a host not allowed"})
	}
	if u.Scheme != "https" && !(same && t.plain) {
		return fail(ErrAuthHost, "the registry asks for credentials to be sent in plain HTTP")
	}
	return nil
}

func schemeOf(plain bool) string {
	if plain {
		return "http"
	}
	return "https"
}

// hostPort is u's host with its port (the scheme's default when none).
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return u.Host + ":" + port
}

// pacedBody is a body that, after the grace period, must keep arriving
// at the minimum data rate, else its request is cancelled (cause
// errStalled). It reads at most left bytes.
type pacedBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	left   int64
	timer  *time.Timer
	start  time.Time
	n      int64
	o      *Options
	once   sync.Once
}

// pace starts b's rate clock on rc, whose request ends with cancel.
func (b *pacedBody) pace(rc io.ReadCloser, ctx context.Context, cancel context.CancelCauseFunc, left int64, o *Options) {
	b.rc, b.ctx, b.cancel, b.left, b.start, b.o = rc, ctx, cancel, left, o.Now(), o
	b.timer = time.AfterFunc(o.Grace, func() { cancel(errStalled) })
}

// read reads into p at most the bytes left, and moves the rate clock on.
func (b *pacedBody) read(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	b.n += int64(n)
	if n > 0 {
		b.timer.Reset(b.o.due(b.start, b.n).Sub(b.o.Now()))
	}
	return n, err
}

// stalled reports whether the request was cancelled for arriving slower
// than the minimum data rate.
func (b *pacedBody) stalled() bool { return errors.Is(context.Cause(b.ctx), errStalled) }

// Close stops the rate clock, closes the body and ends its request.
func (b *pacedBody) Close() error {
	var err error
	b.once.Do(func() {
		b.timer.Stop()
		err = b.rc.Close()
		b.cancel(nil)
	})
	return err
}

// boundedBody is an answer's body bounded in bytes and in time: after the
// grace period it must keep arriving at the minimum data rate, else its
// request is cancelled and Read fails with oci_too_slow.
type boundedBody struct {
	pacedBody
	name  amp.ErrName
	limit int64
}

func newBoundedBody(rc io.ReadCloser, ctx context.Context, cancel context.CancelCauseFunc, limit int64, name amp.ErrName, o *Options) *boundedBody {
	b := &boundedBody{limit: limit, name: name}
	b.pace(rc, ctx, cancel, limit, o)
	return b
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte past the bound tells a body at the bound from one over.
		var one [1]byte
		if n, _ := io.ReadFull(b.rc, one[:]); n > 0 {
			return 0, fail(b.name, "an answer of the registry is larger than %d bytes", b.limit)
		}
		return 0, io.EOF
	}
	n, err := b.read(p)
	if err != nil && err != io.EOF && b.stalled() {
		return n, fail(ErrTooSlow, "an answer of the registry arrived slower than %d bytes per second", b.o.MinDataRate)
	}
	return n, err
}
