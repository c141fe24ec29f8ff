package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// maxUpload bounds an uploaded bundle (the store's own caps bound each
// artifact; this bounds the request).
const maxUpload = 8 << 30

// maxStatement bounds an uploaded statement (the largest statement file,
// a revocation's).
const maxStatement = bundle.MaxRevocationSize

// Spec is what an operation is on the admin socket.
type Spec struct {
	// Name is the Registry method that runs it; Also names the other
	// Registry methods answered by it (an option of the same request).
	Name string
	Also []string
	// Method and Path are its route: a GET takes its request in the query
	// (a flat object of strings), a POST as a JSON body.
	Method, Path string
	// Mutates: it changes the store (audited by the store, and logged by
	// the agent as coming through the socket).
	Mutates bool
	// Raw, when not zero, makes the request body the bytes of a file
	// (Req is []byte), of Type, read up to Raw bytes.
	Raw  int64
	Type string
	// Stream: the request or the answer is a stream (import, export),
	// served and sent by the operation's own code instead of as JSON.
	Stream bool
}

// Op is one store operation: its route, and Run, the resolver call that
// performs it on a store. Req and Resp are its request and answer as they
// travel on the socket; a Registry over a local store calls Run directly.
type Op[Req, Resp any] struct {
	Spec
	Run func(s *resolver.Store, req Req) (Resp, error)
	// Log is the line a successful change through the socket writes to
	// the agent's log.
	Log func(req Req, resp Resp) (string, []any)
	// Streams: read builds the request from the HTTP request (import),
	// serve replaces the whole handler (export), send replaces the
	// client's request.
	read  func(w http.ResponseWriter, r *http.Request) (Req, error)
	serve func(s *resolver.Store, w http.ResponseWriter, r *http.Request) error
	send  func(c *Client, req Req) (Resp, error)
}

// Operation is an Op of any request and answer types: what Ops lists.
type Operation interface {
	Describe() Spec
	handle(s *resolver.Store, w http.ResponseWriter, r *http.Request) (answer any, logLine func() (string, []any), err error)
}

// Describe returns the operation's route and kind.
func (o *Op[Req, Resp]) Describe() Spec { return o.Spec }

// Ops is the table of store operations: the admin server serves each, and
// Registry calls each, locally or through the socket. A new operation is
// an entry here and a Registry method.
func Ops() []Operation {
	return []Operation{
		opImport(), opExport(), opRemove(), opResolve(), opBundles(), opCatalog(), opCheck(), opAudit(), opGeneration(),
		opTrustAdd(), opTrustRemove(), opTrustList(), opTrustSetThreshold(), opTrustThresholds(), opTrustChains(), opTrustRefused(), opTrustPolicy(),
		opFreshnessPolicy(), opSetFreshnessPolicy(), opResetHeartbeat(),
		opRevocation(), opRotation(), opHeartbeat(), opStatements(), opHeartbeats(), opHasStatement(),
		opRefusedAt(), opCheckImport(), opTypeClaims(),
	}
}

const get, post = http.MethodGet, http.MethodPost

// none is the request of an operation that takes none.
type none struct{}

// orEmpty answers an empty list as [] rather than null.
func orEmpty[T any](read func(*resolver.Store) ([]T, error)) func(*resolver.Store) ([]T, error) {
	return func(s *resolver.Store) ([]T, error) {
		v, err := read(s)
		if v == nil {
			v = []T{}
		}
		return v, err
	}
}

// reading is the operation name at GET path: read, without a request.
func reading[Resp any](name, path string, read func(*resolver.Store) (Resp, error)) *Op[none, Resp] {
	return &Op[none, Resp]{Spec: Spec{Name: name, Method: get, Path: path},
		Run: func(s *resolver.Store, _ none) (Resp, error) { return read(s) }}
}

// importRequest is the request of an import: a stream, with its options
// in the query. cancel, when set, ends ctx once the import returns (the
// agent's deadline of a caller's timeout_ms).
type importRequest struct {
	ctx    context.Context
	body   io.Reader
	opts   resolver.ImportOptions
	cancel context.CancelFunc
}

// maxImportTimeout bounds the timeout_ms an import's caller may give
// (30 days): a larger number is refused before it can overflow a
// time.Duration. The client (agentDeadline) tells no deadline further
// away than this, so that what it sends is never refused
// (docs/SPEC-DECISIONS.md ADMIN-11).
const maxImportTimeout = 30 * 24 * time.Hour

// importDeadlineKey is the request context key of a func(context.Context)
// that is given the context of each import the agent runs under a
// caller's timeout_ms, once it is made: a test's handler puts it there
// and waits on its Done to know the agent's deadline has passed. No
// request of a client carries it (a request's context is the server's).
type importDeadlineKey struct{}

