package resolver

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// Time floors (docs/SPEC-DECISIONS.md TRUST-5, TRUST-8): package trust
// keeps and judges them (trust.Floor, trust.RaiseFloors); the store keeps
// them in meta ("key_floor" \x00 did:key, and time_floor, the newest of
// all) and mirrors the newest in memory, a cheap upper bound of every
// bundle's floor.

// raiseFloors records a signed created_at for each did:key that counted
// for it, inside a write transaction, and returns the new newest time.
func (s *Store) raiseFloors(tx *bolt.Tx, created time.Time, dids []string) (int64, error) {
	st, err := s.loadState(tx, selTrust)
	if err != nil {
		return 0, err
	}
	next := trust.RaiseFloors(st, created, dids)
	if err := saveFloors(tx, trust.Diff(st, next)); err != nil {
		return 0, err
	}
	return next.TimeFloor, nil
}

// loadFloor reads the newest signed time into memory. It is an upper
// bound of every bundle's floor, so a damaged value is read as the
// largest (every floor is then computed, never skipped;
// docs/SPEC-DECISIONS.md TSTATE-6).
func (s *Store) loadFloor(tx *bolt.Tx) {
	v := bucket(tx, bMeta).Get([]byte(kTimeFloor))
	f, err := strictU64(v, "time_floor")
	switch {
	case v == nil:
		f = 0
	case err != nil:
		f = math.MaxInt64
	}
	s.floor.Store(int64(f))
}

// TimeFloor returns the newest signed time any key vouched for in a bundle
// or heartbeat this store accepted. A bundle's expiry is judged by its own
// floor (judgedFloor), which is never later.
func (s *Store) TimeFloor() time.Time { return time.Unix(s.floor.Load(), 0).UTC() }

// checkFloorExpiry refuses a bundle being imported whose expires_at its
// own keys' floor has passed (trust.CheckFloorExpiry).
func (s *Store) checkFloorExpiry(m *bundle.Manifest) error {
	if m.ExpiresAt == nil || s.floor.Load() < m.ExpiresAt.Unix() {
		return nil
	}
	st, err := s.readState(selTrust)
	if err != nil {
		return err
	}
	return trust.CheckFloorExpiry(st, m)
}

// judgedCache keeps, for one store generation, what was judged of each
// installed bundle from the store's state alone: its time floor, why it
// is stale and the SHA-256 of its stored signed manifest (Bundles).
// Everything they depend on (trust, thresholds, floors, heartbeats,
// freshness policy, the installed record, whose signed manifest only an
// import's commit writes) changes only with the generation, read from the
// transaction itself, so a cache entry never outlives the state it was
// computed from, even when another process writes the store.
type judgedCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]judged
	// hashes counts the stored signed manifests Bundles hashed, for the
	// tests that bound them.
	hashes atomic.Int64
	// prepared counts the trust policies judges built (trust.Prepare),
	// for the tests that bound them.
	prepared atomic.Int64
	// lines counts the bundle lines judges loaded (judge.line), for the
	// tests that bound them.
	lines atomic.Int64
}

// judged is what judgedCache keeps of one bundle.
type judged struct {
	floor, stale, sum bool // which of the three below is known
	floorAt           int64
	staleWhy          string
	manifestSum       string // hex SHA-256 of the stored signed manifest
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
	if j.sum {
		cur.sum, cur.manifestSum = true, j.manifestSum
	}
	c.m[bundleID] = cur
}

func txGeneration(tx *bolt.Tx) uint64 { return getU64(bucket(tx, bMeta).Get([]byte(kGeneration))) }

// judge judges installed bundles inside one transaction against one
// trust state, loaded and its policy built (trust.Prepare) when the first
// bundle needs it. Each judgement loaded the state and built the policy
// anew, every trusted key's did:key encoded again: a listing of every
// installed bundle (Bundles, Catalog) cost installed bundles × trusted
// keys (docs/SPEC-DECISIONS.md SCALE-24). A bundle's line (its record and
// heartbeat) is loaded into the state when it is judged, exactly as
// loadState loads one line, and dropped after, so the judge holds one
// manifest at a time. A judge must not outlive tx.
type judge struct {
	s      *Store
	tx     *bolt.Tx
	st     *trust.State
	prep   *trust.Prepared
	err    error
	loaded bool
	// unbound: 1 when the store holds no freshness policy, 2 when it
	// does, 0 not yet read (noFreshnessPolicy, once per judge: one tx).
	unbound uint8
}

// judge returns a judge of tx; it loads nothing yet.
func (s *Store) judge(tx *bolt.Tx) *judge { return &judge{s: s, tx: tx} }

// line returns the prepared state with the line of bundleID loaded into
// it (loadState with selection{line: bundleID}); the caller drops the
// line when done, also on an error.
func (j *judge) line(bundleID string) (*trust.Prepared, error) {
	if err := j.load(); err != nil {
		return nil, err
	}
	j.s.judged.lines.Add(1)
	if err := loadLine(j.tx, j.st, bundleID, false); err != nil {
		return nil, err
	}
	return j.prep, nil
}

