package ocitransport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// Options configure an Endpoint. The zero value is usable: the standard
// Docker credentials file, the system TLS roots, HTTPS only, no redirect to
// another host, the default bounds.
type Options struct {
	// CredentialsFile is a Docker config.json to take credentials from
	// (DefaultCredentialsFile gives the standard one); "" or a missing
	// file: no credentials.
	CredentialsFile string
	// TLS is the client TLS configuration (nil: system roots, TLS 1.2+).
	TLS *tls.Config
	// PlainHTTP speaks plain HTTP to a loopback registry (127.0.0.0/8,
	// ::1, localhost); refused for any other host not in PlainHTTPHosts.
	PlainHTTP bool
	// PlainHTTPHosts are the hosts (host or host:port) spoken to in plain
	// HTTP, named by the operator.
	PlainHTTPHosts []string
	// AllowRedirectHosts are the hosts (host or host:port) a registry may
	// redirect to besides itself.
	AllowRedirectHosts []string
	// AllowAuthHosts are the hosts (host or host:port) besides the
	// registry (and AllowRedirectHosts) that credentials may be sent to:
	// a token realm on another host (docs/SPEC-DECISIONS.md OCI-8).
	AllowAuthHosts []string
	// MaxRedirects bounds the redirects of one request (DefaultMaxRedirects
	// when 0).
	MaxRedirects int
	// MaxManifestSize bounds a manifest (DefaultMaxManifestSize when 0).
	MaxManifestSize int64
	// MaxBlobSize bounds a bundle file and each layer (DefaultMaxBlobSize
	// when 0).
	MaxBlobSize int64
	// MaxLayerSize cuts a pushed bundle into layers of at most this many
	// bytes (0: one layer).
	MaxLayerSize int64
	// MaxTags bounds the tags listed (DefaultMaxTags when 0; at most
	// math.MaxInt / 16, so that every bound computed from it, such as the
	// ListedTagsPerKept × MaxTags names a listing reads, stays positive).
	MaxTags int
	// MinDataRate is the slowest a body may arrive after Grace, or a
	// request's body (an upload) be taken by the registry, in bytes per
	// second (DefaultMinDataRate when 0).
	MinDataRate int64
	// Grace is the time a body gets before MinDataRate counts (30 s when 0).
	Grace time.Duration
	// LayoutLockWait bounds the wait of a layout's writer for another to
	// release the layout's lock file (DefaultLayoutLockWait when 0).
	LayoutLockWait time.Duration
	// DialContext dials the registry (nil: a net.Dialer with a 30 s
	// timeout). A layout never dials.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now is the clock of the rate check and of the age of a layout's
	// temporary files (StaleLayoutTempAge) (nil: time.Now).
	Now func() time.Time

	// trace, when set (by a test), is told each step that makes a new
	// layout, or a tar's, durable: "made:NAME" and "synced:NAME", NAME
	// relative to the layout's root ("." the root, ".." the folder
	// holding it), and "renamed:tar", "synced:tar-folder"; and
	// "held:tar-temp" once a tar's build folder is made and held, before
	// the layout writer opens it.
	trace func(step string)
	// statfs, when set (by a test), stands in for statfsType: the f_type
	// of a file system the test cannot mount (docs/SPEC-DECISIONS.md
	// STYLE-2).
	statfs fsTypeOf
}

// fsType is how o reads a file system's f_type: o.statfs (a test's),
// else statfsType.
func (o *Options) fsType() fsTypeOf {
	if o.statfs != nil {
		return o.statfs
	}
	return statfsType
}

// traced tells o.trace (a test's) of step.
func (o *Options) traced(step string) {
	if o.trace != nil {
		o.trace(step)
	}
}

// maxMaxTags caps Options.MaxTags: the bounds computed from it (4 ×
// MaxTags manifests read by a layout's open, ListedTagsPerKept × MaxTags
// names read by a listing, and its pages) must not wrap negative, which
// refused every listing at its first name and cut the page bound to one
// page (docs/SPEC-DECISIONS.md OCI-23, amended in review 117).
const maxMaxTags = math.MaxInt / 16

func (o *Options) defaults() {
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.MaxManifestSize <= 0 || o.MaxManifestSize > DefaultMaxManifestSize {
		o.MaxManifestSize = DefaultMaxManifestSize
	}
	limit.Default(&o.MaxBlobSize, DefaultMaxBlobSize)
	limit.Default(&o.MaxTags, DefaultMaxTags)
	o.MaxTags = min(o.MaxTags, maxMaxTags)
	limit.Default(&o.MinDataRate, DefaultMinDataRate)
	limit.Default(&o.Grace, 30*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
}

// readTarget is what a source must do: a registry repository, a layout.
type readTarget interface {
	Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error)
	Exists(ctx context.Context, target ocispec.Descriptor) (bool, error)
	Predecessors(ctx context.Context, node ocispec.Descriptor) ([]ocispec.Descriptor, error)
	Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error)
	Tags(ctx context.Context, last string, fn func(tags []string) error) error
}

