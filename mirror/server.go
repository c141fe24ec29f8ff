package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
)

// ScriptFree returns next with MIRROR-7's headers set before it runs, as
// the mirror's own router sets them: X-Content-Type-Options: nosniff and
// ContentSecurityPolicy, on every answer whatever its route and status. A
// handler under it that serves pages (the catalog under /ui/) sets its own
// policy over this one.
func ScriptFree(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSafetyHeaders(w)
		next.ServeHTTP(w, r)
	})
}

// Source is what the mirror reads of a store: a *resolver.Store opened
// read-only, or a client of the admin socket of an agent holding it.
// Generation is the store's generation as of the last read; a Source
// that learns it only from its answers (an admin socket client) is also a
// LiveSource, which the server asks first.
type Source interface {
	Generation() uint64
	Bundles() ([]resolver.Bundle, error)
	Catalog() (*resolver.Catalog, error)
	Export(bundleID string, w io.Writer) error
	Resolve(ref capability.SchemaRef) ([]byte, error)
	Close() error
}

// LiveSource is a Source over a store that another process keeps
// changing while it is open (the admin socket client of a running agent):
// FetchGeneration asks for the store's generation now. Without it, such a
// Source would report the generation of its last answer, or 0 before the
// first, and the server would never see the agent's commits.
type LiveSource interface {
	FetchGeneration() (uint64, error)
}

// maxBuildTries bounds how often one refresh takes the snapshot again
// because the store changed while it was being read.
const maxBuildTries = 3

// Defaults of Options.
const (
	DefaultRefresh        = 5 * time.Second
	DefaultMaxInFlight    = 256
	DefaultMaxBundleBytes = 1 << 30
	DefaultMaxIndexBytes  = 16 << 20
)

// Options configures a Server.
type Options struct {
	// Open opens the store for one snapshot; the server closes what it
	// returns as soon as the snapshot is taken. Required.
	Open func() (Source, error)
	// SpoolDir holds the bundle files of the current snapshot (named by
	// their SHA-256). Required; the server owns its *.bundle files.
	SpoolDir string
	// Refresh is how often the server looks for a new store generation.
	// Default 5 s.
	Refresh time.Duration
	// MaxInFlight bounds the requests served at once; beyond it, 503
	// overloaded. Default 256.
	MaxInFlight int
	// MaxPeerInFlight bounds those of one peer (an IP address, an IPv6
	// /48: admission.Network of transport.Peer, docs/SPEC-DECISIONS.md
	// TRANSPORT-28), so that one host reading slowly cannot hold
	// every slot; beyond it, 503 overloaded. Default a quarter of
	// MaxInFlight, at least 1, at most MaxInFlight.
	MaxPeerInFlight int
	// MaxBundleBytes bounds one bundle file of the snapshot (a larger one
	// is left out of the snapshot and logged). Default 1 GiB.
	MaxBundleBytes int64
	// MaxIndexBytes bounds the index document. Default 16 MiB.
	MaxIndexBytes int64
	// MinDataRate is the slowest a client may read a document or bundle
	// file it asked for, in bytes per second (default
	// admission.MinDataRate, 128 KiB/s: the rate 'ampbundle sync'
	// requires of a mirror by default), the rule of transport.RateWriter:
	// after admission.FrameGrace (5 s) what was written must keep up with
	// it on average, and no more than that grace may pass without
	// progress, or the answer is cut off and its request slot given back
	// (MIRROR-14). A site syncing over a slower link lowers it. Over
	// HTTP/2 a deadline resets only the stream, whose reset cannot be
	// written behind a peer's stuck data: there the slot comes back when
	// the server closes the connection, which NewHTTPServer's server does
	// (HTTP2Config.WriteByteTimeout) and a plain http.Server does not.
	MinDataRate int64
	// grace replaces admission.FrameGrace (tests).
	grace time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock that decides when a served bundle has expired and
	// the snapshot must be taken again, and when /readyz re-runs the store
	// check; nil is time.Now.
	Now func() time.Time
	// ReadyRecheck is how often /readyz re-runs the store check at least
	// (it also runs when the served generation changes). Default
	// DefaultReadyRecheck.
	ReadyRecheck time.Duration
}

