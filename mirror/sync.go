package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/resolver"
)

// Target is the store a sync imports into: a *resolver.Store opened
// read-write, or the admin socket client of an agent holding it.
type Target interface {
	Bundles() ([]resolver.Bundle, error)
	Import(ctx context.Context, r io.Reader, opts resolver.ImportOptions) (*resolver.ImportResult, error)
}

// Error names of a sync (docs/CLI.md, "ampbundle sync").
const (
	ErrMirrorUnreachable amp.ErrName = "mirror_unreachable" // cannot connect, or an HTTP failure
	ErrMirrorRefused     amp.ErrName = "mirror_refused"     // the mirror answered with an error status
	ErrBadMirror         amp.ErrName = "bad_mirror"         // its capabilities document fails Check or lacks bundle-mirror
	ErrOlderOffered      amp.ErrName = "older_offered"      // a version not newer than the one installed
	ErrIndexMismatch     amp.ErrName = "index_mismatch"     // the file is not what the index says (id, version, size, hash)
	ErrIncomplete        amp.ErrName = "download_incomplete"
	ErrTooLarge          amp.ErrName = "limit_exceeded"
	// ErrTooManyRefusals: the store refused MaxStoreRefusals files of
	// this kind (and, for files signed as it requires, of these signers)
	// in this sync already; the rest are not offered to it.
	ErrTooManyRefusals amp.ErrName = "too_many_refusals"
)

// MaxStoreRefusals bounds how many files of one kind (statements,
// bundles, heartbeats) one sync offers to the store that it is bound to
// refuse for their signatures: files the keys it trusts for their scope
// do not sign as its own checks require (the scope, revocations of keys,
// thresholds). Each refusal is an audit entry, and a mirror could list
// 10,000 statements or bundles signed by keys of its own, or by a key
// trusted only elsewhere, on every run. Past it, such files are refused
// without being offered (too_many_refusals, no audit entry). A file signed
// as the store requires is offered past it, so the cap never keeps back
// one the store would take for its signatures; but once the store refused
// MaxStoreRefusals files of its kind signed by the same keys in one sync
// (out of order, over their share, a revoked version), no more of those
// are offered in that sync: the next one skips those the store refused
// (RefusalTarget) and so reaches the ones after them. Refusals of one
// authority's files never keep back another's, nor another kind
// (docs/SPEC-DECISIONS.md MIRROR-12, MIRROR-13). Where sync holds the
// store's trust, a bundle file not signed as the store requires is
// refused at its head and not offered at all, so not audited
// (MIRROR-23): the cap counts bundle files only where it does not, or
// where a file does not begin with the head judged.
const MaxStoreRefusals = 64

// SyncOptions configures Sync.
type SyncOptions struct {
	// URL is the mirror's base URL (http:// or https://, no query). Sync
	// dials nothing else: redirects are refused, no proxy is used.
	URL string
	// SpoolDir keeps partial downloads between runs, one file per offered
	// bundle file, named by bundle_id and SHA-256. Required.
	SpoolDir string
	// DryRun only reports what would be downloaded and imported.
	DryRun bool
	// MaxBundleBytes bounds one bundle file. Default 1 GiB.
	MaxBundleBytes int64
	// MaxIndexBytes bounds the index. Default 16 MiB.
	MaxIndexBytes int64
	// MaxSpoolBytes bounds the partial files kept in SpoolDir together: a
	// download that would take the spool past it is refused
	// (limit_exceeded) before it starts, so a mirror offering many large
	// files cut off mid-way cannot fill the disk. Default the larger of
	// 4 GiB and twice MaxBundleBytes.
	MaxSpoolBytes int64
	// TLS configures https (a private CA, for example); nil uses the
	// system roots.
	TLS *tls.Config
	// Client replaces the HTTP client (tests); it must refuse redirects
	// and inflate nothing (http.Transport.DisableCompression).
	Client *http.Client
	// StallTimeout bounds how long an answer may stall: when fewer than
	// StallMinBytes bytes of a body arrive within StallTimeout, the request
	// is abandoned (a bundle file cut this way resumes on the next run).
	// Default 30 s.
	StallTimeout time.Duration
	// MinDataRate is the slowest an answer body may arrive on average, in
	// bytes per second: a body of n bytes (its Content-Length, or when
	// absent the most that is accepted for what was asked) is abandoned
	// when it has not arrived admission.DataDeadline(n, MinDataRate,
	// StallTimeout, 0) after its headers, StallTimeout + n / MinDataRate,
	// however steadily it trickles. So a mirror holds a sync no longer
	// than the files it lists take at this rate. Default
	// admission.MinDataRate (128 KiB/s, 1 Mbit/s).
	MinDataRate int64
	// Now is the clock a listed bundle's expires_at is judged by before
	// any download (the store judges the file by its own; on one host
	// they agree). Default time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// Progress, when set, is called with the bytes of the current bundle
	// file received so far and its size.
	Progress func(bundleID string, done, total int64)
}

// Outcome of one offered bundle.
type Outcome string

// Outcomes.
const (
	OutcomeImported Outcome = "imported"   // verified and imported
	OutcomeCurrent  Outcome = "up_to_date" // the same version is installed
	OutcomePlanned  Outcome = "would_import"
	OutcomeRefused  Outcome = "refused" // not imported; Error says why; the store is unchanged
)

// SyncItem is what happened to one bundle the mirror offers.
type SyncItem struct {
	BundleID        string  `json:"bundle_id"`
	Version         uint64  `json:"version"`
	PreviousVersion uint64  `json:"previous_version,omitempty"`
	Outcome         Outcome `json:"outcome"`
	Resumed         int64   `json:"resumed_from,omitempty"` // bytes kept from an interrupted download
	Error           string  `json:"error,omitempty"`        // error name when refused
	Message         string  `json:"message,omitempty"`
}

// SyncReport is the result of a sync.
type SyncReport struct {
	URL        string     `json:"url"`
	Generation uint64     `json:"mirror_generation"`
	DryRun     bool       `json:"dry_run"`
	Items      []SyncItem `json:"bundles"`
	// Statements are the signed trust and revocation statements the
	// mirror lists, applied before the bundles (a revocation reaches the
	// bundles of the same run).
	Statements []StatementItem `json:"statements"`
	// Heartbeats are the heartbeat statements the mirror lists, applied
	// after the bundles (each is judged against the bundle of its line
	// installed by then).
	Heartbeats []HeartbeatItem `json:"heartbeats"`
}

// Count returns how many items have outcome o.
func (r *SyncReport) Count(o Outcome) int {
	n := 0
	for _, it := range r.Items {
		if it.Outcome == o {
			n++
		}
	}
	for _, it := range r.Statements {
		if it.Outcome == o {
			n++
		}
	}
	for _, it := range r.Heartbeats {
		if it.Outcome == o {
			n++
		}
	}
	return n
}

// Sync pulls from the mirror at opts.URL every bundle it offers that is
// newer than what t has installed, or of the installed version when that
// fails closed as revoked (replaceable: a copy that stands replaces it,
// docs/SPEC-DECISIONS.md MIRROR-22), and imports each through t.Import, which
// verifies it exactly as 'ampbundle import' does (signature, trust scope,
// every artifact's size and hash, rollback) and installs it atomically.
// Nothing the mirror says is trusted: its capabilities document is checked,
// its index only selects what to download, each file must match the index
// (bundle_id, version, size, SHA-256) before it is even offered to Import,
// and an older version is refused before any download.
//
// An error is returned when the sync could not run at all (the mirror is
// unreachable or malformed, the store fails); a refused statement, bundle
// or heartbeat is an item of the report, and the others are still synced,
// except that after a download the mirror failed (unreachable, abandoned,
// cut off, an error status, a file other than the one listed) the rest of
// that list is not tried in this run (refused, mirror_unreachable): one
// stall a list, not one per file.
// At most MaxStoreRefusals files no trusted key signed are offered to t.
//
// One sync at a time writes a spool folder: another, in this process or
// another, is refused store_in_use while it runs (the lock of the system
// on a file in it, lockSpool). Sync runs with a Syncer of its own: on
// Solaris and AIX, whose only file locks (fcntl) are held by the process,
// only syncs run through one Syncer are kept apart within a process
// (docs/SPEC-DECISIONS.md MIRROR-24).
func Sync(ctx context.Context, t Target, opts SyncOptions) (*SyncReport, error) {
	return new(Syncer).Sync(ctx, t, opts)
}