// writeTarget is what a destination must do besides.
type writeTarget interface {
	Push(ctx context.Context, expected ocispec.Descriptor, content io.Reader) error
	Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error
}

// Endpoint is an opened registry repository or layout. Close it; a layout
// tar opened for writing is written by Commit.
type Endpoint struct {
	loc  Location
	o    Options
	src  readTarget
	dst  writeTarget // nil when read-only
	repo *remote.Repository
	// tmp is the folder a tar destination is built in; tmpLock holds it
	// open, locked (tryLockFolder) while it is in use, so that another
	// writer's removeStaleTarTemps never takes it for a killed writer's;
	// tmpRoot holds it from its making, so that Close removes what is in
	// that very folder, never a folder put at its name (removeTarFolder).
	tmp     string
	tmpLock *os.File
	tmpRoot *os.Root
	// tar is the layout tar a source is read through (nil otherwise).
	tar *os.File
	// layout are the folders of a layout folder, opened once (nil
	// otherwise).
	layout *layoutFolders
	// subjects are the layout's manifests read by a referrers listing
	// (layoutSubject), by digest.
	subjectsMu sync.Mutex
	subjects   map[digest.Digest]layoutSubject
}

// Mode says how Open opens a location.
type Mode int

// Modes of Open.
const (
	ReadOnly  Mode = iota // a source
	ReadWrite             // a destination
)

// Open opens loc. A layout opened ReadOnly must exist; one opened
// ReadWrite is created. A tar opened ReadWrite is built in a temporary
// folder next to it, starting from its current tagged content, and
// replaced by Commit.
func Open(ctx context.Context, loc Location, o Options, mode Mode) (*Endpoint, error) {
	o.defaults()
	e := &Endpoint{loc: loc, o: o}
	switch loc.Kind {
	case KindRegistry:
		repo, err := openRepository(loc, &e.o)
		if err != nil {
			return nil, err
		}
		e.repo, e.src, e.dst = repo, repo, repo
		return e, nil
	case KindLayout:
		if mode == ReadOnly {
			return openLayoutSource(ctx, e)
		}
		st, err := openLayoutWriter(ctx, loc.Path, &e.o)
		if err != nil {
			return nil, err
		}
		e.src, e.dst, e.layout = st, st, st.lf
		return e, nil
	case KindLayoutTar:
		if mode == ReadOnly {
			t, err := openLayoutTar(loc.Path, &e.o)
			if err != nil {
				return nil, err
			}
			// Read through the descriptor checked, never the name again
			// (OCI-20), until Close.
			st, err := oci.NewFromFS(ctx, t)
			if err != nil {
				t.f.Close()
				return nil, fail(ErrLayout, "cannot read the OCI layout tar").WithCause(err)
			}
			e.src, e.tar = st, t.f
			return e, nil
		}
		return openTarDestination(ctx, e)
	}
	return nil, fail(ErrReference, "unknown OCI location kind")
}

// openLayoutSource opens the layout folder e.loc names to read: its
// folders once (openLayoutFolders), checked (checkLayoutDir), read by
// oras-go through them.
func openLayoutSource(ctx context.Context, e *Endpoint) (*Endpoint, error) {
	lf, err := openLayoutFolders(e.loc.Path)
	if err != nil {
		return nil, layoutReadError(err)
	}
	index, err := checkLayoutDir(lf, &e.o)
	if err != nil {
		lf.Close()
		return nil, err
	}
	st, err := oci.NewFromFS(ctx, dirFiles{lf: lf, pinned: true, index: index})
	if err != nil {
		lf.Close()
		return nil, fail(ErrLayout, "cannot read the OCI layout").WithCause(err)
	}
	e.src, e.layout = st, lf
	return e, nil
}

// Close releases e: a layout's folders and a layout tar source's
// descriptor are closed, a tar destination not committed is discarded.
func (e *Endpoint) Close() error {
	if e.layout != nil {
		e.layout.Close()
		e.layout = nil
	}
	if e.tar != nil {
		e.tar.Close()
		e.tar = nil
	}
	if e.tmp != "" {
		err := removeTarFolder(e.tmp, e.tmpRoot)
		e.tmp, e.tmpRoot = "", nil
		if e.tmpLock != nil {
			e.tmpLock.Close() // the lock goes with it
			e.tmpLock = nil
		}
		return err
	}
	return nil
}

