package resolver

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// heartbeatRecord is the newest heartbeat a store applied for one bundle
// line (docs/FORMAT.md §23).
type heartbeatRecord struct {
	Version         uint64 `cbor:"version"`
	CreatedAt       string `cbor:"created_at"`
	StatementSHA256 []byte `cbor:"statement_sha256"`
	At              string `cbor:"at"`
	// Signers are the did:keys that counted for it (absent in records
	// written before they were kept: such a heartbeat counts as before).
	// It makes a bundle stale only while they still vouch for it.
	Signers []string `cbor:"signers,omitempty"`
}

// freshnessRecord is the operator's staleness bound for a scope.
type freshnessRecord struct {
	MaxVersions uint64 `cbor:"max_versions"`
	// MaxAgeSeconds, when set, bounds how long (by signed times, never
	// the local clock) an installed version may go without being vouched
	// for as current.
	MaxAgeSeconds uint64 `cbor:"max_age_seconds,omitempty"`
}

// noVersionBound is MaxVersions when only an age bound is set.
const noVersionBound = ^uint64(0)

// HeartbeatResult describes an applied heartbeat statement.
type HeartbeatResult struct {
	BundleID   string   `json:"bundle_id"`
	Version    uint64   `json:"version"`
	CreatedAt  string   `json:"created_at"`
	Signers    []string `json:"signers"`
	Installed  uint64   `json:"installed_version,omitempty"` // 0: the line is not installed
	Stale      string   `json:"stale,omitempty"`             // why the installed bundle now fails closed
	Unchanged  bool     `json:"unchanged"`
	Generation uint64   `json:"generation"`
}

// ApplyHeartbeat verifies a heartbeat statement (docs/FORMAT.md §23) and
// records it as the newest heartbeat of its bundle line. It must be signed
// as a bundle of the line would be: by distinct keys trusted for the
// bundle_id and every capability namespace of the installed bundle (the
// bundle_id alone when none is installed), reaching the largest threshold
// of those names. A heartbeat older than the one held (a lower version,
// or an earlier created_at) is refused (heartbeat_replayed): the store
// never goes back; one whose version lies more than
// bundle.MaxHeartbeatJump above what the store knows of the line is
// refused too (heartbeat_too_far). Its created_at raises the time floor of
// each key that counted, so expiry can only come sooner. Audited
// ("heartbeat"; a refusal as "import_refused"); changes the generation
// when it records something.
func (s *Store) ApplyHeartbeat(data []byte) (_ *HeartbeatResult, err error) {
	fileSum, end, err := s.beginStatement(data)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	hb, obj, err := bundle.ParseHeartbeat(data)
	if err != nil {
		return nil, err
	}
	created, _ := hb.Created()
	policy, err := s.policy()
	if err != nil {
		return nil, err
	}
	var line *bundle.Manifest
	if err := s.db.View(func(tx *bolt.Tx) error {
		line, err = lineOf(tx, hb.BundleID)
		return err
	}); err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	signers, err := bundle.VerifyFor(obj, policy, line)
	if err != nil {
		return nil, err
	}
	res := &HeartbeatResult{BundleID: hb.BundleID, Version: hb.Version, CreatedAt: hb.CreatedAt}
	var dids []string
	for _, k := range signers {
		res.Signers = append(res.Signers, k.Name)
		dids = append(dids, amp.DIDKey(k.Key))
	}
	var gen uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		hbk := bucket(tx, bHeartbeat)
		known := getU64(bucket(tx, bHighwater).Get([]byte(hb.BundleID)))
		p, err := policyTx(tx)
		if err != nil {
			return err
		}
		var old heartbeatRecord // the heartbeat kept for the line, if any
		if raw := hbk.Get([]byte(hb.BundleID)); raw != nil {
			if err := decode(raw, &old); err != nil {
				return fail(ErrStoreIO, "the stored heartbeat of %s is unreadable", hb.BundleID).WithCause(err)
			}
			// Only a kept heartbeat that still vouches for the line as
			// this one must (its signers, trusted now, reach the line's
			// threshold) holds it back: one that does not (signed below
			// the threshold of the line installed since, or by keys no
			// longer trusted) never blocks one that does, nor moves the
			// jump bound; it is replaced.
			if heartbeatVouches(p, &old, line) {
				if err := olderHeartbeat(hb, &old); err != nil {
					return err
				}
				res.Unchanged = hb.Version == old.Version && hb.CreatedAt == old.CreatedAt
				known = max(known, old.Version)
			}
		}
		if hb.Version > known && hb.Version-known > bundle.MaxHeartbeatJump {
			return fail(ErrHeartbeatTooFar, "this heartbeat says %s is at version >= %d, more than %d above version %d, the newest this store knows of the line; refused so that one statement cannot pin the line stale (docs/FORMAT.md §23)",
				hb.BundleID, hb.Version, bundle.MaxHeartbeatJump, known)
		}
		if raw := bucket(tx, bBundles).Get([]byte(hb.BundleID)); raw != nil {
			var r bundleRecord
			if err := decode(raw, &r); err == nil {
				res.Installed = r.Version
			}
		}
		verdict := verdictAccepted
		if res.Unchanged {
			verdict = "unchanged"
		}
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "heartbeat", Actor: s.actor(), Verdict: verdict, BundleID: hb.BundleID,
			Version: hb.Version, Signers: res.Signers, FileSHA256: fileSum}); err != nil {
			return err
		}
		if res.Unchanged {
			// The same heartbeat again: keep its bytes when those kept
			// are not the record's file (a build that did not keep them,
			// or kept an older one's, applied it first) and these are, so
			// that a mirror serves it (a new generation: what a mirror
			// serves changed). Unchanged means old was decoded above.
			sb := bucket(tx, bStatements)
			if d := sb.Get(heartbeatDataKey(hb.BundleID)); !bytes.Equal(sha256sum(d), old.StatementSHA256) && bytes.Equal(fileSum, old.StatementSHA256) {
				if err := sb.Put(heartbeatDataKey(hb.BundleID), bytes.Clone(data)); err != nil {
					return err
				}
				gen, err = bumpGeneration(tx)
				return err
			}
			return nil
		}
		if err := hbk.Put([]byte(hb.BundleID), encode(heartbeatRecord{Version: hb.Version, CreatedAt: hb.CreatedAt, StatementSHA256: fileSum,
			At: formatTime(s.opts.Now()), Signers: dids})); err != nil {
			return err
		}
		// Its bytes, so that a mirror can serve it (Heartbeats).
		if err := bucket(tx, bStatements).Put(heartbeatDataKey(hb.BundleID), bytes.Clone(data)); err != nil {
			return err
		}
		if _, err := raiseFloors(tx, created, dids); err != nil {
			return err
		}
		if res.Installed != 0 {
			res.Stale = staleReason(tx, hb.BundleID, res.Installed)
		}
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	if gen != 0 {
		s.gen.Store(gen)
		_ = s.db.View(func(tx *bolt.Tx) error { s.loadFloor(tx); return nil })
	}
	res.Generation = s.gen.Load()
	return res, nil
}