// importTimeout reads an import's timeout_ms (agentDeadline): 0 when the
// caller gave none, else 1 ms to maxImportTimeout; anything else is
// refused bad_request, naming the parameter, never quoting it.
func importTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseUint(v, 10, 64)
	if err != nil || ms < 1 || ms > uint64(maxImportTimeout.Milliseconds()) {
		return 0, amp.Named(0, "bad_request", "timeout_ms is not a number of milliseconds from 1 to %d", maxImportTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func opImport() *Op[importRequest, *resolver.ImportResult] {
	return &Op[importRequest, *resolver.ImportResult]{
		Spec: Spec{Name: "Import", Method: post, Path: "/v1/import", Mutates: true, Type: "application/ampbundle", Stream: true},
		Run: func(s *resolver.Store, req importRequest) (*resolver.ImportResult, error) {
			if req.cancel != nil {
				defer req.cancel()
			}
			return s.Import(req.ctx, req.body, req.opts)
		},
		Log: func(_ importRequest, res *resolver.ImportResult) (string, []any) {
			return "bundle imported through the admin socket", []any{"bundle_id", res.BundleID, "version", res.Version,
				"previous", res.PreviousVersion, "downgrade", res.Downgrade, "unchanged", res.Unchanged}
		},
		read: func(w http.ResponseWriter, r *http.Request) (importRequest, error) {
			q := r.URL.Query()
			timeout, err := importTimeout(q.Get("timeout_ms"))
			if err != nil {
				return importRequest{}, err
			}
			req := importRequest{ctx: r.Context(), body: http.MaxBytesReader(w, r.Body, maxUpload),
				opts: resolver.ImportOptions{AllowDowngrade: q.Get("allow_downgrade") == "1", Source: q.Get("source"), FileSHA256: fileSum(q.Get("file_sha256"))}}
			if timeout > 0 {
				// The caller's deadline (agentDeadline): the import ends
				// at it here, committed or rolled back, and the answer
				// says which.
				req.ctx, req.cancel = context.WithTimeout(req.ctx, timeout)
				if seen, ok := r.Context().Value(importDeadlineKey{}).(func(context.Context)); ok {
					seen(req.ctx)
				}
			}
			return req, nil
		},
		send: func(c *Client, req importRequest) (*resolver.ImportResult, error) {
			ctx, stop, timeout := agentDeadline(req.ctx)
			defer stop()
			q := make(map[string][]string)
			if timeout > 0 {
				q["timeout_ms"] = []string{strconv.FormatInt(timeout.Milliseconds(), 10)} // an older agent ignores it
			}
			if req.opts.AllowDowngrade {
				q["allow_downgrade"] = []string{"1"}
			}
			if req.opts.Source != "" {
				q["source"] = []string{req.opts.Source} // an older agent ignores it
			}
			if len(req.opts.FileSHA256) == sha256.Size {
				q["file_sha256"] = []string{hex.EncodeToString(req.opts.FileSHA256)} // likewise
			}
			body := req.body
			if req.opts.Progress != nil {
				body = &progressReader{r: body, fn: req.opts.Progress}
			}
			var res resolver.ImportResult
			if err := c.do(ctx, post, withQuery("/v1/import", q), body, "application/ampbundle", &res); err != nil {
				return nil, pastDeadline(ctx, err)
			}
			return &res, nil
		},
	}
}

// checkRequest is the request of a judgement (opCheckImport): a stream,
// as an import's.
type checkRequest struct {
	ctx  context.Context
	body io.Reader
}

// opCheckImport answers the verdict the store's import would give the
// bundle in the body (resolver.Store.CheckImport), installing, staging
// and auditing nothing: 'ampbundle sync --oci' judges a cut candidate by
// it (docs/SPEC-DECISIONS.md OCI-9). The body is read as an import's:
// at most maxUpload bytes, at the minimum data rate (rateBodies); it
// takes no write lock, so it waits for no import.
func opCheckImport() *Op[checkRequest, *resolver.ImportResult] {
	return &Op[checkRequest, *resolver.ImportResult]{
		Spec: Spec{Name: "CheckImport", Method: post, Path: "/v1/import/check", Type: "application/ampbundle", Stream: true},
		Run: func(s *resolver.Store, req checkRequest) (*resolver.ImportResult, error) {
			return s.CheckImport(req.body)
		},
		read: func(w http.ResponseWriter, r *http.Request) (checkRequest, error) {
			return checkRequest{ctx: r.Context(), body: http.MaxBytesReader(w, r.Body, maxUpload)}, nil
		},
		send: func(c *Client, req checkRequest) (*resolver.ImportResult, error) {
			var res resolver.ImportResult
			if err := c.do(req.ctx, post, "/v1/import/check", req.body, "application/ampbundle", &res); err != nil {
				return nil, err
			}
			return &res, nil
		},
	}
}

// exportRequest is the request of an export: the bundle, in the query,
// and where its file goes.
type exportRequest struct {
	BundleID string `json:"bundle_id"`
	w        io.Writer
}

// MaxStagedExports bounds the exports one admin socket serves at once
// (opExport): each stages a whole copy of its bundle in the temporary
// folder (often memory) before its first byte and keeps it while its
// caller reads at no less than the minimum data rate, for as long as
// size/rate (a 1 GiB bundle: over two hours). An operator exports one
// bundle at a time; a few slots, as many as resolver.MaxRefusalDrains
// gives refused imports' drains, serve scripts too. An export beyond
// them is answered busy (5004, retryable) before anything is staged.
const MaxStagedExports = resolver.MaxRefusalDrains

// errExportsBusy answers an export beyond MaxStagedExports.
func errExportsBusy() error {
	return amp.Named(amp.CodeOverloaded, "busy", "the admin socket stages at most %d exports at once; retry when one ends", MaxStagedExports)
}

func opExport() *Op[exportRequest, none] {
	run := func(s *resolver.Store, req exportRequest) (none, error) { return none{}, s.Export(req.BundleID, req.w) }
	slots := make(chan struct{}, MaxStagedExports) // this handler's staged exports
	return &Op[exportRequest, none]{
		Spec: Spec{Name: "Export", Method: get, Path: "/v1/export", Stream: true},
		Run:  run,
		serve: func(s *resolver.Store, w http.ResponseWriter, r *http.Request) error {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }() // after the staged file is removed
			default:
				return errExportsBusy()
			}
			// Buffer-free streaming would commit to a 200 before the last
			// artifact is checked; a failed check must be an error, so the
			// export is checked into a temporary file first.
			tmp, err := os.CreateTemp("", "ampbundle-export-*")
			if err != nil {
				return amp.Named(0, resolver.ErrStoreIO, "cannot stage the export").WithCause(err)
			}
			defer os.Remove(tmp.Name())
			defer tmp.Close()
			if _, err := run(s, exportRequest{BundleID: r.URL.Query().Get("bundle_id"), w: tmp}); err != nil {
				return err
			}
			if _, err := tmp.Seek(0, io.SeekStart); err != nil {
				return amp.Named(0, resolver.ErrStoreIO, "cannot stage the export").WithCause(err)
			}
			w.Header().Set("Content-Type", "application/ampbundle")
			w.WriteHeader(http.StatusOK)
			// w is written at the minimum data rate (rateAnswer): a caller
			// that does not read has the copy cut, and the staged file
			// removed (deferred above), within moments.
			io.Copy(w, tmp)
			return nil
		},
		send: func(c *Client, req exportRequest) (none, error) {
			return none{}, c.do(context.Background(), get, withQuery("/v1/export", map[string][]string{"bundle_id": {req.BundleID}}), nil, "", req.w)
		},
	}
}