// Sync syncs as the package's Sync does; besides, a sync of a spool
// folder that another sync through s holds is refused store_in_use
// before it opens anything in it, on every system (docs/SPEC-DECISIONS.md
// MIRROR-24).
func (s *Syncer) Sync(ctx context.Context, t Target, opts SyncOptions) (*SyncReport, error) {
	c, err := newSyncClient(opts, s.hooks)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		unlock, err := s.lockSpool(opts.SpoolDir)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	wk, err := c.getSmall(ctx, WellKnownPath, 64<<10)
	if err != nil {
		return nil, err
	}
	caps, err := DecodeCapabilities(wk)
	if err != nil {
		return nil, amp.Named(0, ErrBadMirror, "the mirror's capabilities document is not acceptable").WithCause(err)
	}
	if !containsStr(caps.Profiles, ProfileMirror) {
		return nil, amp.Named(0, ErrBadMirror, "the server does not declare the %s profile", ProfileMirror)
	}
	raw, err := c.getSmall(ctx, IndexPath, min(c.opts.MaxIndexBytes, caps.Limits.MaxIndexBytes))
	if err != nil {
		return nil, err
	}
	ix, err := decodeIndex(raw, false) // the capabilities are not used: not held
	if err != nil {
		return nil, err
	}
	rep := &SyncReport{URL: c.base.String(), Generation: ix.Generation, DryRun: opts.DryRun, Items: []SyncItem{}, Heartbeats: []HeartbeatItem{}}
	if !opts.DryRun { // a dry run offers nothing to the store
		c.refusals, _ = t.(RefusalTarget)
		if err := c.loadTrust(t); err != nil {
			return nil, err
		}
		// Failed bundles and heartbeats of the run before are tried
		// last, failed statements in their place (MIRROR-29); what this run
		// fails or refuses unoffered is noted however it ends (MIRROR-23).
		c.failed = &failedFiles{prev: c.readLastFailed(), tried: map[string]bool{}}
		defer c.noteFailed()
		defer c.judged.save(c)
	}
	if rep.Statements, err = c.syncStatements(ctx, t, ix, opts.DryRun); err != nil {
		return rep, err
	}
	local, err := t.Bundles()
	if err != nil {
		return nil, err
	}
	have := map[string]resolver.Bundle{}
	for _, b := range local {
		have[b.BundleID] = b
	}
	keep := map[string]bool{}
	bundles := failedLast(c, ix.Bundles, func(e IndexEntry) string { return e.BundleID })
	// failing names the download the mirror failed (unreachable, too
	// slow, cut off, an error status, not the file listed: mirrorFailed,
	// or a head that is no bundle file's: headVerdict):
	// the rest of the bundle list is not tried in this run, so that a
	// mirror stalling each of 10,000 files costs one stall, not days; the
	// next run tries them, the failed ones last.
	failing := ""
	for _, e := range bundles {
		it := SyncItem{BundleID: e.BundleID, Version: e.Version}
		b, installed := have[e.BundleID]
		if installed {
			it.PreviousVersion = b.Version
		}
		same := installed && b.Version == e.Version
		switch {
		case same && b.VersionRevoked:
			// No copy of a revoked version can stand: nothing to fetch.
			refuse(&it, amp.Named(0, resolver.ErrRevoked, "version %d itself is revoked (a revocation statement this store applied): no copy of it is downloaded; a newer version replaces it", e.Version))
		case same && !replaceable(b):
			it.Outcome = OutcomeCurrent
		case installed && !same && (e.Version < b.Version || e.Version <= b.Highest):
			refuse(&it, amp.Named(0, ErrOlderOffered, "the mirror offers version %d, not newer than version %d installed (highest ever %d): ignored", e.Version, b.Version, b.Highest))
		case expiredByIndex(e, c.opts.Now()):
			refuse(&it, amp.Named(0, bundle.ErrExpired, "the index says version %d expired: not downloaded (the store refuses an expired bundle)", e.Version))
		case e.Size > c.opts.MaxBundleBytes:
			refuse(&it, amp.Named(0, ErrTooLarge, "the mirror offers a file of %d bytes, over the limit of %d", e.Size, c.opts.MaxBundleBytes))
		case opts.DryRun:
			it.Outcome = OutcomePlanned
		case failing != "":
			keep[partName(e)] = true // its partial file stays for the next run
			refuse(&it, notTried(failing))
		default:
			if _, err := c.refusedBefore(listedSum(e.SHA256)); err != nil {
				refuse(&it, err)
				break
			}
			keep[partName(e)] = true
			if c.failed.fetched(c.fetchAndImport(ctx, t, e, &it, same), e.BundleID) {
				failing = e.BundleID
			}
		}
		rep.Items = append(rep.Items, it)
		if err := interrupted(ctx); err != nil {
			return rep, err
		}
	}
	if !opts.DryRun {
		c.pruneSpool(keep)
	}
	if rep.Heartbeats, err = c.syncHeartbeats(ctx, t, ix, opts.DryRun); err != nil {
		return rep, err
	}
	return rep, nil
}

// replaceable reports whether a listed file of the installed version of
// b is fetched and offered to the store rather than reported up_to_date:
// when b fails closed as revoked (its counting signers revoked, or trust
// rm --fail-closed), a copy of the same release that the keys trusted now
// sign replaces it (BUNDLE-8, amended), so the capability stands again
// without waiting for a new version. Not when b has expired: the copy
// carries the same signed expiry and the store refuses it (expired).
// A stale install that is not revoked is not either (the store refuses its
// copy, bundle_stale; a heartbeat mends it); a revoked one that is stale
// is, and the heartbeats applied after the bundles may then mend it. What
// the store refused is not downloaded again while its refusal stands
// (refusedBefore): docs/SPEC-DECISIONS.md MIRROR-22.
func replaceable(b resolver.Bundle) bool {
	return b.Revoked != "" && !b.Expired
}

// expiredByIndex reports whether the index says e expired before now.
// The file must say the same expiry (the store refuses an expired bundle
// by its manifest's), so a mirror that says so of a bundle that has not
// expired only withholds it, as a mirror not listing it does.
func expiredByIndex(e IndexEntry, now time.Time) bool {
	if e.ExpiresAt == "" {
		return false
	}
	exp, err := time.Parse(time.RFC3339, e.ExpiresAt)
	return err == nil && !now.Before(exp)
}

func refuse(it *SyncItem, err error) { it.Outcome, it.Error, it.Message = refusal(err) }

// refusal is the outcome, error name and message of an item refused with
// err.
func refusal(err error) (Outcome, string, string) {
	name := string(amp.NameOf(err))
	if name == "" {
		name = "refused"
	}
	return OutcomeRefused, name, amp.AsError(err).Message
}

// interrupted is the error of a sync whose ctx ended between two items.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return amp.Named(0, ErrMirrorUnreachable, "sync interrupted").WithCause(ctx.Err())
	}
	return nil
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

type syncClient struct {
	opts  SyncOptions
	hooks syncHooks
	base  *url.URL
	http  *http.Client
	log   *slog.Logger
	// trusted is the store's trust (its keys with their scopes and
	// revocations, and its thresholds), to tell whether a file is signed
	// as the store requires (vouched); nil when the target does not list
	// it: refusals are then counted after the fact.
	trusted *bundle.Policy
	// trustKey names trusted (trustDigest): a file refused against it
	// without being offered is remembered under it (offerToStore,
	// localRefusals).
	trustKey string
	// unvouched counts, per kind, the files offered to the store that
	// were not signed as it requires; vouchedRefused, per kind and signer
	// keys (signerShare), those signed as it requires that it refused all
	// the same (MaxStoreRefusals each).
	unvouched, vouchedRefused map[string]int
	// gapFrom is, per trust statement scope, the lowest sequence the
	// store refused as rotation_gap in this sync since it last applied a
	// statement: a later one of the scope is refused the same way, and
	// is not offered (noteGap).
	gapFrom map[string]gapJudged
	// refusals is the target when it says which files its store refused
	// at its current generation; nil when it does not (an older agent).
	refusals RefusalTarget
	// failed is what the mirror failed in the run before, and in this
	// one (nil in a dry run): the next run tries those bundles and
	// heartbeats last, and passes over those statements when the mirror
	// serves them otherwise again (fetchedInPlace).
	failed *failedFiles
	// judged is what this sync knows of files refused at a store
	// generation without being offered (syncrefusals.go).
	judged localRefusals
	// largeHeadsRefused is the bytes past bundleHeadBytes of the bundle
	// heads judgeHead refused in this run (maxRefusedLargeHeadBytes).
	largeHeadsRefused int64
	// slack is what is left of the run's slack (runSlackStalls): the
	// time answers may still take past answerAllowance and their bytes
	// at MinDataRate (charge).
	slack time.Duration
}

// TrustLister is a Target that lists the keys its store trusts and its
// thresholds (a *resolver.Store does): sync then checks each file's
// signatures as the store will before offering it, and offers at most
// MaxStoreRefusals of each kind that fail.
type TrustLister interface {
	TrustList() ([]resolver.TrustKey, error)
	TrustThresholds() (map[string]int, error)
}

// loadTrust reads t's trust (again after a trust or revocation statement
// changed it in this run).
func (c *syncClient) loadTrust(t Target) error {
	tl, ok := t.(TrustLister)
	if !ok {
		return nil
	}
	return c.readTrust(tl)
}

