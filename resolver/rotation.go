package resolver

import (
	"bytes"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// RotateResult describes an applied trust statement.
type RotateResult struct {
	Scope     string   `json:"scope"`
	Sequence  uint64   `json:"sequence"`
	Signers   []string `json:"signers"`
	Added     []string `json:"added"`   // names of the keys it added
	Retired   []string `json:"retired"` // names of the trusted keys it retired
	Threshold uint64   `json:"threshold"`
	Unchanged bool     `json:"unchanged"` // this very statement was applied before
	// StillInstalled are the installed bundles signed by a retired key:
	// they stay (they were verified before the statement); a retired key
	// counts for no import from now on.
	StillInstalled []string `json:"still_installed"`
	Generation     uint64   `json:"generation"`
}

func chainKey(scope string, seq uint64) []byte { return append(key2(scope, ""), u64(seq)...) }

// chainHead returns the last applied statement of scope (0, nil for none).
func chainHead(tx *bolt.Tx, scope string) (uint64, []byte) {
	prefix := key2(scope, "")
	c := bucket(tx, bTrustChain).Cursor()
	var seq uint64
	var last []byte
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Next() {
		seq, last = getU64(k[len(prefix):]), v
	}
	if last == nil {
		return 0, nil
	}
	return seq, sha256sum(last)
}

// TrustChains returns, per scope, the sequence number of the last trust
// statement the store applied.
func (s *Store) TrustChains() (map[string]uint64, error) {
	out := map[string]uint64{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bTrustChain).ForEach(func(k, _ []byte) error {
			if i := bytes.IndexByte(k, 0); i > 0 && len(k) == i+9 {
				out[string(k[:i])] = getU64(k[i+1:])
			}
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// ApplyRotation verifies a trust statement (docs/FORMAT.md §22) and applies
// it in one transaction: it must be the next of its scope's chain
// (sequence one more than the last applied, prev its SHA-256; a later one
// is rotation_gap, another statement of an applied number or one chaining
// elsewhere rotation_fork), signed by distinct keys trusted for the scope
// reaching, before it, the largest threshold of the scope, of a scope
// containing it or of a scope under it (bundle.Policy.RequiredWithin). Then its added keys are trusted for the
// scope, its retired keys are no longer trusted (their signatures count
// for no import from now on; bundles they signed stay installed), and the
// scope's threshold is set; a statement that would leave fewer keys for
// the scope than its threshold is refused. The store keeps every applied
// statement. Applying one again changes nothing. Audited ("rotate");
// changes the generation.
func (s *Store) ApplyRotation(data []byte) (_ *RotateResult, err error) {
	sum, end, err := s.beginStatement(data)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	rot, obj, err := bundle.ParseRotation(data)
	if err != nil {
		return nil, err
	}
	res := &RotateResult{Scope: rot.Scope, Sequence: rot.Sequence, Threshold: rot.Threshold, Added: []string{}, Retired: []string{}, StillInstalled: []string{}}
	// The chain position first: a statement out of order is refused
	// whoever signed it, and one already applied is a no-op.
	err = s.db.View(func(tx *bolt.Tx) error {
		head, headHash := chainHead(tx, rot.Scope)
		switch {
		case rot.Sequence <= head:
			if applied := bucket(tx, bTrustChain).Get(chainKey(rot.Scope, rot.Sequence)); !bytes.Equal(sha256sum(applied), sum) {
				return fail(ErrRotationFork, "trust statement %d of scope %s is not the one this store applied (a fork of the chain)", rot.Sequence, rot.Scope)
			}
			res.Unchanged = true
		case rot.Sequence > head+1:
			return fail(ErrRotationGap, "this store applied trust statements of scope %s up to %d: apply %d to %d first, in order", rot.Scope, head, head+1, rot.Sequence-1)
		case head == 0 && !bytes.Equal(rot.Prev, make([]byte, 32)), head > 0 && !bytes.Equal(rot.Prev, headHash):
			return fail(ErrRotationFork, "trust statement %d of scope %s does not chain to statement %d this store applied (a fork of the chain)", rot.Sequence, rot.Scope, head)
		}
		return nil
	})
	if err != nil {
		return nil, amp.AsError(err)
	}
	if res.Unchanged {
		res.Generation = s.gen.Load()
		return res, nil
	}
	policy, err := s.policy()
	if err != nil {
		return nil, err
	}
	signers, err := bundle.VerifyStatement(obj, policy, rot.Scope)
	if err != nil {
		return nil, err
	}
	for _, k := range signers {
		res.Signers = append(res.Signers, k.Name)
	}
	var gen uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		tb := bucket(tx, bTrust)
		var recs []trustRecord
		if err := tb.ForEach(func(_, v []byte) error {
			var r trustRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			recs = append(recs, r)
			return nil
		}); err != nil {
			return err
		}
		find := func(did string) *trustRecord {
			pub, _ := bundle.KeyFromKID(did)
			for i := range recs {
				if bytes.Equal(recs[i].Key, pub) {
					return &recs[i]
				}
			}
			return nil
		}
		gone := map[string]bool{}    // trust names retired
		retired := map[string]bool{} // their did:keys
		for _, did := range rot.Retire {
			r := find(did)
			if r == nil {
				continue // not trusted here: nothing to retire
			}
			kept, ok := withdrawScope(r.Scopes, rot.Scope)
			if !ok {
				return fail(ErrRevocationScope, "key %s is trusted for %s, broader than the statement's scope %s", r.Name, strings.Join(r.Scopes, ", "), rot.Scope)
			}
			if len(kept) == len(r.Scopes) {
				continue // trusted only for scopes disjoint from the statement's: nothing to retire
			}
			retired[did] = true
			res.Retired = append(res.Retired, r.Name)
			if len(kept) > 0 { // still trusted for scopes disjoint from rot.Scope
				r.Scopes = kept
				if err := tb.Put([]byte(r.Name), encode(*r)); err != nil {
					return err
				}
				continue
			}
			gone[r.Name] = true
			if err := tb.Delete([]byte(r.Name)); err != nil {
				return err
			}
		}
		now := formatTime(s.opts.Now())
		for _, a := range rot.Add {
			if by, ok := keyRevokedFor(tx, a.Key, []string{rot.Scope}); ok {
				return fail(ErrKeyRevoked, "the statement adds %s, which this store has revoked for scope %s", a.Key, by)
			}
			if r := find(a.Key); r != nil && !gone[r.Name] {
				if (bundle.TrustedKey{Scopes: r.Scopes, Except: revokedScopes(tx, amp.DIDKey(r.Key))}).CoversScope(rot.Scope) {
					continue // already trusted for the scope
				}
				return fail(ErrTrustExists, "the statement adds %s, already trusted as %s for other scopes", a.Key, r.Name)
			}
			if tb.Get([]byte(a.Name)) != nil {
				return fail(ErrTrustExists, "the statement adds a key named %s, a name this store already uses", a.Name)
			}
			pub, _ := bundle.KeyFromKID(a.Key)
			if err := tb.Put([]byte(a.Name), encode(trustRecord{Name: a.Name, Key: pub, Scopes: []string{rot.Scope}, AddedAt: now})); err != nil {
				return err
			}
			res.Added = append(res.Added, a.Name)
		}
		pb := bucket(tx, bTrustPolicy)
		var err error
		if rot.Threshold == 1 {
			err = pb.Delete([]byte(rot.Scope))
		} else {
			err = pb.Put([]byte(rot.Scope), u64(rot.Threshold))
		}
		if err != nil {
			return err
		}
		covering := 0
		if err := tb.ForEach(func(_, v []byte) error {
			var r trustRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			if (bundle.TrustedKey{Scopes: r.Scopes, Except: revokedScopes(tx, amp.DIDKey(r.Key))}).CoversScope(rot.Scope) {
				covering++ // a key revoked where rot.Scope reaches counts for nothing there
			}
			return nil
		}); err != nil {
			return err
		}
		if uint64(covering) < rot.Threshold {
			return fail(bundle.ErrInvalidStatement, "the statement would leave %d key(s) trusted for %s, fewer than its threshold %d", covering, rot.Scope, rot.Threshold)
		}
		if err := bucket(tx, bTrustChain).Put(chainKey(rot.Scope, rot.Sequence), data); err != nil {
			return err
		}
		if err := recordStatement(tx, data, sum); err != nil {
			return err
		}
		if err := bucket(tx, bBundles).ForEach(func(_, v []byte) error {
			var r bundleRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			// By key, as revocation matches (a trust name may since
			// have been given to another key).
			if obj, err := bundle.DecodeObject(r.Signed, bundle.MediaTypeManifest); err == nil && signedBy(obj, retired) {
				res.StillInstalled = append(res.StillInstalled, bundle.BundleVersion{BundleID: r.BundleID, Version: r.Version}.String())
			}
			return nil
		}); err != nil {
			return err
		}
		var added []string
		for _, a := range rot.Add {
			added = append(added, a.Key)
		}
		sort.Strings(res.Retired)
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "rotate", Actor: s.actor(), Verdict: verdictAccepted, Scopes: []string{rot.Scope},
			Sequence: rot.Sequence, Threshold: rot.Threshold, Signers: res.Signers, FileSHA256: sum, AddedKeys: added, RetiredKeys: rot.Retire}); err != nil {
			return err
		}
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	s.gen.Store(gen)
	res.Generation = gen
	return res, nil
}
