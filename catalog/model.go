package catalog

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/resolver"
)

// Error names of the package.
const (
	// ErrStoreChanging: the store generation moved during every try of a
	// read, so no consistent model could be taken.
	ErrStoreChanging amp.ErrName = "store_changing"
	// ErrMisconfigured: a Handler was built without a source.
	ErrMisconfigured amp.ErrName = "misconfigured"
	// ErrOverSchemaBudget: a schema the model does not keep, its cost
	// (schemaCost) past what its bundle's share of
	// ReadOptions.MaxCatalogSchemaBytes has left after the bundle's
	// schemas read before it; its page says it is not shown.
	ErrOverSchemaBudget amp.ErrName = "over_schema_budget"
)

// Defaults and bounds of a read.
const (
	// maxReadTries bounds how often Read takes the model again because
	// the store generation moved while it was read.
	maxReadTries = 3
	// DefaultMaxSchemaBytes bounds the schema text kept for a page.
	DefaultMaxSchemaBytes = 256 << 10
	// DefaultMaxMatrixVersions bounds the versions of one capability in
	// the matrices of a model read for the pages (n² cells).
	DefaultMaxMatrixVersions = 32
	// DefaultMaxMatrixSteps bounds the comparisons of all the checks of
	// one matrix the pages compute (compat.MatrixOf): five checks at
	// compat.MaxSteps. Past it the cells left are unknown, never full.
	DefaultMaxMatrixSteps = 5 * compat.MaxSteps
	// DefaultMaxReportFindings bounds the findings the pages' model keeps
	// of one report of a cell (its input, its output, what it loses);
	// the others are counted.
	DefaultMaxReportFindings = 16
	// DefaultMaxMatrixFindingBytes bounds the findings the pages' model
	// keeps of one matrix, counted as their strings and findingCost
	// each; past it a cell keeps none, and they are counted.
	DefaultMaxMatrixFindingBytes = 1 << 20
	// DefaultMaxKeptMatrixBytes bounds what the matrices a model keeps
	// once computed for a page cost together (matrixBytes): each is kept
	// for the model's life, and only past it is the oldest dropped (and
	// computed again when asked after). A matrix costs at most
	// DefaultMaxMatrixFindingBytes of findings and its cells, so it keeps
	// about 48 of the largest, and every ordinary one.
	DefaultMaxKeptMatrixBytes = 64 << 20
	// DefaultMaxCatalogSchemaBytes bounds what the schemas a model keeps
	// cost together (schemaCost: their kept text and $ref entries),
	// each bundle a max-min fair share of it (readSchemas: at least an
	// equal share, and what the bundles of less demand leave); a schema
	// past its bundle's share is kept as ErrOverSchemaBudget
	// (docs/SPEC-DECISIONS.md CATALOG-45, CATALOG-46).
	DefaultMaxCatalogSchemaBytes = 256 << 20
	// ExpiryWarning is how close an expiry must be to be flagged.
	ExpiryWarning = 30 * 24 * time.Hour
)

// Source is what a model is read from: a *resolver.Store, or the admin
// socket client of an agent holding the store (*admin.Registry).
type Source interface {
	Generation() uint64
	Bundles() ([]resolver.Bundle, error)
	Catalog() (*resolver.Catalog, error)
	Resolve(ref capability.SchemaRef) ([]byte, error)
}

// TrustSource is the trust side of a Source; a Source without it gives a
// model whose Trust.Available is false.
type TrustSource interface {
	TrustList() ([]resolver.TrustKey, error)
	TrustThresholds() (map[string]int, error)
	FreshnessPolicy() ([]resolver.Freshness, error)
	Statements() ([]resolver.Statement, error)
	AuditHead() ([]byte, error)
}

// ExportSource is a Source that can write a bundle file: Read takes each
// bundle's signed manifest from its head (created_at, publisher) and stops.
type ExportSource interface {
	Export(bundleID string, w io.Writer) error
}

// liveSource is a Source whose Generation is only that of its last answer
// (mirror.LiveSource: the admin socket client).
type liveSource interface {
	FetchGeneration() (uint64, error)
}

// loaderSource is a Source with a bundle loader (*resolver.Store): Read
// uses it when ReadOptions.Loader is nil.
type loaderSource interface {
	Loader(bundleID string) *resolver.BundleLoader
}