// readTrust sets trusted from tl.
func (c *syncClient) readTrust(tl TrustLister) error {
	keys, err := tl.TrustList()
	if err != nil {
		return err
	}
	th, err := tl.TrustThresholds()
	if amp.NameOf(err) == resolver.ErrUnsupported {
		th, err = nil, nil // an older agent: a threshold of 1 everywhere, laxer than the store
	}
	if err != nil {
		return err
	}
	p := &bundle.Policy{Thresholds: th}
	for _, k := range keys {
		p.Keys = append(p.Keys, bundle.TrustedKey{Name: k.Name, Key: k.Key, Scopes: k.Scopes, Except: k.Except})
	}
	c.trusted, c.trustKey = p, trustDigest(p)
	return nil
}

// The kinds of file sync offers its store, each capped on its own
// (offerToStore).
const (
	kindBundle    = "bundle"
	kindStatement = "statement"
	kindHeartbeat = "heartbeat"
)

// offerToStore reports whether a file of kind may be offered to the
// store. verify is the store's own check of its signatures (the functions
// the store calls, bundle.VerifyStatement or bundle.VerifyFor) and
// returns the keys it counted. A file it passes against the store's trust
// is offered while the store refused fewer than MaxStoreRefusals files of
// that kind signed by the same keys in this sync (share, the kind and the
// sorted signer keys: refusals of one authority's files never keep back
// another's, nor another kind: docs/SPEC-DECISIONS.md MIRROR-13); any
// other file while fewer than MaxStoreRefusals such files of its kind were
// offered in this sync, each counted. When not, it is the refusal to
// report. Without the store's trust, every file is offered while fewer
// than MaxStoreRefusals of its kind were refused (storeRefused).
//
// A file not signed as the store requires and not offered for the cap is
// remembered by its SHA-256, sum, at the generation the trust was read at
// (localRefusals): the next sync at that generation does not download it
// again, as it does not download one the store refused (RefusedAt), so a
// mirror listing thousands of files of a scope the host does not trust
// costs their downloads once, not every run (docs/SPEC-DECISIONS.md
// MIRROR-15).
func (c *syncClient) offerToStore(kind string, sum []byte, verify func(*bundle.Policy) ([]bundle.TrustedKey, error)) (share string, err error) {
	var verr error
	if c.trusted != nil {
		signers, err := verify(c.trusted)
		if err == nil {
			share = signerShare(kind, signers)
			if c.vouchedRefused[share] >= MaxStoreRefusals {
				return share, amp.Named(0, ErrTooManyRefusals, "the store refused %d files of this kind signed by the same keys in this sync already: not offered (each refusal is audited; the next sync skips those it refused and offers this one)", MaxStoreRefusals)
			}
			return share, nil
		}
		verr = err
	}
	if c.unvouched[kind] >= MaxStoreRefusals {
		if verr != nil {
			c.noteUnvouched(sum, verr)
		}
		return "", amp.Named(0, ErrTooManyRefusals, "not signed as the store requires, and %d such files of this kind were offered to the store in this sync already: not offered (each refusal is audited)", MaxStoreRefusals)
	}
	if c.trusted != nil {
		c.count(&c.unvouched, kind)
	}
	return "", nil
}

// noteUnvouched remembers the file sum, whose signatures the store's
// trust refused (verr) and which is not offered, as refused under that
// trust (localRefusals): the verdict depends on the file and the trust
// alone, so it holds while the trust does, whatever else moves the
// store's generation (docs/SPEC-DECISIONS.md MIRROR-15, MIRROR-24).
func (c *syncClient) noteUnvouched(sum []byte, verr error) {
	c.judged.noteTrusted(c, sum, verdictOf(verr))
}

// verdictOf is the error name a file is remembered as refused with when
// the store's trust refused its signatures (verr) before it was offered
// (localRefusals): verr's own, or too_many_refusals when it has none.
func verdictOf(verr error) amp.ErrName {
	if v := amp.NameOf(verr); amp.ValidErrName(string(v)) {
		return v
	}
	return ErrTooManyRefusals
}

// signerShare is the counter of refusals of files of kind signed by the
// keys signers (offerToStore): the kind and the sorted hex keys.
func signerShare(kind string, signers []bundle.TrustedKey) string {
	keys := make([]string, 0, len(signers))
	for _, k := range signers {
		keys = append(keys, hex.EncodeToString(k.Key))
	}
	slices.Sort(keys)
	return kind + " " + strings.Join(slices.Compact(keys), ",")
}