type bundleRequest struct {
	BundleID string `json:"bundle_id"`
}

// removeAnswer and resetAnswer answer a removal and a heartbeat reset:
// the same fields, the version under another JSON name.
type (
	removeAnswer struct {
		BundleID string `json:"bundle_id"`
		Version  uint64 `json:"version"`
	}
	resetAnswer struct {
		BundleID string `json:"bundle_id"`
		Version  uint64 `json:"forgotten_version"`
	}
)

func opRemove() *Op[bundleRequest, removeAnswer] {
	return bundleVersionOp[removeAnswer](Spec{Name: "Remove", Method: post, Path: "/v1/remove", Mutates: true},
		(*resolver.Store).Remove, "bundle removed through the admin socket", "version")
}

// bundleVersionOp is a change to one bundle that answers with a version:
// remove and the heartbeat reset, whose answers differ only in the JSON
// name of that version (key, which the log line uses too).
func bundleVersionOp[A removeAnswer | resetAnswer](spec Spec, run func(*resolver.Store, string) (uint64, error), msg, key string) *Op[bundleRequest, A] {
	return &Op[bundleRequest, A]{
		Spec: spec,
		Run: func(s *resolver.Store, req bundleRequest) (A, error) {
			v, err := run(s, req.BundleID)
			return A(removeAnswer{req.BundleID, v}), err
		},
		Log: func(req bundleRequest, res A) (string, []any) {
			return msg, []any{"bundle_id", req.BundleID, key, removeAnswer(res).Version}
		},
	}
}

// resolveRequest is the request of /v1/resolve: the local locator and hash
// of a schema reference (a uri is never used, so it is not sent).
type resolveRequest struct {
	BundleID    string `json:"bundle_id"`
	ArtifactKey string `json:"artifact_key"`
	HashAlg     string `json:"hash_alg"`
	Hash        string `json:"hash"`
}

// dataAnswer carries bytes (base64 in JSON).
type dataAnswer struct {
	Data []byte `json:"data"`
}

func opResolve() *Op[resolveRequest, dataAnswer] {
	return &Op[resolveRequest, dataAnswer]{
		Spec: Spec{Name: "Resolve", Method: post, Path: "/v1/resolve"},
		Run: func(s *resolver.Store, req resolveRequest) (dataAnswer, error) {
			h, err := hex.DecodeString(req.Hash)
			if err != nil {
				return dataAnswer{}, amp.Named(0, "bad_request", "the hash is not hex")
			}
			data, err := s.Resolve(capability.SchemaRef{BundleID: req.BundleID, ArtifactKey: req.ArtifactKey, HashAlg: req.HashAlg, Hash: h})
			return dataAnswer{data}, err
		},
	}
}

func opBundles() *Op[none, []resolver.Bundle] {
	return reading("Bundles", "/v1/bundles", orEmpty((*resolver.Store).Bundles))
}

