package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport"
	"github.com/ampbundle/ampbundle/resolver"
)

// Outcomes of an OCI sync's entries.
const (
	ociImported   = "imported"
	ociApplied    = "applied"
	ociUnchanged  = "unchanged"
	ociPlanned    = "planned"
	ociRefused    = "refused"
	ociSkipped    = "skipped"
	ociSuperseded = "superseded"
)

// ociSyncEntry is one tag or statement of an OCI sync.
type ociSyncEntry struct {
	Ref      string `json:"ref"`
	Kind     string `json:"kind"`
	BundleID string `json:"bundle_id,omitempty"`
	Version  uint64 `json:"version,omitempty"`
	Outcome  string `json:"outcome"`
	Error    string `json:"error,omitempty"`
	Message  string `json:"message,omitempty"`

	// art is the artifact Trimmed: a plan of MaxTags tags holds no
	// manifest (a bundle's is read again to pull it, by its digest).
	art *ocitransport.Artifact
	// fileKey is a bundle's ociFileKey.
	fileKey string
}

// maxOCISkippedEntries bounds the skipped referrers a sync's report lists
// one by one; past it one entry counts the rest (docs/SPEC-DECISIONS.md
// OCI-13, amended).
const maxOCISkippedEntries = 100

// ociSyncReport is the report of 'ampbundle sync oci://…'.
type ociSyncReport struct {
	Source  string          `json:"source"`
	Entries []*ociSyncEntry `json:"entries"`
}

func (r *ociSyncReport) count(outcome string) int {
	n := 0
	for _, e := range r.Entries {
		if e.Outcome == outcome {
			n++
		}
	}
	return n
}

func refuse(e *ociSyncEntry, err error) {
	e.Outcome, e.Error, e.Message = ociRefused, errName(err), cliutil.Sanitize(errMessage(err))
}

// syncOCI is 'ampbundle sync oci://REGISTRY/REPO' (or oci-layout:…): every
// tag (or those --tag-pattern matches) is read; of each bundle_id the
// highest version the tags offer that verifies is imported, verified as
// 'import' does (the candidates tried newest first, falling back on a
// refusal); the statements whose subject is such a bundle, and statements
// tagged on their own, are applied: trust statements, then revocations,
// before the bundles, heartbeats after them. Without --timeout, the sync
// gives up after defaultOCITimeout.
func syncOCI(env *cliutil.Env, c *cli.Context) (err error) {
	loc, err := parseOCI(c.Args().First(), "the sync source", false)
	if err != nil {
		return err
	}
	if loc.Reference != "" {
		return cliutil.Usagef("sync reads a whole repository or layout: give no tag (select tags with --tag-pattern)")
	}
	pattern := c.String("tag-pattern")
	if _, err := path.Match(pattern, ""); err != nil {
		return cliutil.Usagef("--tag-pattern is not a valid pattern")
	}
	o, err := ociOptions(env, c)
	if err != nil {
		return err
	}
	ctx, ep, done, err := openOCI(c, defaultOCITimeout, loc, o, ocitransport.ReadOnly)
	if err != nil {
		return err
	}
	defer done()
	rep, err := planOCISync(ctx, ep, loc, pattern)
	if err != nil {
		return err
	}
	s, err := openSyncStore(env, c)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	if !c.Bool("dry-run") {
		applyOCISync(ctx, s, ep, rep)
	}
	if err := printReport(env, c, rep, printOCISync); err != nil {
		return err
	}
	return ociSyncExit(rep, c.Bool("detailed-exitcode"))
}

