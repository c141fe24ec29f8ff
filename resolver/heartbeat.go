package resolver

import (
	"bytes"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// MaxHeartbeatsNotInstalled is each account's share of the lines with no
// bundle installed that a store keeps a heartbeat for
// (docs/SPEC-DECISIONS.md TRUST-15, TRUST-17): a heartbeat of such a line
// is accepted on its bundle id alone, so keys trusted for one scope could
// otherwise have the store keep one, with its file, for every name under
// it. An account is an operator-trusted key (trust.State.Account): a key
// a trust statement added is charged to the account of the statement's
// signers, so a scope's owners minting keys mint no shares. A heartbeat
// of another such line is refused limit_exceeded when the account of
// every key that counted for it is already charged that many kept ones;
// so one scope's keys never refuse another scope's, and the store keeps
// at most this many per key the operator trusts or trusted. Heartbeats of
// installed lines, and newer ones of a line already kept, are never
// refused by it.
const MaxHeartbeatsNotInstalled = 10_000

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
// keeps it as the newest heartbeat of its bundle line, as
// trust.ApplyHeartbeat decides: signed as a bundle of the line must be,
// never older than the one kept (heartbeat_replayed), never too far above
// what the store knows of the line (heartbeat_too_far); its created_at
// raises the time floor of each key that counted. A heartbeat of a line
// not installed, and for which none is kept, is refused limit_exceeded
// when every key that counted for it signed the kept heartbeats of
// MaxHeartbeatsNotInstalled such lines (its share). Audited
// ("heartbeat"; a refusal as "import_refused"); changes the generation
// when it records something.
func (s *Store) ApplyHeartbeat(data []byte) (*HeartbeatResult, error) {
	var notInstalled map[string]int     // account -> lines with a heartbeat charged to it kept and no bundle installed
	line := func() (selection, error) { // the heartbeat's line alone
		hb, _, err := bundle.ParseHeartbeat(data)
		if err != nil {
			return selection{}, err
		}
		// Counted under the store's write lock (applyStatement holds it
		// from before this runs), so no other write moves it meanwhile.
		if err := s.db.View(func(tx *bolt.Tx) error {
			id := []byte(hb.BundleID)
			if bucket(tx, bBundles).Get(id) == nil && bucket(tx, bHeartbeat).Get(id) == nil {
				notInstalled = chargeCounts(tx, s.lim.heartbeats) // only a new line not installed needs it
			}
			return nil
		}); err != nil {
			return selection{}, amp.AsError(wrapTx(err))
		}
		return selection{line: hb.BundleID, strict: true}, nil
	}
	apply := func(st *trust.State, data []byte, now time.Time) (*trust.State, *trust.HeartbeatEffects, error) {
		next, res, err := trust.ApplyHeartbeat(st, data, now)
		if err != nil {
			return nil, nil, err
		}
		if _, kept := st.Heartbeats[res.BundleID]; !kept && res.Installed == 0 && notInstalled != nil {
			h := next.Heartbeats[res.BundleID]
			if h.Charged = chargeable(st, notInstalled, h.Signers, s.lim.heartbeats); h.Charged == "" {
				return nil, nil, fail(bundle.ErrTooLarge, "the account of each key that signed this heartbeat is charged kept heartbeats of %d lines with no bundle installed, its share; import a bundle of the line first, or forget a heartbeat (ampbundle trust freshness --reset LINE)",
					s.lim.heartbeats)
			}
			next.Heartbeats[res.BundleID] = h
			res.Effects.Heartbeats[res.BundleID] = h
		}
		return next, res, nil
	}
	r, gen, err := applyStatement(s, data, line, apply)
	if err != nil {
		return nil, err
	}
	return &HeartbeatResult{BundleID: r.BundleID, Version: r.Version, CreatedAt: r.CreatedAt, Signers: r.Signers, Installed: r.Installed,
		Stale: r.Stale, Unchanged: r.Unchanged, Generation: gen}, nil
}

// kChargesCounted is the meta key whose presence says the heartbeat
// charges are counted (chargeKey) and every kept heartbeat record of a
// line not installed is charged to an account (countCharges).
const kChargesCounted = "heartbeat_charges_counted"

// chargeKey is the meta key of the number of kept heartbeat records
// charged to account (heartbeatRecord.Charged).
func chargeKey(account string) []byte { return key2("heartbeat_charge", account) }

// chargeCounts returns, per account, the kept heartbeats charged to it:
// the stored counters (one read per account charged), or, on a store
// whose counters are not yet written (countCharges writes them with the
// first trust change), what countCharges would write. A damaged counter
// counts as share (MaxHeartbeatsNotInstalled; chargeCount).
func chargeCounts(tx *bolt.Tx, share int) map[string]int {
	meta := bucket(tx, bMeta)
	if meta.Get([]byte(kChargesCounted)) == nil {
		n, _ := chargesOfRecords(tx, nil)
		return n
	}
	n, prefix := map[string]int{}, chargeKey("")
	c := meta.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		n[string(k[len(prefix):])] = chargeCount(v, share)
	}
	return n
}

