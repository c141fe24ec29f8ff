package resolver

import (
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// Time floors (docs/SPEC-DECISIONS.md TRUST-5, TRUST-8).
//
// Publishers sign created_at; once the store accepted a bundle or a
// heartbeat created at T, each key that counted for it has said "it is at
// least T". The store keeps, per key, the latest such time (meta
// "key_floor" \x00 did:key). A bundle's expiry is judged by the later of
// the local clock and the bundle's floor: the latest time that keys still
// trusted for its bundle id and every namespace, as many as its threshold,
// have each signed (the threshold-th largest of their floors). So a clock
// set back (or reset to 1970 by a dead battery) cannot make an expired
// bundle valid again once enough of its own keys signed a later time, and
// a time signed by a key of another scope, or by fewer keys than the
// bundle's threshold, moves nothing of it. A clock set forward expires
// bundles early: that fails closed, and no floor ever takes the local
// clock's word for anything.

// kTimeFloor is the meta key of the newest signed time any key vouched for
// (informative, and a cheap upper bound of every bundle's floor).
const kTimeFloor = "time_floor"

func keyFloorKey(did string) []byte { return key2("key_floor", did) }

// raiseFloors records a signed created_at for each did:key that counted
// for it, inside a write transaction, and returns the new newest time.
func raiseFloors(tx *bolt.Tx, created time.Time, dids []string) (int64, error) {
	meta := bucket(tx, bMeta)
	c := created.Unix()
	for _, did := range dids {
		if f := int64(getU64(meta.Get(keyFloorKey(did)))); c > f {
			if err := meta.Put(keyFloorKey(did), u64(uint64(c))); err != nil {
				return 0, err
			}
		}
	}
	f := int64(getU64(meta.Get([]byte(kTimeFloor))))
	if c > f {
		f = c
		if err := meta.Put([]byte(kTimeFloor), u64(uint64(f))); err != nil {
			return 0, err
		}
	}
	return f, nil
}

// loadFloor reads the newest signed time into memory.
func (s *Store) loadFloor(tx *bolt.Tx) {
	s.floor.Store(int64(getU64(bucket(tx, bMeta).Get([]byte(kTimeFloor)))))
}

// manifestFloor returns the floor a bundle with manifest m is judged by
// under policy p: the threshold-th largest time floor of the keys of p
// trusted for its bundle id and every namespace (0 when fewer keys have
// one).
func manifestFloor(tx *bolt.Tx, p *bundle.Policy, m *bundle.Manifest) int64 {
	meta := bucket(tx, bMeta)
	var fs []int64
	for _, k := range p.Keys {
		if bundle.KeyCoversManifest(k, m) {
			fs = append(fs, int64(getU64(meta.Get(keyFloorKey(amp.DIDKey(k.Key))))))
		}
	}
	need := p.RequiredFor(m)
	if len(fs) < need {
		return 0
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] > fs[j] })
	return fs[need-1]
}

// recordFloor returns the floor of an installed bundle (0 when its
// manifest or the trust policy is unreadable: the local clock alone then).
func recordFloor(tx *bolt.Tx, rec *bundleRecord) int64 {
	m, ok := recordManifest(rec)
	if !ok {
		return 0
	}
	p, err := policyTx(tx)
	if err != nil {
		return 0
	}
	return manifestFloor(tx, p, m)
}

// recordManifest decodes the signed manifest kept with an installed
// bundle.
func recordManifest(rec *bundleRecord) (*bundle.Manifest, bool) {
	obj, err := bundle.DecodeObject(rec.Signed, bundle.MediaTypeManifest)
	if err != nil {
		return nil, false
	}
	m, err := bundle.DecodeManifest(obj.Payload)
	return m, err == nil
}

