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
	// cut is set on a bundle refused for referrers it left unread: not
	// installed, it still holds back the older versions of its bundle_id
	// when it verifies (applyOCIBundles).
	cut bool
}

// ociListing is the referrers listing of one bundle manifest: the tags
// that name it, and how many statement manifests new to the run it lists
// when that was over its first share.
type ociListing struct {
	tags []*ociSyncEntry
	need int
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
	defer func() { err = ociFlagHint(err) }() // the library names its Options, the CLI its flags
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
	// Only the tags planned count against MaxTags: a flood of tags under
	// other names is read and dropped (docs/SPEC-DECISIONS.md OCI-23).
	tags, err := ep.TagsWhere(ctx, func(t string) bool {
		ok, _ := path.Match(pattern, t)
		return ok && !ocitransport.IsReferrersTag(t)
	})
	if errors.Is(err, ocitransport.ErrTagsOverMax) {
		// The library names its own bound; the hint is the CLI's.
		return nil, cliutil.Failf(ocitransport.ErrTooMany, "more than %d tags match --tag-pattern: narrow the pattern", ocitransport.DefaultMaxTags)
	}
	if err != nil {
		return nil, err
	}
	p := &ociPlan{rep: &ociSyncReport{Source: loc.String()}, loc: loc, seen: map[string]bool{}, unlisted: map[string]int{}}
	bundles := p.planTags(ctx, ep, tags)
	p.planReferrers(ctx, ep, ociListingsOf(bundles))
	if w := unlistedEntry(loc, p.unlisted); w != nil {
		p.rep.Entries = append(p.rep.Entries, w)
	}
	order := map[string]int{ocitransport.KindRotation: 0, ocitransport.KindRevocation: 1, ocitransport.KindBundle: 2, ocitransport.KindHeartbeat: 3}
	sort.SliceStable(p.rep.Entries, func(i, j int) bool {
		return rank(order, p.rep.Entries[i]) < rank(order, p.rep.Entries[j])
	})
	return p.rep, nil
}

// ociPlan is a plan planOCISync is making: the report, the source, the
// statement manifests already planned (by digest), the cache its
// referrers listings share, and how many skipped referrers the report
// lists one by one, then the count by error name of the rest.
type ociPlan struct {
	rep      *ociSyncReport
	loc      ocitransport.Location
	seen     map[string]bool
	cache    *ocitransport.StatementCache
	listed   int
	unlisted map[string]int
}

// planTags plans each tag (those the pattern matches, no referrers tag:
// TagsWhere kept only those): a bundle, a statement tagged on its own, or
// a skipped or refused entry. It returns the bundles, whose referrers are
// read next.
func (p *ociPlan) planTags(ctx context.Context, ep *ocitransport.Endpoint, tags []string) []*ociSyncEntry {
	var bundles []*ociSyncEntry
	for _, t := range tags {
		e := &ociSyncEntry{Ref: p.loc.WithReference(t).String(), Outcome: ociPlanned}
		p.rep.Entries = append(p.rep.Entries, e)
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
			p.seen[a.Descriptor.Digest.String()] = true
		}
	}
	return bundles
}

// ociListingsOf groups bundles by manifest digest: tags on one manifest
// are one referrers listing, in the order of their first tag.
func ociListingsOf(bundles []*ociSyncEntry) []*ociListing {
	var listings []*ociListing
	byDigest := map[string]*ociListing{}
	for _, b := range bundles {
		d := b.art.Descriptor.Digest.String()
		l := byDigest[d]
		if l == nil {
			l = &ociListing{}
			byDigest[d] = l
			listings = append(listings, l)
		}
		l.tags = append(l.tags, b)
	}
	return listings
}