// removeTarFolder removes the folder a tar destination was built in, held
// as root since it was made (nil: it could not be opened, and only an
// empty folder at tmp is removed): what is in it is removed through root
// (os.Root.RemoveAll: no link followed, nothing outside it touched), then
// its name tmp, by rmdir, which removes an empty folder only, and only
// while tmp still names the folder held. root is closed. In a tar's
// folder others may write (no sticky bit), another user could rename the
// writer's folder away and a folder of the writer's (or theirs) to its
// name: removed by its path, the writer's own folder went, with all its
// files, and the one built was left, up to the layout's size
// (docs/SPEC-DECISIONS.md OCI-32).
func removeTarFolder(tmp string, root *os.Root) error {
	if root == nil {
		removeEmptyFolder(tmp)
		return nil
	}
	err := emptyFolder(root)
	held, serr := root.Stat(".")
	root.Close()
	named, lerr := os.Lstat(tmp)
	if serr != nil || lerr != nil || !os.SameFile(held, named) {
		return err // moved away: emptied where it is, nothing else removed
	}
	if rerr := removeEmptyFolder(tmp); err == nil {
		err = rerr
	}
	return err
}

// emptyFolder removes everything in the folder root holds, through root.
func emptyFolder(root *os.Root) error {
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1) // a layout's top: a few names
	f.Close()
	for _, n := range names {
		if rerr := root.RemoveAll(n); err == nil {
			err = rerr
		}
	}
	return err
}

// DefaultCredentialsFile is the standard Docker credentials file:
// $DOCKER_CONFIG/config.json, else $HOME/.docker/config.json ("" when
// neither variable is set). getenv reads the environment.
func DefaultCredentialsFile(getenv func(string) string) string {
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".docker", "config.json")
	}
	return ""
}

func isLoopback(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// hostIn says whether host (host[:port]) is in list, an entry naming
// either the host or the host and port.
func hostIn(host string, list []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	for _, l := range list {
		if strings.EqualFold(l, host) || strings.EqualFold(l, name) {
			return true
		}
	}
	return false
}

// openRepository opens the repository loc names. The registry's host is
// the one oras-go sends the requests to (registry.Reference.Host:
// registry-1.docker.io for docker.io), for every check of the round
// tripper (OCI-11, OCI-12); Options.PlainHTTPHosts may name either.
func openRepository(loc Location, o *Options) (*remote.Repository, error) {
	ref := registry.Reference{Registry: loc.Registry, Repository: loc.Repository}
	host := ref.Host()
	plain := hostIn(loc.Registry, o.PlainHTTPHosts) || hostIn(host, o.PlainHTTPHosts)
	if o.PlainHTTP && !plain {
		if !isLoopback(host) {
			return nil, optionRefusal(ErrPlainHTTP, &OptionHint{Field: OptionPlainHTTPHosts, Host: cliSafe(host),
				Refusal: "plain HTTP is only for a loopback registry or a host named for it"})
		}
		plain = true
	}
	var store credentials.Store = credentials.NewMemoryStore()
	if o.CredentialsFile != "" {
		ds, err := credentials.NewStore(o.CredentialsFile, credentials.StoreOptions{})
		if err != nil {
			return nil, fail(ErrCredentials, "cannot read the registry credentials file").WithCause(err)
		}
		store = ds
	}
	repo := &remote.Repository{
		Reference:            ref,
		PlainHTTP:            plain,
		MaxMetadataBytes:     o.MaxManifestSize,
		SkipReferrersGC:      true,
		TagListPageSize:      1000,
		TagListMaxPages:      o.tagListMaxPages(),
		ReferrerListMaxPages: 10,
		Client: &auth.Client{
			Client:     newHTTPClient(host, loc.Repository, plain, o),
			Cache:      &tokenCache{Cache: auth.NewCache()},
			Credential: credentials.Credential(store),
			Header:     http.Header{"User-Agent": {"ampbundle"}},
		},
	}
	return repo, nil
}

// MaxTokenScopes bounds the distinct scope sets (and schemes) whose
// tokens one endpoint's client caches: a genuine registry names one or two
// per repository (pull; pull and push).
const MaxTokenScopes = 8

// tokenCache is oras-go's token cache, which keeps a token (up to 128 KiB)
// under each scope set a challenge names (up to 64 KiB) for as long as the
// endpoint lives, holding at most MaxTokenScopes of them: past the bound a
// token of a new scope set is oci_registry_error, before it is fetched. A
// registry naming a new scope in each challenge had every request of a
// sync add an entry: gigabytes held (docs/SPEC-DECISIONS.md OCI-19).
type tokenCache struct {
	auth.Cache

	mu   sync.Mutex
	keys map[tokenKey]struct{}
}

// tokenKey is what oras-go caches a token under.
type tokenKey struct {
	registry string
	scheme   auth.Scheme
	key      string
}

// Set implements auth.Cache: fetch is called (and its token kept) only for
// a scope set already cached or while fewer than MaxTokenScopes are.
func (c *tokenCache) Set(ctx context.Context, registry string, scheme auth.Scheme, key string, fetch func(context.Context) (string, error)) (string, error) {
	k := tokenKey{registry, scheme, key}
	c.mu.Lock()
	if _, ok := c.keys[k]; !ok {
		if len(c.keys) >= MaxTokenScopes {
			c.mu.Unlock()
			return "", fail(ErrRegistry, "the registry asked for tokens of more than %d scopes", MaxTokenScopes)
		}
		if c.keys == nil {
			c.keys = map[tokenKey]struct{}{}
		}
		c.keys[k] = struct{}{}
	}
	c.mu.Unlock()
	return c.Cache.Set(ctx, registry, scheme, key, fetch)
}

// newHTTPClient is the client of one registry: no proxy, bounded
// redirects to allowed hosts only, dial and header deadlines.
func newHTTPClient(host, repo string, plain bool, o *Options) *http.Client {
	dial := o.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.TLS != nil {
		tlsCfg = o.TLS.Clone()
	}
	tr := &http.Transport{
		DialContext:            dial,
		TLSClientConfig:        tlsCfg,
		TLSHandshakeTimeout:    30 * time.Second,
		ResponseHeaderTimeout:  responseHeaderWait,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConnsPerHost:    4,
		ForceAttemptHTTP2:      true,
		WriteBufferSize:        256 << 10,
		ReadBufferSize:         256 << 10,
		// No Accept-Encoding: gzip, so nothing is inflated: every bound and
		// the minimum data rate count the bytes on the wire (OCI-13).
		DisableCompression: true,
	}
	max, allowed := o.MaxRedirects, o.AllowRedirectHosts
	bt := &boundedTransport{base: tr, registry: host, repo: repo, plain: plain, o: o}
	return &http.Client{Transport: bt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return fail(ErrRedirect, "more than %d redirects", max)
		}
		if !strings.EqualFold(req.URL.Host, host) && !hostIn(req.URL.Host, allowed) {
			return optionRefusal(ErrRedirect, &OptionHint{Field: OptionAllowRedirectHosts, Host: cliSafe(req.URL.Hostname()),
				Refusal: "a redirect to a host not allowed"})
		}
		if req.URL.Scheme != "https" && !(plain && strings.EqualFold(req.URL.Host, host)) && !hostIn(req.URL.Host, o.PlainHTTPHosts) {
			return fail(ErrRedirect, "a redirect to plain HTTP")
		}
		return nil
	}}
}