// Catalog is resolver.Catalog on the socket.
type Catalog struct {
	Generation uint64         `json:"generation"`
	Entries    []CatalogEntry `json:"entries"`
	// Aliases maps each legacy type to its canonical name, or to
	// resolver.AmbiguousAlias when bundles of several authorities claim
	// it: what a reader of this field alone (an older agent) resolves.
	Aliases map[string]string `json:"aliases"`
	// TypeClaims maps each legacy type that Aliases maps to
	// resolver.AmbiguousAlias to every name claimed for it, sorted
	// (resolver.Catalog.TypeClaims; docs/SPEC-DECISIONS.md BUNDLE-9,
	// CAP-8), so that a remote reader resolves such a type per caller as
	// the store's own catalog does; every other type's one claim is its
	// Aliases entry. Absent from an older agent's document, whose
	// ambiguous types then name no capability.
	TypeClaims map[string][]string `json:"type_claims"`
	// TypeClaimsMore: types were left out of TypeClaims (beyond
	// MaxTypeClaims or MaxTypeClaimsTotal); their claims come by pages
	// (GET /v1/catalog/claims, Registry.TypeClaims). Absent from an
	// older agent's document.
	TypeClaimsMore bool `json:"type_claims_more,omitempty"`
}

// MaxTypeClaims and MaxTypeClaimsTotal bound the catalog document's
// type_claims: the claims of one ambiguous type, and of all of them. The
// store keeps at most one claim of a type per authority (BUNDLE-9), so a
// type's claims are bounded by the trusted keys' distinct scopes, and the
// ambiguous types by the aliases installed bundles carry: neither bound
// is one an operator chose. A type beyond MaxTypeClaims, and the types
// (in sorted order) beyond MaxTypeClaimsTotal in all, are left out of
// type_claims whole, never some of its claims, which could leave a caller
// one squatter's claim as the answer (docs/SPEC-DECISIONS.md CAP-8), and
// the document says so (type_claims_more): a Client then reads every
// claim by pages of at most MaxTypeClaimsTotal claims
// (opTypeClaims), all of one generation, so that such a type resolves
// through the socket as in the store. MaxTypeClaimsTotal also bounds a
// page.
const (
	MaxTypeClaims      = 64
	MaxTypeClaimsTotal = 4096
)

// boundedTypeClaims returns the claims of each type c's Aliases maps to
// resolver.AmbiguousAlias, within MaxTypeClaims per type and
// MaxTypeClaimsTotal in all, and whether a type was left out
// (Catalog.TypeClaimsMore).
func boundedTypeClaims(c *resolver.Catalog) (out map[string][]string, more bool) {
	out = map[string][]string{}
	total := 0
	for _, typ := range slices.Sorted(maps.Keys(c.Aliases)) {
		if c.Aliases[typ] != resolver.AmbiguousAlias {
			continue
		}
		names := c.TypeClaims(typ)
		if len(names) > MaxTypeClaims || total+len(names) > MaxTypeClaimsTotal {
			more = true
			continue
		}
		total += len(names)
		out[typ] = names
	}
	return out, more
}

// claimsPage is a page of the claims of every ambiguous type
// (opTypeClaims): the claims in (type, name) order from the from-th, at
// most MaxTypeClaimsTotal of them (a type's may run on into the next
// page), the index of the next page's first claim (0: none), and the
// number of claims in all pages (a reader that has not got that many has
// not got them all).
type claimsPage struct {
	Generation uint64              `json:"generation"`
	TypeClaims map[string][]string `json:"type_claims"`
	Next       uint64              `json:"next,omitempty"`
	Total      uint64              `json:"total"`
}

// typeClaimsFrom is the page of c's ambiguous types' claims from the
// from-th claim, at most limit claims (no bound when limit < 0).
func typeClaimsFrom(c *resolver.Catalog, from uint64, limit int) *claimsPage {
	return newClaimsIndex(c).page(c, from, limit)
}

// claimsIndex is where each ambiguous type of one catalog stands among
// the claims of all of them, in (type, name) order: built once per
// catalog (claimsIndexes), so that a page is found by a binary search
// and costs its own size, not a sort and a walk of every type before it
// (a whole read of P pages cost P times the alias table).
type claimsIndex struct {
	cat   weak.Pointer[resolver.Catalog] // the catalog it indexes, not kept alive by it
	types []string                       // the ambiguous types, sorted
	ends  []uint64                       // ends[i]: the claims of types[:i+1]
}

// newClaimsIndex indexes the ambiguous types of c.
func newClaimsIndex(c *resolver.Catalog) *claimsIndex {
	x := &claimsIndex{cat: weak.Make(c)}
	var end uint64
	for _, typ := range slices.Sorted(maps.Keys(c.Aliases)) {
		if c.Aliases[typ] != resolver.AmbiguousAlias {
			continue
		}
		end += uint64(len(c.TypeClaims(typ)))
		x.types = append(x.types, typ)
		x.ends = append(x.ends, end)
	}
	return x
}

// page is the page of c's (the indexed catalog's) claims from the
// from-th, at most limit claims (no bound when limit < 0): the types it
// starts in found by a binary search, and no type before them looked at.
func (x *claimsIndex) page(c *resolver.Catalog, from uint64, limit int) *claimsPage {
	p := &claimsPage{Generation: c.Generation, TypeClaims: map[string][]string{}}
	if len(x.ends) > 0 {
		p.Total = x.ends[len(x.ends)-1]
	}
	at, n := from, 0
	for i, _ := slices.BinarySearch(x.ends, from+1); i < len(x.types) && at < p.Total && n != limit; i++ {
		names := c.TypeClaims(x.types[i])
		take := names[at-(x.ends[i]-uint64(len(names))):]
		if limit >= 0 && len(take) > limit-n {
			take = take[:limit-n]
		}
		if len(take) > 0 {
			p.TypeClaims[x.types[i]] = slices.Clone(take)
		}
		at += uint64(len(take))
		n += len(take)
	}
	if at < p.Total {
		p.Next = at
	}
	return p
}