// planOCISync lists the tags and reads their manifests and the bundles'
// statements: the entries, in the order they are applied. Every bundle is
// planned: which version of a bundle_id lands is decided after each is
// pulled and verified (applyOCIBundles), never from the annotations
// (docs/SPEC-DECISIONS.md OCI-9). A manifest is read one at a time and
// kept Trimmed, with its file key; a referrer listed under several bundles
// is fetched, and its failure reported, once; the report lists at most
// maxOCISkippedEntries skipped referrers, then their count (OCI-13).
func planOCISync(ctx context.Context, ep *ocitransport.Endpoint, loc ocitransport.Location, pattern string) (*ociSyncReport, error) {
	tags, err := ep.Tags(ctx)
	if err != nil {
		return nil, err
	}
	rep := &ociSyncReport{Source: loc.String()}
	var bundles []*ociSyncEntry
	seen := map[string]bool{}
	for _, t := range tags {
		if ocitransport.IsReferrersTag(t) {
			continue
		}
		if ok, _ := path.Match(pattern, t); !ok {
			continue
		}
		e := &ociSyncEntry{Ref: loc.WithReference(t).String(), Outcome: ociPlanned}
		rep.Entries = append(rep.Entries, e)
		a, err := ep.Resolve(ctx, t)
		if err != nil {
			if errName(err) == string(ocitransport.ErrNotBundle) {
				e.Kind, e.Outcome = "other", ociSkipped
				continue
			}
			e.Kind = "unknown"
			refuse(e, err)
			continue
		}
		if a.Kind == ocitransport.KindBundle && a.BundleID != "" && bundle.ValidateBundleID(a.BundleID) != nil {
			// No file's header names it: refused now, as after a pull.
			e.Kind = a.Kind
			refuse(e, cliutil.Failf(ocitransport.ErrAnnotation, "the manifest's bundle_id annotation is not a bundle_id"))
			continue
		}
		e.art, e.Kind, e.BundleID, e.Version = a.Trimmed(), a.Kind, cliutil.Sanitize(a.BundleID), a.Version
		if a.Kind == ocitransport.KindBundle {
			e.fileKey = ociFileKey(a)
			bundles = append(bundles, e)
		} else {
			seen[a.Descriptor.Digest.String()] = true
		}
	}
	// The statements of every bundle offered: a revocation attached to an
	// older version still counts. A referrer that is malformed, or a list
	// over the bound, is reported and skipped: the bundle is still synced.
	// A bundle whose referrers were left unread for the run's bound (its
	// share of the fetches spent) is refused, oci_too_many: a revocation
	// may be among them (OCI-13, amended).
	cache, listed := &ocitransport.StatementCache{Listings: len(bundles)}, 0
	unlisted := map[string]int{}
	for _, b := range bundles {
		refs, skipped, err := ep.StatementsCached(ctx, b.art, cache)
		if err != nil {
			skipped = append(skipped, err)
		}
		for _, serr := range skipped {
			if listed >= maxOCISkippedEntries {
				unlisted[errName(serr)]++
				continue
			}
			listed++
			w := &ociSyncEntry{Ref: b.Ref, Kind: "referrers", Outcome: ociSkipped}
			w.Error, w.Message = errName(serr), cliutil.Sanitize(errMessage(serr))
			rep.Entries = append(rep.Entries, w)
		}
		if ocitransport.TooManyStatements(skipped) {
			refuse(b, cliutil.Failf(ocitransport.ErrTooMany, "the bundle's referrers were not all read (this sync's share of statement fetches for it, %d, is spent): not installed in this run", cache.Share()))
		}
		for _, a := range refs {
			if seen[a.Descriptor.Digest.String()] {
				continue
			}
			seen[a.Descriptor.Digest.String()] = true
			e := &ociSyncEntry{Ref: loc.WithReference(a.Descriptor.Digest.String()).String(), Kind: a.Kind, Outcome: ociPlanned, art: a}
			rep.Entries = append(rep.Entries, e)
		}
	}
	if w := unlistedEntry(loc, unlisted); w != nil {
		rep.Entries = append(rep.Entries, w)
	}
	order := map[string]int{ocitransport.KindRotation: 0, ocitransport.KindRevocation: 1, ocitransport.KindBundle: 2, ocitransport.KindHeartbeat: 3}
	sort.SliceStable(rep.Entries, func(i, j int) bool {
		return rank(order, rep.Entries[i]) < rank(order, rep.Entries[j])
	})
	return rep, nil
}