// Parts say what a read takes beyond the bundles and capabilities.
type Parts struct {
	// Manifests: each bundle's created_at and publisher (ExportSource).
	Manifests bool
	// Schemas: the input and output schema of every version, and the
	// schemas they reference that Loader finds.
	Schemas bool
	// Trust: keys, thresholds, freshness, revocations, the audit head.
	Trust bool
	// Compat: the compatibility matrix of every capability, computed in
	// the read (Matrices).
	Compat bool
	// Provided: only what the checker takes of each version (Provided),
	// without the matrices (Compat and LazyCompat imply it).
	Provided bool
	// LazyCompat: Matrix computes a capability's matrix when first
	// asked, not in the read, from the schemas the read kept (Schemas),
	// so that the source may be closed by then: a schema it did not keep
	// whole (over MaxSchemaBytes, or a reference not followed) makes the
	// cells that need it unknown, never full. Provided then reads the
	// kept schemas too.
	LazyCompat bool
}

// AllParts is every part, each matrix computed in the read.
var AllParts = Parts{Manifests: true, Schemas: true, Trust: true, Compat: true}

// PageParts is what the pages need: each matrix is computed when its page
// asks for it (LazyCompat), within the read's bounds, never in the read.
var PageParts = Parts{Manifests: true, Schemas: true, Trust: true, LazyCompat: true}

// ReadOptions configure Read.
type ReadOptions struct {
	Parts Parts
	// Now is the clock of the expiry warnings; nil is time.Now.
	Now func() time.Time
	// Loader serves a bundle's schema artifacts for the matrices and the
	// $ref links (resolver.Store.Loader); nil: only the schemas the
	// descriptors name, read with Resolve.
	Loader func(bundleID string) compat.Loader
	// MaxSchemaBytes bounds one schema kept (default
	// DefaultMaxSchemaBytes); a longer one is kept truncated.
	MaxSchemaBytes int
	// MaxMatrixVersions bounds the versions of one capability compared
	// (0: no bound; the newest are kept, compat.NewestVersions).
	MaxMatrixVersions int
	// MaxMatrixSteps bounds the comparisons of one matrix
	// (compat.MatrixOf; 0: each check's own bound only).
	MaxMatrixSteps int
	// MaxReportFindings and MaxMatrixFindingBytes bound the findings kept
	// of one report of a cell and of one matrix (0: no bound); the
	// others are counted (MatrixFindings).
	MaxReportFindings     int
	MaxMatrixFindingBytes int
	// MaxKeptMatrixBytes bounds what the matrices computed when asked
	// (Parts.LazyCompat) cost kept together (0: no bound); past it the
	// oldest are dropped.
	MaxKeptMatrixBytes int
	// MaxCatalogSchemaBytes bounds what the schemas the model keeps cost
	// together (schemaCost; default DefaultMaxCatalogSchemaBytes): each
	// of the store's bundles has a max-min fair share of it, at least an
	// equal share, so that no bundle's schemas take another's, and what
	// a bundle leaves unused is lent to those of more demand; a schema
	// read past its bundle's share is kept as ErrOverSchemaBudget,
	// without its text.
	MaxCatalogSchemaBytes int
	// Previous is the model this read replaces (the one the Handler
	// serves), or nil. A schema whose bytes hash (SHA-256) as one
	// Previous kept, read with the same MaxSchemaBytes, takes what
	// Previous derived of it (its $id, $ref entries, shadowed members,
	// draft and kept text) rather than being parsed again: schemas are
	// content-addressed, and what is derived of one depends on its bytes
	// alone. The model read keeps nothing of Previous but those.
	Previous *Model
}

// PageReadOptions are the options of the pages' reads: PageParts, and
// the default bounds of the matrices.
func PageReadOptions(now func() time.Time) ReadOptions {
	return ReadOptions{Parts: PageParts, Now: now, MaxMatrixVersions: DefaultMaxMatrixVersions, MaxMatrixSteps: DefaultMaxMatrixSteps,
		MaxReportFindings: DefaultMaxReportFindings, MaxMatrixFindingBytes: DefaultMaxMatrixFindingBytes,
		MaxKeptMatrixBytes: DefaultMaxKeptMatrixBytes}
}

