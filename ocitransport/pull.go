package ocitransport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// CopyBufferSize is the one buffer a pull or push streams through.
const CopyBufferSize = 1 << 20

// Resolve reads the manifest ref (a tag or a sha256 digest) names,
// bounded, checks it against its descriptor (and the digest ref names)
// and that it is an artifact of ours.
func (e *Endpoint) Resolve(ctx context.Context, ref string) (*Artifact, error) {
	if ref == "" {
		return nil, fail(ErrReference, "the OCI reference names no tag or digest")
	}
	desc, err := e.src.Resolve(ctx, ref)
	if err != nil {
		return nil, wrap(err, "resolving the reference")
	}
	if strings.HasPrefix(ref, "sha256:") && desc.Digest.String() != ref {
		return nil, fail(ErrDigest, "the registry answered another digest than the one asked for")
	}
	return e.fetchManifest(ctx, desc, e.o.MaxManifestSize)
}

// fetchManifest reads the manifest desc names, at most max bytes.
func (e *Endpoint) fetchManifest(ctx context.Context, desc ocispec.Descriptor, max int64) (*Artifact, error) {
	max = min(max, e.o.MaxManifestSize)
	if err := checkManifestDescriptor(desc, max); err != nil {
		return nil, err
	}
	raw, err := e.readSmall(ctx, desc, max)
	if err != nil {
		return nil, err
	}
	return DecodeManifest(raw, desc, e.o.MaxBlobSize)
}

// checkManifestDescriptor refuses, before any request, a descriptor
// fetchManifest could not read: not an image manifest's media type
// (oci_not_an_ampbundle_artifact), a size over max
// (oci_manifest_too_large) or not positive (oci_manifest_invalid), a
// digest that is not a valid sha256 one (oci_digest_mismatch, as openBlob
// says it). What passes is bounded: a 71-byte digest, a size in (0, max].
func checkManifestDescriptor(desc ocispec.Descriptor, max int64) error {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return fail(ErrNotBundle, "the reference is not an OCI image manifest")
	}
	if desc.Size > max {
		return fail(ErrManifestTooBig, "the manifest is larger than %d bytes", max)
	}
	if desc.Size <= 0 {
		return fail(ErrManifest, "a manifest or statement descriptor has no size")
	}
	if desc.Digest.Validate() != nil || desc.Digest.Algorithm() != digest.SHA256 {
		return fail(ErrDigest, "a descriptor's digest is not a valid sha256 digest")
	}
	return nil
}

// WriteBundle streams the bundle file of a (KindBundle) into w: each layer
// checked against its digest as it streams, the whole against the
// manifest's size and SHA-256, all the layers within one time budget
// (fileBudget: oci_too_slow past it). On an error, w has received part of the
// file: write to a temporary file (PullFile does).
func (e *Endpoint) WriteBundle(ctx context.Context, a *Artifact, w io.Writer) error {
	if a.Kind != KindBundle {
		return fail(ErrNotBundle, "the artifact is a %s statement, not a bundle", a.Kind)
	}
	hw := &hashWriter{h: sha256.New()}
	mw := io.MultiWriter(w, hw)
	buf := make([]byte, CopyBufferSize)
	// One clock over every layer's request (docs/SPEC-DECISIONS.md OCI-34).
	bud := e.o.startBudget(ctx, "layers of a file", len(a.Manifest.Layers), layerBytes(a.Manifest.Layers), pullRequests)
	defer bud.stop()
	for _, l := range a.Manifest.Layers {
		if err := bud.check(); err != nil {
			return err
		}
		if err := e.copyBlob(bud.ctx, l, mw, buf); err != nil {
			return bud.failed(err)
		}
	}
	return a.checkFile(hw)
}

// checkFile says whether hw, the layers of the bundle a streamed in
// order, is the file a's manifest names: its size (oci_size_mismatch) and
// SHA-256 (oci_digest_mismatch). Each layer matching its own digest does
// not make it so: the parts of a genuine file listed in another order do
// too.
func (a *Artifact) checkFile(hw *hashWriter) error {
	if hw.n != a.FileSize {
		return fail(ErrSize, "the layers are not the file size the manifest says")
	}
	if !bytes.Equal(hw.h.Sum(nil), a.FileSHA256) {
		return fail(ErrDigest, "the layers are not the file the manifest's SHA-256 names")
	}
	return nil
}

