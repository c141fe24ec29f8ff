package agent

import (
	"sync"
	"sync/atomic"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/resolver"
)

// CAP_RESULT extension fields (RFC 004 §10) an agent adds when the
// compatibility policy was involved (docs/FORMAT.md, "Compatibility policy
// and signed claims").
const (
	// ResultServedID names the capability id that actually ran, when it
	// is not the version the caller asked for (range policy).
	ResultServedID = "served_id"
	// ResultDeprecated is true when the caller's version is in the
	// deprecated_ranges of the descriptor that served it.
	ResultDeprecated = "deprecated"
)

// requestedVersions lists the concrete versions a CAP_INVOKE asks for, in
// the requester's order: the exact version; or the preferred version, then
// the acceptable list, then the catalog's versions of name inside the
// range, highest first.
func requestedVersions(inv capability.Invoke, cat *resolver.Catalog, name string) []capability.Version {
	switch {
	case inv.ByID():
		return []capability.Version{inv.ID.Version}
	case inv.Negotiate == nil:
		return []capability.Version{inv.Version}
	}
	h := inv.Negotiate
	var out []capability.Version
	if !h.Preferred.IsZero() {
		out = append(out, h.Preferred)
	}
	out = append(out, h.Acceptable...)
	if !h.Range.IsZero() {
		vs := cat.Versions(name)
		for i := len(vs) - 1; i >= 0; i-- {
			if h.Range.Contains(vs[i]) {
				out = append(out, vs[i])
			}
		}
	}
	return out
}

// servedInPlace is the range and bridge policy, tried only when RFC 004
// §6.3 found no provided version: for each requested version v in the
// requester's order, the highest provided version p whose supported_ranges
// cover v and whose descriptor has policy "range" with a signed claim for
// v compatible on both sides (checked by the builder, re-derived at
// import), or policy "bridge" with a bridge and a claim for v (the bundle
// carries v, so its bridge was checked against v's schemas), serves it.
// Strict (or absent) policies never serve another version.
//
// A provided version serves only versions it holds a claim for, so the
// claims of the provided descriptors, highest first, are read once into
// the version each serves (claimServers), and each requested version is
// then one map lookup: trying every provided version for every requested
// one cost a range over 1,000 versions that 1,000 served ones did not
// hold 143 ms of CPU, 18 times the cost at 250 (docs/SPEC-DECISIONS.md
// SCALE-20).
func servedInPlace(cat *resolver.Catalog, name string, requested, provided []capability.Version) (served capability.ID, asked capability.Version, ok bool) {
	if len(requested) == 0 {
		return capability.ID{}, capability.Version{}, false
	}
	servers := claimServers(cat, name, provided)
	for _, v := range requested {
		if v.IsZero() {
			continue
		}
		if i, has := servers[v]; has {
			return capability.ID{Name: name, Version: provided[i]}, v, true
		}
	}
	return capability.ID{}, capability.Version{}, false
}

// claimServers maps each version a provided version of name serves in
// place to the index in provided of the highest one: its descriptor
// supports the version and its first claim for it (Descriptor.Claim) is
// compatible under policy "range", or any under policy "bridge" with a
// bridge (checked against the caller's output schema because the bundle
// carries that version: it has a claim).
func claimServers(cat *resolver.Catalog, name string, provided []capability.Version) map[capability.Version]int {
	var servers map[capability.Version]int
	for i := len(provided) - 1; i >= 0; i-- {
		e, found := cat.Lookup(capability.ID{Name: name, Version: provided[i]})
		if !found {
			continue
		}
		d := &e.Descriptor
		switch {
		case d.Policy == capability.PolicyRange:
		case d.Policy == capability.PolicyBridge && d.Bridge != nil:
		default:
			continue
		}
		seen := make(map[capability.Version]bool, len(d.CompatClaims))
		for _, c := range d.CompatClaims {
			if seen[c.Version] {
				continue // Claim gives the first claim of a version
			}
			seen[c.Version] = true
			if _, taken := servers[c.Version]; taken || !d.Supports(c.Version) {
				continue
			}
			if d.Policy == capability.PolicyBridge || c.Compatible() {
				if servers == nil {
					servers = map[capability.Version]int{}
				}
				servers[c.Version] = i
			}
		}
	}
	return servers
}

// compatExtra returns the CAP_RESULT extension fields for an invocation of
// served on behalf of a caller of asked, or nil.
func compatExtra(d capability.Descriptor, served capability.ID, asked capability.Version) (map[string][]byte, bool) {
	var m map[string][]byte // allocated only when there is something to say
	deprecated := d.Deprecated(asked)
	if served.Version != asked {
		b, err := amp.Marshal(served.String())
		if err == nil {
			m = map[string][]byte{ResultServedID: b}
		}
	}
	if deprecated {
		b, err := amp.Marshal(true)
		if err == nil {
			if m == nil {
				m = map[string][]byte{}
			}
			m[ResultDeprecated] = b
		}
	}
	if len(m) == 0 {
		return nil, false
	}
	return m, deprecated
}