// claimsIndexes keeps the index of the last catalog whose claims were
// paged (a handler's: a reader's pages are of one catalog, and a page of
// another builds that one's).
type claimsIndexes struct {
	mu   sync.Mutex
	last *claimsIndex
}

// of is the index of c, built when it is not the last one's.
func (k *claimsIndexes) of(c *resolver.Catalog) *claimsIndex {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last == nil || k.last.cat.Value() != c {
		k.last = newClaimsIndex(c)
	}
	return k.last
}

// claimsRequest is the query of a page of claims: the index of its first
// claim (decimal; absent: 0).
type claimsRequest struct {
	From string `json:"from"`
}

// maxClaimsRestarts is how many times a Client reads the claims again
// when the store changed between two of their pages (or between the
// catalog document and them) before it answers busy.
const maxClaimsRestarts = 3

// errStoreChanging answers a catalog whose claims could not be read at one
// generation within maxClaimsRestarts tries.
func errStoreChanging() error {
	return amp.Named(amp.CodeOverloaded, "busy", "the store changed %d times while its catalog was read through the admin socket; retry", maxClaimsRestarts)
}

// opTypeClaims answers the claims of every ambiguous type by pages
// (claimsPage), so that a type the catalog document left out (beyond
// MaxTypeClaims or MaxTypeClaimsTotal) is read whole, each answer
// bounded. A Client reads every page, restarting when the generation
// moves between them (errStoreChanging after maxClaimsRestarts).
func opTypeClaims() *Op[claimsRequest, *claimsPage] {
	indexes := &claimsIndexes{}
	return &Op[claimsRequest, *claimsPage]{
		Spec: Spec{Name: "TypeClaims", Method: get, Path: "/v1/catalog/claims"},
		Run: func(s *resolver.Store, req claimsRequest) (*claimsPage, error) {
			from := uint64(0)
			if req.From != "" {
				var err error
				if from, err = strconv.ParseUint(req.From, 10, 64); err != nil {
					return nil, amp.Named(0, "bad_request", "from must be a decimal claim index")
				}
			}
			c, err := s.Catalog()
			if err != nil {
				return nil, err
			}
			return indexes.of(c).page(c, from, MaxTypeClaimsTotal), nil
		},
		send: func(c *Client, _ claimsRequest) (*claimsPage, error) {
			for range maxClaimsRestarts {
				all, ok, err := readClaimPages(c)
				if err != nil || ok {
					return all, err
				}
			}
			return nil, errStoreChanging()
		},
	}
}

// readClaimPages reads every page of claims through c; ok is false when
// the store's generation moved between two pages (read them again).
func readClaimPages(c *Client) (all *claimsPage, ok bool, err error) {
	var from uint64
	for first := true; ; first = false {
		// One page: the route as a plain GET (the entry without send).
		p, err := Call(c, &Op[claimsRequest, *claimsPage]{Spec: opTypeClaims().Spec}, claimsRequest{From: strconv.FormatUint(from, 10)})
		if err != nil {
			return nil, false, err
		}
		n := 0
		for _, names := range p.TypeClaims {
			n += len(names)
		}
		switch {
		case first:
			all = &claimsPage{Generation: p.Generation, TypeClaims: map[string][]string{}, Total: p.Total}
		case p.Generation != all.Generation:
			return nil, false, nil
		}
		// Each page moves on by what it carries, within the bound, and
		// the last ends at the total: no loop, no part taken for all.
		to := from + uint64(n)
		if n > MaxTypeClaimsTotal || p.Total != all.Total || to > all.Total ||
			(p.Next != 0 && (n == 0 || p.Next != to)) || (p.Next == 0 && to != all.Total) {
			return nil, false, amp.Named(0, "admin_socket", "the agent's page of type claims does not follow the previous one")
		}
		for typ, names := range p.TypeClaims {
			all.TypeClaims[typ] = append(all.TypeClaims[typ], names...)
		}
		if p.Next == 0 {
			return all, true, nil
		}
		from = p.Next
	}
}

// CatalogEntry is one installed descriptor.
type CatalogEntry struct {
	BundleID   string                `json:"bundle_id"`
	Descriptor capability.Descriptor `json:"descriptor"`
}

func opCatalog() *Op[none, *Catalog] {
	return &Op[none, *Catalog]{
		Spec: Spec{Name: "Catalog", Method: get, Path: "/v1/catalog"},
		Run: func(s *resolver.Store, _ none) (*Catalog, error) {
			c, err := s.Catalog()
			if err != nil {
				return nil, err
			}
			out := &Catalog{Generation: c.Generation, Aliases: c.Aliases, Entries: []CatalogEntry{}}
			out.TypeClaims, out.TypeClaimsMore = boundedTypeClaims(c)
			for _, name := range c.Names {
				for _, e := range c.ByName[name] {
					out.Entries = append(out.Entries, CatalogEntry{BundleID: e.BundleID, Descriptor: e.Descriptor})
				}
			}
			return out, nil
		},
	}
}