// Server is the read-only mirror: an http.Handler over the latest
// snapshot of a store.
type Server struct {
	opts  Options
	log   *slog.Logger
	caps  Capabilities
	cur   atomic.Pointer[snapshot]
	slots *transport.Admission // requests in flight, in all and by peer
	mu    sync.Mutex           // serializes Refresh
	met   *metrics

	refreshFailing atomic.Pointer[string] // the /readyz code of the last refresh's failure; nil when it succeeded
	trimMu         sync.Mutex             // one trim of an expired snapshot at a time (current)
	checkMu        sync.Mutex             // one store check at a time (/readyz)
	lastCheck      atomic.Pointer[integrity]
	readyLog       ReadyLog // the full /readyz reports, logged when they change
	// capped is the last snapshot refused for a cap (MIRROR-8) and what it
	// was built from; nil once one is stored (build). Refresh holds mu.
	capped *cappedBuild
}

// cappedBuild is a snapshot build refused for a cap (overCap, or the
// index's size): at the store generation gen, from the bundles named by
// servedKey served, with the refusal err. The same generation and
// bundles give the same snapshot, so the same refusal (MIRROR-31).
type cappedBuild struct {
	gen    uint64
	served string
	err    error
}

// New checks opts and the capabilities document they imply (a
// misconfigured server refuses to start, naming the field), takes the
// first snapshot of the store and returns the server.
func New(opts Options) (*Server, error) {
	if opts.Open == nil {
		return nil, amp.Named(0, ErrMisconfigured, "mirror: open is required")
	}
	if opts.SpoolDir == "" {
		return nil, amp.Named(0, ErrMisconfigured, "mirror: spool_dir is required")
	}
	limit.Default(&opts.Refresh, DefaultRefresh)
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	limit.Default(&opts.MaxPeerInFlight, opts.MaxInFlight/4)
	opts.MaxPeerInFlight = min(max(opts.MaxPeerInFlight, 1), opts.MaxInFlight)
	if opts.MaxBundleBytes == 0 {
		opts.MaxBundleBytes = DefaultMaxBundleBytes
	}
	if opts.MaxIndexBytes == 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	limit.Default(&opts.MinDataRate, admission.MinDataRate)
	limit.Default(&opts.ReadyRecheck, DefaultReadyRecheck)
	s := &Server{opts: opts, log: opts.Logger}
	s.met = newMetrics(s)
	s.lastCheck.Store(&integrity{})
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.caps = Capabilities{
		RegistryVersion:     RegistryVersion,
		Profiles:            []string{ProfileOffline, ProfileMirror},
		BundleFormat:        bundle.Format,
		HashAlgorithms:      []string{capability.HashSHA256, capability.HashSHA512},
		SignatureAlgorithms: []string{SignatureEd25519},
		Limits: Limits{MaxBundleBytes: opts.MaxBundleBytes, MaxIndexBytes: opts.MaxIndexBytes,
			MaxPathBytes: maxPathLen, MaxInFlight: opts.MaxInFlight},
		Endpoints: mirrorEndpoints(),
	}
	if err := s.caps.Check(); err != nil {
		return nil, err
	}
	if err := s.ACDPCapabilities().Check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.SpoolDir, 0o700); err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot create the spool folder").WithCause(err)
	}
	s.slots = transport.NewAdmission(opts.MaxInFlight, opts.MaxPeerInFlight, 0, 0)
	s.removeExportTemps() // before any export: a killed server's, whatever the first refresh does
	if err := s.Refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// Capabilities returns the capabilities document the server would serve
// now.
func (s *Server) Capabilities() Capabilities {
	c := s.caps
	if snap := s.cur.Load(); snap != nil {
		c.Generation = snap.gen
	}
	return c
}

// Generation is the store generation of the snapshot being served.
func (s *Server) Generation() uint64 {
	if snap := s.cur.Load(); snap != nil {
		return snap.gen
	}
	return 0
}

// Run refreshes the snapshot every Options.Refresh until ctx ends. A
// failed refresh keeps serving the previous snapshot, less what the store
// now refuses when it could read that (Refresh), and is logged.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Refresh(); err != nil {
				s.log.Warn("mirror refresh failed; serving the previous snapshot", "err", err)
			}
		}
	}
}

// Refresh opens the store, and, when its generation differs from the
// snapshot being served or a bundle the snapshot serves has expired since,
// takes a new snapshot and swaps it in. A Source that is a LiveSource is
// asked for the store's generation first, so that every commit of the
// process holding the store is seen at the next refresh. A refresh that
// fails once it has read the store's bundles (a cap, MIRROR-8; a read
// error) leaves out of the snapshot still served every bundle the store
// no longer uses as served (MIRROR-10).
func (s *Server) Refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refresh()
	var code *string
	if err != nil {
		s.met.failures.Inc()
		c := refreshProblemCode(err)
		code = &c
	}
	s.refreshFailing.Store(code)
	return err
}