// Model is one consistent read of a store. It is immutable once read,
// but for the matrices it computes when asked (Parts.LazyCompat), which it
// keeps for its life, up to ReadOptions.MaxKeptMatrixBytes of them.
type Model struct {
	Generation   uint64
	ReadAt       time.Time
	Bundles      []Bundle
	Capabilities []Capability
	Aliases      map[string]string
	Trust        Trust
	// Matrices are the compatibility matrices, by capability name
	// (Parts.Compat).
	Matrices []compat.Matrix

	byName   map[string]int
	byBundle map[string]int
	schemas  map[SchemaLoc]Schema
	provided []compat.Provided
	// turnsAt is the earliest time after the read at which a bundle's
	// state changes by the clock alone (it expires, or comes within
	// ExpiryWarning of it); zero: none does.
	turnsAt time.Time
	// expiresAt is the earliest time after the read at which a bundle
	// expires; zero: none does. Past it the model shows that bundle in
	// use when it is not: it is served only read again (Handler).
	expiresAt time.Time
	// provRange are, by capability name, the bounds of its versions in
	// provided; matrix indexes the matrices computed in the read
	// (Parts.Compat, in computed); memo keeps those computed when asked
	// (lazy: Parts.LazyCompat).
	lazy      bool
	provRange map[string][2]int
	// provBundles are the bundles of provided, index for index.
	provBundles []string
	matrix      map[string]int
	computed    []keptMatrix
	memo        *matrixMemo
	bounds      matrixBounds
	// schemaKeys are, by bundle, the keys of the artifacts whose signed
	// manifest entry has the JSON Schema media type: the only artifacts a
	// $ref may bring into the model.
	schemaKeys map[string]map[string]bool
	// schemaIDs are, by bundle, the keys of the kept schemas by $id.
	schemaIDs map[string]map[string]string
	// derived are the schemas read whole and parsed, by the SHA-256 of
	// their bytes, for the next read (ReadOptions.Previous), read with
	// maxSchemaBytes; schemaShare is, by bundle, its share of the schema
	// budget (readSchemas), and schemaSpent what each bundle's kept
	// schemas cost (nil in a model Read did not make: no budget).
	derived        map[[sha256.Size]byte]Schema
	maxSchemaBytes int
	schemaShare    map[string]int
	schemaSpent    map[string]int
}

// Bundle is an installed bundle.
type Bundle struct {
	resolver.Bundle
	// CreatedAt and Publisher come from the signed manifest
	// (Parts.Manifests); empty when not read. Publisher is the
	// publisher's claim: see PublisherVerified.
	CreatedAt string
	Publisher string
	// PublisherVerified: Publisher is the DID of one of VerifiedSigners.
	PublisherVerified bool
	// VerifiedSigners are the trusted keys that signed the bundle: a key
	// of the trust list (Parts.Trust) whose name the store recorded as a
	// signer at import and whose did:key signed the manifest
	// (Parts.Manifests).
	VerifiedSigners []Signer
	// Manifest is the signed manifest, in the view 'ampbundle inspect
	// --json' prints (Parts.Manifests); nil when not read. With
	// Parts.Trust its signatures are marked Verified as VerifiedSigners.
	Manifest *ManifestView
	// ExpiresSoon: the bundle expires within ExpiryWarning of the read.
	ExpiresSoon bool
	// Capabilities are the ids of the capabilities it provides.
	Capabilities []string
}

// Signer is a trusted key that signed a bundle.
type Signer struct {
	Name, DID string
}

// Capability is a capability name and its installed versions, ascending.
type Capability struct {
	Name     string
	Versions []Version
}

// Version is one installed version of a capability.
type Version struct {
	Version    string
	BundleID   string
	Descriptor capability.Descriptor
}

// SchemaLoc names a schema artifact of an installed bundle.
type SchemaLoc struct {
	BundleID string
	Key      string
}

// Schema is the text of a schema artifact as read (at most
// MaxSchemaBytes of it), and the error that kept it from being read.
type Schema struct {
	Loc       SchemaLoc
	ID        string // its top-level $id, if any
	Text      []byte
	Truncated bool
	Err       string
	// refs are the document's $refs in schema positions (refsOf), read
	// before any truncation; shadowed, the members a later member of
	// the same name overrides (refsAndShadowed), which are no anchors.
	refs     []string
	shadowed [][2]int
	// draft is the keyword table of the whole document (tableOf), the
	// one its refs were read by and the printer reads it by; 0 when
	// not read (draftOf then).
	draft int
}

// Trust is the store's trust configuration.
type Trust struct {
	// Available is false when the source has no trust reads.
	Available   bool
	Keys        []TrustKey
	Thresholds  []Threshold
	Freshness   []resolver.Freshness
	Revocations []Revocation
	// AuditHead is the audit chain's head, hex.
	AuditHead string
}

// TrustKey is a trusted publisher key.
type TrustKey struct {
	Name, DID, AddedAt string
	Scopes, Except     []string
}

// Threshold is the number of signatures a scope requires.
type Threshold struct {
	Scope string
	N     int
}

// Revocation is an applied revocation statement.
type Revocation struct {
	Seq       uint64
	SHA256    string
	Scope     string
	CreatedAt string
	Keys      []string
	Bundles   []string
	Err       string // why its content could not be shown
}