func opCheck() *Op[none, []resolver.Problem] {
	return reading("Check", "/v1/check", orEmpty((*resolver.Store).Check))
}

// auditDoc is the audit log, its head and its verdict, taken at one moment.
type auditDoc struct {
	Entries  []resolver.AuditEntry `json:"entries"`
	Head     string                `json:"head"`
	Verified bool                  `json:"verified"`
	Error    *errorDoc             `json:"error,omitempty"`
	// Count, in the answer of ?entries=0 only, is the number of entries
	// the log had at that moment (Entries is then empty): a Client asks
	// ?through=Count for them when it needs them (auditSnapshot).
	Count *uint64 `json:"count,omitempty"`
	// err is the verdict's own error (a local store's: it keeps its code).
	err error
}

// auditRequest is the query of GET /v1/audit: entries=0 leaves the
// entries out (their number says how many there were); through=N gives
// the first N entries alone (those of a snapshot taken with entries=0:
// the log only grows, so they are that moment's). Absent (as an older
// client sends), the whole log.
type auditRequest struct {
	Entries string `json:"entries"`
	Through string `json:"through"`
}

// opAudit answers the audit log, its head and its verdict in one
// document. The head and verdict alone (entries=0) are what 'ampbundle
// check' and a catalog over a held store need: a few hundred bytes, where
// the log, which only grows, would cost its whole length on the socket at
// every check and, past the client's answer bound, fail it
// (docs/SPEC-DECISIONS.md ADMIN-3).
func opAudit() *Op[auditRequest, *auditDoc] {
	return &Op[auditRequest, *auditDoc]{
		Spec: Spec{Name: "Audit", Also: []string{"AuditHead", "VerifyAudit"}, Method: get, Path: "/v1/audit"},
		Run: func(s *resolver.Store, req auditRequest) (*auditDoc, error) {
			if req.Through != "" {
				n, err := strconv.ParseUint(req.Through, 10, 64)
				if err != nil {
					return nil, amp.Named(0, "bad_request", "through must be a decimal number of entries")
				}
				// Refused before any entry is decoded when the log is
				// shorter (ADMIN-6); the count after the read still
				// refuses a damaged log's gap.
				if count, err := s.AuditCount(); err != nil {
					return nil, err
				} else if count < n {
					return nil, amp.Named(0, "bad_request", "through names more entries than the log holds")
				}
				entries, err := s.AuditFirst(n)
				if err != nil {
					return nil, err
				}
				if uint64(len(entries)) < n {
					return nil, amp.Named(0, "bad_request", "through names more entries than the log holds")
				}
				return &auditDoc{Entries: entries, Verified: true}, nil
			}
			// The entries (or their number), the head and the verdict of
			// one moment: one read of the store.
			snap, err := s.AuditSnapshot(req.Entries != "0")
			if err != nil {
				return nil, err
			}
			doc := &auditDoc{Entries: snap.Entries, Head: fmt.Sprintf("%x", snap.Head), Verified: true}
			if req.Entries == "0" {
				n := snap.Count
				doc.Count = &n
			}
			if doc.err = snap.Verdict; doc.err != nil {
				doc.Verified = false
				e := amp.AsError(doc.err)
				doc.Error = &errorDoc{}
				doc.Error.Error.Code, doc.Error.Error.Message = string(amp.NameOf(e)), e.Message
			}
			return doc, nil
		},
	}
}

type generationAnswer struct {
	Generation uint64 `json:"generation"`
}

func opGeneration() *Op[none, generationAnswer] {
	return reading("FetchGeneration", "/v1/generation", func(s *resolver.Store) (generationAnswer, error) { return generationAnswer{s.Generation()}, nil })
}

type trustAddRequest struct {
	Name   string   `json:"name"`
	Key    string   `json:"key"` // a did:key
	Scopes []string `json:"scopes"`
	// Threshold, when set, is also set for each scope, in the same
	// transaction (resolver.Store.TrustAddWithThreshold).
	Threshold *int `json:"threshold,omitempty"`
}

type nameAnswer struct {
	Name string `json:"name"`
}

func opTrustAdd() *Op[trustAddRequest, nameAnswer] {
	return &Op[trustAddRequest, nameAnswer]{
		Spec: Spec{Name: "TrustAdd", Also: []string{"TrustAddWithThreshold"}, Method: post, Path: "/v1/trust/add", Mutates: true},
		Run: func(s *resolver.Store, req trustAddRequest) (nameAnswer, error) {
			pub, err := didKeyPublic(req.Key)
			if err == nil && req.Threshold != nil {
				err = s.TrustAddWithThreshold(req.Name, pub, req.Scopes, *req.Threshold)
			} else if err == nil {
				err = s.TrustAdd(req.Name, pub, req.Scopes)
			}
			return nameAnswer{req.Name}, err
		},
		Log: func(req trustAddRequest, _ nameAnswer) (string, []any) {
			threshold := 0
			if req.Threshold != nil {
				threshold = *req.Threshold
			}
			return "key trusted through the admin socket", []any{"name", req.Name, "key", req.Key, "scopes", req.Scopes, "threshold", threshold}
		},
	}
}