// load loads the trust state (no line) and builds its policy, once: the
// error of a state that cannot be read (a damaged trust record, floor or
// threshold; docs/SPEC-DECISIONS.md TSTATE-6) at every call.
func (j *judge) load() error {
	if !j.loaded {
		j.loaded = true
		if j.st, j.err = j.s.loadState(j.tx, selTrust); j.err == nil {
			j.prep = trust.Prepare(j.st)
			j.s.judged.prepared.Add(1)
		}
	}
	return j.err
}

// drop forgets the line of bundleID that line loaded.
func (j *judge) drop(bundleID string) {
	if j.st == nil {
		return
	}
	delete(j.st.Installed, bundleID)
	delete(j.st.Heartbeats, bundleID)
	delete(j.st.HeartbeatKept, bundleID)
	delete(j.st.Highwater, bundleID)
}

// judgedFloor returns the floor of an installed bundle
// (trust.InstalledFloor), cached per generation (s.judged). A trust state
// that cannot be read (a damaged floor, pin or threshold, TSTATE-6) gives
// the largest floor, not cached: the bundle is judged expired, never
// judged with no floor, which would serve it again with the clock set
// back (docs/SPEC-DECISIONS.md TSTATE-6).
func (j *judge) judgedFloor(rec *bundleRecord) int64 {
	_, f := j.judgeLine(rec.BundleID, false, true)
	return f
}

// noPolicy is noFreshnessPolicy of the judge's transaction, read once
// per judge rather than once per bundle judged.
func (j *judge) noPolicy() bool {
	if j.unbound == 0 {
		j.unbound = 2
		if noFreshnessPolicy(j.tx) {
			j.unbound = 1
		}
	}
	return j.unbound == 1
}

// judgeLine returns, of the installed bundle bundleID, why it is older
// than the freshness policy allows, or "" (trust.Stale; with stale), and
// its floor (judgedFloor; with floor), each cached per generation
// (s.judged), its line loaded and its signed manifest decoded at most
// once for both (trust.Prepared.StaleAndFloor): a catalog or a listing
// that needed both loaded it (its whole record, signed manifest
// included) twice (docs/SPEC-DECISIONS.md STORE-10), and then decoded
// the manifest twice (TRUST-34). A line that cannot be loaded is "the
// trust policy is unreadable", and its floor the largest, not cached
// (judgedFloor).
func (j *judge) judgeLine(bundleID string, stale, floor bool) (string, int64) {
	gen := txGeneration(j.tx)
	c := j.s.judged.get(gen, bundleID)
	if stale && !c.stale && bucket(j.tx, bHeartbeat).Get([]byte(bundleID)) == nil && j.noPolicy() {
		stale = false // no heartbeat and no bound: nothing stale, no need to look further
	}
	stale, floor = stale && !c.stale, floor && !c.floor
	if !stale && !floor {
		return c.staleWhy, c.floorAt
	}
	p, err := j.line(bundleID)
	defer j.drop(bundleID)
	var why string
	var at int64
	switch {
	case err != nil:
		why, at = "the trust policy is unreadable", math.MaxInt64
	case stale && floor: // one decode of its manifest for both (TRUST-34)
		why, at = p.StaleAndFloor(bundleID)
	case stale:
		why = p.Stale(bundleID)
	default:
		at = p.InstalledFloor(bundleID)
	}
	var put judged
	if stale {
		c.staleWhy = why
		put.stale, put.staleWhy = true, why
	}
	if floor {
		c.floorAt = at
		put.floor, put.floorAt = err == nil, at
	}
	j.s.judged.put(gen, bundleID, put)
	return c.staleWhy, c.floorAt
}

// staleExpired returns why the installed bundle id, whose record is rec,
// is stale, or "" (trust.Stale), and, when it expires at exp (expires),
// whether it is expired: by the local clock, or by its floor, which is
// computed only when the newest signed time of any key reaches exp
// (otherwise no floor can). Its line is loaded, and its signed manifest
// decoded, at most once for both (judgeLine); the catalog, the listing,
// artifact and failsClosedAsInstalled all judge through it
// (docs/SPEC-DECISIONS.md STORE-10, TRUST-36).
func (j *judge) staleExpired(id string, rec *bundleRecord, exp time.Time, expires bool) (string, bool) {
	expired := expires && !j.s.opts.Now().Before(exp)
	floor := expires && !expired && j.s.floor.Load() >= exp.Unix()
	same := rec.BundleID == id
	why, at := j.judgeLine(id, true, floor && same)
	if floor && !same {
		at = j.judgedFloor(rec)
	}
	return why, expired || floor && at >= exp.Unix()
}