func (s *Server) refresh() error {
	src, err := s.opts.Open()
	if err != nil {
		return err
	}
	defer src.Close()
	live, _ := src.(LiveSource)
	if live != nil {
		if _, err := live.FetchGeneration(); err != nil {
			return err
		}
	}
	old := s.cur.Load()
	if old != nil && old.gen == src.Generation() && !old.expiredAt(s.opts.Now()) {
		if old.trimmed {
			s.prune(old) // the files of the bundles that expired from it
		}
		return nil
	}
	// A live store may commit between the reads of one snapshot: each
	// answer then carries a newer generation than the one the snapshot
	// started at. The snapshot is taken again (a few times at most); one
	// still mixed is labelled with the generation it started at, older
	// than some of what it holds, so the next refresh takes it again.
	var snap *snapshot
	for try := 0; ; try++ {
		var bs []resolver.Bundle
		if snap, bs, err = s.build(src, old); err != nil {
			if bs != nil {
				s.leaveOutRefused(bs) // MIRROR-10
			}
			return err
		}
		if live == nil || try+1 == maxBuildTries {
			break
		}
		if _, err := live.FetchGeneration(); err != nil {
			return err
		}
		if src.Generation() == snap.gen {
			break
		}
	}
	s.cur.Store(snap)
	s.met.snapshots.Inc()
	s.prune(snap)
	s.log.Info("mirror snapshot", "generation", snap.gen, "bundles", len(snap.bundles), "files", len(snap.files))
	return nil
}

// snapshot is what the mirror serves at one store generation.
type snapshot struct {
	gen     uint64
	files   map[string]*memFile    // path -> document
	bundles map[string]*bundleFile // bundle_id -> file in the spool
	// expires is the expiry of each served bundle that has one.
	expires map[string]time.Time
	// validUntil is the earliest of expires (zero: none expires): from
	// then on the snapshot would serve a bundle its store no longer uses.
	// Each request trims such a bundle out of it (Server.current), and a
	// refresh takes it again.
	validUntil time.Time
	// trimmed is set on a snapshot derived from another by leaving out
	// bundles (expired: current; no longer used by the store:
	// leaveOutRefused): the spool may still hold their files.
	trimmed bool
}

// expiredAt reports whether a bundle the snapshot serves has expired at
// now (as the store decides: at its expiry instant and after).
func (snap *snapshot) expiredAt(now time.Time) bool {
	return !snap.validUntil.IsZero() && !now.Before(snap.validUntil)
}

// memFile is a small document kept in memory.
type memFile struct {
	body  []byte
	ctype string
	etag  string
	// bundle is the bundle_id of the bundle whose capability the file
	// belongs to ("" for the index, well-known and statement files): it
	// stops being served when that bundle expires.
	bundle string
}

// bundleFile is a signed bundle file in the spool folder.
type bundleFile struct {
	key    string // bundleKey: unchanged, with a manifest hash, means the same file
	path   string
	size   int64
	sha256 string
	etag   string
	// file is the file export wrote (stat of its own descriptor): only
	// that file is served from path (serveSnapshot, MIRROR-25).
	file os.FileInfo
}

// bundleOf is the file snap serves for bundle id, or nil (snap nil too).
func (snap *snapshot) bundleOf(id string) *bundleFile {
	if snap == nil {
		return nil
	}
	return snap.bundles[id]
}

func etagOf(alg string, sum []byte) string { return `"` + alg + ":" + hex.EncodeToString(sum) + `"` }

func newMemFile(body []byte, ctype string) *memFile {
	sum := sha256.Sum256(body)
	return &memFile{body: body, ctype: ctype, etag: etagOf(capability.HashSHA256, sum[:])}
}

// build takes a snapshot of src. Bundle files of old whose bundle is
// unchanged are reused; the others are exported again (Export checks every
// artifact hash, so a tampered store yields no file). It also returns the
// store's bundles, once read, even when it fails after: what the store
// now refuses is left out of the snapshot still served (leaveOutRefused).
// A snapshot refused for a cap is not built again while the store's
// generation and the bundles it would serve are those it was refused at
// (capped): the refresh fails at once with the same refusal, exporting,
// reading and encoding nothing (docs/SPEC-DECISIONS.md MIRROR-31).
func (s *Server) build(src Source, old *snapshot) (*snapshot, []resolver.Bundle, error) {
	bs, err := src.Bundles()
	if err != nil {
		return nil, nil, err
	}
	if bs == nil {
		bs = []resolver.Bundle{} // read: an empty store
	}
	gen, served := src.Generation(), servedKey(bs, s.opts.Now())
	if c := s.capped; c != nil && c.gen == gen && c.served == served {
		return nil, bs, c.err
	}
	snap, err := s.buildFrom(src, old, bs)
	switch {
	case err == nil:
		s.capped = nil
	case amp.NameOf(err) == ErrMisconfigured: // a cap: overCap, the index's size
		s.capped = &cappedBuild{gen: gen, served: served, err: err}
	}
	return snap, bs, err
}