type trustRemoveRequest struct {
	Name       string `json:"name"`
	FailClosed bool   `json:"fail_closed,omitempty"`
}

type trustRemoveAnswer struct {
	Name         string   `json:"name"`
	FailedClosed []string `json:"failed_closed"`
}

func opTrustRemove() *Op[trustRemoveRequest, trustRemoveAnswer] {
	return &Op[trustRemoveRequest, trustRemoveAnswer]{
		Spec: Spec{Name: "TrustRemove", Also: []string{"TrustRemoveFailClosed"}, Method: post, Path: "/v1/trust/remove", Mutates: true},
		Run: func(s *resolver.Store, req trustRemoveRequest) (trustRemoveAnswer, error) {
			res := trustRemoveAnswer{Name: req.Name, FailedClosed: []string{}}
			if !req.FailClosed {
				return res, s.TrustRemove(req.Name)
			}
			failed, err := s.TrustRemoveFailClosed(req.Name)
			res.FailedClosed = append(res.FailedClosed, failed...)
			return res, err
		},
		Log: func(req trustRemoveRequest, res trustRemoveAnswer) (string, []any) {
			return "key no longer trusted, through the admin socket", []any{"name", req.Name, "failed_closed", res.FailedClosed}
		},
	}
}

// TrustKey is a trusted key on the socket (the key as a did:key).
type TrustKey struct {
	Name    string   `json:"name"`
	Key     string   `json:"key"`
	Scopes  []string `json:"scopes"`
	AddedAt string   `json:"added_at"`
	// Except are the scopes the key was revoked for (resolver.TrustKey).
	Except []string `json:"except,omitempty"`
}

func opTrustList() *Op[none, []TrustKey] {
	return &Op[none, []TrustKey]{
		Spec: Spec{Name: "TrustList", Method: get, Path: "/v1/trust"},
		Run: func(s *resolver.Store, _ none) ([]TrustKey, error) {
			keys, err := s.TrustList()
			out := []TrustKey{}
			for _, k := range keys {
				out = append(out, TrustKey{Name: k.Name, Key: k.DID(), Scopes: k.Scopes, AddedAt: k.AddedAt, Except: k.Except})
			}
			return out, err
		},
	}
}

type thresholdRequest struct {
	Scope     string `json:"scope"`
	Threshold int    `json:"threshold"`
}

func opTrustSetThreshold() *Op[thresholdRequest, thresholdRequest] {
	return &Op[thresholdRequest, thresholdRequest]{
		Spec: Spec{Name: "TrustSetThreshold", Method: post, Path: "/v1/trust/threshold", Mutates: true},
		Run: func(s *resolver.Store, req thresholdRequest) (thresholdRequest, error) {
			return req, s.TrustSetThreshold(req.Scope, req.Threshold)
		},
		Log: func(req, _ thresholdRequest) (string, []any) {
			return "threshold set through the admin socket", []any{"scope", req.Scope, "threshold", req.Threshold}
		},
	}
}

func opTrustThresholds() *Op[none, map[string]int] {
	return reading("TrustThresholds", "/v1/trust/thresholds", (*resolver.Store).TrustThresholds)
}

func opTrustChains() *Op[none, map[string]uint64] {
	return reading("TrustChains", "/v1/trust/chains", (*resolver.Store).TrustChains)
}

// opTrustRefused lists the keys the store holds but trusts for nothing
// (resolver.Store.TrustRefused; docs/SPEC-DECISIONS.md TRUST-21): each
// named by its did:key, which no reader expands into a trusted key.
func opTrustRefused() *Op[none, []resolver.RefusedTrustKey] {
	return reading("TrustRefused", "/v1/trust/refused", orEmpty((*resolver.Store).TrustRefused))
}

func opTrustPolicy() *Op[[]byte, *resolver.PolicyResult] {
	return &Op[[]byte, *resolver.PolicyResult]{
		// One byte more than a policy may have: ParseTrustPolicy names it.
		Spec: Spec{Name: "ApplyTrustPolicyFile", Method: post, Path: "/v1/trust/policy", Mutates: true,
			Raw: resolver.MaxTrustPolicySize + 1, Type: "application/json"},
		Run: func(s *resolver.Store, data []byte) (*resolver.PolicyResult, error) {
			return s.ApplyTrustPolicyFile(data)
		},
		Log: func(_ []byte, res *resolver.PolicyResult) (string, []any) {
			return "trust policy applied through the admin socket", []any{"added", res.Added, "thresholds", len(res.Thresholds), "unchanged", res.Unchanged}
		},
	}
}

func opFreshnessPolicy() *Op[none, []resolver.Freshness] {
	return reading("FreshnessPolicy", "/v1/freshness", orEmpty((*resolver.Store).FreshnessPolicy))
}

// freshnessRequest is the body of POST /v1/freshness
// (resolver.Store.SetFreshnessPolicy).
type freshnessRequest struct {
	Scope         string  `json:"scope"`
	MaxVersions   *uint64 `json:"max_versions,omitempty"`
	MaxAgeSeconds uint64  `json:"max_age_seconds,omitempty"`
}

type scopeAnswer struct {
	Scope string `json:"scope"`
}