// freshnessFor returns the staleness bound in force for bundleID: the one
// set for the longest scope covering it ("*" covers every id), and that
// scope; ok is false when none is set.
func freshnessFor(tx *bolt.Tx, bundleID string) (rec freshnessRecord, scope string, ok bool) {
	_ = bucket(tx, bFreshness).ForEach(func(k, v []byte) error {
		sc := string(k)
		if !bundle.KeyCoversScope([]string{sc}, bundleID) {
			return nil
		}
		if ok && !(scope == "*" || sc != "*" && len(sc) > len(scope)) {
			return nil // a more specific scope already applies
		}
		var r freshnessRecord
		if decode(v, &r) != nil {
			r = freshnessRecord{MaxVersions: 0} // unreadable: fail closed with the tightest bound
		}
		rec, scope, ok = r, sc, true
		return nil
	})
	return rec, scope, ok
}

// lineOf is what a heartbeat of bundleID is judged against (FORMAT.md
// §23, "Validity"): the manifest of the installed bundle of the line, or
// the bundle_id alone when none is installed.
func lineOf(tx *bolt.Tx, bundleID string) (*bundle.Manifest, error) {
	raw := bucket(tx, bBundles).Get([]byte(bundleID))
	if raw == nil {
		return &bundle.Manifest{BundleID: bundleID}, nil
	}
	var r bundleRecord
	if err := decode(raw, &r); err != nil {
		return nil, err
	}
	m, ok := recordManifest(&r)
	if !ok {
		return nil, fail(ErrStoreIO, "the installed manifest of %s is unreadable", bundleID)
	}
	return m, nil
}