// servedKey names the bundles of bs a snapshot taken at now would serve
// (servedAt, the rule buildFrom serves by), each by its bundleKey.
func servedKey(bs []resolver.Bundle, now time.Time) string {
	h := sha256.New()
	for _, b := range bs {
		if _, why := servedAt(b, now); why == "" {
			h.Write([]byte(bundleKey(b) + "\xff"))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// whyUnreadableExpiry is servedAt's reason for a bundle whose expires_at
// the mirror cannot read.
const whyUnreadableExpiry = "unreadable expiry"

// servedAt is the one rule of which bundles a snapshot taken at now
// serves (buildFrom, its cap on bundles, and servedKey): only what the
// store would use is served, so it returns why b is left out: the reason
// it fails closed in the store (revoked, stale, expired), "expired" when
// it has expired by the mirror's clock (which each request checks too),
// or whyUnreadableExpiry; "" when b is served, with its expiry (zero:
// none) (docs/SPEC-DECISIONS.md MIRROR-33).
func servedAt(b resolver.Bundle, now time.Time) (exp time.Time, why string) {
	if reason := b.FailsClosed(); reason != "" {
		return time.Time{}, reason
	}
	if b.ExpiresAt == "" {
		return time.Time{}, ""
	}
	exp, err := time.Parse(time.RFC3339, b.ExpiresAt)
	switch {
	case err != nil:
		return time.Time{}, whyUnreadableExpiry
	case !now.Before(exp):
		return time.Time{}, "expired"
	}
	return exp, ""
}

// buildFrom is build once the store's bundles bs are read.
func (s *Server) buildFrom(src Source, old *snapshot, bs []resolver.Bundle) (*snapshot, error) {
	snap := &snapshot{gen: src.Generation(), files: map[string]*memFile{}, bundles: map[string]*bundleFile{}, expires: map[string]time.Time{}}
	now := s.opts.Now()
	var err error
	ix := Index{Format: IndexFormat, Generation: snap.gen, Bundles: []IndexEntry{}, Capabilities: []IndexCap{}}
	served := 0
	for _, b := range bs {
		if _, why := servedAt(b, now); why == "" {
			served++
		}
	}
	if served > MaxIndexBundles {
		return nil, overCap(MaxIndexBundles, "bundles")
	}
	for _, b := range bs {
		exp, why := servedAt(b, now)
		switch why {
		case "":
		case whyUnreadableExpiry:
			s.log.Warn("bundle left out of the mirror: unreadable expiry", "bundle_id", b.BundleID)
			continue
		default:
			s.log.Info("bundle left out of the mirror: it fails closed in the store", "bundle_id", b.BundleID, "reason", why)
			continue
		}
		key := bundleKey(b)
		var bf *bundleFile
		if old != nil && old.bundles[b.BundleID] != nil && old.bundles[b.BundleID].key == key && b.ManifestSHA256 != "" {
			bf = old.bundles[b.BundleID]
		} else if bf, err = s.export(src, b.BundleID, key, old); err != nil {
			s.log.Warn("bundle left out of the mirror", "bundle_id", b.BundleID, "err", err)
			continue
		}
		snap.bundles[b.BundleID] = bf
		if !exp.IsZero() {
			snap.expires[b.BundleID] = exp
		}
		ix.Bundles = append(ix.Bundles, IndexEntry{BundleID: b.BundleID, Version: b.Version, ExpiresAt: b.ExpiresAt,
			Size: bf.size, SHA256: bf.sha256, Href: BundlesPrefix + b.BundleID})
	}
	cat, err := src.Catalog()
	if err != nil {
		return nil, err
	}
	for _, name := range cat.Names {
		for _, e := range cat.ByName[name] {
			if snap.bundles[e.BundleID] == nil {
				continue // its bundle is not served: neither are its files
			}
			ic, err := s.addCapability(src, snap, e)
			if err != nil {
				s.log.Warn("capability left out of the mirror", "id", e.Descriptor.ID().String(), "err", err)
				continue
			}
			ix.Capabilities = append(ix.Capabilities, ic)
		}
	}
	if ix.Statements, err = addStatements(src, snap); err != nil {
		return nil, err
	}
	var dropped int
	if ix.Heartbeats, dropped, err = addHeartbeats(src, snap); err != nil {
		return nil, err
	}
	if dropped > 0 {
		s.log.Warn("heartbeats left out of the mirror index: more than the index may list", "dropped", dropped, "listed", len(ix.Heartbeats))
	}
	if len(ix.Capabilities) > MaxIndexCapabilities {
		return nil, overCap(MaxIndexCapabilities, "capability versions")
	}
	body, err := json.Marshal(ix)
	if err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot encode the index").WithCause(err)
	}
	if int64(len(body)) > s.opts.MaxIndexBytes {
		return nil, amp.Named(0, ErrMisconfigured, "mirror: the index is larger than limits.max_index_bytes")
	}
	snap.files[IndexPath] = newMemFile(append(body, '\n'), "application/json")
	snap.setValidUntil()
	caps := s.caps
	caps.Generation = snap.gen
	wk, err := json.Marshal(caps)
	if err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot encode the capabilities document").WithCause(err)
	}
	snap.files[WellKnownPath] = newMemFile(append(wk, '\n'), "application/json")
	return snap, nil
}

// setValidUntil sets validUntil to the earliest of expires.
func (snap *snapshot) setValidUntil() {
	snap.validUntil = time.Time{}
	for _, exp := range snap.expires {
		if snap.validUntil.IsZero() || exp.Before(snap.validUntil) {
			snap.validUntil = exp
		}
	}
}

// current returns the snapshot to serve now (nil: none). Once a bundle
// the current snapshot serves has expired, by Options.Now, the snapshot is
// first replaced by one without that bundle, its capabilities' files and
// their index entries (trim): so a request never gets an expired bundle,
// whether or not a refresh could read the store since. Trimming works in
// memory only; a refresh that read the store meanwhile wins.
func (s *Server) current() *snapshot {
	snap := s.cur.Load()
	if snap == nil || !snap.expiredAt(s.opts.Now()) {
		return snap
	}
	s.trimMu.Lock()
	defer s.trimMu.Unlock()
	for range maxBuildTries {
		snap = s.cur.Load()
		now := s.opts.Now()
		if snap == nil || !snap.expiredAt(now) {
			return snap
		}
		next, err := snap.trim(now)
		if err != nil {
			s.log.Error("mirror snapshot cannot leave out its expired bundles: nothing is served", "err", err)
			return nil
		}
		if s.cur.CompareAndSwap(snap, next) {
			s.log.Info("mirror snapshot: expired bundles left out", "generation", next.gen, "bundles", len(next.bundles))
			return next
		}
	}
	return nil // refreshes keep replacing it: fail closed for this request
}

// trim returns snap without the bundles expired at now, the files of
// their capabilities, and their entries in the index.
func (snap *snapshot) trim(now time.Time) (*snapshot, error) {
	gone := map[string]bool{}
	for id, exp := range snap.expires {
		if !now.Before(exp) {
			gone[id] = true
		}
	}
	return snap.without(gone)
}

// bundleKey names an installed bundle file: its bundle_id, version and
// the SHA-256 of its stored signed manifest, which names every artifact
// by its hash, so that a bundle file of a snapshot with the same key is
// the one the store holds. The import time alone did not: a copy of the
// same release replacing the installed one (BUNDLE-8, TRUST-20) within
// the second of its import kept the key, and the old file stayed served
// (docs/SPEC-DECISIONS.md MIRROR-20). The import time stays in the key
// (the same file imported again is exported again, a harmless cost). A
// Source that does not report the hash (an older agent's admin socket)
// gives a key that vouches for no file: build reuses no file of such a
// bundle, exporting it again, and a failed refresh leaves it out
// (refusedBy). The bundles are read before the files are exported, so a
// file exported while a live store replaced its bundle carries the key
// of what it replaced, never of a later state: the next refresh exports
// it again.
func bundleKey(b resolver.Bundle) string {
	return b.BundleID + "\x00" + strconv.FormatUint(b.Version, 10) + "\x00" + b.ManifestSHA256 + "\x00" + b.ImportedAt
}

// refusedBy returns the bundle_ids of the bundles snap serves that the
// store, whose bundles are bs, no longer uses as served: removed,
// replaced by another version or another file (bundleKey), or failing
// closed there (revoked, stale, expired). A bundle reported without its
// manifest hash (an older agent's admin socket) is among them: its key,
// import time to the second, does not show a copy of the same release
// replacing it within that second, so an unchanged key vouches for its
// file no more than build reuses it (docs/SPEC-DECISIONS.md MIRROR-20).
func (snap *snapshot) refusedBy(bs []resolver.Bundle) map[string]bool {
	uses := make(map[string]string, len(bs)) // bundle_id -> key of the bundle the store uses
	for _, b := range bs {
		if b.FailsClosed() == "" && b.ManifestSHA256 != "" {
			uses[b.BundleID] = bundleKey(b)
		}
	}
	gone := map[string]bool{}
	for id, bf := range snap.bundles {
		if k, ok := uses[id]; !ok || k != bf.key {
			gone[id] = true
		}
	}
	return gone
}

// leaveOutRefused is what a refresh that read the store's bundles bs,
// then failed (a cap, a read error), does to the snapshot still served:
// every bundle the store no longer uses as served is left out of it
// (refusedBy), with its capabilities' files and index entries, as an
// expired one is (trim), and its spool file is removed; the rest stays
// served at the snapshot's generation (MIRROR-10). Should that fail,
// nothing is served.
func (s *Server) leaveOutRefused(bs []resolver.Bundle) {
	s.trimMu.Lock()
	defer s.trimMu.Unlock()
	snap := s.cur.Load()
	if snap == nil {
		return
	}
	gone := snap.refusedBy(bs)
	if len(gone) == 0 {
		return
	}
	next, err := snap.without(gone)
	if err != nil {
		s.log.Error("mirror snapshot cannot leave out the bundles its store now refuses: nothing is served", "err", err)
		s.cur.Store(nil)
		return
	}
	s.cur.Store(next)
	s.prune(next)
	s.log.Warn("mirror snapshot: bundles the store no longer uses left out; no newer snapshot could be taken",
		"generation", next.gen, "left_out", len(gone), "bundles", len(next.bundles))
}

// without returns snap without the bundles gone names, the files of their
// capabilities, and their entries in the index.
func (snap *snapshot) without(gone map[string]bool) (*snapshot, error) {
	next := &snapshot{gen: snap.gen, files: make(map[string]*memFile, len(snap.files)), bundles: map[string]*bundleFile{},
		expires: map[string]time.Time{}, trimmed: true}
	for id, exp := range snap.expires {
		if !gone[id] {
			next.expires[id] = exp
		}
	}
	next.setValidUntil()
	for id, b := range snap.bundles {
		if !gone[id] {
			next.bundles[id] = b
		}
	}
	for p, f := range snap.files {
		if !gone[f.bundle] {
			next.files[p] = f
		}
	}
	var ix Index
	if err := json.Unmarshal(snap.files[IndexPath].body, &ix); err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot read the index back").WithCause(err)
	}
	ix.Bundles = slices.DeleteFunc(ix.Bundles, func(e IndexEntry) bool { return gone[e.BundleID] })
	ix.Capabilities = slices.DeleteFunc(ix.Capabilities, func(c IndexCap) bool { return gone[c.BundleID] })
	body, err := json.Marshal(ix)
	if err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot encode the index").WithCause(err)
	}
	next.files[IndexPath] = newMemFile(append(body, '\n'), "application/json")
	return next, nil
}