func opSetFreshnessPolicy() *Op[freshnessRequest, scopeAnswer] {
	return &Op[freshnessRequest, scopeAnswer]{
		Spec: Spec{Name: "SetFreshnessPolicy", Method: post, Path: "/v1/freshness", Mutates: true},
		Run: func(s *resolver.Store, req freshnessRequest) (scopeAnswer, error) {
			if req.MaxAgeSeconds > uint64(math.MaxInt64/int64(time.Second)) {
				return scopeAnswer{}, amp.Named(0, resolver.ErrInvalidTrust, "max_age_seconds is too large")
			}
			return scopeAnswer{req.Scope}, s.SetFreshnessPolicy(req.Scope, req.MaxVersions, time.Duration(req.MaxAgeSeconds)*time.Second)
		},
		Log: func(req freshnessRequest, _ scopeAnswer) (string, []any) {
			return "freshness policy set through the admin socket", []any{"scope", req.Scope}
		},
	}
}

func opResetHeartbeat() *Op[bundleRequest, resetAnswer] {
	return bundleVersionOp[resetAnswer](Spec{Name: "ResetHeartbeat", Method: post, Path: "/v1/freshness/reset", Mutates: true},
		(*resolver.Store).ResetHeartbeat, "heartbeat reset through the admin socket", "forgotten_version")
}

// statementOp is the operation applying a signed statement of kind
// (revocation, rotation, heartbeat): the store applies it exactly as
// 'ampbundle import FILE' does, so that a revocation reaches a running
// agent without stopping it.
func statementOp[Resp any](name, kind string, apply func(*resolver.Store, []byte) (Resp, error)) *Op[[]byte, Resp] {
	return &Op[[]byte, Resp]{
		Spec: Spec{Name: name, Method: post, Path: "/v1/statements/" + kind, Mutates: true, Raw: maxStatement + 1, Type: "application/cbor"},
		Run:  apply,
		read: func(w http.ResponseWriter, r *http.Request) ([]byte, error) {
			data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxStatement+1))
			if err != nil || len(data) > maxStatement {
				return nil, amp.Named(0, "limit_exceeded", "a statement is at most %d bytes", maxStatement)
			}
			return data, nil
		},
		Log: func([]byte, Resp) (string, []any) {
			return "statement applied through the admin socket", []any{"kind", kind}
		},
	}
}

func opRevocation() *Op[[]byte, *resolver.RevokeResult] {
	return statementOp("ApplyRevocation", "revocation", (*resolver.Store).ApplyRevocation)
}

func opRotation() *Op[[]byte, *resolver.RotateResult] {
	return statementOp("ApplyRotation", "rotation", (*resolver.Store).ApplyRotation)
}

func opHeartbeat() *Op[[]byte, *resolver.HeartbeatResult] {
	return statementOp("ApplyHeartbeat", "heartbeat", (*resolver.Store).ApplyHeartbeat)
}

func opStatements() *Op[none, []resolver.Statement] {
	return reading("Statements", "/v1/statements", (*resolver.Store).Statements)
}

func opHeartbeats() *Op[none, []resolver.KeptHeartbeat] {
	return reading("Heartbeats", "/v1/heartbeats", (*resolver.Store).Heartbeats)
}

type hasRequest struct {
	SHA256 string `json:"sha256"` // hex
}

type hasAnswer struct {
	Has bool `json:"has"`
}

func opHasStatement() *Op[hasRequest, hasAnswer] {
	return readingSum("HasStatement", "/v1/statements/has", func(s *resolver.Store, sum []byte) (hasAnswer, error) {
		has, err := s.HasStatement(sum)
		return hasAnswer{has}, err
	})
}

// fileSum is the file SHA-256 an import's query names (file_sha256, 64
// hex digits); nil when absent or not that: the store then hashes what it
// reads. readingSum reads a request's sha256 by it too.
func fileSum(h string) []byte {
	sum, err := hex.DecodeString(h)
	if err != nil || len(sum) != sha256.Size {
		return nil
	}
	return sum
}

// readingSum is the operation name at GET path: read of the SHA-256 the
// request names (sha256, 64 hex digits: fileSum), refused bad_request
// before the store is read when it names none.
func readingSum[Resp any](name, path string, read func(s *resolver.Store, sum []byte) (Resp, error)) *Op[hasRequest, Resp] {
	return &Op[hasRequest, Resp]{Spec: Spec{Name: name, Method: get, Path: path},
		Run: func(s *resolver.Store, req hasRequest) (Resp, error) {
			sum := fileSum(req.SHA256)
			if sum == nil {
				var zero Resp
				return zero, amp.Named(0, "bad_request", "sha256 must be 64 hex digits")
			}
			return read(s, sum)
		}}
}

type refusedAnswer struct {
	Refused bool   `json:"refused"`
	Verdict string `json:"verdict,omitempty"`
}

// opRefusedAt answers whether the store refused a file at its current
// generation lately (resolver.Store.RefusedAt).
func opRefusedAt() *Op[hasRequest, refusedAnswer] {
	return readingSum("RefusedAt", "/v1/refused", func(s *resolver.Store, sum []byte) (refusedAnswer, error) {
		verdict, ok, err := s.RefusedAt(sum)
		return refusedAnswer{Refused: ok, Verdict: verdict}, err
	})
}