// expiredAt reports whether an installed bundle expiring at exp is expired:
// by the local clock, or by its floor. The floor is computed only when the
// newest signed time of any key reaches exp (otherwise no floor can).
func (s *Store) expiredAt(tx *bolt.Tx, rec *bundleRecord, exp time.Time) bool {
	if !s.opts.Now().Before(exp) {
		return true
	}
	if s.floor.Load() < exp.Unix() {
		return false
	}
	return s.judged.floor(tx, rec) >= exp.Unix()
}

// TimeFloor returns the newest signed time any key vouched for in a bundle
// or heartbeat this store accepted. A bundle's expiry is judged by its own
// floor (recordFloor), which is never later.
func (s *Store) TimeFloor() time.Time { return time.Unix(s.floor.Load(), 0).UTC() }

// checkFloorExpiry refuses a bundle being imported whose expires_at its
// own keys' floor has passed (bundle.ErrExpired, as the reader's clock
// check).
func (s *Store) checkFloorExpiry(m *bundle.Manifest) error {
	if m.ExpiresAt == nil || s.floor.Load() < m.ExpiresAt.Unix() {
		return nil
	}
	var f int64
	err := s.db.View(func(tx *bolt.Tx) error {
		p, err := policyTx(tx)
		if err != nil {
			return err
		}
		f = manifestFloor(tx, p, m)
		return nil
	})
	if err != nil {
		return amp.AsError(wrapTx(err))
	}
	if f >= m.ExpiresAt.Unix() {
		return fail(bundle.ErrExpired, "bundle %s expired at %s: keys trusted for it have signed a later time (%s)", m.BundleID,
			m.ExpiresAt.UTC().Format(time.RFC3339), time.Unix(f, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// judgedCache keeps, for one store generation, what was judged of each
// installed bundle from the store's state alone: its time floor and why it
// is stale. Everything they depend on (trust, thresholds, floors,
// heartbeats, freshness policy, the installed record) changes only with
// the generation, read from the transaction itself, so a cache entry
// never outlives the state it was computed from, even when another
// process writes the store.
type judgedCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]judged
}

// judged is what judgedCache keeps of one bundle.
type judged struct {
	floor, stale bool // which of the two below is known
	floorAt      int64
	staleWhy     string
}

// get returns the entry of bundleID at generation gen.
func (c *judgedCache) get(gen uint64, bundleID string) judged {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.m == nil {
		return judged{}
	}
	return c.m[bundleID]
}

// put merges what was computed at generation gen into the entry of
// bundleID (nothing when the generation moved on meanwhile).
func (c *judgedCache) put(gen uint64, bundleID string, j judged) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.m == nil {
		if gen < c.gen {
			return
		}
		c.gen, c.m = gen, map[string]judged{}
	}
	cur := c.m[bundleID]
	if j.floor {
		cur.floor, cur.floorAt = true, j.floorAt
	}
	if j.stale {
		cur.stale, cur.staleWhy = true, j.staleWhy
	}
	c.m[bundleID] = cur
}

func txGeneration(tx *bolt.Tx) uint64 { return getU64(bucket(tx, bMeta).Get([]byte(kGeneration))) }

// floor returns recordFloor of an installed bundle, cached per generation.
func (c *judgedCache) floor(tx *bolt.Tx, rec *bundleRecord) int64 {
	gen := txGeneration(tx)
	if j := c.get(gen, rec.BundleID); j.floor {
		return j.floorAt
	}
	f := recordFloor(tx, rec)
	c.put(gen, rec.BundleID, judged{floor: true, floorAt: f})
	return f
}

// staleReason returns staleReason of an installed bundle, cached per
// generation.
func (c *judgedCache) staleReason(tx *bolt.Tx, bundleID string, installed uint64) string {
	if bucket(tx, bHeartbeat).Get([]byte(bundleID)) == nil {
		return "" // no heartbeat, nothing stale: no need to look further
	}
	gen := txGeneration(tx)
	if j := c.get(gen, bundleID); j.stale {
		return j.staleWhy
	}
	why := staleReason(tx, bundleID, installed)
	c.put(gen, bundleID, judged{stale: true, staleWhy: why})
	return why
}