// overCap is the refusal of a snapshot whose index a syncing store would
// refuse (DecodeIndex): the previous snapshot stays served, and the
// refresh error names the cap.
func overCap(n int, what string) error {
	return amp.Named(0, ErrMisconfigured, "mirror: the store holds more than %d %s, more than a syncing store accepts in one index", n, what)
}

// StatementSource is a Source that also lists the signed trust and
// revocation statements its store applied, in order (a *resolver.Store
// does).
type StatementSource interface {
	Statements() ([]resolver.Statement, error)
}

// addStatements serves the store's applied statements, in application
// order, each at its hash. A store that applied more than
// MaxIndexStatements (more than a syncing store accepts in one index) is
// refused with overCap: none of its statements may be left out.
// A Source without a Statements method (a StatementSource) serves none;
// an agent too old to list them through its admin socket (unsupported)
// too.
func addStatements(src Source, snap *snapshot) ([]IndexStatement, error) {
	out := []IndexStatement{}
	ss, ok := src.(StatementSource)
	if !ok {
		return out, nil
	}
	sts, err := ss.Statements()
	if amp.NameOf(err) == resolver.ErrUnsupported {
		return out, nil // an agent too old to list them through its admin socket
	}
	if err != nil {
		return nil, err
	}
	if len(sts) > MaxIndexStatements {
		// Every statement must reach a syncing site: leaving out the
		// newest loses the latest revocation, the oldest a new site's
		// first ones (MIRROR-8).
		return nil, overCap(MaxIndexStatements, "applied statements")
	}
	for _, st := range sts {
		h := snap.addStatementFile(st.Data, st.ContentType, st.SHA256)
		out = append(out, IndexStatement{ContentType: st.ContentType, Size: int64(len(st.Data)), SHA256: h, Href: StatementsPrefix + h})
	}
	return out, nil
}