// planReferrers plans the statements of every bundle offered: a
// revocation attached to an older version still counts. A referrer that
// is malformed is reported and skipped: the bundle is still synced. A
// bundle whose referrers were not all read (its listing failed, over
// MaxReferrers or otherwise, or its share of the fetches was spent) is
// refused: a revocation may be among them (OCI-13, amended). A listing
// over its share in the first pass is read in a second, with what the
// first left (OCI-13, amended in review 36).
func (p *ociPlan) planReferrers(ctx context.Context, ep *ocitransport.Endpoint, listings []*ociListing) {
	p.cache = &ocitransport.StatementCache{Listings: len(listings)}
	var second []*ociListing
	for _, l := range listings {
		refs, skipped, need, err := ep.StatementsFitting(ctx, l.tags[0].art, p.cache)
		if err == nil && need > 0 {
			l.need = need
			second = append(second, l)
			continue
		}
		p.planListing(l, refs, skipped, err)
	}
	// The fewest first: what one leaves unused is shared by those after it.
	sort.SliceStable(second, func(i, j int) bool { return second[i].need < second[j].need })
	for i, l := range second {
		p.cache.SetShare(p.cache.Left() / (len(second) - i))
		refs, skipped, err := ep.StatementsCached(ctx, l.tags[0].art, p.cache)
		p.planListing(l, refs, skipped, err)
	}
}