// artifactResolver is the part of *resolver.Store that returns an
// artifact's bytes after checking them against a reference's hash.
type artifactResolver interface {
	Resolve(ref capability.SchemaRef) ([]byte, error)
}

// loadBridge returns the verified, parsed bridge of d, or a 5002 (logged);
// gen is the generation of the catalog the invocation found d in.
// The registry hash-checks the stored bytes at every call, before any use
// (Resolve: one hash of at most compat.MaxBridgeSize bytes, and the
// bundle's revocation, staleness and expiry, which the clock moves without
// the generation); only the parse is kept, per store generation
// (bridgeCache): a signed bridge within compat.MaxBridgeSize can take
// milliseconds of CPU to parse, which a caller would otherwise have the
// agent spend at every bridged invocation (docs/SPEC-DECISIONS.md
// AGENT-51).
func (a *Agent) loadBridge(d capability.Descriptor, gen uint64) (*compat.Bridge, error) {
	r, ok := a.reg.(artifactResolver)
	if !ok || d.Bridge == nil {
		a.log.Error("bridge unavailable", "capability", d.ID().String(), "err", "the registry cannot resolve bridge artifacts")
		return nil, unavailable()
	}
	// gen, the invocation's catalog's, was read before the bytes: a parse
	// kept under it is of bytes no older than it (no second catalog read,
	// which through an admin socket is the whole catalog).
	data, err := r.Resolve(*d.Bridge)
	if err != nil {
		a.log.Error("bridge unavailable", "capability", d.ID().String(), "err", err)
		return nil, unavailable()
	}
	// The bytes match the reference's hash, so the parse kept under that
	// hash is theirs.
	k := bridgeKey{bundle: d.Bridge.BundleID, key: d.Bridge.ArtifactKey, alg: d.Bridge.HashAlg, hash: string(d.Bridge.Hash)}
	if b := a.bridges.get(gen, k); b != nil {
		return b, nil
	}
	a.bridges.parses.Add(1)
	b, err := compat.ParseBridge(data)
	if err != nil {
		a.log.Error("bridge unusable", "capability", d.ID().String(), "err", err)
		return nil, unavailable()
	}
	a.bridges.put(gen, k, b, len(data))
	return b, nil
}

// Bounds of the parsed bridges an agent keeps (bridgeCache). A parse
// holds up to about 24 times the bytes it read (64 KiB of empty objects
// as default values: 1.5 MB), so the bytes bound keeps a few MB at most:
// four of the largest bridges (compat.MaxBridgeSize), or all 256 honest
// ones of a few hundred bytes.
const (
	maxKeptBridges     = 256
	maxKeptBridgeBytes = 4 * compat.MaxBridgeSize
)

// bridgeKey names a bridge artifact by its reference: where it is stored
// and the hash its bytes were checked against.
type bridgeKey struct{ bundle, key, alg, hash string }

type keptBridge struct {
	b    *compat.Bridge
	size int // the bytes it was parsed from
}

// bridgeCache keeps the bridges an agent parsed at one store generation,
// at most maxKeptBridges of them parsed from at most maxKeptBridgeBytes
// in all; a bridge past either bound evicts others. Another generation
// empties it. A kept bridge is only read (Bridge.ApplyInput and
// ApplyOutput copy what they insert), so invocations share it. The zero
// value is ready to use.
type bridgeCache struct {
	mu      sync.Mutex
	gen     uint64
	entries map[bridgeKey]keptBridge
	bytes   int
	// parses counts the compat.ParseBridge calls of loadBridge.
	parses atomic.Uint64
}

// get returns the bridge kept under k at generation gen, or nil.
func (c *bridgeCache) get(gen uint64, k bridgeKey) *compat.Bridge {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return nil
	}
	return c.entries[k].b
}

// put keeps b, parsed from size bytes, under k at generation gen. A
// generation other than the kept one's first empties the cache; then
// entries are evicted, in Go's map order (none a caller can choose),
// until b fits the bounds.
func (c *bridgeCache) put(gen uint64, k bridgeKey, b *compat.Bridge, size int) {
	if size > maxKeptBridgeBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.entries == nil {
		c.gen, c.entries, c.bytes = gen, map[bridgeKey]keptBridge{}, 0
	}
	if old, ok := c.entries[k]; ok {
		delete(c.entries, k)
		c.bytes -= old.size
	}
	for victim, e := range c.entries {
		if len(c.entries) < maxKeptBridges && c.bytes+size <= maxKeptBridgeBytes {
			break
		}
		delete(c.entries, victim)
		c.bytes -= e.size
	}
	c.entries[k] = keptBridge{b: b, size: size}
	c.bytes += size
}