// wrap turns a registry or layout error into a named error; a named error
// inside (a redirect refused, a body too slow) is kept. Any other cause is
// kept as a peerCause: its text may quote the registry's.
func wrap(err error, what string) error {
	if pe := plainHTTPAnswer(err, what); pe != nil {
		return pe // upload.go
	}
	var ae *amp.Error
	if errors.As(err, &ae) {
		return ae
	}
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fail(ErrTooSlow, "%s: the deadline passed", what).WithCause(peerCause{err})
	case errors.Is(err, errdef.ErrNotFound), errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return fail(ErrNotFound, "%s: not found", what) // the cause would say it again
	case errors.Is(err, errdef.ErrTooManyPages):
		return fail(ErrTooMany, "%s: more pages than the bound", what).WithCause(peerCause{err})
	case errors.Is(err, errdef.ErrSizeExceedsLimit):
		return fail(ErrManifestTooBig, "%s: larger than the limit", what).WithCause(peerCause{err})
	}
	return fail(ErrRegistry, "%s failed", what).WithCause(peerCause{err})
}

// peerCause is the cause of a named error that is an error of oras-go's
// or net/http's, whose text may quote what the registry sent: an error
// answer's message and detail (up to 8 KiB of any bytes,
// errcode.ErrorResponse), a URL a redirect or a Link chose. Its Error is
// that text escaped and bounded by amp's rule for a peer's text
// (amp.SafeMessage: controls, bidi and format characters as visible
// escapes, at most amp.MaxErrorText bytes), since amp.Error's Error
// prints a cause by the cause's own Error: an embedder's log or terminal
// never takes a registry's escapes or forged lines as its own
// (docs/SPEC-DECISIONS.md TRANSPORT-21, OCI-29). Unwrap gives the error
// itself, for errors.Is and errors.As.
type peerCause struct{ err error }

func (c peerCause) Error() string { return amp.SafeMessage(&amp.Error{Message: c.err.Error()}) }

// Unwrap returns the error as oras-go or net/http returned it.
func (c peerCause) Unwrap() error { return c.err }

func absDir(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return filepath.Dir(a)
	}
	return filepath.Dir(p)
}