// planListing plans what the listing l read: its skipped referrers (at most
// maxOCISkippedEntries of the run one by one, the rest counted), its
// bundles refused and cut when its referrers were not all read, and each
// statement it returned that the plan does not hold yet.
func (p *ociPlan) planListing(l *ociListing, refs []*ocitransport.Artifact, skipped []error, err error) {
	b := l.tags[0]
	for _, serr := range skipped {
		if p.listed >= maxOCISkippedEntries {
			p.unlisted[errName(serr)]++
			continue
		}
		p.listed++
		w := &ociSyncEntry{Ref: b.Ref, Kind: "referrers", Outcome: ociSkipped}
		w.Error, w.Message = errName(serr), cliutil.Sanitize(errMessage(serr))
		p.rep.Entries = append(p.rep.Entries, w)
	}
	var unread error
	switch {
	case err != nil:
		unread = cliutil.Failf(amp.ErrName(errName(err)), "the bundle's referrers were not all read (%s): not installed in this run", errMessage(err))
	case ocitransport.TooManyStatements(skipped):
		unread = cliutil.Failf(ocitransport.ErrTooMany, "the bundle's referrers were not all read (this sync's share of statement fetches for it, %d, is spent): not installed in this run", p.cache.Share())
	}
	if unread != nil {
		for _, t := range l.tags {
			refuse(t, unread)
			t.cut = true
		}
	}
	for _, a := range refs {
		if p.seen[a.Descriptor.Digest.String()] {
			continue
		}
		p.seen[a.Descriptor.Digest.String()] = true
		e := &ociSyncEntry{Ref: p.loc.WithReference(a.Descriptor.Digest.String()).String(), Kind: a.Kind, Outcome: ociPlanned, art: a}
		p.rep.Entries = append(p.rep.Entries, e)
	}
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
// nothing in the store and does not stop the others. Before the first
// bundle is imported every cut candidate is judged (holdCut).
func applyOCISync(ctx context.Context, s registry, ep *ocitransport.Endpoint, rep *ociSyncReport) {
	files := ociFiles{}
	var holds ociHolds
	for _, e := range rep.Entries {
		if e.Outcome != ociPlanned {
			continue
		}
		if e.Kind == ocitransport.KindBundle {
			if holds == nil {
				holds = holdCut(ctx, s, ep, rep, files)
			}
			applyOCIBundles(ctx, s, ep, rep, e, files, holds)
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

// ociHold is what a cut candidate holds back: every candidate whose file
// is its bundle_id at or below version (docs/SPEC-DECISIONS.md OCI-9,
// amended in reviews 39 and 45).
type ociHold struct {
	version uint64
	// installed: the store holds that very bundle, so the candidates it
	// holds back are superseded, not refused.
	installed bool
	// ref is the cut candidate's reference (sanitized), named in the
	// refusal of each candidate it holds back.
	ref string
}

// ociHolds are a sync's holds, by the bundle_id of the cut candidate's
// file: its header, read and judged by the store.
type ociHolds map[string]ociHold

// raise holds back bundleID at or below h.version: the highest hold of a
// bundle_id counts.
func (hs ociHolds) raise(bundleID string, h ociHold) {
	if cur, ok := hs[bundleID]; !ok || h.version > cur.version || (h.version == cur.version && !h.installed) {
		hs[bundleID] = h
	}
}

// apply refuses e (or supersedes it) when a hold covers bundleID at
// version; it says whether one did. The refusal names the cut tag that
// holds e back and how to sync without it.
func (hs ociHolds) apply(e *ociSyncEntry, bundleID string, version uint64) bool {
	h, ok := hs[bundleID]
	if !ok || version > h.version {
		return false
	}
	if h.installed {
		e.Outcome = ociSuperseded
		return true
	}
	refuse(e, cliutil.Failf(ocitransport.ErrTooMany, "held back by %s: version %d of this bundle_id verifies as the store would take it, but its referrers were not all read; no version at or below it is installed in this run (leave that tag out with --tag-pattern to install this one)", h.ref, h.version))
	return true
}

// holdCut judges every candidate cut at the plan (its referrers not all
// read) before any bundle is imported: each is pulled and judged by the
// store's own verdict (checkOCIBundle), never installed. Only one whose
// file the store would take (or holds already) holds back: every
// candidate whose file is its bundle_id at or below its version,
// annotated or not (its header, read from the file, names them), so
// whoever pushes referrers at the newest version does not choose the
// version that lands. Any other holds nothing back and is refused with
// its own error: a file refused (forged, revoked, under a floor, a
// rollback), and a judgement that failed for any other reason (the
// registry's error, a stall, the store's or the agent's failure, the
// deadline), since a header not judged proves nothing of its bundle_id,
// still less the annotations, which anyone who may push writes.
// docs/SPEC-DECISIONS.md OCI-9, amended in reviews 36, 39 and 45.
func holdCut(ctx context.Context, s registry, ep *ocitransport.Endpoint, rep *ociSyncReport, files ociFiles) ociHolds {
	holds := ociHolds{}
	for _, c := range rep.Entries {
		if !c.cut {
			continue
		}
		cutBy := *c
		ran, unchanged := false, false
		err := syncOCIBundle(ctx, s, ep, c, files, nil, func(f io.Reader) error {
			var err error
			ran = true
			unchanged, err = checkOCIBundle(ctx, s, f)
			return err
		})
		f := files[c.fileKey]
		if err != nil || f == nil || !f.inspected || !(ran || f.checked) {
			continue // c's refusal is its error; it holds nothing back
		}
		if ran {
			f.checked, f.unchanged = true, unchanged // one pull per file however many tags name it
		}
		holds.raise(f.bundleID, ociHold{version: f.version, installed: f.unchanged, ref: cliutil.Sanitize(c.Ref)})
		c.Outcome, c.Error, c.Message = cutBy.Outcome, cutBy.Error, cutBy.Message
	}
	return holds
}

// checkOCIBundle judges the pulled file f by the store's own verdict,
// installing nothing (resolver.Store.CheckImport: the verification, then
// the refusals made before staging: a revoked version, a rollback, a
// pinned floor, expiry by the store's floor), through an agent's admin
// socket as on a local store (admin.Registry.CheckImport); unchanged when
// the store holds that very bundle. An agent older than that operation
// answers unsupported: the candidate then holds nothing back.
func checkOCIBundle(ctx context.Context, s registry, f io.Reader) (unchanged bool, err error) {
	res, err := s.CheckImport(ctx, f)
	if err != nil {
		return false, err
	}
	return res.Unchanged, nil
}

// applyOCIBundles syncs the bundle e and the other candidates of its
// bundle_id: newest first by the annotations (a hint only), each pulled,
// checked against its annotations and verified by the import; the first
// imported (or already installed) one supersedes the rest. A refused
// candidate falls back to the next, so a forged or broken tag cannot keep
// a genuine one out; a rollback refusal ends the search (every older
// candidate would be one too). A candidate a cut one holds back (holds,
// by its file's bundle_id and version) is refused oci_too_many
// (holdCut). A bundle without a bundle_id annotation is synced alone,
// held back by its file's header as any other.
func applyOCIBundles(ctx context.Context, s registry, ep *ocitransport.Endpoint, rep *ociSyncReport, e *ociSyncEntry, files ociFiles, holds ociHolds) {
	if e.art.BundleID == "" {
		syncOCIBundle(ctx, s, ep, e, files, holds, nil)
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
		syncOCIBundle(ctx, s, ep, c, files, holds, nil)
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
	// checked: a cut candidate's file the store would take (holdCut);
	// unchanged: the store holds that very bundle.
	checked, unchanged bool
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
// oci_annotation_mismatch), must not be held back by a cut candidate
// (holds: by its annotations before the pull, by its header after), and
// the import verifies it as any file. With verify, the file is only given
// to verify, not imported: e is refused when it fails, left as it was
// when it passes. The error is e's refusal (nil: none). A file this sync
// already pulled is judged by what was learnt of it (files), not pulled
// again, unless it is the bundle its annotations name and was not
// refused. The manifest the plan read is read again, by its digest (so
// it is the one planned, byte for byte), only to pull the file.
func syncOCIBundle(ctx context.Context, s registry, ep *ocitransport.Endpoint, e *ociSyncEntry, files ociFiles, holds ociHolds, verify func(io.Reader) error) error {
	fail := func(err error) error {
		refuse(e, err)
		return err
	}
	if e.art.BundleID != "" && holds.apply(e, e.art.BundleID, e.art.Version) {
		return nil // the file is that bundle, or refused as not being it
	}
	key := e.fileKey
	f := files[key]
	switch {
	case f == nil:
		f = &ociFile{}
		files[key] = f
	case f.err != nil:
		return fail(cliutil.Failf(amp.ErrName(errName(f.err)), "the file of a candidate already refused in this sync: %s", errMessage(f.err)))
	case f.inspected && annotationMismatch(e.art, f.bundleID, f.version):
		return fail(errAnnotationMismatch())
	case f.inspected && holds.apply(e, f.bundleID, f.version):
		return nil
	case (f.imported || f.checked) && verify != nil:
		return nil // judged already in this sync: the store takes it
	case f.imported:
		e.BundleID, e.Version, e.Outcome = cliutil.Sanitize(f.bundleID), f.version, ociUnchanged
		return nil
	}
	// Verdicts on the file's bytes are kept; a transient failure is not
	// the file's.
	fileRefused := func(err error, pulled bool) error {
		if fileVerdict(ctx, err, pulled) {
			f.err = err
		}
		return fail(err)
	}
	m, err := ep.Manifest(ctx, e.art.Descriptor)
	if err != nil {
		return fail(err) // the manifest's fault or the registry's, not the file's
	}
	sp, err := spoolOCIBundle(ctx, ep, m)
	if err != nil {
		return fileRefused(err, false)
	}
	defer sp.Close()
	in, err := bundle.Inspect(sp.File, 0)
	if err != nil {
		return fileRefused(err, true)
	}
	f.inspected, f.bundleID, f.version = true, in.Manifest.BundleID, in.Manifest.Version
	if annotationMismatch(e.art, f.bundleID, f.version) {
		return fail(errAnnotationMismatch())
	}
	if holds.apply(e, f.bundleID, f.version) {
		return nil
	}
	if _, err := sp.File.Seek(0, 0); err != nil {
		return fail(cliutil.Failf("io_error", "cannot read back the pulled bundle").WithCause(err))
	}
	if verify != nil {
		if err := verify(sp.File); err != nil {
			return fileRefused(err, true)
		}
		return nil
	}
	res, err := s.Import(ctx, sp.File, resolver.ImportOptions{FileSHA256: e.art.FileSHA256})
	if err != nil {
		return fileRefused(err, true)
	}
	f.imported = true
	e.BundleID, e.Version = cliutil.Sanitize(res.BundleID), res.Version
	if res.Unchanged {
		e.Outcome = ociUnchanged
	} else {
		e.Outcome = ociImported
	}
	return nil
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