// Read takes the model of src: one consistent read, retried while the
// store generation moves during it.
func Read(src Source, opts ReadOptions) (*Model, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	limit.Default(&opts.MaxSchemaBytes, DefaultMaxSchemaBytes)
	limit.Default(&opts.MaxCatalogSchemaBytes, DefaultMaxCatalogSchemaBytes)
	if ls, ok := src.(loaderSource); ok && opts.Loader == nil {
		opts.Loader = func(id string) compat.Loader { return ls.Loader(id) }
	}
	for range maxReadTries {
		m, err := readOnce(src, opts)
		if err != nil {
			return nil, err
		}
		g, err := generationOf(src)
		if err != nil {
			return nil, err
		}
		if g == m.Generation {
			return m, nil
		}
	}
	return nil, amp.Named(0, ErrStoreChanging, "the store changed during every read of the catalog")
}

// generationOf is the store's generation now.
func generationOf(src Source) (uint64, error) {
	if l, ok := src.(liveSource); ok {
		return l.FetchGeneration()
	}
	return src.Generation(), nil
}

func readOnce(src Source, opts ReadOptions) (*Model, error) {
	cat, err := src.Catalog()
	if err != nil {
		return nil, err
	}
	bundles, err := src.Bundles()
	if err != nil {
		return nil, err
	}
	now := opts.Now()
	m := &Model{Generation: cat.Generation, ReadAt: now, Aliases: map[string]string{},
		byName: map[string]int{}, byBundle: map[string]int{}, matrix: map[string]int{}, schemas: map[SchemaLoc]Schema{},
		derived: map[[sha256.Size]byte]Schema{}, maxSchemaBytes: opts.MaxSchemaBytes, schemaSpent: map[string]int{}, schemaShare: map[string]int{},
		schemaKeys: map[string]map[string]bool{}, provRange: map[string][2]int{}, memo: &matrixMemo{kept: map[string]*keptMatrix{}, maxBytes: opts.MaxKeptMatrixBytes},
		bounds: matrixBounds{steps: opts.MaxMatrixSteps, perReport: opts.MaxReportFindings, bytes: opts.MaxMatrixFindingBytes}}
	idsOf := map[string][]string{}
	// named are, by bundle, the keys of the schemas its descriptors
	// name; demand, what its schemas may cost (schemaDemand; absent:
	// unknown, its manifest not read).
	named, demand := map[string]map[string]bool{}, map[string]int{}
	for _, name := range cat.Names {
		c := Capability{Name: name}
		for _, e := range cat.ByName[name] {
			c.Versions = append(c.Versions, Version{Version: e.Descriptor.Version.String(), BundleID: e.BundleID, Descriptor: e.Descriptor})
			idsOf[e.BundleID] = append(idsOf[e.BundleID], e.Descriptor.ID().String())
			nameSchemas(named, e.BundleID, e.Descriptor)
		}
		m.byName[name] = len(m.Capabilities)
		m.Capabilities = append(m.Capabilities, c)
	}
	for k, v := range cat.Aliases {
		m.Aliases[k] = v
	}
	for _, b := range bundles {
		mb := Bundle{Bundle: b, Capabilities: idsOf[b.BundleID]}
		if t, err := time.Parse(time.RFC3339, b.ExpiresAt); err == nil {
			mb.ExpiresSoon = t.Sub(now) < ExpiryWarning
			earliestAfter(&m.turnsAt, now, t.Add(-ExpiryWarning))
			earliestAfter(&m.turnsAt, now, t)
			earliestAfter(&m.expiresAt, now, t)
		}
		// The manifest also gives the media types of the artifacts a
		// $ref may name (Parts.Schemas): without it none is followed.
		if es, ok := src.(ExportSource); ok && (opts.Parts.Manifests || (opts.Parts.Schemas && opts.Loader != nil)) {
			if in := manifestOf(es, b.BundleID); in != nil {
				m.keepManifest(&mb, in, opts.Parts.Manifests)
				demand[b.BundleID] = schemaDemand(in.Manifest, named[b.BundleID], opts.MaxSchemaBytes)
			}
		}
		m.byBundle[b.BundleID] = len(m.Bundles)
		m.Bundles = append(m.Bundles, mb)
	}
	if opts.Parts.Schemas {
		m.readSchemas(src, opts, demand)
	}
	m.indexSchemaIDs()
	if opts.Parts.Trust {
		if err := m.readTrust(src); err != nil {
			return nil, err
		}
		m.verifySigners()
	}
	if opts.Parts.Compat || opts.Parts.Provided || opts.Parts.LazyCompat {
		m.lazy = opts.Parts.LazyCompat
		m.provide(opts)
	}
	if opts.Parts.Compat {
		for _, name := range slices.Sorted(maps.Keys(m.provRange)) {
			m.matrix[name] = len(m.computed)
			m.computed = append(m.computed, m.computeMatrix(name))
			m.Matrices = append(m.Matrices, m.computed[len(m.computed)-1].mx)
		}
	}
	return m, nil
}