// addStatementFile serves data, a signed statement file of content type
// ctype and SHA-256 sum, at its hash (StatementsPrefix + hex), and returns
// that hex.
func (snap *snapshot) addStatementFile(data []byte, ctype string, sum []byte) string {
	h := hex.EncodeToString(sum)
	snap.files[StatementsPrefix+h] = &memFile{body: data, ctype: ctype, etag: etagOf(capability.HashSHA256, sum)}
	return h
}

// HeartbeatSource is a Source that also lists the heartbeats its store
// keeps, one per bundle line (a *resolver.Store does).
type HeartbeatSource interface {
	Heartbeats() ([]resolver.KeptHeartbeat, error)
}

// addHeartbeats serves the heartbeats the store keeps that still count
// there (FORMAT.md §23: a heartbeat whose signers the store no longer
// trusts would be refused by every host that trusts as it does) and whose
// bytes it has, each at its hash: first those of the lines whose bundle
// this snapshot serves, then the others, each group by bundle_id, at most
// MaxIndexHeartbeats in all (a syncing store refuses a longer index). It
// returns how many it left out for the cap: a key trusted for a narrow
// scope, signing heartbeats of made-up lines, could otherwise push the
// served lines' heartbeats out of the index. A Source without a
// Heartbeats method (a HeartbeatSource) serves none; an agent too old to
// list them through its admin socket (unsupported) too.
func addHeartbeats(src Source, snap *snapshot) ([]IndexHeartbeat, int, error) {
	out := []IndexHeartbeat{}
	hs, ok := src.(HeartbeatSource)
	if !ok {
		return out, 0, nil
	}
	kept, err := hs.Heartbeats()
	if amp.NameOf(err) == resolver.ErrUnsupported {
		return out, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var served, others []resolver.KeptHeartbeat
	for _, h := range kept {
		switch {
		case !h.Counts || h.Data == nil || len(h.Data) > bundle.MaxHeartbeatSize:
		case snap.bundles[h.BundleID] != nil:
			served = append(served, h)
		default:
			others = append(others, h)
		}
	}
	all := append(served, others...)
	dropped := max(0, len(all)-MaxIndexHeartbeats)
	for _, h := range all[:len(all)-dropped] {
		sum := snap.addStatementFile(h.Data, bundle.MediaTypeHeartbeat, h.SHA256)
		out = append(out, IndexHeartbeat{BundleID: h.BundleID, Version: h.Version, CreatedAt: h.CreatedAt,
			Size: int64(len(h.Data)), SHA256: sum, Href: StatementsPrefix + sum})
	}
	return out, dropped, nil
}

// addCapability adds the four files of one capability version.
func (s *Server) addCapability(src Source, snap *snapshot, e resolver.Entry) (IndexCap, error) {
	d := e.Descriptor
	id := d.ID()
	cb, err := d.Encode()
	if err != nil {
		return IndexCap{}, err
	}
	js, err := d.MarshalJSON()
	if err != nil {
		return IndexCap{}, err
	}
	in, err := src.Resolve(d.InputSchema)
	if err != nil {
		return IndexCap{}, err
	}
	out, err := src.Resolve(d.OutputSchema)
	if err != nil {
		return IndexCap{}, err
	}
	cbf := newMemFile(cb, "application/cbor")
	cbf.bundle = e.BundleID
	jsf := newMemFile(append(js, '\n'), "application/json")
	jsf.bundle = e.BundleID
	snap.files[CapabilityPath(id, FileDescriptorCBOR)] = cbf
	snap.files[CapabilityPath(id, FileDescriptorJSON)] = jsf
	ic := IndexCap{ID: id.String(), BundleID: e.BundleID,
		Descriptor: IndexFile{Href: CapabilityPath(id, FileDescriptorCBOR), HashAlg: capability.HashSHA256, Hash: cbf.etag[len(`"sha-256:`) : len(cbf.etag)-1]}}
	for _, x := range []struct {
		file string
		ref  capability.SchemaRef
		data []byte
		dst  *IndexFile
	}{{FileInputSchema, d.InputSchema, in, &ic.InputSchema}, {FileOutputSchema, d.OutputSchema, out, &ic.OutputSchema}} {
		// Served as JSON Schema whatever media_type the publisher gave
		// the ref (MIRROR-6): a label such as text/html would make the
		// mirror serve the publisher's bytes as a page on its origin.
		// The schema's own hash (verified by Resolve) is its ETag.
		p := CapabilityPath(id, x.file)
		snap.files[p] = &memFile{body: x.data, ctype: bundle.MediaTypeSchema, etag: etagOf(x.ref.HashAlg, x.ref.Hash), bundle: e.BundleID}
		*x.dst = IndexFile{Href: p, HashAlg: x.ref.HashAlg, Hash: hex.EncodeToString(x.ref.Hash)}
	}
	return ic, nil
}

// export writes bundle id into the spool folder as <sha256>.bundle. When
// the snapshot old serves the same bytes of id from a file still at that
// name, that file is kept (the copy just written is dropped): renamed
// over it, the new file would not be the one old's requests may serve
// (openExported), and the bundle would be answered 500 until the new
// snapshot is stored (MIRROR-25, amended).
func (s *Server) export(src Source, id, key string, old *snapshot) (*bundleFile, error) {
	f, err := os.CreateTemp(s.opts.SpoolDir, exportTempPattern)
	if err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot write to the spool folder").WithCause(err)
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	lw := &limitWriter{w: io.MultiWriter(f, h), left: s.opts.MaxBundleBytes}
	err = src.Export(id, lw)
	fi, serr := f.Stat()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil && serr != nil {
		err = amp.Named(0, resolver.ErrStoreIO, "mirror: cannot write to the spool folder").WithCause(serr)
	}
	if err != nil {
		return nil, err
	}
	sum := h.Sum(nil)
	name := filepath.Join(s.opts.SpoolDir, hex.EncodeToString(sum)+".bundle")
	if prev := old.bundleOf(id); prev != nil && prev.path == name && prev.file != nil {
		if st, err := os.Lstat(name); err == nil && os.SameFile(st, prev.file) {
			return &bundleFile{key: key, path: name, size: prev.size, sha256: prev.sha256, etag: prev.etag, file: prev.file}, nil
		}
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "mirror: cannot write to the spool folder").WithCause(err)
	}
	size := s.opts.MaxBundleBytes - lw.left
	return &bundleFile{key: key, path: name, size: size, sha256: hex.EncodeToString(sum), etag: etagOf(capability.HashSHA256, sum), file: fi}, nil
}