// unlistedEntry is the one skipped entry that counts the referrers past
// maxOCISkippedEntries, by error name (the most common first, at most
// maxOCIUnlistedNames of them, then "other"); its error is the name most
// of them share. nil when there are none.
func unlistedEntry(loc ocitransport.Location, byName map[string]int) *ociSyncEntry {
	names, total := make([]string, 0, len(byName)), 0
	for n, c := range byName {
		names = append(names, n)
		total += c
	}
	if total == 0 {
		return nil
	}
	sort.Slice(names, func(i, j int) bool {
		if byName[names[i]] != byName[names[j]] {
			return byName[names[i]] > byName[names[j]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d more referrers skipped, not listed one by one:", total)
	other := 0
	for i, n := range names {
		if i >= maxOCIUnlistedNames {
			other += byName[n]
			continue
		}
		fmt.Fprintf(&b, " %s %d,", n, byName[n])
	}
	if other > 0 {
		fmt.Fprintf(&b, " other %d,", other)
	}
	return &ociSyncEntry{Ref: loc.String(), Kind: "referrers", Outcome: ociSkipped, Error: names[0],
		Message: cliutil.Sanitize(strings.TrimSuffix(b.String(), ","))}
}

// maxOCIUnlistedNames bounds the error names the count of unlisted
// skipped referrers names one by one.
const maxOCIUnlistedNames = 8

func rank(order map[string]int, e *ociSyncEntry) int {
	if r, ok := order[e.Kind]; ok && e.Outcome == ociPlanned {
		return r
	}
	return -1 // reported first, applied never
}

// applyOCISync applies the planned entries in order; a refusal changes
// nothing in the store and does not stop the others.
func applyOCISync(ctx context.Context, s registry, ep *ocitransport.Endpoint, rep *ociSyncReport) {
	files := ociFiles{}
	for _, e := range rep.Entries {
		if e.Outcome != ociPlanned {
			continue
		}
		if e.Kind == ocitransport.KindBundle {
			applyOCIBundles(ctx, s, ep, rep, e, files)
			continue
		}
		data, err := ep.Statement(ctx, e.art)
		if err != nil {
			refuse(e, err)
			continue
		}
		unchanged := false
		switch e.Kind {
		case ocitransport.KindRotation:
			var r *resolver.RotateResult
			if r, err = s.ApplyRotation(data); err == nil {
				unchanged = r.Unchanged
			}
		case ocitransport.KindRevocation:
			var r *resolver.RevokeResult
			if r, err = s.ApplyRevocation(data); err == nil {
				unchanged = r.Unchanged
			}
		case ocitransport.KindHeartbeat:
			var r *resolver.HeartbeatResult
			if r, err = s.ApplyHeartbeat(data); err == nil {
				unchanged = r.Unchanged
			}
		}
		switch {
		case err != nil:
			refuse(e, err)
		case unchanged:
			e.Outcome = ociUnchanged
		default:
			e.Outcome = ociApplied
		}
	}
}

// applyOCIBundles syncs the bundle e and the other candidates of its
// bundle_id: newest first by the annotations (a hint only), each pulled,
// checked against its annotations and verified by the import; the first
// imported (or already installed) one supersedes the rest. A refused
// candidate falls back to the next, so a forged or broken tag cannot keep
// a genuine one out; a rollback refusal ends the search (every older
// candidate would be one too). A bundle without a bundle_id annotation is
// synced alone.
func applyOCIBundles(ctx context.Context, s registry, ep *ocitransport.Endpoint, rep *ociSyncReport, e *ociSyncEntry, files ociFiles) {
	if e.art.BundleID == "" {
		syncOCIBundle(ctx, s, ep, e, files)
		return
	}
	var group []*ociSyncEntry
	for _, c := range rep.Entries {
		if c.Outcome == ociPlanned && c.Kind == ocitransport.KindBundle && c.art.BundleID == e.art.BundleID {
			group = append(group, c)
		}
	}
	sort.SliceStable(group, func(i, j int) bool { return group[i].art.Version > group[j].art.Version })
	done := false
	for _, c := range group {
		if done {
			c.Outcome = ociSuperseded
			continue
		}
		syncOCIBundle(ctx, s, ep, c, files)
		done = c.Outcome != ociRefused || c.Error == "rollback" || ctx.Err() != nil
	}
}

// ociFile is what one sync learnt of a bundle file (its layers): the
// bundle_id and version its header names, and why it was refused or that
// it was imported. A candidate of the same layers is judged by it, not
// pulled again (docs/SPEC-DECISIONS.md OCI-16).
type ociFile struct {
	inspected bool
	bundleID  string
	version   uint64
	err       error // the file itself refused: pull, not a bundle, import
	imported  bool
}

// ociFiles are the files of one sync, by ociFileKey.
type ociFiles map[string]*ociFile

// ociFileKey names the bytes a bundle's manifest pulls: the file's size
// and SHA-256, and each layer's digest, size and media type, every one of
// which the pull depends on (docs/SPEC-DECISIONS.md OCI-16); hashed, so
// that what a plan keeps of a tag is the same few bytes whatever its
// layers (up to MaxLayers).
func ociFileKey(a *ocitransport.Artifact) string {
	h := sha256.New()
	fmt.Fprintf(h, "%x/%d", a.FileSHA256, a.FileSize)
	for _, l := range a.Manifest.Layers {
		fmt.Fprintf(h, "/%s,%d,%q", l.Digest, l.Size, l.MediaType)
	}
	return string(h.Sum(nil))
}

// fileVerdict says whether err is a verdict on a pulled file's bytes, to
// be remembered for the file (OCI-16): a digest or size mismatch once the
// answer was read whole (not one cut in transit), or the refusal of the
// inspect or the import; never a transient failure (the registry's error,
// a stall, an I/O error, the deadline).
func fileVerdict(ctx context.Context, err error, pulled bool) bool {
	if ctx.Err() != nil {
		return false
	}
	switch amp.ErrName(errName(err)) {
	case ocitransport.ErrRegistry, ocitransport.ErrTooSlow, ocitransport.ErrIO,
		resolver.ErrStoreIO, "admin_socket": // the store or the agent, not the file
		return false
	case ocitransport.ErrDigest:
		return true
	case ocitransport.ErrSize:
		return !errors.Is(err, io.ErrUnexpectedEOF)
	}
	return pulled
}

// annotationMismatch says whether the bundle_id and version of a file's
// header are not those the manifest's annotations name.
func annotationMismatch(a *ocitransport.Artifact, bundleID string, version uint64) bool {
	return a.BundleID != "" && (bundleID != a.BundleID || version != a.Version)
}

// errAnnotationMismatch is the refusal of a file that is not the bundle its
// manifest's annotations name.
func errAnnotationMismatch() error {
	return cliutil.Failf(ocitransport.ErrAnnotation, "the file is not the bundle_id and version its manifest's annotations name")
}

// syncOCIBundle pulls one bundle into a temporary file and imports it: the
// file must be the bundle its annotations name (else
// oci_annotation_mismatch), and the import verifies it as any file. A file
// this sync already pulled is judged by what was learnt of it (files),
// not pulled again, unless it is the bundle its annotations name and was
// not refused. The manifest the plan read is read again, by its digest
// (so it is the one planned, byte for byte), only to pull the file.
func syncOCIBundle(ctx context.Context, s registry, ep *ocitransport.Endpoint, e *ociSyncEntry, files ociFiles) {
	key := e.fileKey
	f := files[key]
	switch {
	case f == nil:
		f = &ociFile{}
		files[key] = f
	case f.err != nil:
		refuse(e, cliutil.Failf(amp.ErrName(errName(f.err)), "the file of a candidate already refused in this sync: %s", errMessage(f.err)))
		return
	case f.inspected && annotationMismatch(e.art, f.bundleID, f.version):
		refuse(e, errAnnotationMismatch())
		return
	case f.imported:
		e.BundleID, e.Version, e.Outcome = cliutil.Sanitize(f.bundleID), f.version, ociUnchanged
		return
	}
	// Verdicts on the file's bytes are kept; a transient failure is not
	// the file's.
	fileRefused := func(err error, pulled bool) {
		if fileVerdict(ctx, err, pulled) {
			f.err = err
		}
		refuse(e, err)
	}
	m, err := ep.Manifest(ctx, e.art.Descriptor)
	if err != nil {
		refuse(e, err) // the manifest's fault or the registry's, not the file's
		return
	}
	sp, err := spoolOCIBundle(ctx, ep, m)
	if err != nil {
		fileRefused(err, false)
		return
	}
	defer sp.Close()
	in, err := bundle.Inspect(sp.File, 0)
	if err != nil {
		fileRefused(err, true)
		return
	}
	f.inspected, f.bundleID, f.version = true, in.Manifest.BundleID, in.Manifest.Version
	if annotationMismatch(e.art, f.bundleID, f.version) {
		refuse(e, errAnnotationMismatch())
		return
	}
	if _, err := sp.File.Seek(0, 0); err != nil {
		refuse(e, cliutil.Failf("io_error", "cannot read back the pulled bundle").WithCause(err))
		return
	}
	res, err := s.Import(ctx, sp.File, resolver.ImportOptions{FileSHA256: e.art.FileSHA256})
	if err != nil {
		fileRefused(err, true)
		return
	}
	f.imported = true
	e.BundleID, e.Version = cliutil.Sanitize(res.BundleID), res.Version
	if res.Unchanged {
		e.Outcome = ociUnchanged
	} else {
		e.Outcome = ociImported
	}
}

func printOCISync(env *cliutil.Env, rep *ociSyncReport) {
	w := env.Stdout
	fmt.Fprintf(w, "sync from %s\n", cliutil.Sanitize(rep.Source))
	for _, e := range rep.Entries {
		what := e.Kind
		if e.BundleID != "" {
			what = fmt.Sprintf("%s %s version %d", e.Kind, e.BundleID, e.Version)
		}
		fmt.Fprintf(w, "  %-10s %s  %s", e.Outcome, cliutil.Sanitize(e.Ref), what)
		if e.Error != "" {
			fmt.Fprintf(w, "  (%s: %s)", e.Error, e.Message)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d imported, %d applied, %d unchanged, %d refused\n", rep.count(ociImported), rep.count(ociApplied), rep.count(ociUnchanged), rep.count(ociRefused))
}

// ociSyncExit follows syncExit: 0 or 1, or with detailed 0, 10, 11.
func ociSyncExit(rep *ociSyncReport, detailed bool) error {
	return syncExitOf(rep.count(ociRefused), rep.count(ociImported)+rep.count(ociApplied)+rep.count(ociPlanned), detailed)
}