// earliestAfter makes t the time *at when it is after the read (now)
// and earlier than the one kept.
func earliestAfter(at *time.Time, now, t time.Time) {
	if t.After(now) && (at.IsZero() || t.Before(*at)) {
		*at = t
	}
}

// expiredSince reports whether a bundle the model shows as not expired
// has expired by now.
func (m *Model) expiredSince(now time.Time) bool {
	return !m.expiresAt.IsZero() && !now.Before(m.expiresAt)
}

// keepManifest keeps what the pages take of a bundle's signed manifest:
// the schema artifacts' keys and, with manifests, its ManifestView (the
// one inspect prints), created_at and the publisher's claim.
func (m *Model) keepManifest(mb *Bundle, in *bundle.Inspection, manifests bool) {
	keys := map[string]bool{}
	for _, a := range in.Manifest.Artifacts {
		if a.MediaType == bundle.MediaTypeSchema {
			keys[a.Key] = true
		}
	}
	m.schemaKeys[mb.BundleID] = keys
	if !manifests {
		return
	}
	v := NewManifestView(in.Manifest, SignaturesOf(in.Signatures, nil), false)
	mb.Manifest = &v
	mb.CreatedAt, mb.Publisher = v.CreatedAt, v.Publisher
}

// verifySigners sets each bundle's VerifiedSigners and whether its
// publisher's claim names one of them. A key counts only when the store
// recorded its name as a signer at import, it is still trusted under that
// name, and its did:key is a key id of the manifest's signatures: a key
// replaced under the same name since is not shown as a signer.
//
// The manifest view's signatures are marked the same way: Verified and
// TrustedAs for such a key, and SignatureChecked once the trust list was
// read.
func (m *Model) verifySigners() {
	for i := range m.Bundles {
		b := &m.Bundles[i]
		if b.Manifest == nil {
			continue // no key id to match: no signer shown
		}
		b.Manifest.SignatureChecked = m.Trust.Available
		for _, k := range m.Trust.Keys {
			if !slices.Contains(b.Signers, k.Name) {
				continue
			}
			signed := false
			for j := range b.Manifest.Signatures {
				sig := &b.Manifest.Signatures[j]
				if sig.KID == k.DID {
					signed = true
					if !sig.Verified {
						sig.Verified, sig.TrustedAs = true, k.Name
					}
				}
			}
			if !signed {
				continue
			}
			b.VerifiedSigners = append(b.VerifiedSigners, Signer{Name: k.Name, DID: k.DID})
			if b.Publisher != "" && b.Publisher == k.DID {
				b.PublisherVerified = true
			}
		}
	}
}

// manifestOf reads the signed manifest at the head of a bundle's export
// and stops the export there: no artifact is read past it. The
// signatures are not checked again: the export is of a bundle the store
// verified at import.
func manifestOf(es ExportSource, bundleID string) *bundle.Inspection {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(es.Export(bundleID, pw))
	}()
	in, err := bundle.Inspect(pr, 0)
	pr.CloseWithError(errManifestRead)
	<-done
	if err != nil {
		return nil
	}
	return in
}

var errManifestRead = errors.New("catalog: the manifest is read")

// readSchemas keeps the text of each version's input and output schema
// and, with a Loader, of the schemas they reference, bundle by bundle in
// schemaOrder (the least demand first). Each bundle's share is an equal
// share of what the bundles before it left of the budget: never less
// than MaxCatalogSchemaBytes over the number of bundles, and what a
// bundle leaves unused is lent to those of more demand (max-min
// fairness, docs/SPEC-DECISIONS.md CATALOG-46). What they keep together
// never passes the budget: each spends at most its share of what is
// left.
func (m *Model) readSchemas(src Source, opts ReadOptions, demand map[string]int) {
	named := map[string][]capability.SchemaRef{} // by bundle, capabilities by name
	for _, c := range m.Capabilities {
		for _, v := range c.Versions {
			named[v.BundleID] = append(named[v.BundleID], v.Descriptor.InputSchema, v.Descriptor.OutputSchema)
		}
	}
	order := m.schemaOrder(named, demand)
	left := opts.MaxCatalogSchemaBytes
	for i, id := range order {
		m.schemaShare[id] = left / (len(order) - i)
		m.readBundleSchemas(src, opts, id, named[id])
		left -= m.schemaSpent[id]
	}
}