// staleReason says why the installed version of bundleID is older than the
// freshness policy allows, or "" when it is not: the newest heartbeat of
// the line — while its signers still vouch for the installed bundle —
// says it is at a version more than max_versions above it, or the newest
// time its own keys signed is more than max_age after it was last vouched
// for as current.
func staleReason(tx *bolt.Tx, bundleID string, installed uint64) string {
	raw := bucket(tx, bHeartbeat).Get([]byte(bundleID))
	if raw == nil {
		return ""
	}
	pol, scope, ok := freshnessFor(tx, bundleID)
	if !ok {
		return ""
	}
	var hb heartbeatRecord
	if err := decode(raw, &hb); err != nil {
		return "the stored heartbeat is unreadable"
	}
	var rec bundleRecord
	if r := bucket(tx, bBundles).Get([]byte(bundleID)); r == nil || decode(r, &rec) != nil {
		return "the installed bundle's record is unreadable"
	}
	m, ok := recordManifest(&rec)
	if !ok {
		return "the installed bundle's manifest is unreadable"
	}
	p, err := policyTx(tx)
	if err != nil {
		return "the trust policy is unreadable"
	}
	counts := heartbeatVouches(p, &hb, m)
	if counts && pol.MaxVersions != noVersionBound && hb.Version > installed && hb.Version-installed > pol.MaxVersions {
		return fmt.Sprintf("installed version %d is %d versions behind the publisher's heartbeat (version >= %d, signed %s); the freshness policy of %s allows %d",
			installed, hb.Version-installed, hb.Version, hb.CreatedAt, scopeName(scope), pol.MaxVersions)
	}
	if pol.MaxAgeSeconds == 0 {
		return ""
	}
	// Age: from the latest signed time at which the installed version was
	// vouched for as current (its own created_at, or the kept heartbeat's
	// when that names no newer version) to the newest time enough of its
	// own keys have signed (its floor). The local clock plays no part.
	vouched := m.CreatedAt.Unix()
	if counts && hb.Version <= installed {
		if t, err := parseRFC3339(hb.CreatedAt); err == nil && t > vouched {
			vouched = t
		}
	}
	floor := manifestFloor(tx, p, m)
	if age := floor - vouched; age > 0 && uint64(age) > pol.MaxAgeSeconds {
		return fmt.Sprintf("installed version %d was last vouched for as current %s, %s before the newest time its keys have signed (%s); the freshness policy of %s allows %s",
			installed, time.Unix(vouched, 0).UTC().Format(time.RFC3339), days(uint64(age)), time.Unix(floor, 0).UTC().Format(time.RFC3339),
			scopeName(scope), days(pol.MaxAgeSeconds))
	}
	return ""
}

// olderHeartbeat refuses hb when it is older than the kept heartbeat old
// (a lower version or an earlier created_at): a store never goes back.
func olderHeartbeat(hb *bundle.Heartbeat, old *heartbeatRecord) error {
	if hb.Version < old.Version || hb.CreatedAt < old.CreatedAt {
		return fail(ErrHeartbeatOlder, "this heartbeat (%s at version >= %d, signed %s) is older than the one already applied (version >= %d, signed %s); a store never goes back",
			hb.BundleID, hb.Version, hb.CreatedAt, old.Version, old.CreatedAt)
	}
	return nil
}

// heartbeatVouches reports whether a kept heartbeat still speaks for the
// installed bundle m: the keys that counted for it that p still trusts for
// m's bundle id and every namespace reach m's threshold. A heartbeat kept
// before its signers were recorded counts as it did then.
func heartbeatVouches(p *bundle.Policy, hb *heartbeatRecord, m *bundle.Manifest) bool {
	if len(hb.Signers) == 0 {
		return true
	}
	n := 0
	for _, k := range p.Keys {
		if slices.Contains(hb.Signers, amp.DIDKey(k.Key)) && bundle.KeyCoversManifest(k, m) {
			n++
		}
	}
	return n >= p.RequiredFor(m)
}

func days(sec uint64) string {
	if sec%86400 == 0 {
		return fmt.Sprintf("%dd", sec/86400)
	}
	return (time.Duration(sec) * time.Second).String()
}

func parseRFC3339(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339, s)
	return t.Unix(), err
}

func scopeName(scope string) string {
	if scope == "*" {
		return "* (every bundle)"
	}
	return scope
}

// staleBundles returns the installed bundles that fail closed as stale,
// with the reason.
func staleBundles(tx *bolt.Tx) (map[string]string, error) {
	out := map[string]string{}
	if bucket(tx, bHeartbeat).Stats().KeyN == 0 {
		return out, nil
	}
	err := bucket(tx, bBundles).ForEach(func(k, v []byte) error {
		var r bundleRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		if why := staleReason(tx, r.BundleID, r.Version); why != "" {
			out[r.BundleID] = why
		}
		return nil
	})
	return out, err
}