// chargeCount reads a charge counter (chargeKey, statementChargeKey;
// absent: none): a value that is not 8 bytes (a damaged store) counts as a full share,
// never as none (docs/SPEC-DECISIONS.md TSTATE-6).
func chargeCount(v []byte, share int) int {
	if v == nil {
		return 0
	}
	n, err := strictU64(v, "charge")
	if err != nil {
		return share
	}
	return int(min(n, uint64(1)<<31))
}

// chargesOfRecords counts the kept heartbeats charged to each account,
// and returns the records whose charge it changes: a record of a line
// installed is charged to none; one charged, to account(its charge); one
// of a line not installed kept before charges were recorded, to the least
// account of its signers (account nil: each key is its own). One decode
// per kept heartbeat: run once per store, by countCharges or the upgrade
// (recountCharges). A record that does not decode, or has neither a
// charge nor signers, counts for none.
func chargesOfRecords(tx *bolt.Tx, account func(string) string) (map[string]int, map[string]heartbeatRecord) {
	if account == nil {
		account = func(did string) string { return did }
	}
	n, changed, bb := map[string]int{}, map[string]heartbeatRecord{}, bucket(tx, bBundles)
	_ = bucket(tx, bHeartbeat).ForEach(func(k, v []byte) error {
		var r heartbeatRecord
		if decode(v, &r) != nil {
			return nil
		}
		was := r.Charged
		switch {
		case bb.Get(k) != nil:
			r.Charged = ""
		case r.Charged != "":
			r.Charged = account(r.Charged)
		case len(r.Signers) > 0:
			for _, did := range r.Signers {
				if a := account(did); r.Charged == "" || a < r.Charged {
					r.Charged = a
				}
			}
		}
		if r.Charged != "" {
			n[r.Charged]++
		}
		if r.Charged != was {
			changed[string(k)] = r
		}
		return nil
	})
	return n, changed
}

// countCharges writes, once per store, the charge counters and the charge
// of each record kept before charges were recorded (chargesOfRecords),
// and the kChargesCounted marker.
func countCharges(tx *bolt.Tx) error {
	if bucket(tx, bMeta).Get([]byte(kChargesCounted)) != nil {
		return nil
	}
	return writeCharges(tx, nil)
}

// writeCharges writes the charges chargesOfRecords(tx, account) finds: the
// records it changes, the counters (the meta bucket holds none when it
// runs) and the kChargesCounted marker.
func writeCharges(tx *bolt.Tx, account func(string) string) error {
	meta, hb := bucket(tx, bMeta), bucket(tx, bHeartbeat)
	n, changed := chargesOfRecords(tx, account)
	for id, r := range changed {
		if err := hb.Put([]byte(id), encode(r)); err != nil {
			return err
		}
	}
	for a, c := range n {
		if err := meta.Put(chargeKey(a), u64(uint64(c))); err != nil {
			return err
		}
	}
	return meta.Put([]byte(kChargesCounted), u64(1))
}

// charge moves one kept heartbeat's charge from account from to account
// to ("" for none) in the counters (countCharges must have run); a
// damaged counter counts as share (chargeCount).
func charge(meta *bolt.Bucket, from, to string, share int) error {
	if from == to {
		return nil
	}
	if from != "" {
		if c := uint64(chargeCount(meta.Get(chargeKey(from)), share)); c > 1 {
			if err := meta.Put(chargeKey(from), u64(c-1)); err != nil {
				return err
			}
		} else if err := meta.Delete(chargeKey(from)); err != nil {
			return err
		}
	}
	if to == "" {
		return nil
	}
	return meta.Put(chargeKey(to), u64(uint64(chargeCount(meta.Get(chargeKey(to)), share))+1))
}