// schemaOrder is the order in which readSchemas reads the bundles'
// schemas: the model's bundles and any other a version names, the least
// demand (schemaDemand) first, a bundle of unknown demand last, then by
// id.
func (m *Model) schemaOrder(named map[string][]capability.SchemaRef, demand map[string]int) []string {
	ids := make([]string, 0, len(m.Bundles))
	seen := make(map[string]bool, len(m.Bundles))
	for _, b := range m.Bundles { // each once already (byBundle)
		seen[b.BundleID] = true
		ids = append(ids, b.BundleID)
	}
	for id := range named {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	of := func(id string) int {
		if d, ok := demand[id]; ok {
			return d
		}
		return math.MaxInt // unknown: an equal share of what is left
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(of(a), of(b)), strings.Compare(a, b)) })
	return ids
}

// demandEntriesPart estimates, unparsed, what a schema's $ref entries
// and shadowed spans cost (schemaCost) beyond its text: a part of its
// size (1/demandEntriesPart). A $ref entry costs its text, the $ids it
// is resolved against and 16 bytes, about twice the `"$ref":"…"` member
// it comes from. The estimate only orders the bundles (schemaOrder): a
// bundle's share is of what the bundles before it spent, not of their
// estimates, so one that costs more than estimated takes no more than
// its share.
const demandEntriesPart = 2

// schemaDemand estimates, unparsed, what a bundle's schemas may cost the
// schema budget from its signed manifest: for each artifact signed as a
// JSON Schema or named by one of its descriptors (named), the text kept
// of it (at most maxText) and demandEntriesPart of its size for its
// entries. A schema over the compile limit is kept unread and costs
// nothing.
func schemaDemand(man *bundle.Manifest, named map[string]bool, maxText int) int {
	d := 0
	for _, a := range man.Artifacts {
		if a.MediaType != bundle.MediaTypeSchema && !named[a.Key] || a.Size > offlineschema.MaxCompileBytes {
			continue
		}
		n := int(a.Size)
		d += min(n, maxText) + n/demandEntriesPart
	}
	return d
}

// nameSchemas adds to named the keys of the schemas of the bundle's own
// that the descriptor d names.
func nameSchemas(named map[string]map[string]bool, bundleID string, d capability.Descriptor) {
	for _, ref := range []capability.SchemaRef{d.InputSchema, d.OutputSchema} {
		if ref.BundleID != "" && ref.BundleID != bundleID {
			continue
		}
		if named[bundleID] == nil {
			named[bundleID] = map[string]bool{}
		}
		named[bundleID][ref.ArtifactKey] = true
	}
}

// readBundleSchemas keeps the schemas of the bundle id that its versions
// name (refs, in the order of their capabilities' names) and, with a
// Loader, those they reference as far as the bundle's loader finds
// them: bounded by the bundle's own artifacts.
func (m *Model) readBundleSchemas(src Source, opts ReadOptions, id string, refs []capability.SchemaRef) {
	var queue []SchemaLoc
	for _, ref := range refs {
		loc := SchemaLoc{BundleID: id, Key: ref.ArtifactKey}
		if _, ok := m.schemas[loc]; ok {
			continue
		}
		if ref.BundleID == "" {
			ref.BundleID = id
		}
		data, err := src.Resolve(ref)
		m.keepSchema(loc, data, err, opts)
		queue = append(queue, loc)
	}
	if opts.Loader == nil || len(queue) == 0 {
		return
	}
	slices.SortFunc(queue, func(a, b SchemaLoc) int { return strings.Compare(a.Key, b.Key) })
	l := opts.Loader(id)
	for len(queue) > 0 {
		loc := queue[0]
		queue = queue[1:]
		s := m.schemas[loc]
		// A document names the same reference many times over ("#/$defs/x"
		// under every property): each entry is resolved once, as it
		// resolves the same each time within the read (CATALOG-44).
		resolved := map[string]bool{}
		for _, ref := range s.refs {
			if resolved[ref] {
				continue
			}
			resolved[ref] = true
			key, ok := resolveRef(s, ref, l)
			if !ok || !m.schemaKeys[id][key] {
				continue // only an artifact signed as a JSON Schema
			}
			next := SchemaLoc{BundleID: id, Key: key}
			if _, seen := m.schemas[next]; seen {
				continue
			}
			data, err := l.Load(key)
			m.keepSchema(next, data, err, opts)
			queue = append(queue, next)
		}
	}
}