// PullFile writes the bundle file of a to path: into a temporary file next
// to it (bundlebuild.CreateTemp: named and locked as the house's temporary
// files), synced, renamed over path only when every check passed, and
// path's folder synced after the rename, so that the new name is durable
// when PullFile returns (renameSynced, docs/SPEC-DECISIONS.md OCI-26). On
// an error nothing is written at path, but for a folder that could not be
// synced (io_error: the file is at path, its name perhaps not yet
// durable). The house's temporary files that killed writers left in
// path's folder (stale, unlocked: bundlebuild.RemoveStaleTemps) are
// removed first.
//
// path is judged first, before anything is written or removed and before
// any request (regfile.JudgeOutput, docs/SPEC-DECISIONS.md OCI-44,
// CLI-105): a name that stands for one of this process's own descriptors
// (/dev/stdout) is written through a duplicate of it once every check
// passed (pullInto), never opened by name nor renamed over; anything else
// that is not a regular file or nothing (a device, a FIFO, a socket, a
// folder, another process's descriptor, and /dev/null too: the CLI
// discards it before calling here) is io_error, nothing opened. The name
// is judged again just before the rename (renameSynced).
func (e *Endpoint) PullFile(ctx context.Context, a *Artifact, path string) (err error) {
	if stream, err := judgeOutput(path); err != nil || stream {
		if err != nil {
			return err
		}
		return e.pullInto(ctx, a, path)
	}
	bundlebuild.RemoveStaleTemps(filepath.Dir(path), e.o.Now())
	f, err := bundlebuild.CreateTemp(filepath.Dir(path), "pull")
	if err != nil {
		return fail(ErrIO, "cannot create the output file").WithCause(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = e.WriteBundle(ctx, a, f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fail(ErrIO, "cannot write the output file").WithCause(err)
	}
	if err = f.Close(); err != nil {
		return fail(ErrIO, "cannot write the output file").WithCause(err)
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return fail(ErrIO, "cannot write the output file").WithCause(err)
	}
	renamed, err := renameSynced(f.Name(), path, &e.o, "pull")
	if err != nil && renamed {
		return fail(ErrIO, "the output file was written, but its folder could not be synced").WithCause(err)
	}
	if err != nil {
		return fail(ErrIO, "cannot write the output file").WithCause(err)
	}
	return nil
}

// judgeOutput is the CLI's output rule (regfile.JudgeOutput;
// docs/SPEC-DECISIONS.md CLI-105) for a pull's path: stream says it names
// one of this process's own descriptors, to be written through a
// duplicate of it; nothing there or a regular file is false; anything
// else (/dev/null included) is io_error, nothing opened or replaced.
func judgeOutput(path string) (stream bool, err error) {
	k, err := regfile.JudgeOutput(path)
	if err == nil && k == regfile.OutputDiscard {
		err = regfile.ErrNotRegular
	}
	if errors.Is(err, regfile.ErrNotRegular) {
		return false, fail(ErrIO, "the output is not a regular file (a device, a pipe, a socket, a folder or another process's descriptor); nothing is written into it or replaces it")
	}
	if err != nil {
		return false, fail(ErrIO, "cannot examine the output file").WithCause(err)
	}
	return k == regfile.OutputOwn, nil
}

// pullInto writes the bundle file of a to path, a name that stands for
// one of this process's own descriptors (judgeOutput): into a temporary
// file in the system's temporary folder first, every check passed
// (WriteBundle), then copied through a duplicate of the descriptor
// (regfile.OpenOutputStream: the name is never opened). The temporary
// file is removed.
func (e *Endpoint) pullInto(ctx context.Context, a *Artifact, path string) error {
	f, err := bundlebuild.CreateTemp(os.TempDir(), "pull")
	if err != nil {
		return fail(ErrIO, "cannot create a temporary file for the bundle").WithCause(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := e.WriteBundle(ctx, a, f); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(ErrIO, "cannot read back the bundle").WithCause(err)
	}
	w, err := regfile.OpenOutputStream(path)
	if err != nil {
		return fail(ErrIO, "cannot write the output").WithCause(err)
	}
	_, err = io.Copy(w, f)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(ErrIO, "cannot write the output").WithCause(err)
	}
	return nil
}

// Statement returns the signed statement a (a statement's artifact)
// carries, checked against its digest. It is verified by the store that
// applies it.
func (e *Endpoint) Statement(ctx context.Context, a *Artifact) ([]byte, error) {
	if a.Kind == KindBundle {
		return nil, fail(ErrNotBundle, "the artifact is a bundle, not a statement")
	}
	data, err := e.readSmall(ctx, a.Manifest.Layers[0], MaxStatementSize)
	if err != nil {
		return nil, err
	}
	if StatementKind(data) != a.Kind {
		return nil, fail(ErrManifest, "the statement is not of the kind its artifactType says")
	}
	return data, nil
}

// Statements returns the statements whose subject is the bundle b: the
// OCI 1.1 referrers of its manifest (a registry without the referrers API:
// the referrers tag schema), at most MaxReferrers, those of other
// artifact types left out. Any malformed referrer fails the whole list.
func (e *Endpoint) Statements(ctx context.Context, b *Artifact) ([]*Artifact, error) {
	out, skipped, err := e.StatementsSkipping(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		return nil, skipped[0]
	}
	return out, nil
}

// StatementsSkipping is Statements that leaves out a malformed referrer
// (its error in skipped) and keeps the others: a statement is verified by
// the store that applies it, so one bad referrer need not hide the rest
// (docs/SPEC-DECISIONS.md OCI-9). err is a failure of the listing itself,
// oci_too_many past MaxReferrers, found as the pages arrive, or
// oci_too_slow past the time budget of the manifests it fetches
// (fileBudget, OCI-36).
func (e *Endpoint) StatementsSkipping(ctx context.Context, b *Artifact) (out []*Artifact, skipped []error, err error) {
	return e.StatementsCached(ctx, b, nil)
}

// StatementsCached is StatementsSkipping sharing cache with the other
// listings of one run (a sync): a referrer digest any of them listed is
// fetched once, its failure is in skipped once, and the artifacts returned
// are Trimmed (docs/SPEC-DECISIONS.md OCI-13, amended). A descriptor that
// could not be fetched (checkManifestDescriptor) is skipped before the
// cache: it costs the run nothing and is kept nowhere. The listing fetches
// at most cache.Share() manifests the cache has not seen; a referrer past
// them is skipped as oci_too_many (TooManyStatements says so: the
// bundle's statements were not all read). With a nil cache it is
// StatementsSkipping: the listing on its own, the artifacts whole.
func (e *Endpoint) StatementsCached(ctx context.Context, b *Artifact, cache *StatementCache) (out []*Artifact, skipped []error, err error) {
	out, skipped, _, err = e.statements(ctx, b, cache, false)
	return out, skipped, err
}

// StatementsFitting is StatementsCached for a first pass over the
// listings of a run: a listing whose statement manifests new to the run
// are more than cache.Share() is left whole for a second pass (need, how
// many it would fetch, is then over 0): nothing fetched, nothing reported,
// nothing returned. The second pass reads it with StatementsCached, each
// such listing's share what the first pass left (Left, SetShare), so a
// share the other listings did not use is not lost (docs/SPEC-DECISIONS.md
// OCI-13, amended in review 36).
func (e *Endpoint) StatementsFitting(ctx context.Context, b *Artifact, cache *StatementCache) (out []*Artifact, skipped []error, need int, err error) {
	return e.statements(ctx, b, cache, true)
}

// statements is StatementsCached, or StatementsFitting when fit.
func (e *Endpoint) statements(ctx context.Context, b *Artifact, cache *StatementCache, fit bool) (out []*Artifact, skipped []error, need int, err error) {
	descs, err := e.referrers(ctx, b.Descriptor)
	if err != nil {
		return nil, nil, 0, err
	}
	maxSize := min(MaxStatementManifestSize, e.o.MaxManifestSize)
	share := cache.Share()
	if fit {
		if need = freshStatements(descs, cache, maxSize); need <= share {
			need = 0
		} else {
			return nil, nil, need, nil
		}
	}
	// One clock over the manifests the listing fetches, each at most
	// maxSize (docs/SPEC-DECISIONS.md OCI-36).
	bud := e.o.startBudget(ctx, "statement manifests listed for a bundle", len(descs), int64(len(descs))*maxSize, pullRequests)
	defer bud.stop()
	seen := make(map[statementKey]bool, len(descs))
	fresh := 0
	for _, d := range descs {
		if !isStatementType(d.ArtifactType) || seen[keyOf(d)] {
			continue // a referrer listed again is fetched once (OCI-13)
		}
		seen[keyOf(d)] = true
		if err := checkManifestDescriptor(d, maxSize); err != nil {
			skipped = append(skipped, err) // no request, nothing kept (OCI-13)
			continue
		}
		if !cache.has(d) {
			if fresh >= share {
				skipped = append(skipped, fail(ErrTooMany, "more than %d statement manifests new to this run listed for one bundle", share).WithCause(errShareSpent))
				continue
			}
			fresh++
			if err := bud.check(); err != nil {
				return nil, nil, 0, err
			}
		}
		c, err := cache.fetch(bud.ctx, e, d)
		if err != nil {
			return nil, nil, 0, bud.failed(err) // the context ended: no verdict
		}
		err = c.err
		if err == nil && c.a.Manifest.Subject.Digest != b.Descriptor.Digest {
			err = fail(ErrManifest, "a referrer's subject is not the bundle")
		}
		if err != nil {
			if !c.reported {
				skipped = append(skipped, err)
			}
			if cache != nil && c.cached {
				c.reported = true // once per run
			}
			continue
		}
		out = append(out, c.a)
	}
	return out, skipped, 0, nil
}

// freshStatements counts the statement manifests of descs a listing would
// fetch: each once, those checkManifestDescriptor refuses and those cache
// holds left out.
func freshStatements(descs []ocispec.Descriptor, cache *StatementCache, maxSize int64) int {
	seen := make(map[statementKey]bool, len(descs))
	n := 0
	for _, d := range descs {
		if !isStatementType(d.ArtifactType) || seen[keyOf(d)] {
			continue
		}
		seen[keyOf(d)] = true
		if checkManifestDescriptor(d, maxSize) == nil && !cache.has(d) {
			n++
		}
	}
	return n
}

// TooManyStatements says whether skipped (StatementsCached's) holds a
// referrer left unread for a bound of the run (oci_too_many): the
// bundle's statements were not all read, a revocation among them maybe.
func TooManyStatements(skipped []error) bool {
	for _, err := range skipped {
		if errors.Is(err, errShareSpent) {
			return true
		}
	}
	return false
}

// errShareSpent marks the oci_too_many of a referrer left unfetched for
// the run's bound (TooManyStatements).
var errShareSpent = errors.New("the run's statement share is spent")

// StatementCache is what the referrers listings of one run (a sync) learnt
// of each statement manifest, by its digest and size (a descriptor
// checkManifestDescriptor accepted for a statement: an image manifest's
// media type, a valid sha256 digest, a size up to
// MaxStatementManifestSize): the manifest Trimmed, or only why it was
// refused, and whether that was reported. A hostile registry listing the
// same MaxReferrers statements under every bundle tag costs one fetch and
// one report each, not one per bundle (docs/SPEC-DECISIONS.md OCI-13,
// amended). Each listing has its own share of fetches (Share), so the
// listings read first cannot spend those of the others; at most
// MaxSyncStatements distinct manifests are fetched in all, a referrer
// past a bound is skipped (oci_too_many). An entry holds at most
// statementEntryBytes, 1,536 bytes (measured: about 1,100 for a
// statement, 320 for a refusal): the 71-byte digest key, the record, the
// Trimmed artifact with its one layer and subject (digests validated, at
// most 135 bytes; the media and artifact types shared constants), or a
// refusal's name and message (never its cause); so a full cache holds at
// most about 146 MiB. Its zero value is ready to use (one listing's share:
// MaxReferrers); it is not safe for concurrent use.
type StatementCache struct {
	// Listings is how many referrers listings the run reads (a sync: its
	// bundles' distinct manifests); 0 counts as 1.
	Listings int

	m     map[statementKey]*cachedStatement
	share int // when over 0, the share SetShare set
}

// statementEntryBytes bounds what one StatementCache entry holds (see
// StatementCache; measured by TestStatementCacheEntryIsBounded).
const statementEntryBytes = 1536

// Share is how many manifests the cache has not seen one listing may
// fetch: MaxSyncStatements over Listings (or what SetShare set), at least
// 1 and at most MaxReferrers (a listing holds no more). A nil cache:
// MaxReferrers.
func (c *StatementCache) Share() int {
	if c == nil {
		return MaxReferrers
	}
	if c.share > 0 {
		return min(MaxReferrers, c.share)
	}
	return min(MaxReferrers, max(1, MaxSyncStatements/max(1, c.Listings)))
}

// SetShare sets the share of the listings read from now on (a second pass:
// what is Left over the listings still to read), at least 1; a fetch past
// MaxSyncStatements in all is still refused (oci_too_many).
func (c *StatementCache) SetShare(n int) { c.share = max(1, n) }

// Left is how many more manifests the cache may fetch in the run:
// MaxSyncStatements less those it holds.
func (c *StatementCache) Left() int {
	if c == nil {
		return MaxSyncStatements
	}
	return max(0, MaxSyncStatements-len(c.m))
}

// statementKey is what a statement manifest's fetch depends on.
type statementKey struct {
	digest   digest.Digest
	size     int64
	manifest bool // the media type is ocispec.MediaTypeImageManifest (always: checkManifestDescriptor)
}

// keyOf is the key of the statement manifest d.
func keyOf(d ocispec.Descriptor) statementKey {
	return statementKey{d.Digest, d.Size, d.MediaType == ocispec.MediaTypeImageManifest}
}

// cachedStatement is one statement manifest of a StatementCache: a (when
// it was read, decoded and is a statement) or err, and whether err was
// reported; cached when the cache keeps it.
type cachedStatement struct {
	a        *Artifact
	err      error
	reported bool
	cached   bool
}

// has says whether c knows the statement manifest d (a nil c: never).
func (c *StatementCache) has(d ocispec.Descriptor) bool {
	if c == nil {
		return false
	}
	_, ok := c.m[keyOf(d)]
	return ok
}

// fetch returns what c knows of the statement manifest d (checked by
// checkManifestDescriptor), fetching it first when c has not seen it,
// unless c is full: then it is skipped, oci_too_many, unfetched. A nil c
// fetches and keeps nothing. err is the context's end (nothing learnt);
// the manifest's own failure is in the result. A manifest that is not a
// statement (a bundle's) keeps only its error.
func (c *StatementCache) fetch(ctx context.Context, e *Endpoint, d ocispec.Descriptor) (*cachedStatement, error) {
	key := keyOf(d)
	if c != nil {
		if cs, ok := c.m[key]; ok {
			return cs, nil
		}
		if len(c.m) >= MaxSyncStatements {
			return &cachedStatement{err: fail(ErrTooMany, "more than %d distinct statement manifests listed in one run", MaxSyncStatements).WithCause(errShareSpent)}, nil
		}
	}
	a, err := e.fetchManifest(ctx, d, MaxStatementManifestSize)
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	if err == nil && a.Kind == KindBundle {
		a, err = nil, fail(ErrManifest, "a referrer is a bundle, not a statement")
	}
	if c == nil {
		return &cachedStatement{a: a, err: err}, nil
	}
	return c.keep(key, a, err), nil
}

// keep stores what was learnt of the statement manifest key names: a
// Trimmed, or err bare (its name and message, which echo no raw input;
// not its cause, which may hold a registry's error text). What it stores
// is at most statementEntryBytes.
func (c *StatementCache) keep(key statementKey, a *Artifact, err error) *cachedStatement {
	cs := &cachedStatement{cached: true}
	if err != nil {
		cs.err = bareError(err)
	} else {
		cs.a = a.Trimmed()
	}
	if c.m == nil {
		c.m = map[statementKey]*cachedStatement{}
	}
	c.m[key] = cs
	return cs
}

// bareError is err's name and message only (an *amp.Error without its
// cause or details); an error of another type is oci_registry_error.
func bareError(err error) error {
	var ae *amp.Error
	if !errors.As(err, &ae) {
		return fail(ErrRegistry, "reading a statement manifest failed")
	}
	return &amp.Error{Code: ae.Code, Name: ae.Name, Message: ae.Message, Final: ae.Final}
}

// Manifest reads again the manifest desc names (the descriptor of an
// artifact Resolve returned, maybe Trimmed), bounded as Resolve reads it
// and checked against desc's digest and size: the artifact is the one
// read before, byte for byte, or the read fails (oci_digest_mismatch,
// oci_size_mismatch, or the transport's error).
func (e *Endpoint) Manifest(ctx context.Context, desc ocispec.Descriptor) (*Artifact, error) {
	return e.fetchManifest(ctx, desc, e.o.MaxManifestSize)
}

// referrers lists the referrers of desc, failing as soon as there are
// more than MaxReferrers: a registry's pages are counted as they arrive
// (each page bounded in bytes by the client). A layout's are the image
// manifests whose subject is desc among its predecessors in the layout's
// graph (what oras-go's registry.Referrers finds), but a predecessor over
// MaxStatementManifestSize is not read: it is no statement, and a manifest
// of up to 4 MiB listing every bundle as a layer cost each listing its
// bytes (docs/SPEC-DECISIONS.md OCI-18).
func (e *Endpoint) referrers(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	tooMany := fail(ErrTooMany, "the bundle has more than %d referrers", MaxReferrers)
	var descs []ocispec.Descriptor
	ctx = withIntent(ctx, respReferrers)
	if e.repo != nil {
		err := e.repo.Referrers(ctx, desc, "", func(page []ocispec.Descriptor) error {
			if len(page) > MaxReferrers-len(descs) {
				return tooMany
			}
			descs = append(descs, page...)
			return nil
		})
		if err != nil {
			return nil, wrap(err, "listing the bundle's referrers")
		}
		return descs, nil
	}
	preds, err := e.src.Predecessors(ctx, desc)
	if err != nil {
		return nil, wrap(err, "listing the bundle's referrers")
	}
	for _, p := range preds {
		if p.MediaType != ocispec.MediaTypeImageManifest || p.Size <= 0 || p.Size > MaxStatementManifestSize {
			continue // no statement (checkManifestDescriptor's bound): not read
		}
		m, err := e.layoutSubject(ctx, p)
		if err != nil {
			return nil, err
		}
		if m.subject.MediaType != desc.MediaType || m.subject.Digest != desc.Digest || m.subject.Size != desc.Size {
			continue // not a referrer of desc: a manifest listing it otherwise
		}
		if len(descs) >= MaxReferrers {
			return nil, tooMany
		}
		descs = append(descs, ocispec.Descriptor{MediaType: p.MediaType, Digest: p.Digest, Size: p.Size, ArtifactType: m.artifactType})
	}
	return descs, nil
}

// layoutSubject is what a layout's referrers listing learns of a
// predecessor manifest: its artifact type and subject (zero when it has
// none, or does not decode).
type layoutSubject struct {
	artifactType string
	subject      ocispec.Descriptor
}

// layoutSubject reads the layout's manifest p (at most
// MaxStatementManifestSize, checked against its digest) once per
// endpoint: a manifest listing many bundles is a predecessor of each, and
// was read again in each bundle's listing, B × M × 16 KiB for a layout of
// M × 16 KiB (docs/SPEC-DECISIONS.md OCI-18, amended in review 81). The
// memo holds one small entry per manifest of the layout read, which the
// layout's graph (in memory) holds already; a read that failed is not
// kept.
func (e *Endpoint) layoutSubject(ctx context.Context, p ocispec.Descriptor) (layoutSubject, error) {
	e.subjectsMu.Lock()
	m, ok := e.subjects[p.Digest]
	e.subjectsMu.Unlock()
	if ok {
		return m, nil
	}
	raw, err := e.readSmall(ctx, p, MaxStatementManifestSize)
	if err != nil {
		return m, err
	}
	var dec struct {
		ArtifactType string              `json:"artifactType"`
		Subject      *ocispec.Descriptor `json:"subject"`
	}
	if json.Unmarshal(raw, &dec) == nil && dec.Subject != nil {
		m = layoutSubject{artifactType: dec.ArtifactType,
			subject: ocispec.Descriptor{MediaType: dec.Subject.MediaType, Digest: dec.Subject.Digest, Size: dec.Subject.Size}}
	}
	e.subjectsMu.Lock()
	if e.subjects == nil {
		e.subjects = map[digest.Digest]layoutSubject{}
	}
	e.subjects[p.Digest] = m
	e.subjectsMu.Unlock()
	return m, nil
}

func isStatementType(t string) bool {
	for _, s := range statementTypes {
		if s.artifactType == t {
			return true
		}
	}
	return false
}

var referrersTagRE = regexp.MustCompile(`^sha256-[0-9a-f]{64}$`)

// IsReferrersTag says whether t is a tag of the referrers tag schema
// (sha256-HEX), which holds an index of a manifest's referrers, not an
// artifact.
func IsReferrersTag(t string) bool { return referrersTagRE.MatchString(t) }

// Tags lists the tags of the repository or layout, each once (a tag the
// registry lists again is left out), at most MaxTags.
func (e *Endpoint) Tags(ctx context.Context) ([]string, error) {
	return e.TagsWhere(ctx, nil)
}

// ListedTagsPerKept is how many tag names a listing reads, kept or not,
// per tag it may keep (MaxTags): TagsWhere reads at most
// ListedTagsPerKept × MaxTags names.
const ListedTagsPerKept = 4

// TagListBytesPerName is what a tag listing's pages may hold in all for
// each name the listing reads (ListedTagsPerKept × MaxTags): a tag of 128
// bytes, its quotes and comma, and room for a page written with
// indentation. The pages may hold one MaxTagPageSize more, for their
// envelopes and a listing of few names (maxTagListBytes).
const TagListBytesPerName = 160

// tagListMaxPages is the most pages a tag listing reads: pages of 1,000
// names (the n it asks for) up to the names it reads, and one more
// (docs/SPEC-DECISIONS.md OCI-23).
func (o *Options) tagListMaxPages() int { return ListedTagsPerKept*o.MaxTags/1000 + 1 }

// maxTagListBytes is the most bytes the pages of one tag listing hold in
// all: TagListBytesPerName for each name it reads, and one MaxTagPageSize
// (math.MaxInt64 where that would wrap; docs/SPEC-DECISIONS.md OCI-39).
func (o *Options) maxTagListBytes() int64 {
	names := int64(ListedTagsPerKept) * int64(o.MaxTags)
	if names > (math.MaxInt64-MaxTagPageSize)/TagListBytesPerName {
		return math.MaxInt64
	}
	return names*TagListBytesPerName + MaxTagPageSize
}

// ErrTagsOverMax is the cause of TagsWhere's oci_too_many when more than
// Options.MaxTags tags pass its filter: a caller says there how its own
// users narrow the filter (a sync's --tag-pattern).
var ErrTagsOverMax = errors.New("narrow the filter")

// TagsWhere lists the tags keep accepts (every valid tag when keep is
// nil), each once, at most MaxTags of them, reading at most
// ListedTagsPerKept × MaxTags names in all (past it, oci_too_many): the
// names keep refuses, a co-tenant's flood of tags under other names among
// them, are read and dropped, and do not count against MaxTags, so a
// caller narrowed to its own tags (a sync's --tag-pattern) still finds
// them among up to three times as many others (docs/SPEC-DECISIONS.md
// OCI-23). More than MaxTags kept is oci_too_many caused by
// ErrTagsOverMax.
func (e *Endpoint) TagsWhere(ctx context.Context, keep func(tag string) bool) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	read, maxRead := 0, ListedTagsPerKept*e.o.MaxTags
	// The pages share one clock and one byte bound (docs/SPEC-DECISIONS.md
	// OCI-39): each page request is judged against the budget as it is
	// sent, each page's bytes against the listing's as they arrive.
	pages, size := e.o.tagListMaxPages(), e.o.maxTagListBytes()
	bud := e.o.startBudget(ctx, "tag pages a listing may read", pages, size, tagPageRequests)
	defer bud.stop()
	lctx := withListingBytes(withIntent(bud.ctx, respTags), size)
	err := e.src.Tags(lctx, "", func(tags []string) error {
		for _, t := range tags {
			if read++; read > maxRead {
				return fail(ErrTooMany, "the repository lists more than %d tag names, more than one listing reads: whoever may push tags to it can flood it (use a repository only trusted publishers push to)", maxRead)
			}
			if !ValidTag(t) || seen[t] || (keep != nil && !keep(t)) {
				continue
			}
			if len(out) >= e.o.MaxTags {
				return fail(ErrTooMany, "more than %d tags pass the listing's filter (Options.MaxTags)", e.o.MaxTags).WithCause(ErrTagsOverMax)
			}
			seen[t] = true
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(bud.failed(err), "listing the tags")
	}
	return out, nil
}