// saveCharges keeps the counters in step with the heartbeat records a
// change puts (puts) and deletes (deletes), before it writes them; share
// is MaxHeartbeatsNotInstalled (charge).
func saveCharges(tx *bolt.Tx, puts map[string]trust.Heartbeat, deletes []string, share int) error {
	if len(puts)+len(deletes) == 0 {
		return nil
	}
	if err := countCharges(tx); err != nil {
		return err
	}
	meta, hb := bucket(tx, bMeta), bucket(tx, bHeartbeat)
	was := func(id string) string {
		var r heartbeatRecord
		if v := hb.Get([]byte(id)); v != nil && decode(v, &r) == nil {
			return r.Charged
		}
		return ""
	}
	for id, h := range puts {
		if err := charge(meta, was(id), h.Charged, share); err != nil {
			return err
		}
	}
	for _, id := range deletes {
		if err := charge(meta, was(id), "", share); err != nil {
			return err
		}
	}
	return nil
}

// unchargeLine frees the charge of the kept heartbeat of line bundleID,
// whose bundle is being installed: the share counts lines not installed
// (share: MaxHeartbeatsNotInstalled; charge).
func unchargeLine(tx *bolt.Tx, bundleID string, share int) error {
	hb := bucket(tx, bHeartbeat)
	var r heartbeatRecord
	if v := hb.Get([]byte(bundleID)); v == nil || decode(v, &r) != nil || r.Charged == "" {
		return nil
	}
	if err := countCharges(tx); err != nil {
		return err
	}
	if err := decode(hb.Get([]byte(bundleID)), &r); err != nil {
		return err
	}
	if err := charge(bucket(tx, bMeta), r.Charged, "", share); err != nil {
		return err
	}
	r.Charged = ""
	return hb.Put([]byte(bundleID), encode(r))
}

// chargeable returns the account a heartbeat of a new line not installed,
// signed by signers, is charged to: the least account of theirs charged
// fewer kept heartbeats than its share (counts: heartbeatsNotInstalled;
// share: MaxHeartbeatsNotInstalled; trust.LeastUnderShare, the rule
// statements are charged by), or "" when none is.
func chargeable(st *trust.State, counts map[string]int, signers []string, share int) string {
	accounts := make([]string, 0, len(signers))
	for _, did := range signers {
		accounts = append(accounts, st.Account(did))
	}
	return trust.LeastUnderShare(accounts, counts, share)
}

// noFreshnessPolicy reports whether the store sets no staleness bound:
// then nothing is stale. A bound in days needs no heartbeat of the line
// (trust.Stale), so a store with one judges every installed bundle.
func noFreshnessPolicy(tx *bolt.Tx) bool {
	k, _ := bucket(tx, bFreshness).Cursor().First()
	return k == nil
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
// no bound in versions) as SetFreshness, and maxAge (0: none; else at
// least 1s, or invalid_trust): an installed
// bundle under scope also fails closed when the newest signed time the
// store has seen (its time floor) is more than maxAge after the latest
// signed time its version was vouched for as current (its created_at, or
// a heartbeat of its line naming no newer version). Audited
// ("trust_freshness": threshold = max versions, version = max age in
// seconds); changes the generation.
func (s *Store) SetFreshnessPolicy(scope string, maxVersions *uint64, maxAge time.Duration) error {
	if maxAge < 0 || maxAge > 0 && maxAge < time.Second {
		// A negative duration would become 2^64-|maxAge| seconds: a bound
		// that reads as set and never fires.
		return fail(ErrInvalidTrust, "a max age is at least 1s (0: none)")
	}
	f := trust.Freshness{MaxVersions: trust.NoVersionBound, MaxAgeSeconds: uint64(maxAge / time.Second)}
	if maxVersions != nil {
		if *maxVersions == trust.NoVersionBound {
			return fail(ErrInvalidTrust, "max versions is too large")
		}
		f.MaxVersions = *maxVersions
	}
	if maxVersions == nil && f.MaxAgeSeconds == 0 {
		return fail(ErrInvalidTrust, "a freshness policy bounds versions, age, or both")
	}
	_, err := s.updateTrust(selTrust, func(st *trust.State, _ time.Time) (*trust.Effects, error) {
		_, e, err := trust.SetFreshness(st, scope, f)
		return e, err
	})
	return err
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
			if r.MaxVersions != trust.NoVersionBound {
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
	var version uint64
	_, err := s.updateTrust(selection{line: bundleID}, func(st *trust.State, _ time.Time) (*trust.Effects, error) {
		_, e, v, err := trust.ResetHeartbeat(st, bundleID)
		version = v
		return e, err
	})
	if err != nil {
		return 0, err
	}
	return version, nil
}