// keepSchema keeps the schema read at loc: what Previous (or this read)
// derived of the same bytes, or else what it derives of them now, within
// what its bundle's share of the schema budget has left. The text it
// would keep is checked before any parse; its whole cost (schemaCost,
// its entries too) before it is kept.
func (m *Model) keepSchema(loc SchemaLoc, data []byte, err error, opts ReadOptions) {
	s := Schema{Loc: loc}
	if err != nil {
		s.Err = string(amp.NameOf(err))
		if s.Err == "" {
			s.Err = "unreadable"
		}
		m.schemas[loc] = s
		return
	}
	if err := offlineschema.CheckCompileBytes(data); err != nil {
		// No compile loads it: neither its $id nor its $refs are read
		// (docs/SPEC-DECISIONS.md SCHEMA-12).
		s.Err = string(amp.NameOf(err))
		m.schemas[loc] = s
		return
	}
	if m.schemaSpent != nil && m.schemaSpent[loc.BundleID]+min(len(data), opts.MaxSchemaBytes) > m.schemaShare[loc.BundleID] {
		// Its bundle's share is spent: nothing of it is kept nor parsed,
		// and no $ref of it is followed (CATALOG-45).
		s.Err = string(ErrOverSchemaBudget)
		m.schemas[loc] = s
		return
	}
	sum := sha256.Sum256(data)
	d, ok := m.derived[sum]
	if p := opts.Previous; !ok && p != nil && p.maxSchemaBytes == opts.MaxSchemaBytes {
		d, ok = p.derived[sum]
	}
	if !ok {
		d = deriveSchema(data, opts.MaxSchemaBytes)
	}
	s.ID, s.refs, s.shadowed, s.draft, s.Text, s.Truncated = d.ID, d.refs, d.shadowed, d.draft, d.Text, d.Truncated
	if m.schemaSpent != nil {
		cost := schemaCost(s)
		if m.schemaSpent[loc.BundleID]+cost > m.schemaShare[loc.BundleID] {
			// Its entries pass the share: what was derived of it is
			// dropped, not kept for the next read (CATALOG-46).
			m.schemas[loc] = Schema{Loc: loc, Err: string(ErrOverSchemaBudget)}
			return
		}
		m.schemaSpent[loc.BundleID] += cost
	}
	if m.derived == nil {
		m.derived = map[[sha256.Size]byte]Schema{}
	}
	m.derived[sum] = d
	m.schemas[loc] = s
}

// deriveSchema parses a schema document for what the model keeps of it:
// its $id, $ref entries, shadowed members and draft, read from the whole
// document, and at most maxText bytes of its text. A truncated text is a
// copy, so that the model holds no more than it shows of a longer one.
func deriveSchema(data []byte, maxText int) Schema {
	var d Schema
	d.ID = schemaID(data)
	d.refs, d.shadowed, d.draft = refsShadowedDraft(data)
	d.Text = data
	if len(data) > maxText {
		d.Text, d.Truncated = bytes.Clone(data[:maxText]), true
	}
	return d
}

// schemaCost is what a kept schema costs the schema budget: its text,
// its $ref entries and its shadowed spans.
func schemaCost(s Schema) int {
	n := len(s.Text) + 16*len(s.shadowed)
	for _, r := range s.refs {
		n += len(r) + 16
	}
	return n
}

// readTrust reads the trust side, when the source has one.
func (m *Model) readTrust(src Source) error {
	ts, ok := src.(TrustSource)
	if !ok {
		return nil
	}
	keys, err := ts.TrustList()
	if err != nil {
		return err
	}
	th, err := ts.TrustThresholds()
	if err != nil {
		return err
	}
	fr, err := ts.FreshnessPolicy()
	if err != nil {
		return err
	}
	st, err := ts.Statements()
	if err != nil {
		return err
	}
	head, err := ts.AuditHead()
	if err != nil {
		return err
	}
	t := Trust{Available: true, Freshness: fr, AuditHead: hex.EncodeToString(head)}
	for _, k := range keys {
		t.Keys = append(t.Keys, TrustKey{Name: k.Name, DID: k.DID(), AddedAt: k.AddedAt, Scopes: k.Scopes, Except: k.Except})
	}
	for scope, n := range th {
		t.Thresholds = append(t.Thresholds, Threshold{Scope: scope, N: n})
	}
	slices.SortFunc(t.Thresholds, func(a, b Threshold) int { return strings.Compare(a.Scope, b.Scope) })
	for _, s := range st {
		if s.ContentType != bundle.MediaTypeRevocation {
			continue
		}
		r := Revocation{Seq: s.Seq, SHA256: hex.EncodeToString(s.SHA256)}
		if rev, _, err := bundle.ParseRevocation(s.Data); err != nil {
			r.Err = string(amp.NameOf(err))
		} else {
			r.Scope, r.CreatedAt, r.Keys = rev.Scope, rev.CreatedAt, rev.Keys
			for _, b := range rev.Bundles {
				r.Bundles = append(r.Bundles, b.String())
			}
		}
		t.Revocations = append(t.Revocations, r)
	}
	m.Trust = t
	return nil
}