// exportTempPattern names the temporary files export writes a bundle
// file through (os.CreateTemp), in the spool folder.
const exportTempPattern = ".export-*.tmp"

// prune removes spool files that the current snapshot does not serve. A
// request still reading one keeps its open file. It also removes the
// temporary files of exports (exportTempPattern): prune runs under the
// refresh, as every export of the server does, so none is in flight,
// and one there was left by a mirror killed during an export, up to
// MaxBundleBytes each, which nothing else removes
// (docs/SPEC-DECISIONS.md MIRROR-30).
func (s *Server) prune(snap *snapshot) {
	keep := map[string]bool{}
	for _, b := range snap.bundles {
		keep[b.path] = true
	}
	names, _ := filepath.Glob(filepath.Join(s.opts.SpoolDir, "*.bundle"))
	for _, n := range names {
		if !keep[n] {
			os.Remove(n)
		}
	}
	s.removeExportTemps()
}

// removeExportTemps removes the temporary files of exports
// (exportTempPattern) from the spool folder; its callers run when no
// export of the server is in flight (New, before the first refresh;
// prune, under the refresh), so each one there was left by a mirror
// killed during an export (MIRROR-30). New's call clears them even when
// the store stays past a cap and no snapshot is stored (MIRROR-31).
func (s *Server) removeExportTemps() {
	temps, _ := filepath.Glob(filepath.Join(s.opts.SpoolDir, exportTempPattern))
	for _, n := range temps {
		os.Remove(n)
	}
}

// limitWriter fails once more than left bytes are written.
type limitWriter struct {
	w    io.Writer
	left int64
}

var errTooLarge = errors.New("bundle is larger than limits.max_bundle_bytes")

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errTooLarge
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