// count adds one to (*m)[k], making the map when needed.
func (c *syncClient) count(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

// storeRefused counts a refusal by the store (err; store failures are
// not refusals) of a file of kind offered signed as it requires (share,
// from offerToStore), or without knowing its trust (offerToStore counted
// the others).
func (c *syncClient) storeRefused(err error, kind, share string) {
	if name := amp.NameOf(err); name == "" || storeFailure(string(name)) {
		return
	}
	switch {
	case share != "":
		c.count(&c.vouchedRefused, share)
	case c.trusted == nil:
		c.count(&c.unvouched, kind)
	}
}

// mirrorFailed reports whether err is the mirror failing a download (not
// reached, too slow, cut off, or an error status) or serving a file other
// than the one its index lists (index_mismatch: other bytes, another
// line, no such file at all) or one altered after it was signed (a
// signature that does not verify, artifacts that contradict the signed
// manifest: no mirror serving what its store imported serves one): the
// rest of the list it was in is not tried in this run, so that a mirror
// serving junk for each listed file costs a sync one download a list, not
// MaxIndexBundles of MaxBundleBytes (docs/SPEC-DECISIONS.md MIRROR-15).
func mirrorFailed(errName string) bool {
	switch amp.ErrName(errName) {
	case ErrMirrorUnreachable, ErrIncomplete, ErrMirrorRefused, ErrIndexMismatch,
		bundle.ErrBadSignature, bundle.ErrHashMismatch, bundle.ErrSizeMismatch, bundle.ErrCountMismatch,
		bundle.ErrTruncated, bundle.ErrTrailingData:
		return true
	}
	return false
}

// listedRun walks the statements or the heartbeats a mirror lists, in
// order, as a sync does: an item is current when the store holds it,
// planned in a dry run, not tried once the mirror failed a download
// earlier in the run (so that a mirror stalling each download costs one
// stall a list), else fetched and applied.
type listedRun struct {
	c       *syncClient
	dryRun  bool
	failing string // the download the mirror failed, if any
	// unapplied is the store's failure (its error name) to apply the
	// statement failing names (fetchedInPlace): the rest is not tried
	// either.
	unapplied string
}

// decide is an item's outcome before any download, or its refusal; ""
// and nil: fetch it, then report how that ended with fetched.
func (r *listedRun) decide(held bool) (Outcome, error) {
	switch {
	case held:
		return OutcomeCurrent, nil
	case r.dryRun:
		return OutcomePlanned, nil
	case r.unapplied != "":
		return "", amp.Named(0, amp.ErrName(r.unapplied), "not tried: the store could not apply %s earlier in this run (%s); statements are applied in the order listed, so the next run starts from it", r.failing, r.unapplied)
	case r.failing != "":
		return "", notTried(r.failing)
	}
	return "", nil
}

// fetched notes the error name an item's fetch ended with: when the
// mirror failed the download of what, the rest of the list is not tried,
// and the next run tries it last (failedFiles, by its key).
func (r *listedRun) fetched(errName, what, key string) {
	if r.c.failed.fetched(mirrorFailed(errName), key) {
		r.failing = what
	}
}

// fetchedInPlace is fetched for a list tried in the index order, never
// reordered (the statements): the rest of the list is not tried in this
// run once the mirror failed the download of what, as fetched says,
// unless it served what, in this run and in the run before, as bytes
// other than those listed or altered after they were signed
// (servedOtherwise): one file the mirror serves wrong on every run (a
// damaged file, junk) is then passed over, so that it does not keep the
// rest of the list back for ever (MIRROR-16). A failure to deliver (no
// answer, cut off, too slow, an error status) always ends the list at
// what, and the next run starts from it again in its place: trying it
// after the statements listed behind it would have the store apply them
// first, and a statement that retires or revokes its signers, or raises
// the threshold, would have it refused for good. For the same reason a
// statement the store failed to apply (storeFailure: nothing judged) ends
// the list too (docs/SPEC-DECISIONS.md MIRROR-29).
func (r *listedRun) fetchedInPlace(errName, what, key string) {
	failed := mirrorFailed(errName)
	again := failed && servedOtherwise(errName) && r.c.failed.failedBefore(key)
	if r.c.failed.fetched(failed, key) && !again {
		r.failing = what
	}
	if storeFailure(errName) {
		r.failing, r.unapplied = what, errName
	}
}

// storeFailure reports whether errName is the store failing to judge a
// file (its I/O, its lock held by another, opened read-only), not a
// refusal of it.
func storeFailure(errName string) bool {
	switch amp.ErrName(errName) {
	case resolver.ErrStoreIO, resolver.ErrStoreInUse, resolver.ErrReadOnly:
		return true
	}
	return false
}

// servedOtherwise reports whether the mirror failed a download (errName,
// mirrorFailed) by what it served (other bytes than listed, or bytes
// altered after they were signed), not by failing to deliver it.
func servedOtherwise(errName string) bool {
	switch amp.ErrName(errName) {
	case ErrMirrorUnreachable, ErrIncomplete, ErrMirrorRefused:
		return false
	}
	return mirrorFailed(errName)
}

// getListed downloads the file the index lists at href, of size bytes (at
// most max) and SHA-256 sum; same is false when the bytes served are not
// those. An answer longer than size (said, or sent) is a file other than
// the one listed, index_mismatch, as a bundle file's is (download), so
// that it ends its list (mirrorFailed), not limit_exceeded, which does
// not (docs/SPEC-DECISIONS.md MIRROR-15, MIRROR-25).
func (c *syncClient) getListed(ctx context.Context, href string, size, max int64, sum []byte) (data []byte, same bool, err error) {
	data, err = c.getSmall(ctx, href, min(size, max))
	if amp.NameOf(err) == ErrTooLarge {
		return nil, false, amp.Named(0, ErrIndexMismatch, "the mirror sent more bytes than the index names for %s: not the file listed", href).WithCause(err)
	}
	if err != nil {
		return nil, false, err
	}
	got := sha256.Sum256(data)
	return data, int64(len(data)) == size && bytes.Equal(got[:], sum), nil
}

// notTried is the refusal of a file not downloaded because the mirror
// failed the download of failed earlier in the same list.
func notTried(failed string) error {
	return amp.Named(0, ErrMirrorUnreachable, "not tried: the mirror failed the download of %s earlier in this run (the next run tries again)", failed)
}

var errRedirect = errors.New("redirect refused")

func newSyncClient(opts SyncOptions, hooks syncHooks) (*syncClient, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, amp.Named(0, ErrMisconfigured, "the mirror url must be http:// or https://HOST[:PORT][/PATH], without user, query or fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if !opts.DryRun && opts.SpoolDir == "" {
		return nil, amp.Named(0, ErrMisconfigured, "sync: spool_dir is required")
	}
	limit.Default(&opts.MaxBundleBytes, DefaultMaxBundleBytes)
	limit.Default(&opts.MaxIndexBytes, DefaultMaxIndexBytes)
	limit.Default(&opts.MaxSpoolBytes, max(4<<30, 2*opts.MaxBundleBytes))
	limit.Default(&opts.StallTimeout, DefaultStallTimeout)
	limit.Default(&opts.MinDataRate, admission.MinDataRate)
	limit.Default(&hooks.headBudget, maxRefusedLargeHeadBytes)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &syncClient{opts: opts, hooks: hooks, base: u, http: opts.Client, log: opts.Logger, slack: runSlackStalls * opts.StallTimeout}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.http == nil {
		c.http = &http.Client{
			Transport: &http.Transport{
				Proxy:                  nil, // never through a proxy
				DialContext:            (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				TLSClientConfig:        opts.TLS,
				TLSHandshakeTimeout:    10 * time.Second,
				ResponseHeaderTimeout:  30 * time.Second,
				MaxIdleConnsPerHost:    2,
				MaxResponseHeaderBytes: 64 << 10,
				// No Accept-Encoding: gzip, so nothing is inflated: every
				// bound (a listed size, the minimum data rate, the stall
				// window) counts the bytes on the wire, and a gzip answer
				// is bytes other than the file listed
				// (docs/SPEC-DECISIONS.md MIRROR-27).
				DisableCompression: true,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
		}
	}
	return c, nil
}

func (c *syncClient) url(p string) string {
	u := *c.base
	u.Path = c.base.Path + p
	return u.String()
}

// do sends a GET for path p and returns the response when its status is
// one of ok; otherwise an error (the mirror's envelope code, when it sent
// one, is in the message). expect is the most the body may hold (what the
// caller accepts): with the Content-Length, when smaller, it sets the
// time the body has to arrive (bodyDeadline).
//
// The answer, from the request to its body's end, is cut off once it
// takes longer than its expect bytes at MinDataRate, answerAllowance and
// what is left of the run's slack; what it took past its bytes at the
// rate and the allowance is charged to the slack (charge).
func (c *syncClient) do(ctx context.Context, p string, hdr map[string]string, expect int64, ok ...int) (*http.Response, error) {
	start := time.Now()
	rctx, cancel := context.WithDeadlineCause(ctx, start.Add(admission.DataDeadline(expect, c.opts.MinDataRate, answerAllowance+max(0, c.slack), 0)), errRunSlackSpent)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.url(p), nil)
	if err != nil {
		cancel()
		return nil, amp.Named(0, ErrMisconfigured, "cannot build the request").WithCause(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.charge(start, 0)
		cause := context.Cause(rctx)
		cancel()
		if errors.Is(err, errRedirect) {
			return nil, amp.Named(0, ErrMirrorRefused, "the mirror answered %s with a redirect: refused (only the configured url is used)", p)
		}
		if cause == errRunSlackSpent {
			return nil, amp.Named(0, ErrMirrorUnreachable, "cannot reach the mirror (%s)", errRunSlackSpent).WithCause(err)
		}
		return nil, amp.Named(0, ErrMirrorUnreachable, "cannot reach the mirror").WithCause(err)
	}
	n := expect
	if resp.ContentLength >= 0 && resp.ContentLength < n {
		n = resp.ContentLength
	}
	wb := newWatchedBody(resp.Body, cancel, c.opts.StallTimeout, n, c.bodyDeadline(n))
	wb.ctx, wb.ended = rctx, func(got int64) { c.charge(start, got) }
	resp.Body = wb
	for _, s := range ok {
		if resp.StatusCode == s {
			return resp, nil
		}
	}
	code := envelopeCode(resp)
	resp.Body.Close()
	return nil, amp.Named(0, ErrMirrorRefused, "the mirror answered %s with http %d%s", p, resp.StatusCode, code)
}

// answerAllowance is the time an answer may take past its bytes at
// MinDataRate without charging the run's slack: a round trip and the
// mirror's own work, for each of the tens of thousands of files an index
// may list (charge).
const answerAllowance = 250 * time.Millisecond

// runSlackStalls is the run's slack in StallTimeouts (2 minutes by
// default): what the answers of one run may take, in all, past
// answerAllowance and their bytes at MinDataRate. Each answer still has
// its own bounds (the headers' timeout, StallTimeout, bodyDeadline); this
// one bounds what they add up to, so that a mirror answering each listed
// file whole and correct, just inside them, holds a run (its spool lock,
// the store's write lock) no longer than the bytes it sends take at the
// rate, answerAllowance a file and this slack, not some 60 s a file
// (docs/SPEC-DECISIONS.md MIRROR-26).
const runSlackStalls = 4

// errRunSlackSpent is the cause of an answer cut off because the run's
// slack is spent (do).
const errRunSlackSpent = abandoned("the mirror's answers in this run took longer than their bytes at the minimum data rate allow, past the run's slack")

// charge charges the run's slack with what the answer sent at start, of
// which got body bytes arrived, took past answerAllowance and got at
// MinDataRate.
func (c *syncClient) charge(start time.Time, got int64) {
	if over := time.Since(start) - admission.DataDeadline(got, c.opts.MinDataRate, answerAllowance, 0); over > 0 {
		c.slack -= over
	}
}

// bodyDeadline is how long after its headers a body of n bytes may take:
// StallTimeout, then n at MinDataRate.
func (c *syncClient) bodyDeadline(n int64) time.Duration {
	return admission.DataDeadline(n, c.opts.MinDataRate, c.opts.StallTimeout, 0)
}

// envelopeCode returns " (code)" from the mirror's error envelope, or "".
func envelopeCode(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if jsonUnmarshal(b, &env) == nil && amp.ValidErrName(env.Error.Code) {
		return " (" + env.Error.Code + ")"
	}
	return ""
}

// getSmall GETs a document of at most max bytes.
func (c *syncClient) getSmall(ctx context.Context, p string, max int64) ([]byte, error) {
	resp, err := c.do(ctx, p, nil, max, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, amp.Named(0, ErrTooLarge, "the mirror's %s is larger than %d bytes", p, max)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, amp.Named(0, ErrMirrorUnreachable, "the mirror's answer was cut off").WithCause(err)
	}
	if int64(len(b)) > max {
		return nil, amp.Named(0, ErrTooLarge, "the mirror's %s is larger than %d bytes", p, max)
	}
	return b, nil
}

// spoolLockName is the file of the spool folder a sync holds locked while
// it runs (lockSpool).
const spoolLockName = "sync.lock"

// partName is the spool file of an offered bundle file:
// BUNDLE_ID-SHA256.part, or, where that would be longer than a file
// name may be (maxSpoolNameLen: a bundle_id over 185 bytes),
// long-H-SHA256.part with H the SHA-256 of the bundle_id in hex, cut to
// 32 digits; no bundle_id is "long-H" (it has no dot), so the two never
// meet (docs/SPEC-DECISIONS.md MIRROR-28).
func partName(e IndexEntry) string {
	if n := e.BundleID + "-" + e.SHA256 + ".part"; len(n) <= maxSpoolNameLen {
		return n
	}
	h := sha256.Sum256([]byte(e.BundleID))
	return "long-" + hex.EncodeToString(h[:16]) + "-" + e.SHA256 + ".part"
}

// maxSpoolNameLen is the longest spool file name partName makes: 255
// bytes, the longest name ext4, XFS, APFS and NTFS take. A bundle_id may
// be up to 254 bytes (a namespace prefix), so BUNDLE_ID-SHA256.part may
// be up to 324.
const maxSpoolNameLen = 255

// fetchAndImport downloads e (resuming a partial file), its head judged
// first (judgeHead), checks it against the index, and imports it, and
// reports whether the mirror failed it, so that the rest of the list
// waits (mirrorFailed, or a head that is no bundle file's: headVerdict).
// replacing: e is a copy of the installed version, which fails closed as
// revoked (replaceable). A head refused is discarded; one the mirror did
// not deliver whole (cut off, stalled, an error status) is kept, and the
// next run resumes it (docs/SPEC-DECISIONS.md MIRROR-23).
func (c *syncClient) fetchAndImport(ctx context.Context, t Target, e IndexEntry, it *SyncItem, replacing bool) (listEnds bool) {
	defer func() { listEnds = listEnds || mirrorFailed(it.Error) }()
	path := filepath.Join(c.opts.SpoolDir, partName(e))
	if used := c.spoolUsed(path); used+e.Size > c.opts.MaxSpoolBytes {
		refuse(it, amp.Named(0, ErrTooLarge, "the sync spool folder holds %d bytes of partial downloads; %d more would pass its limit of %d", used, e.Size, c.opts.MaxSpoolBytes))
		return false
	}
	head, jh, err := c.judgeHead(ctx, e, path, replacing)
	if err != nil {
		if headRefusal(err) {
			os.Remove(path) // a cut-off head is kept, and resumed next run
		}
		refuse(it, err)
		return junkHead(err)
	}
	f, fileSum, resumed, sameHead, err := c.downloadListed(ctx, e, path, jh)
	it.Resumed = max(0, resumed-head) // the head read in this run is not resumed
	if err != nil {
		refuse(it, err)
		return false
	}
	defer f.Close()
	share := ""
	if sameHead {
		share = jh.share // judged by its head, read and verified once
	} else if share, err = c.judgeWhole(f, e, fileSum); err != nil {
		os.Remove(path)
		refuse(it, err)
		return false
	}
	f.Seek(0, io.SeekStart)
	// The file's SHA-256 (checked above) keys the store's record of the
	// refusal, which RefusedAt answers from.
	res, err := t.Import(ctx, f, resolver.ImportOptions{Source: c.url(e.Href), FileSHA256: fileSum})
	if err != nil {
		var ae *amp.Error
		if errors.As(err, &ae) && (ae.Name == resolver.ErrStoreInUse || ae.Name == resolver.ErrStoreIO) {
			refuse(it, err) // keep the file: the next run imports it without a download
			return false
		}
		c.storeRefused(err, kindBundle, share)
		os.Remove(path)
		refuse(it, err)
		c.log.Warn("bundle from the mirror refused", "bundle_id", e.BundleID, "version", e.Version, "err", err)
		return false
	}
	os.Remove(path)
	it.Outcome = OutcomeImported
	it.PreviousVersion = res.PreviousVersion
	if res.Unchanged {
		it.Outcome = OutcomeCurrent
	}
	c.log.Info("bundle imported from the mirror", "bundle_id", res.BundleID, "version", res.Version, "generation", res.Generation)
	return false
}

// judgeWhole judges the downloaded bundle file f (listed as e, of
// SHA-256 sum) whose head was not judged before (no trust at hand, or it
// does not begin with the head judged: judgeHead) and returns the
// offerToStore share it is offered under.
func (c *syncClient) judgeWhole(f *os.File, e IndexEntry, sum []byte) (string, error) {
	in, err := bundle.Inspect(f, 0)
	if err != nil {
		// The mirror listed these bytes as a bundle file: it served a file
		// other than the one it listed, as for a heartbeat that does not
		// parse (index_mismatch, which fails the list: mirrorFailed).
		return "", amp.Named(0, ErrIndexMismatch, "the file the index lists is not a bundle file (%s): discarded", amp.NameOf(err)).WithCause(err)
	}
	if err := listedAs(in, e); err != nil {
		return "", err
	}
	return c.offerToStore(kindBundle, sum, c.bundleSigners(in))
}

// listedAs is the refusal (index_mismatch) of a bundle file, or its head,
// in whose signed manifest another bundle or version than its listing e
// is named; nil when it names e's.
func listedAs(in *bundle.Inspection, e IndexEntry) error {
	if in.Manifest.BundleID != e.BundleID || in.Manifest.Version != e.Version {
		return amp.Named(0, ErrIndexMismatch, "the file served names another bundle or version than the index: discarded")
	}
	return nil
}

// bundleSigners is the store's check of the signatures of the bundle file
// in (offerToStore's verify): the keys the store trusts sign its manifest
// for its scope, and every signature verifies. The trusted keys are asked
// first: a head no trusted key signs (or too few) is refused by that
// name with none of its signatures checked (its signatures by keys the
// store does not know are not read), so that it costs its parse, not up
// to bundle.MaxSignatures checks over its manifest (docs/SPEC-DECISIONS.md
// MIRROR-23, amended).
func (c *syncClient) bundleSigners(in *bundle.Inspection) func(*bundle.Policy) ([]bundle.TrustedKey, error) {
	return func(p *bundle.Policy) ([]bundle.TrustedKey, error) {
		if c.hooks.verified != nil {
			c.hooks.verified()
		}
		obj, err := bundle.DecodeObject(in.SignedManifest, bundle.MediaTypeManifest)
		if err != nil {
			return nil, err
		}
		signers, err := bundle.VerifyFor(obj, p, in.Manifest)
		if err != nil {
			return nil, err
		}
		// Every signature verifies, as the store's import requires
		// (FORMAT.md §2): a copy with a forged co-signature is refused
		// here, before it is charged to its publisher's signers.
		if err := obj.VerifyAll(); err != nil {
			return nil, err
		}
		return signers, nil
	}
}

// bundleHeadBytes is the first ranged read of a bundle file's head
// (judgeHead): a signed manifest of a few hundred artifacts fits.
const bundleHeadBytes = 64 << 10

// maxBundleHeadBytes is the most of a bundle file's head judgeHead
// reads: one signed manifest item as large as the store takes
// (bundle.DefaultMaxManifestSize), and bundleHeadBytes before it for a
// delta header (no mirror's export writes one). A head whose signed
// manifest does not end within it is one the store would refuse anyway
// (limit_exceeded): docs/SPEC-DECISIONS.md MIRROR-23.
const maxBundleHeadBytes = bundle.DefaultMaxManifestSize + bundleHeadBytes

// maxRefusedLargeHeadBytes bounds, per run, the bytes past their first
// bundleHeadBytes of the heads of bundles refused (their signatures not
// as the store requires, or past MaxStoreRefusals refusals of their
// signers' files), each read counted, a first read from bytes kept in the
// spool too: once they are spent, a head is not read past
// bundleHeadBytes in that run (limit_exceeded, tried again by the next),
// so that a mirror listing files whose signed manifests are near
// bundle.DefaultMaxManifestSize costs a run four such heads, not one per
// listed file (docs/SPEC-DECISIONS.md MIRROR-23, MIRROR-24). A head that
// is no bundle file's takes none of it: it ends its list (headVerdict).
const maxRefusedLargeHeadBytes = 4 * bundle.DefaultMaxManifestSize

// judgedHead is the head of a bundle file judgeHead passed: its signed
// manifest (in), the keys the store's trust counted for it (share, the
// offerToStore counter they fall in), and its first n bytes with their
// SHA-256 (sum). ours: this mirror served all of it in this run (no
// bytes were kept from before): the file must then begin with it
// (downloadListed, MIRROR-21). A file that begins with it is not read nor
// verified again before it is offered: the verdict stands for it.
type judgedHead struct {
	in    *bundle.Inspection
	share string
	n     int64
	sum   []byte
	ours  bool
}

// judgeHead judges the listed bundle file e by its head before the rest
// is downloaded, whenever the store's trust is at hand: its signed
// manifest (the file's head, downloaded into the spool file path by a
// ranged request of bundleHeadBytes, then up to maxBundleHeadBytes when
// the manifest is larger) is read once, hashed as it is read, and its
// signatures checked once against the store's trust. A head the trust
// refuses is refused by the trust's error name (untrusted_key,
// threshold_not_met, …), not downloaded further nor offered to the store,
// and remembered as such under that trust (localRefusals), so that a
// mirror listing files no trusted key signs (its own key's, signed again
// each run: fresh SHA-256s no record of refusals knows) costs a run a
// head per file, never a whole file (docs/SPEC-DECISIONS.md MIRROR-18,
// MIRROR-22, MIRROR-23, MIRROR-24). A head that is no bundle file's (it
// does not parse, names another bundle or version, or its signed manifest
// is larger than the store takes) is the mirror serving another file: a
// junk verdict (headVerdict), which ends its list. Bytes kept from an
// earlier download (perhaps another mirror's: the spool names a partial
// file by bundle_id and SHA-256 only) that fail any of this are discarded
// and this mirror's head read instead (MIRROR-15); the bytes read for
// them in this run are charged all the same (chargeRefusedHead). got is
// the bytes of the head read in the last try; jh is nil when there is no
// trust to judge by (the whole file is then judged after its download).
// An error that is not a headVerdict is the mirror or the spool failing to
// deliver the head: nothing was judged.
//
// replacing: e is a copy of the installed version, which fails closed as
// revoked (replaceable); only a copy the keys trusted now sign can
// replace it (MIRROR-22).
func (c *syncClient) judgeHead(ctx context.Context, e IndexEntry, path string, replacing bool) (got int64, jh *judgedHead, err error) {
	if c.trusted == nil {
		return 0, nil, nil
	}
	for try := 0; ; try++ {
		kept := partSize(path)
		in, n, sum, err := c.readHead(ctx, e, path)
		got = max(0, n-kept)
		if err != nil && !headRefusal(err) {
			return got, nil, err // the mirror or the spool failed: nothing judged
		}
		if err == nil {
			if err = listedAs(in, e); err != nil {
				err = junkVerdict(err)
			}
		}
		share := ""
		if err == nil {
			if share, err = c.trustHead(in, e); err != nil {
				c.chargeRefusedHead(kept, n)
			}
		}
		switch {
		case err == nil:
			return got, &judgedHead{in: in, share: share, n: n, sum: sum, ours: kept == 0}, nil
		case kept > 0 && try == 0:
			// Kept bytes are no ground to refuse this mirror's file.
			os.Remove(path)
			continue
		}
		return got, nil, c.headRefused(e, err, replacing)
	}
}

// trustHead is the store's trust's verdict on the signed manifest in of
// the listed bundle file e, given once (offerToStore takes it, not the
// check again): the offerToStore share the file falls in, or the refusal,
// a headVerdict: the trust refuses its signatures, or the store refused
// MaxStoreRefusals files of its signers in this run (the rest is then not
// downloaded either).
func (c *syncClient) trustHead(in *bundle.Inspection, e IndexEntry) (string, error) {
	signers, err := c.bundleSigners(in)(c.trusted)
	if err != nil {
		return "", &headVerdict{err: amp.AsError(err), trust: true}
	}
	share, err := c.offerToStore(kindBundle, listedSum(e.SHA256), func(*bundle.Policy) ([]bundle.TrustedKey, error) { return signers, nil })
	if err != nil {
		return "", &headVerdict{err: amp.AsError(err)}
	}
	return share, nil
}

// chargeRefusedHead charges the run's budget of refused heads
// (maxRefusedLargeHeadBytes) with the bytes of a head refused that were
// read in this run past its first bundleHeadBytes: from kept bytes (kept)
// up to n. A first read from bytes kept in the spool is charged as any
// other: a head refused is discarded and read again, and both reads are
// the mirror's to pay (docs/SPEC-DECISIONS.md MIRROR-24).
func (c *syncClient) chargeRefusedHead(kept, n int64) {
	c.largeHeadsRefused += max(0, n-max(kept, bundleHeadBytes))
}

// headVerdict is a judgment of a listed bundle file by its head that
// refuses the file (judgeHead): the trust's verdict on its signatures
// (trust), the cap on its signers' refused files, or junk: the head is
// no bundle file's the store would take (it does not parse, names another
// bundle or version, or its signed manifest is larger than the store
// takes). No mirror serving what its store imported serves junk, so junk
// ends its list as a file other than the one listed does, and takes
// nothing of the run's budget of refused heads, which is the bundles'
// (docs/SPEC-DECISIONS.md MIRROR-24). Any other error of a head read is a
// failure to deliver it, not a verdict.
type headVerdict struct {
	err   *amp.Error
	junk  bool
	trust bool
}

func (v *headVerdict) Error() string { return v.err.Error() }
func (v *headVerdict) Unwrap() error { return v.err }

// junkVerdict is err (index_mismatch or limit_exceeded) as the junk
// verdict on a head.
func junkVerdict(err error) error { return &headVerdict{err: amp.AsError(err), junk: true} }

// headRefusal reports whether err judged the file by its head (a
// headVerdict), so that it is refused and its head discarded, rather than
// the mirror or the spool failing to deliver the head (which is kept).
func headRefusal(err error) bool {
	var v *headVerdict
	return errors.As(err, &v)
}

// junkHead reports whether err judged a head to be no bundle file's: the
// rest of its list is not tried in this run.
func junkHead(err error) bool {
	var v *headVerdict
	return errors.As(err, &v) && v.junk
}

// errHeadBudget is the cause of a head not read past bundleHeadBytes
// because the run's maxRefusedLargeHeadBytes are spent.
var errHeadBudget = errors.New("the run's budget of large refused heads is spent")

// headRefused is the refusal of the listed bundle file e whose head
// judgeHead refused with the verdict err: one the store's trust refuses is
// remembered under that trust (localRefusals) and refused by the trust's
// error name, with a message that says so.
func (c *syncClient) headRefused(e IndexEntry, err error, replacing bool) error {
	var v *headVerdict
	if !errors.As(err, &v) || !v.trust {
		return err
	}
	c.noteUnvouched(listedSum(e.SHA256), v.err)
	name := verdictOf(v.err)
	if replacing {
		return &headVerdict{err: amp.Named(0, name, "a copy of the installed version, which fails closed as revoked, refused by the store's trust (%s): it cannot replace the install, so it was not downloaded past its head nor offered", name).WithCause(v.err), trust: true}
	}
	return &headVerdict{err: amp.Named(0, name, "the bundle file's signed manifest (its head) is refused by the store's trust (%s): not downloaded past its head nor offered", name).WithCause(v.err), trust: true}
}

// readHead downloads the head of the listed bundle file e into the spool
// file path (keeping what it holds, and resuming it) and reads it once:
// its signed manifest and the SHA-256 of its n bytes. The head is read in
// steps, bundleHeadBytes then four times as much each time, up to
// maxBundleHeadBytes, each resuming the one before, so that it costs at
// most four times its signed manifest, never the bound. A head that does
// not parse, or whose signed manifest does not end within
// maxBundleHeadBytes or declares more than the store takes, is a junk
// verdict (index_mismatch, limit_exceeded); a head not read past
// bundleHeadBytes once the run's maxRefusedLargeHeadBytes are spent is
// limit_exceeded, no verdict (the next run reads it).
func (c *syncClient) readHead(ctx context.Context, e IndexEntry, path string) (in *bundle.Inspection, n int64, sum []byte, err error) {
	for upto := int64(bundleHeadBytes); ; upto = min(4*upto, maxBundleHeadBytes) {
		if upto > bundleHeadBytes && c.largeHeadsRefused >= c.hooks.headBudget && partSize(path) < min(upto, e.Size) {
			return nil, n, nil, amp.Named(0, ErrTooLarge, "the signed manifest of this bundle file is larger than %d bytes, and the heads of files refused in this run took %d bytes past their first %d already: not read further in this run (the next run tries it)", bundleHeadBytes, c.largeHeadsRefused, bundleHeadBytes).WithCause(errHeadBudget)
		}
		n = min(upto, e.Size)
		if _, err := c.download(ctx, e, path, n); err != nil {
			return nil, 0, nil, err
		}
		in, sum, err = inspectHead(path, n)
		switch name := amp.NameOf(err); {
		case err == nil:
			return in, n, sum, nil
		case name == resolver.ErrStoreIO:
			return nil, n, nil, err
		case name == bundle.ErrTruncated && n == maxBundleHeadBytes:
			return nil, n, nil, junkVerdict(amp.Named(0, ErrTooLarge, "the signed manifest of this bundle file does not end within its first %d bytes: larger than the store takes, not downloaded further; no mirror's store holds it, so the rest of the list waits for the next run", maxBundleHeadBytes))
		case name == bundle.ErrTruncated && n < e.Size:
			continue // a larger signed manifest: read on, four times as much
		case name == bundle.ErrTooLarge:
			return nil, n, nil, junkVerdict(amp.Named(0, ErrTooLarge, "the signed manifest of this bundle file is larger than the store takes (%d bytes): not downloaded further; no mirror's store holds it, so the rest of the list waits for the next run", bundle.DefaultMaxManifestSize))
		}
		return nil, n, nil, junkVerdict(amp.Named(0, ErrIndexMismatch, "the file the index lists does not begin as a bundle file (%s): discarded", amp.NameOf(err)).WithCause(err))
	}
}

// partSize is the size of the spool file path, 0 when there is none.
func partSize(path string) int64 {
	if st, err := os.Lstat(path); err == nil {
		return st.Size()
	}
	return 0
}

// inspectHead reads the first n bytes of the spool file path once: the
// signed manifest they begin with, and their SHA-256. A read that fails
// is store_io; a head that does not parse is bundle's error for it.
func inspectHead(path string, n int64) (*bundle.Inspection, []byte, error) {
	f, err := openSpoolFile(path, os.O_RDONLY)
	if err != nil {
		return nil, nil, amp.Named(0, resolver.ErrStoreIO, "cannot read the downloaded file").WithCause(err)
	}
	defer f.Close()
	h := sha256.New()
	r := &countingReader{r: io.TeeReader(io.LimitReader(f, n), h)}
	in, perr := bundle.Inspect(r, 0)
	if _, err := io.Copy(io.Discard, r); err != nil || r.n != n {
		return nil, nil, amp.Named(0, resolver.ErrStoreIO, "cannot read the downloaded file").WithCause(err)
	}
	return in, h.Sum(nil), perr
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	return n, err
}

// downloadListed completes the spool file path for e (download) and
// returns it open, with its SHA-256, once that is the one the index lists
// (the file is not offered to Import otherwise), how many bytes of an
// earlier download it kept, and whether it begins with the head judgeHead
// judged, jh (its verdict then stands for the file). A file whose SHA-256
// differs is discarded; when bytes of an earlier download were kept, it
// is downloaded once more whole before it is refused: the kept bytes may
// be what differs (a partial file left by another mirror that listed the
// same file, whose name the spool shares), and a mirror is judged by its
// own bytes only (docs/SPEC-DECISIONS.md MIRROR-15). When this mirror
// served the head in this run (jh.ours), the kept bytes are its own: the
// file is refused at once, and so is one that does not begin with them,
// whatever its SHA-256 (the mirror answered the rest with another whole
// file): docs/SPEC-DECISIONS.md MIRROR-21.
func (c *syncClient) downloadListed(ctx context.Context, e IndexEntry, path string, jh *judgedHead) (f *os.File, sum []byte, resumed int64, sameHead bool, err error) {
	ours := jh != nil && jh.ours
	for try := 0; ; try++ {
		resumed, err := c.download(ctx, e, path, e.Size)
		if err != nil {
			return nil, nil, resumed, false, err
		}
		f, err := openSpoolFile(path, os.O_RDONLY)
		if err != nil {
			return nil, nil, resumed, false, amp.Named(0, resolver.ErrStoreIO, "cannot read the downloaded file").WithCause(err)
		}
		h, hh := sha256.New(), sha256.New()
		sameHead = jh != nil
		if jh != nil {
			_, err = io.CopyN(io.MultiWriter(h, hh), f, jh.n)
			sameHead = err == nil && bytes.Equal(hh.Sum(nil), jh.sum)
		}
		if err == nil {
			_, err = io.Copy(h, f)
		}
		if err != nil && err != io.EOF {
			f.Close()
			return nil, nil, resumed, false, amp.Named(0, resolver.ErrStoreIO, "cannot read the downloaded file").WithCause(err)
		}
		if sum := h.Sum(nil); (sameHead || !ours) && hex.EncodeToString(sum) == e.SHA256 {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				f.Close()
				return nil, nil, resumed, false, amp.Named(0, resolver.ErrStoreIO, "cannot read the downloaded file").WithCause(err)
			}
			return f, sum, resumed, sameHead, nil
		}
		f.Close()
		os.Remove(path)
		if ours && !sameHead {
			return nil, nil, 0, false, amp.Named(0, ErrIndexMismatch, "the file served does not begin with the head the mirror served for it in this run: discarded")
		}
		if resumed == 0 || try > 0 || ours { // once whole, never again; kept bytes of this run are the mirror's
			return nil, nil, 0, false, amp.Named(0, ErrIndexMismatch, "the file served is not the one the index names (sha-256 differs): discarded")
		}
	}
}

// download completes the spool file path for e up to its first upto
// bytes (e.Size: the whole file; less: its head, a ranged request) and
// returns how many bytes of an earlier, interrupted download it kept. The
// file never exceeds e.Size bytes; an answer that is cut off leaves what
// arrived, for the next run to resume.
func (c *syncClient) download(ctx context.Context, e IndexEntry, path string, upto int64) (int64, error) {
	f, err := openPart(path)
	if err != nil {
		return 0, amp.Named(0, resolver.ErrStoreIO, "cannot write to the sync spool folder").WithCause(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, amp.Named(0, resolver.ErrStoreIO, "cannot write to the sync spool folder").WithCause(err)
	}
	have := st.Size()
	if have > e.Size {
		have = 0
	}
	if have == e.Size || have >= upto {
		return have, nil
	}
	etag := `"sha-256:` + e.SHA256 + `"`
	hdr := map[string]string{}
	if have > 0 || upto < e.Size {
		hdr["Range"] = "bytes=" + strconv.FormatInt(have, 10) + "-"
		if upto < e.Size {
			hdr["Range"] += strconv.FormatInt(upto-1, 10)
		}
		hdr["If-Range"] = etag
	}
	resp, err := c.do(ctx, e.Href, hdr, upto, http.StatusOK, http.StatusPartialContent)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	resumed := int64(0)
	if resp.StatusCode == http.StatusPartialContent {
		want := fmt.Sprintf("bytes %d-%d/%d", have, upto-1, e.Size)
		if resp.Header.Get("Content-Range") != want {
			return 0, amp.Named(0, ErrIndexMismatch, "the mirror answered the resume with another range")
		}
		resumed = have
	} else {
		have = 0
	}
	if err := f.Truncate(have); err != nil {
		return 0, amp.Named(0, resolver.ErrStoreIO, "cannot write to the sync spool folder").WithCause(err)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return 0, amp.Named(0, resolver.ErrStoreIO, "cannot write to the sync spool folder").WithCause(err)
	}
	left := upto - have
	pw := &progressCounter{done: have, total: e.Size, id: e.BundleID, fn: c.opts.Progress}
	n, err := io.Copy(io.MultiWriter(f, pw), io.LimitReader(resp.Body, left))
	if err != nil && n < left {
		why := ""
		if a := abandoned(""); errors.As(err, &a) {
			why = " (" + string(a) + ")"
		}
		return resumed, amp.Named(0, ErrIncomplete, "the download of %s stopped after %d of %d bytes%s; the next sync resumes it", e.BundleID, have+n, e.Size, why).WithCause(err)
	}
	if n < left {
		return resumed, amp.Named(0, ErrIncomplete, "the mirror sent %d of %d bytes of %s; the next sync resumes it", have+n, e.Size, e.BundleID)
	}
	// More than the index said of a whole file: it is not the one named
	// (of a head, the rest of the answer is not read).
	if upto == e.Size {
		if extra, _ := io.CopyN(io.Discard, resp.Body, 1); extra > 0 {
			f.Close()
			os.Remove(path)
			return resumed, amp.Named(0, ErrIndexMismatch, "the mirror sent more bytes than the index names for %s: discarded", e.BundleID)
		}
	}
	// The answer ends here, before the sync's own work (a head's rest
	// is never read, so its body would end only at the deferred Close,
	// its fsync charged to the run's slack: MIRROR-26).
	resp.Body.Close()
	if err := f.Sync(); err != nil {
		return resumed, amp.Named(0, resolver.ErrStoreIO, "cannot write to the sync spool folder").WithCause(err)
	}
	return resumed, nil
}

// openPart opens the spool file path of a partial download for reading
// and writing, made when missing, never through a link: a link, a file
// with another name (a hard link) or anything but a regular file in its
// place, which only whoever may write the spool folder can have put
// there, is removed first, so that no mirror's bytes are written to, nor
// a file truncated at, the place it points to or the file it also names
// (docs/SPEC-DECISIONS.md MIRROR-18, MIRROR-25); one put there between
// that check and the open is refused (openSpoolFile).
func openPart(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && (!fi.Mode().IsRegular() || linkedElsewhere(fi)) {
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	return openSpoolFile(path, os.O_RDWR|os.O_CREATE)
}

// errNotSpoolFile is the cause of a spool file that openSpoolFile does not
// open: not a regular file, or one with another name.
var errNotSpoolFile = errors.New("not a regular file of the sync spool folder alone (a link, a FIFO, or a file with another name): left alone")

// openSpoolFile opens the spool file path with flag (os.O_RDONLY, or
// os.O_RDWR|os.O_CREATE, made mode 0600) when it is a regular file with no
// other name (linkedElsewhere), never through a link and never waiting:
// what is in its place is judged before the open and what was opened
// after it (a FIFO swapped in meanwhile is opened without waiting for a
// writer, then closed), so that whoever may write the spool folder can
// neither hold a sync for ever on a FIFO (an open for reading waits for
// its writer, and no context ends it, while the sync holds the spool
// lock) nor have it write to a file of theirs choosing
// (docs/SPEC-DECISIONS.md MIRROR-25). Anything else is errNotSpoolFile.
func openSpoolFile(path string, flag int) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && (!fi.Mode().IsRegular() || linkedElsewhere(fi)) {
		return nil, errNotSpoolFile
	}
	f, err := os.OpenFile(path, flag|openNoFollow|openNonBlock, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || linkedElsewhere(fi)) {
		err = errNotSpoolFile
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// spoolUsed is the size of the partial files in the spool other than
// path.
func (c *syncClient) spoolUsed(path string) int64 {
	names, _ := filepath.Glob(filepath.Join(c.opts.SpoolDir, "*.part"))
	n := int64(0)
	for _, name := range names {
		if name == path {
			continue
		}
		if st, err := os.Lstat(name); err == nil {
			n += st.Size()
		}
	}
	return n
}

// maxLastFailed bounds the listed files remembered as failed
// (noteFailed).
const maxLastFailed = 64

// The keys by which the file of failed files names a listed statement
// (failedStatementPrefix and its SHA-256 in hex) and a listed heartbeat
// (failedHeartbeatPrefix and its bundle_id); a bundle file is named by
// its bundle_id. No bundle_id holds a space, so the three never meet.
const (
	failedStatementPrefix = "statement "
	failedHeartbeatPrefix = "heartbeat "
)

// failedFiles are the listed files (by key: bundle_id, or a prefix above)
// the mirror failed in the run before (prev, from lastFailedPath), and,
// in this run, those fetched without the mirror failing them (tried) and
// those it failed (failing: the one a list stopped at, at most one a
// list, and the statements it served otherwise again and that were
// passed over, fetchedInPlace). noteFailed writes from them what the next
// run tries last (bundles, heartbeats) or passes over when served
// otherwise again (statements). Nil in a dry run.
type failedFiles struct {
	prev    []string
	tried   map[string]bool
	failing []string
}

// fetched notes whether the mirror failed the fetch of the listed file
// key (failed: mirrorFailed, or a head that is no bundle file's) and
// reports it: the rest of its list is then not tried in this run.
func (f *failedFiles) fetched(failed bool, key string) bool {
	if f != nil {
		if failed {
			f.failing = append(f.failing, key)
		} else {
			f.tried[key] = true
		}
	}
	return failed
}

// failedBefore reports whether the mirror failed the listed file key in
// the run before (f nil: no).
func (f *failedFiles) failedBefore(key string) bool {
	return f != nil && slices.Contains(f.prev, key)
}

// failedLast returns items (a list of the index, each named by key) with
// the ones the mirror failed in the run before moved to the end, in the
// order they failed, so that a file the mirror fails on every run (a
// damaged file, junk, an error status) does not keep the files listed
// after it from ever being tried: one stall a list stops a list
// (docs/SPEC-DECISIONS.md MIRROR-16). Bundles and heartbeats only: the
// order of the statements is what a store applies them by, and is kept
// (fetchedInPlace, MIRROR-29).
func failedLast[T any](c *syncClient, items []T, key func(T) string) []T {
	if c.failed == nil || len(c.failed.prev) == 0 {
		return items
	}
	at := map[string]int{}
	for i, k := range c.failed.prev {
		at[k] = i + 1
	}
	first := make([]T, 0, len(items))
	last := make([]*T, len(c.failed.prev))
	for i := range items {
		if j := at[key(items[i])]; j > 0 && last[j-1] == nil {
			last[j-1] = &items[i]
		} else {
			first = append(first, items[i])
		}
	}
	for _, e := range last {
		if e != nil {
			first = append(first, *e)
		}
	}
	return first
}

// lastFailedPath is the spool file that names, one key a line
// (failedFiles), the listed files the mirror at this URL failed and that
// were not synced since: the next run tries them last. One file per
// mirror URL: syncs from several mirrors into one store do not forget
// each other's.
func (c *syncClient) lastFailedPath() string {
	sum := sha256.Sum256([]byte(c.base.String()))
	return filepath.Join(c.opts.SpoolDir, "last-failed-"+hex.EncodeToString(sum[:8]))
}

// readLastFailed returns the keys lastFailedPath names: read only from a
// regular file (openSpoolFile: never waiting on a FIFO), at most
// maxLastFailed valid keys (a bundle_id, or a statement's or a
// heartbeat's key); lines that are not are skipped.
func (c *syncClient) readLastFailed() []string {
	f, err := openSpoolFile(c.lastFailedPath(), os.O_RDONLY)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, int64(maxLastFailed*(len(failedHeartbeatPrefix)+bundle.MaxBundleIDLen+1))))
	var keys []string
	for _, k := range strings.Split(string(b), "\n") {
		if len(keys) < maxLastFailed && validFailedKey(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// validFailedKey reports whether k is a key of failedFiles.
func validFailedKey(k string) bool {
	if h, ok := strings.CutPrefix(k, failedStatementPrefix); ok {
		return sumHex(h)
	}
	k, _ = strings.CutPrefix(k, failedHeartbeatPrefix)
	return bundle.ValidateBundleID(k) == nil
}

// noteFailed writes the list the next run tries last: the files of the
// run before not tried in this one, then those this run failed, at most
// maxLastFailed (the latest); no file when it is empty. It is written
// whole or not at all (a temporary file renamed).
func (c *syncClient) noteFailed() {
	f := c.failed
	var keys []string
	for _, k := range f.prev {
		if !f.tried[k] && !slices.Contains(f.failing, k) {
			keys = append(keys, k)
		}
	}
	keys = append(keys, f.failing...)
	if len(keys) > maxLastFailed {
		keys = keys[len(keys)-maxLastFailed:]
	}
	p := c.lastFailedPath()
	if len(keys) == 0 {
		os.Remove(p)
		return
	}
	tmp, err := os.CreateTemp(c.opts.SpoolDir, lastFailedTempPrefix+"*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(strings.Join(keys, "\n"))
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}

// pruneSpool removes partial files of bundle files the mirror no longer
// offers, so that the spool holds at most one file per offered bundle.
func (c *syncClient) pruneSpool(keep map[string]bool) {
	names, _ := filepath.Glob(filepath.Join(c.opts.SpoolDir, "*.part"))
	for _, n := range names {
		if !keep[filepath.Base(n)] {
			os.Remove(n)
		}
	}
}

// DefaultStallTimeout is the default of SyncOptions.StallTimeout.
const DefaultStallTimeout = 30 * time.Second

// StallMinBytes is the least a body must deliver per StallTimeout window.
const StallMinBytes = 1 << 10

// abandoned is the cause of a read abandoned by the watchdog of a body:
// it stalled, or it was too slow for its size.
type abandoned string

func (a abandoned) Error() string { return string(a) }

// errStalled is the cause of a read abandoned by the stall watchdog.
const errStalled = abandoned("the mirror stalled: too few bytes within the stall timeout")

// watchedBody is a response body watched by timers: at the end of each
// window, if fewer than StallMinBytes arrived during it, or once its
// deadline (bodyDeadline of its size) has passed before its end, the
// request's context is cancelled and reads fail with the cause
// (errStalled, or an abandoned naming the deadline).
type watchedBody struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	n      atomic.Int64
	cause  atomic.Pointer[abandoned]
	// ctx is the request's context: a read that fails once it ended for
	// an abandoned cause (errRunSlackSpent) fails with that cause.
	ctx context.Context
	// ended, when set, is called once with the bytes read, at the body's
	// end or close, whichever comes first (the sync's charge).
	ended     func(got int64)
	endedOnce sync.Once
}

func newWatchedBody(body io.ReadCloser, cancel context.CancelFunc, window time.Duration, size int64, deadline time.Duration) *watchedBody {
	b := &watchedBody{body: body, cancel: cancel, done: make(chan struct{})}
	abandon := func(why abandoned) {
		b.cause.Store(&why)
		cancel()
	}
	go func() {
		t := time.NewTicker(window)
		defer t.Stop()
		d := time.NewTimer(deadline)
		defer d.Stop()
		last := int64(0)
		for {
			select {
			case <-b.done:
				return
			case <-d.C:
				abandon(abandoned(fmt.Sprintf("the mirror sent %d bytes of an answer of up to %d within %v: slower than the minimum data rate", b.n.Load(), size, deadline)))
				return
			case <-t.C:
				n := b.n.Load()
				if n-last < StallMinBytes {
					abandon(errStalled)
					return
				}
				last = n
			}
		}
	}()
	return b
}

func (b *watchedBody) stop() {
	b.once.Do(func() { close(b.done) })
	if b.ended != nil {
		b.endedOnce.Do(func() { b.ended(b.n.Load()) })
	}
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.n.Add(int64(n))
	switch {
	case err == io.EOF:
		b.stop()
	case err != nil:
		if why := b.cause.Load(); why != nil {
			err = *why
		} else if b.ctx != nil && b.ctx.Err() != nil {
			if why, ok := context.Cause(b.ctx).(abandoned); ok {
				err = why
			}
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.stop()
	err := b.body.Close()
	b.cancel()
	return err
}

type progressCounter struct {
	done, total int64
	id          string
	fn          func(string, int64, int64)
}

func (p *progressCounter) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.fn != nil {
		p.fn(p.id, p.done, p.total)
	}
	return len(b), nil
}
