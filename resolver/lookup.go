package resolver

import (
	"context"
	"encoding/hex"
	"slices"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Entry is one installed descriptor and the bundle that provides it.
type Entry struct {
	Descriptor capability.Descriptor
	BundleID   string
}

// Catalog is an immutable snapshot of the installed capabilities at one
// store generation: what CAP_QUERY and CAP_INVOKE look things up in. Safe
// to share between goroutines.
type Catalog struct {
	Generation uint64
	// Names are the capability names, sorted bytewise.
	Names []string
	// ByName holds each name's descriptors in ascending SemVer order.
	ByName map[string][]Entry
	// Aliases maps legacy types to canonical names. A type that bundles
	// of several authorities claim (docs/SPEC-DECISIONS.md BUNDLE-9) maps
	// to AmbiguousAlias, which names no capability: a reader of Aliases
	// alone answers it 4002 rather than taking one claim, or a slug match,
	// as the answer; TypeClaims gives its claims. So does a type whose
	// alias record does not decode (STORE-5) or whose every claim is of
	// bundles that fail closed (STORE-8): its claims are AmbiguousAlias
	// alone.
	Aliases map[string]string
	// aliasClaims maps every legacy type to the canonical names installed
	// bundles claim for it, sorted (TypeClaims); nil in a catalog built
	// from Aliases alone.
	aliasClaims map[string][]string
	// validUntil is the earliest expiry of the bundles it offers (zero
	// when none expires): the clock moves without the generation.
	validUntil time.Time
}

// AmbiguousAlias is the target Catalog.Aliases gives a legacy type claimed
// for several names: not a capability name, so it resolves to none.
const AmbiguousAlias = "(ambiguous)"

// Versions returns the versions of name, ascending.
func (c *Catalog) Versions(name string) []capability.Version {
	es := c.ByName[name]
	out := make([]capability.Version, len(es))
	for i, e := range es {
		out[i] = e.Descriptor.Version
	}
	return out
}

// Lookup returns the entry of a capability id. A name's entries are in
// ascending order (ByName), so it searches them by halves: a walk made
// the agent's loops over versions (a negotiation's range against every
// served version, docs/SPEC-DECISIONS.md SCALE-2) quadratic in the
// versions of one name. A catalog built out of that order (by hand) is
// still answered, by a walk, when the search misses.
func (c *Catalog) Lookup(id capability.ID) (Entry, bool) {
	es := c.ByName[id.Name]
	i := sort.Search(len(es), func(i int) bool {
		return capability.OrderOldestFirst.CompareVersions(es[i].Descriptor.Version, id.Version) >= 0
	})
	if i < len(es) && es[i].Descriptor.Version == id.Version {
		return es[i], true
	}
	for _, e := range es {
		if e.Descriptor.Version == id.Version {
			return e, true
		}
	}
	return Entry{}, false
}

// TypeClaims returns the canonical names installed bundles claim for the
// legacy type typ, sorted: several when bundles of different authorities
// claim it (docs/SPEC-DECISIONS.md BUNDLE-9; the type then resolves as
// ambiguous, capability.ResolveTypeClaims). A catalog built from Aliases
// alone (one decoded from a document) answers from Aliases.
func (c *Catalog) TypeClaims(typ string) []string {
	if c.aliasClaims != nil {
		return c.aliasClaims[typ]
	}
	if n, ok := c.Aliases[typ]; ok {
		return []string{n}
	}
	return nil
}

// WithTypeClaims returns a copy of c whose TypeClaims answers from claims
// (legacy type -> the canonical names claimed for it), not from Aliases:
// how a catalog decoded from a document (the admin socket's, which carries
// both) keeps a type's several claims. Each list is sorted and
// deduplicated, an empty one is dropped; c and claims are not changed.
func (c *Catalog) WithTypeClaims(claims map[string][]string) *Catalog {
	out := *c
	out.aliasClaims = make(map[string][]string, len(claims))
	for typ, names := range claims {
		if len(names) == 0 {
			continue
		}
		names = append([]string(nil), names...)
		sort.Strings(names)
		out.aliasClaims[typ] = slices.Compact(names)
	}
	return &out
}

// ResolveType maps a legacy type to a canonical name (a canonical name is
// itself, else the names its aliases claim, else a unique slug match; RFC
// 004 A.7).
func (c *Catalog) ResolveType(typ string) (string, error) {
	var claims map[string][]string
	if names := c.TypeClaims(typ); len(names) > 0 {
		claims = map[string][]string{typ: names}
	}
	return capability.ResolveTypeClaims(typ, claims, c.Names)
}

type catalogCache struct {
	mu  sync.Mutex
	cur *Catalog
}

// Catalog returns the snapshot of the current generation, rebuilding it
// when the generation changed or a bundle it offers has expired since.
// Revoked, stale and expired bundles (unless Options.AllowExpired) offer
// nothing: their every use fails 5002. Nor does a bundle one of whose
// stored descriptors does not decode, and a descriptor entry that does
// not decode at all is left out alone: the rest of the store is still
// listed, and Check names each (ProblemDescriptorUnreadable;
// docs/SPEC-DECISIONS.md STORE-2). Nor does a bundle whose record does not
// decode (ProblemBundleUnreadable, STORE-4), and a legacy type whose alias
// record does not decode resolves to no capability
// (ProblemAliasUnreadable, STORE-5), nor one every claim of which is of
// bundles the catalog leaves out (STORE-8): a type claimed is never
// resolved by slug match to another authority's capability.
func (s *Store) Catalog() (*Catalog, error) {
	s.catalog.mu.Lock()
	defer s.catalog.mu.Unlock()
	if c := s.catalog.cur; c != nil && c.Generation == s.gen.Load() &&
		(c.validUntil.IsZero() || s.opts.AllowExpired || s.opts.Now().Before(c.validUntil)) {
		return c, nil
	}
	c := &Catalog{ByName: map[string][]Entry{}, Aliases: map[string]string{}, aliasClaims: map[string][]string{}}
	err := s.db.View(func(tx *bolt.Tx) error {
		c.Generation = getU64(bucket(tx, bMeta).Get([]byte(kGeneration)))
		// Revoked, stale and expired bundles, and those whose record does
		// not decode, offer nothing (fail closed).
		closed, err := s.closedBundles(tx, c)
		if err != nil {
			return err
		}
		// A bundle one of whose stored descriptors does not decode (a
		// damaged record, or one an older build stored under other caps)
		// offers nothing either, and the rest of the store is served:
		// check names it (ProblemDescriptorUnreadable;
		// docs/SPEC-DECISIONS.md STORE-2).
		undecodable := map[string]bool{}
		var entries []Entry
		if err := bucket(tx, bDescriptors).ForEach(func(_, v []byte) error {
			var dr descRecord
			if decode(v, &dr) != nil {
				return nil // its bundle unknown: that capability alone is left out
			}
			if closed[dr.BundleID] {
				return nil
			}
			d, err := capability.DecodeDescriptor(dr.Descriptor)
			if err != nil {
				undecodable[dr.BundleID] = true
				return nil
			}
			entries = append(entries, Entry{Descriptor: d, BundleID: dr.BundleID})
			return nil
		}); err != nil {
			return err
		}
		for _, e := range entries { // a bundle found undecodable after some of its entries: all left out here
			if !undecodable[e.BundleID] {
				c.ByName[e.Descriptor.Name] = append(c.ByName[e.Descriptor.Name], e)
			}
		}
		return catalogAliases(tx, c, func(id string) bool { return closed[id] || undecodable[id] })
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	for name, es := range c.ByName {
		c.Names = append(c.Names, name)
		sort.SliceStable(es, func(i, j int) bool {
			return capability.OrderOldestFirst.CompareVersions(es[i].Descriptor.Version, es[j].Descriptor.Version) < 0
		})
	}
	sort.Strings(c.Names)
	s.catalog.cur = c
	return c, nil
}

// closedBundles returns the installed bundles the catalog leaves out:
// revoked, stale, expired (unless Options.AllowExpired), and each whose
// record does not decode, by its key: whether it is revoked or expired
// cannot be read, so it fails closed alone and the rest of the store is
// served (docs/SPEC-DECISIONS.md STORE-4). It sets c.validUntil to the
// earliest expiry of those not expired. Each record is read once and without
// its signed manifest (listedRecord; STORE-6), in one walk of the
// installed bundles, each line loaded at most once for its staleness and
// its floor together (judge.staleExpired; STORE-10), all judged against
// one trust policy (SCALE-24). A line that cannot be read (its record,
// high-water mark or pin damaged) is judged stale for itself, never
// failing the others (STORE-4); a trust state that cannot be read is an
// error: every judgement rests on it (TSTATE-6).
func (s *Store) closedBundles(tx *bolt.Tx, c *Catalog) (map[string]bool, error) {
	j := s.judge(tx)
	if bucket(tx, bHeartbeat).Stats().KeyN != 0 || !noFreshnessPolicy(tx) {
		if err := j.load(); err != nil {
			return nil, err
		}
	}
	closed := map[string]bool{}
	err := bucket(tx, bBundles).ForEach(func(k, v []byte) error {
		var lr listedRecord // its signed manifest left unread
		if decode(v, &lr) != nil {
			closed[string(k)] = true
			return nil
		}
		r := &lr.bundleRecord
		exp, ok := expiry(*r)
		why, expired := j.staleExpired(string(k), r, exp, ok && !s.opts.AllowExpired)
		if why != "" {
			closed[string(k)] = true
		}
		if r.Revoked != "" {
			closed[r.BundleID] = true
		}
		switch {
		case !ok || s.opts.AllowExpired:
		case expired:
			closed[r.BundleID] = true
		case c.validUntil.IsZero() || exp.Before(c.validUntil):
			c.validUntil = exp
		}
		return nil
	})
	return closed, err
}

// catalogAliases fills c's Aliases and claims from the alias records. A
// claim whose every owner fails closed does not count: a revoked
// squatter's claim would keep another authority's type ambiguous
// (docs/SPEC-DECISIONS.md BUNDLE-9). A record that does not decode, or
// none of whose claims counts, maps its type to AmbiguousAlias, claimed
// for AmbiguousAlias alone: the type resolves to no capability (4002),
// never to a slug match standing in for the claims the record held (a
// capability of another authority), and every other type is served
// (docs/SPEC-DECISIONS.md STORE-5, STORE-8).
func catalogAliases(tx *bolt.Tx, c *Catalog, failsClosed func(bundleID string) bool) error {
	return bucket(tx, bAliases).ForEach(func(k, v []byte) error {
		var ar aliasRecord
		var names []string
		if decode(v, &ar) == nil {
			for _, cl := range ar.claims() {
				if slices.ContainsFunc(cl.Owners, func(o string) bool { return !failsClosed(o) }) {
					names = append(names, cl.Name)
				}
			}
		}
		if len(names) == 0 {
			c.aliasClaims[string(k)] = []string{AmbiguousAlias}
			c.Aliases[string(k)] = AmbiguousAlias
			return nil
		}
		sort.Strings(names)
		c.aliasClaims[string(k)] = names
		c.Aliases[string(k)] = names[0]
		if len(names) > 1 {
			c.Aliases[string(k)] = AmbiguousAlias
		}
		return nil
	})
}

// Bundle describes an installed bundle.
type Bundle struct {
	BundleID   string   `json:"bundle_id"`
	Version    uint64   `json:"version"`
	ImportedAt string   `json:"imported_at"`
	ExpiresAt  string   `json:"expires_at,omitempty"`
	Signers    []string `json:"signers"`
	Artifacts  uint64   `json:"artifacts"`
	Bytes      uint64   `json:"bytes"`
	Highest    uint64   `json:"highest_version"` // the highest version ever imported
	// ManifestSHA256 is the SHA-256, in lowercase hex, of the bundle's
	// signed manifest as stored: the COSE_Sign item exactly as received,
	// which names every artifact by its hash, so that Export writes one
	// file per value. It changes whenever the stored file does, also when
	// a copy of the same release replaces the installed one (BUNDLE-8,
	// TRUST-20) within the second of its import, which neither Version
	// nor ImportedAt shows; what caches an exported file keys it by this
	// (docs/SPEC-DECISIONS.md MIRROR-20). Empty from an older agent's
	// admin socket, which does not report it.
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
	// Revoked, when set, says why the bundle fails closed (5002
	// bundle_revoked at every use): a revocation or trust rm --fail-closed.
	Revoked string `json:"revoked,omitempty"`
	// VersionRevoked says that a revocation statement revoked this
	// version itself (not only its signers): no copy of it can stand, so
	// none is worth fetching (the store refuses every one, revoked).
	VersionRevoked bool `json:"version_revoked,omitempty"`
	// Stale, when set, says why the bundle fails closed as older than the
	// freshness policy allows (5002 bundle_stale at every use).
	Stale string `json:"stale,omitempty"`
	// Expired is set when the bundle has expired, by the store's clock or
	// by the signed times of the keys trusted for it (5002 bundle_expired
	// at every use, unless the store was opened with AllowExpired).
	Expired bool `json:"expired,omitempty"`
}

// FailsClosed names why every use of b fails closed: "revoked", "stale"
// or "expired" (5002 bundle_revoked, bundle_stale, bundle_expired), in
// that order; "" when it is served.
func (b Bundle) FailsClosed() string {
	switch {
	case b.Revoked != "":
		return "revoked"
	case b.Stale != "":
		return "stale"
	case b.Expired:
		return "expired"
	}
	return ""
}

// Bundles lists the installed bundles, by bundle_id. A listing copies
// no stored signed manifest (listedRecord), and hashes one and judges its
// staleness only once per store generation (s.judged, judgedCache):
// /readyz and a metrics scrape list the bundles at every request, and a
// manifest may be up to bundle.DefaultMaxManifestSize (16 MiB)
// (docs/SPEC-DECISIONS.md MIRROR-20). Expiry is judged at every call (the
// clock moves without the generation). A bundle whose record does not
// decode is left out, as the catalog leaves it out: nothing of it can be
// read, not even whether it is revoked, and one such record no longer
// fails the listing of every other bundle (/readyz, a mirror's snapshot);
// Check names it (ProblemBundleUnreadable; docs/SPEC-DECISIONS.md
// STORE-4).
func (s *Store) Bundles() ([]Bundle, error) {
	var out []Bundle
	err := s.db.View(func(tx *bolt.Tx) error {
		hw, gen := bucket(tx, bHighwater), txGeneration(tx)
		jd := s.judge(tx) // one trust policy for every bundle (SCALE-24)
		return bucket(tx, bBundles).ForEach(func(k, v []byte) error {
			var r listedRecord
			j := s.judged.get(gen, string(k))
			if j.sum {
				if decode(v, &r) != nil {
					return nil // left out, as the catalog leaves it out (STORE-4)
				}
			} else {
				if decode(v, &r.bundleRecord) != nil {
					return nil
				}
				j.manifestSum = hex.EncodeToString(sha256sum(r.bundleRecord.Signed))
				s.judged.hashes.Add(1)
				r.bundleRecord.Signed = nil
				s.judged.put(gen, string(k), judged{sum: true, manifestSum: j.manifestSum})
			}
			exp, ok := expiry(r.bundleRecord)
			why, expired := jd.staleExpired(r.BundleID, &r.bundleRecord, exp, ok) // one load of its line (STORE-10)
			out = append(out, Bundle{BundleID: r.BundleID, Version: r.Version, ImportedAt: r.ImportedAt, ExpiresAt: r.ExpiresAt,
				Signers: r.Signers, Artifacts: r.Artifacts, Bytes: r.Bytes, Highest: getU64(hw.Get(k)),
				ManifestSHA256: j.manifestSum, Revoked: r.Revoked, VersionRevoked: versionRevoked(tx, r.BundleID, r.Version),
				Stale: why, Expired: expired})
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// listedRecord is a bundleRecord read without its signed manifest: the
// Signed field shadows the record's and keeps none of the item's bytes,
// so listing a bundle copies nothing of its manifest out of the store.
type listedRecord struct {
	bundleRecord
	Signed skippedItem `cbor:"signed"`
}

// skippedItem is a CBOR item decoded into nothing.
type skippedItem struct{}

// UnmarshalCBOR implements cbor.Unmarshaler: it keeps nothing of a
// definite-length byte string, what the record's Signed holds; any other
// item is judged as that []byte field judges it, so that a record read
// without its manifest is refused exactly when the whole record is.
func (*skippedItem) UnmarshalCBOR(data []byte) error {
	if len(data) > 0 && data[0]>>5 == 2 && data[0] != 0x5f {
		return nil
	}
	var b []byte
	return decode(data, &b)
}

// DIDs resolved from bundles.

type didEntry struct {
	doc *amp.DIDDocument
	gen uint64
	// expires is when the bundle that carries the document expires (zero
	// when it does not): the clock moves without the generation, so every
	// hit re-checks it.
	expires time.Time
}

type didCache struct {
	mu sync.Mutex
	m  map[string]didEntry
}

// ResolveDID implements amp.DIDResolver over the DID documents of installed
// bundles: the document's bytes are checked against the hash its bundle
// declared before they are parsed. An unknown DID, or any doubt, is an
// error (amp turns it into 3001). A document is served only while its
// bundle is: revoked, stale or expired bundles (5002) resolve no DID. The
// cache of parsed documents is keyed by store generation and re-checks the
// bundle's expiry against the clock on every hit, since time passes
// without a store change.
func (s *Store) ResolveDID(_ context.Context, did string) (*amp.DIDDocument, error) {
	did = amp.BareDID(did)
	gen := s.gen.Load()
	s.didDocs.mu.Lock()
	if e, ok := s.didDocs.m[did]; ok && e.gen == gen &&
		(e.expires.IsZero() || s.opts.AllowExpired || s.opts.Now().Before(e.expires)) {
		s.didDocs.mu.Unlock()
		return e.doc, nil
	}
	s.didDocs.mu.Unlock()
	var doc *amp.DIDDocument
	var expires time.Time
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := bucket(tx, bDIDs).Get([]byte(did))
		if raw == nil {
			return unavailable(ErrArtifactMissing, "no installed bundle documents this did")
		}
		var dr didRecord
		if err := decode(raw, &dr); err != nil {
			return err
		}
		data, ir, err := s.artifact(tx, dr.BundleID, dr.ArtifactKey)
		if err != nil {
			return err
		}
		// artifact judged the bundle served (not revoked, stale or
		// expired) now; keep its expiry for the cache's later hits.
		var rec listedRecord // its signed manifest left unread (artifact)
		if err := decode(bucket(tx, bBundles).Get([]byte(dr.BundleID)), &rec); err != nil {
			return err
		}
		if exp, ok := expiry(rec.bundleRecord); ok {
			expires = exp
		}
		if err := checkBlob(data, ir.Blob, dr.BundleID, dr.ArtifactKey); err != nil {
			return err
		}
		if doc, err = amp.ParseDIDDocument(data); err != nil {
			return err
		}
		if doc.ID != did {
			return unavailable(ErrHashMismatch, "did document does not describe the did it is stored under")
		}
		return nil
	})
	if err != nil {
		return nil, amp.AsError(err)
	}
	s.didDocs.mu.Lock()
	if s.didDocs.m == nil {
		s.didDocs.m = map[string]didEntry{}
	}
	if len(s.didDocs.m) > 4096 {
		clear(s.didDocs.m)
	}
	s.didDocs.m[did] = didEntry{doc: doc, gen: gen, expires: expires}
	s.didDocs.mu.Unlock()
	return doc, nil
}