// Freshness is an operator's staleness bound for a scope.
type Freshness struct {
	Scope string `json:"scope"`
	// MaxVersions is nil when only an age bound is set.
	MaxVersions *uint64 `json:"max_versions"`
	// MaxAgeSeconds is 0 when no age bound is set.
	MaxAgeSeconds uint64 `json:"max_age_seconds,omitempty"`
}

// SetFreshness sets the staleness bound for scope ("*" or a reverse-domain
// prefix, or one bundle id): an installed bundle under it fails closed
// (5002 bundle_stale) when the newest heartbeat of its line names a version
// more than maxVersions above the installed one. Audited
// ("trust_freshness", the bound in threshold); changes the generation.
func (s *Store) SetFreshness(scope string, maxVersions uint64) error {
	return s.SetFreshnessPolicy(scope, &maxVersions, 0)
}

// SetFreshnessPolicy sets the staleness bounds for scope: maxVersions (nil:
// no bound in versions) as SetFreshness, and maxAge (0: none): an installed
// bundle under scope also fails closed when the newest signed time the
// store has seen (its time floor) is more than maxAge after the latest
// signed time its version was vouched for as current (its created_at, or
// a heartbeat of its line naming no newer version). Audited
// ("trust_freshness": threshold = max versions, version = max age in
// seconds); changes the generation.
func (s *Store) SetFreshnessPolicy(scope string, maxVersions *uint64, maxAge time.Duration) error {
	rec := freshnessRecord{MaxVersions: noVersionBound, MaxAgeSeconds: uint64(maxAge / time.Second)}
	if maxVersions != nil {
		if *maxVersions == noVersionBound {
			return fail(ErrInvalidTrust, "max versions is too large")
		}
		rec.MaxVersions = *maxVersions
	}
	if maxVersions == nil && rec.MaxAgeSeconds == 0 {
		return fail(ErrInvalidTrust, "a freshness policy bounds versions, age, or both")
	}
	if err := s.writable(); err != nil {
		return err
	}
	scope, err := cleanScope(scope)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := bucket(tx, bFreshness).Put([]byte(scope), encode(rec)); err != nil {
			return err
		}
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "trust_freshness", Actor: s.actor(), Verdict: verdictAccepted,
			Scopes: []string{scope}, Threshold: rec.MaxVersions, Version: rec.MaxAgeSeconds}); err != nil {
			return err
		}
		var err error
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return amp.AsError(wrapTx(err))
	}
	s.gen.Store(gen)
	return nil
}

// FreshnessPolicy lists the staleness bounds, by scope.
func (s *Store) FreshnessPolicy() ([]Freshness, error) {
	var out []Freshness
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bFreshness).ForEach(func(k, v []byte) error {
			var r freshnessRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			f := Freshness{Scope: string(k), MaxAgeSeconds: r.MaxAgeSeconds}
			if r.MaxVersions != noVersionBound {
				n := r.MaxVersions
				f.MaxVersions = &n
			}
			out = append(out, f)
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// ResetHeartbeat forgets the heartbeat kept for the bundle line bundleID:
// the operator's way out when a heartbeat pins a line stale (a publisher's
// mistake, or a key since revoked). The line then takes heartbeats again
// from the versions this store knows of it. Audited ("heartbeat_reset",
// with the forgotten heartbeat's version and file hash); changes the
// generation. It returns the forgotten heartbeat's version; no_heartbeat
// when none is kept.
func (s *Store) ResetHeartbeat(bundleID string) (uint64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen, version uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		hbk := bucket(tx, bHeartbeat)
		raw := hbk.Get([]byte(bundleID))
		if raw == nil {
			return fail(ErrNoHeartbeat, "no heartbeat is kept for the line %s (ampbundle trust freshness lists the policy; ls shows what is stale)", bundleID)
		}
		var old heartbeatRecord
		if err := decode(raw, &old); err != nil {
			return err
		}
		version = old.Version
		if err := hbk.Delete([]byte(bundleID)); err != nil {
			return err
		}
		if err := bucket(tx, bStatements).Delete(heartbeatDataKey(bundleID)); err != nil {
			return err
		}
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "heartbeat_reset", Actor: s.actor(), Verdict: verdictAccepted,
			BundleID: bundleID, Version: old.Version, FileSHA256: old.StatementSHA256}); err != nil {
			return err
		}
		var err error
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return 0, amp.AsError(wrapTx(err))
	}
	s.gen.Store(gen)
	return version, nil
}
