package resolver

import (
	"fmt"

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
}

// freshnessRecord is the operator's staleness bound for a scope.
type freshnessRecord struct {
	MaxVersions uint64 `cbor:"max_versions"`
}

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
// by the threshold of distinct keys trusted for the bundle_id (as a bundle
// of that id would be). A heartbeat older than the one held (a lower
// version, or an earlier created_at) is refused (heartbeat_replayed): the
// store never goes back. Its created_at raises the time floor, so expiry
// can only come sooner. Audited ("heartbeat"; a refusal as
// "import_refused"); changes the generation when it records something.
func (s *Store) ApplyHeartbeat(data []byte) (_ *HeartbeatResult, err error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fileSum := sha256sum(data)
	defer func() {
		if err != nil {
			s.auditRefusal(err, nil, fileSum)
		}
	}()
	hb, obj, err := bundle.ParseHeartbeat(data)
	if err != nil {
		return nil, err
	}
	created, _ := hb.Created()
	policy, err := s.policy()
	if err != nil {
		return nil, err
	}
	signers, err := bundle.VerifyStatement(obj, policy, hb.BundleID)
	if err != nil {
		return nil, err
	}
	res := &HeartbeatResult{BundleID: hb.BundleID, Version: hb.Version, CreatedAt: hb.CreatedAt}
	for _, k := range signers {
		res.Signers = append(res.Signers, k.Name)
	}
	var gen uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		hbk := bucket(tx, bHeartbeat)
		if raw := hbk.Get([]byte(hb.BundleID)); raw != nil {
			var old heartbeatRecord
			if err := decode(raw, &old); err != nil {
				return fail(ErrStoreIO, "the stored heartbeat of %s is unreadable", hb.BundleID).WithCause(err)
			}
			if hb.Version < old.Version || hb.CreatedAt < old.CreatedAt {
				return fail(ErrHeartbeatOlder, "this heartbeat (%s at version >= %d, signed %s) is older than the one already applied (version >= %d, signed %s); a store never goes back",
					hb.BundleID, hb.Version, hb.CreatedAt, old.Version, old.CreatedAt)
			}
			res.Unchanged = hb.Version == old.Version && hb.CreatedAt == old.CreatedAt
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
			return nil
		}
		if err := hbk.Put([]byte(hb.BundleID), encode(heartbeatRecord{Version: hb.Version, CreatedAt: hb.CreatedAt, StatementSHA256: fileSum,
			At: formatTime(s.opts.Now())})); err != nil {
			return err
		}
		if _, err := raiseFloor(tx, created); err != nil {
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

// staleReason says why the installed version of bundleID is older than the
// freshness policy allows, or "" when it is not: the newest heartbeat of
// the line says it is at a version more than max_versions above it.
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
	if hb.Version > installed && hb.Version-installed > pol.MaxVersions {
		return fmt.Sprintf("installed version %d is %d versions behind the publisher's heartbeat (version >= %d, signed %s); the freshness policy of %s allows %d",
			installed, hb.Version-installed, hb.Version, hb.CreatedAt, scopeName(scope), pol.MaxVersions)
	}
	return ""
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
	Scope       string `json:"scope"`
	MaxVersions uint64 `json:"max_versions"`
}

// SetFreshness sets the staleness bound for scope ("*" or a reverse-domain
// prefix, or one bundle id): an installed bundle under it fails closed
// (5002 bundle_stale) when the newest heartbeat of its line names a version
// more than maxVersions above the installed one. Audited
// ("trust_freshness", the bound in threshold); changes the generation.
func (s *Store) SetFreshness(scope string, maxVersions uint64) error {
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
		if err := bucket(tx, bFreshness).Put([]byte(scope), encode(freshnessRecord{MaxVersions: maxVersions})); err != nil {
			return err
		}
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "trust_freshness", Actor: s.actor(), Verdict: verdictAccepted,
			Scopes: []string{scope}, Threshold: maxVersions}); err != nil {
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
			out = append(out, Freshness{Scope: string(k), MaxVersions: r.MaxVersions})
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}