// provide sets up each version for the compatibility checker.
func (m *Model) provide(opts ReadOptions) {
	srcs := map[string]*compat.Source{}
	for _, c := range m.Capabilities {
		vs := compat.NewestVersions(c.Versions, opts.MaxMatrixVersions, func(v Version) capability.Version { return v.Descriptor.Version })
		if len(vs) > 0 {
			m.provRange[c.Name] = [2]int{len(m.provided), len(m.provided) + len(vs)}
		}
		for _, v := range vs {
			s := srcs[v.BundleID]
			if s == nil {
				var l compat.Loader
				if opts.Loader != nil && !m.lazy {
					l = opts.Loader(v.BundleID)
				} else {
					l = &keptLoader{m: m, bundle: v.BundleID}
				}
				s = compat.NewSource(l)
				srcs[v.BundleID] = s
			}
			m.provided = append(m.provided, compat.Provided{Descriptor: v.Descriptor, Src: s})
			m.provBundles = append(m.provBundles, v.BundleID)
		}
	}
}

// keptLoader serves the schemas kept in the model (a source without a
// bundle loader): a $ref to an artifact no descriptor names is unknown.
type keptLoader struct {
	m      *Model
	bundle string
}

func (l *keptLoader) Load(key string) ([]byte, error) {
	s, ok := l.m.schemas[SchemaLoc{BundleID: l.bundle, Key: key}]
	if !ok || s.Err != "" || s.Truncated {
		return nil, amp.Named(0, resolver.ErrArtifactMissing, "the schema is not in the catalog read")
	}
	return s.Text, nil
}

func (l *keptLoader) KeyForID(id string) (string, bool) {
	key, ok := l.m.schemaIDs[l.bundle][id]
	return key, ok
}

// indexSchemaIDs indexes the kept schemas by bundle and $id, the least
// key first when two share an $id.
func (m *Model) indexSchemaIDs() {
	m.schemaIDs = map[string]map[string]string{}
	for loc, s := range m.schemas {
		if s.ID == "" {
			continue
		}
		ids := m.schemaIDs[loc.BundleID]
		if ids == nil {
			ids = map[string]string{}
			m.schemaIDs[loc.BundleID] = ids
		}
		if k, ok := ids[s.ID]; !ok || loc.Key < k {
			ids[s.ID] = loc.Key
		}
	}
}

// Provided are the store's capability versions as the compatibility
// checker takes them (Parts.Compat, Provided or LazyCompat), to compare with
// others.
func (m *Model) Provided() []compat.Provided { return slices.Clone(m.provided) }

// Capability returns the capability name.
func (m *Model) Capability(name string) (Capability, bool) {
	i, ok := m.byName[name]
	if !ok {
		return Capability{}, false
	}
	return m.Capabilities[i], true
}

// Bundle returns the installed bundle id.
func (m *Model) Bundle(id string) (Bundle, bool) {
	i, ok := m.byBundle[id]
	if !ok {
		return Bundle{}, false
	}
	return m.Bundles[i], true
}

// HasMatrix reports whether Matrix has a matrix for the capability
// name, without computing it.
func (m *Model) HasMatrix(name string) bool {
	if _, ok := m.matrix[name]; ok {
		return true
	}
	_, ok := m.provRange[name]
	return ok && m.lazy
}

// compared reports whether the matrix of the capability name compares
// its version (the newest ReadOptions.MaxMatrixVersions are compared,
// compat.NewestVersions), and how many versions it compares.
func (m *Model) compared(name, version string) (bool, int) {
	r, ok := m.provRange[name]
	if !ok {
		return false, 0
	}
	for _, p := range m.provided[r[0]:r[1]] {
		if p.Descriptor.Version.String() == version {
			return true, r[1] - r[0]
		}
	}
	return false, r[1] - r[0]
}

// Matrix returns the compatibility matrix of the capability name: the
// one computed in the read (Parts.Compat), or else computed now and kept
// (Parts.LazyCompat). Its findings are those the read's bounds keep
// (MatrixFindings counts them all).
func (m *Model) Matrix(name string) (compat.Matrix, bool) {
	k, ok := m.lookupMatrix(name)
	if !ok {
		return compat.Matrix{}, false
	}
	return k.mx, true
}

// MatrixFindings returns, by cell of Matrix(name), how many findings its
// input and output reports had before the read's bounds kept some.
func (m *Model) MatrixFindings(name string) ([]int, bool) {
	k, ok := m.lookupMatrix(name)
	if !ok {
		return nil, false
	}
	return slices.Clone(k.findings), true
}

// Schema returns a schema kept in the model.
func (m *Model) Schema(loc SchemaLoc) (Schema, bool) {
	s, ok := m.schemas[loc]
	return s, ok
}
