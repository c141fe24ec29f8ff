package resolver

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// revokedRecord is what the store keeps of one revoked key or bundle
// version: the statement that revoked it.
type revokedRecord struct {
	StatementSHA256 []byte `cbor:"statement_sha256,omitempty"` // empty for trust rm --fail-closed
	At              string `cbor:"at"`
	// Scopes are the scopes of the statements that revoked a key (absent
	// in records written before they were kept: read as "*"). A key is
	// refused for a scope that overlaps one of them (docs/FORMAT.md §21).
	Scopes []string `cbor:"scopes,omitempty"`
}

func revokedKeyKey(did string) []byte { return key2("k", did) }

func revokedBundleKey(id string, version uint64) []byte {
	return append(key2("b", id), append([]byte{0}, u64(version)...)...)
}

// revokedBundles returns the installed bundles that fail closed.
func revokedBundles(tx *bolt.Tx) (map[string]bool, error) {
	out := map[string]bool{}
	err := bucket(tx, bBundles).ForEach(func(k, v []byte) error {
		var r bundleRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		if r.Revoked != "" {
			out[r.BundleID] = true
		}
		return nil
	})
	return out, err
}

// revokedScopes returns the scopes of the revocations this store applied
// to a key (nil when none): "*" for a record unreadable or written before
// scopes were kept.
func revokedScopes(tx *bolt.Tx, did string) []string {
	raw := bucket(tx, bRevoked).Get(revokedKeyKey(did))
	if raw == nil {
		return nil
	}
	var r revokedRecord
	if decode(raw, &r) != nil || len(r.Scopes) == 0 {
		return []string{"*"}
	}
	return r.Scopes
}

// keyRevokedFor returns the scope of a revocation this store applied to
// the key that one of scopes lies under (equals it or is narrower), and
// whether there is one: the key cannot be trusted for those scopes. A
// revocation by the keys of com.acme does not stop an operator from
// trusting the key for org.example, nor for a broader scope such as "*":
// there the key counts for everything but what it was revoked for
// (bundle.TrustedKey.Except, set by policyTx), so one scope's keys cannot
// block a key for scopes beyond their authority.
func keyRevokedFor(tx *bolt.Tx, did string, scopes []string) (string, bool) {
	for _, rs := range revokedScopes(tx, did) {
		for _, sc := range scopes {
			if bundle.ScopesUnder([]string{sc}, rs) {
				return rs, true
			}
		}
	}
	return "", false
}

// withdrawScope splits the scopes a key is trusted for at the scope of a
// statement that revokes or retires it (docs/FORMAT.md §21, §22): the
// scopes under the statement's scope are withdrawn, the scopes disjoint
// from it are kept and returned. ok is false when one of the key's scopes
// is broader than the statement's ("*" under a narrower statement, or a
// scope containing it): only a statement of that broader scope speaks for
// it. A key trusted for org.example and com.acme revoked by org.example's
// threshold keeps com.acme alone.
func withdrawScope(keyScopes []string, scope string) (kept []string, ok bool) {
	kept = []string{}
	for _, sc := range keyScopes {
		switch {
		case bundle.ScopesUnder([]string{sc}, scope):
		case bundle.ScopesOverlap(sc, scope):
			return nil, false
		default:
			kept = append(kept, sc)
		}
	}
	return kept, true
}

// versionRevoked reports whether a bundle version is revoked.
func versionRevoked(tx *bolt.Tx, id string, version uint64) bool {
	return bucket(tx, bRevoked).Get(revokedBundleKey(id, version)) != nil
}

// thresholdPolicy is the policy of the store's thresholds alone.
func thresholdPolicy(tx *bolt.Tx) *bundle.Policy {
	p := &bundle.Policy{Thresholds: map[string]int{}}
	_ = bucket(tx, bTrustPolicy).ForEach(func(k, v []byte) error {
		p.Thresholds[string(k)] = int(getU64(v))
		return nil
	})
	return p
}

// policyTx returns the store's trust policy (keys and thresholds) as seen
// inside tx; a key revoked for some scopes counts nowhere under them.
func policyTx(tx *bolt.Tx) (*bundle.Policy, error) {
	p := thresholdPolicy(tx)
	err := bucket(tx, bTrust).ForEach(func(_, v []byte) error {
		var r trustRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		p.Keys = append(p.Keys, bundle.TrustedKey{Name: r.Name, Key: r.Key, Scopes: r.Scopes, Except: revokedScopes(tx, amp.DIDKey(r.Key))})
		return nil
	})
	return p, err
}

// signedBy reports whether one of the signatures of obj is by a key in
// dids, whether or not the store trusts it.
func signedBy(obj *bundle.SignedObject, dids map[string]bool) bool {
	for _, sg := range obj.Signatures {
		if dids[amp.BareDID(sg.KID)] {
			return true
		}
	}
	return false
}

// bundleDIDs returns the DID documents an installed bundle carries, as
// (did, artifact key) pairs, sorted by did.
func bundleDIDs(tx *bolt.Tx, bundleID string) ([][2]string, error) {
	var out [][2]string
	err := bucket(tx, bDIDs).ForEach(func(k, v []byte) error {
		var dr didRecord
		if err := decode(v, &dr); err != nil {
			return err
		}
		if dr.BundleID == bundleID {
			out = append(out, [2]string{string(k), dr.ArtifactKey})
		}
		return nil
	})
	return out, err
}

// vouchFor checks that the keys of p whose signatures on obj verify vouch
// for the installed bundle bundleID with manifest m as its import required
// (docs/FORMAT.md §5 steps 4 and 7): enough of them trusted for its bundle
// id and every namespace (bundle.VerifyFor), and, for every DID document
// it carries, enough of those trusted for the DID's domain. The recount of
// a bundle's remaining signers and the check of a statement that reaches
// one bundle (a version revocation) both use it, so neither needs less
// than the bundle's own names.
func vouchFor(tx *bolt.Tx, obj *bundle.SignedObject, p *bundle.Policy, m *bundle.Manifest, bundleID string) error {
	signers, err := bundle.VerifyFor(obj, p, m)
	if err != nil {
		return err
	}
	dids, err := bundleDIDs(tx, bundleID)
	if err != nil {
		return err
	}
	for _, d := range dids {
		if err := bundle.VerifyDIDFor(p, signers, d[1], d[0]); err != nil {
			return err
		}
	}
	return nil
}

// installedManifest returns the signed manifest of the installed bundle
// bundleID, or ok false when none is installed.
func installedManifest(tx *bolt.Tx, bundleID string) (r bundleRecord, obj *bundle.SignedObject, m *bundle.Manifest, ok bool, err error) {
	raw := bucket(tx, bBundles).Get([]byte(bundleID))
	if raw == nil {
		return r, nil, nil, false, nil
	}
	if err = decode(raw, &r); err != nil {
		return r, nil, nil, false, err
	}
	if obj, err = bundle.DecodeObject(r.Signed, bundle.MediaTypeManifest); err == nil {
		m, err = bundle.DecodeManifest(obj.Payload)
	}
	return r, obj, m, true, err
}

// checkVersionAuthority refuses a revocation of bundle versions whose
// counted signers (those VerifyStatement returned, trusted for the
// statement's scope) do not vouch for the line as its own bundle needs
// (docs/FORMAT.md §21): for a line installed, the threshold of its bundle
// id, every namespace and every DID it carries (vouchFor over the installed
// manifest); for a line not installed, whose other names the store cannot
// know, the threshold of its bundle id and every scope around or under it
// (bundle.Policy.RequiredWithin).
func checkVersionAuthority(tx *bolt.Tx, obj *bundle.SignedObject, policy *bundle.Policy, signers []bundle.TrustedKey, versions []bundle.BundleVersion) error {
	counted := &bundle.Policy{Keys: signers, Thresholds: policy.Thresholds}
	seen := map[string]bool{}
	for _, v := range versions {
		if seen[v.BundleID] {
			continue
		}
		seen[v.BundleID] = true
		_, _, m, ok, err := installedManifest(tx, v.BundleID)
		switch {
		case err != nil:
			return fail(ErrStoreIO, "the signed manifest of installed bundle %s is unreadable", v.BundleID).WithCause(err)
		case ok:
			if err := vouchFor(tx, obj, counted, m, v.BundleID); err != nil {
				e := amp.AsError(err)
				return amp.Named(e.Code, e.Name, "the revocation of versions of %s is not signed as the installed bundle itself must be: %s", v.BundleID, e.Message).WithDetails(e.Details)
			}
		default:
			if need, by := policy.RequiredWithin(v.BundleID); len(signers) < need {
				return fail(bundle.ErrThreshold, "the revocation of versions of %s needs %d signatures by distinct keys trusted for it (threshold of scope %s); found %d",
					v.BundleID, need, by, len(signers))
			}
		}
	}
	return nil
}

// remainingSigners returns the policy of the keys that still vouch for an
// installed bundle: trusted now, not in gone, and (when the record keeps
// them) among the signers that counted when it was imported.
func remainingSigners(p *bundle.Policy, r *bundleRecord, gone map[string]bool) *bundle.Policy {
	counted := map[string]bool{}
	for _, k := range r.SignerKeys {
		counted[k] = true
	}
	out := &bundle.Policy{Thresholds: p.Thresholds}
	for _, k := range p.Keys {
		did := amp.DIDKey(k.Key)
		if gone[did] || len(counted) > 0 && !counted[did] {
			continue
		}
		out.Keys = append(out.Keys, k)
	}
	return out
}

// failClosed marks the installed bundles that can no longer be trusted
// (docs/FORMAT.md §21): every version listed in versions, and every bundle
// whose signed manifest carries a signature by a key in gone (did:keys,
// matched against the signatures' kids whether or not a trust entry still
// names the key) when the signers that still vouch for it — counted at its
// import, trusted now for its bundle id and every namespace, not in gone,
// counted by key — no longer vouch for it as its import required: fewer
// than the threshold now in force for its names or, for a DID document it
// carries, fewer trusted for the DID's domain than that name's threshold
// (vouchFor).
// within, when not "", limits that second rule to bundles whose bundle id
// and namespaces all lie under the scope within. reason says why. It
// returns them as "bundle_id@version", sorted.
//
// narrowed are did:keys the statement left trusted for scopes disjoint
// from within (withdrawScope): every bundle they signed, under within or
// not, is recounted as the store now trusts them (a bundle with a name
// under within no longer counts them), since a key that lost part of its
// trust may have been what a bundle spanning two scopes needed.
func failClosed(tx *bolt.Tx, gone, narrowed map[string]bool, versions map[bundle.BundleVersion]bool, within, reason string) ([]string, error) {
	policy, err := policyTx(tx)
	if err != nil {
		return nil, err
	}
	b := bucket(tx, bBundles)
	var marked []bundleRecord
	err = b.ForEach(func(_, v []byte) error {
		var r bundleRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		if r.Revoked != "" {
			return nil
		}
		why := ""
		if versions[bundle.BundleVersion{BundleID: r.BundleID, Version: r.Version}] {
			why = "this version is revoked"
		} else if len(gone) > 0 || len(narrowed) > 0 {
			obj, err := bundle.DecodeObject(r.Signed, bundle.MediaTypeManifest)
			var m *bundle.Manifest
			if err == nil {
				m, err = bundle.DecodeManifest(obj.Payload)
			}
			switch {
			case err != nil:
				why = "its signed manifest is unreadable" // cannot tell who signed it: fail closed
			case signedBy(obj, gone) && (within == "" || bundle.ManifestUnder(m, within)):
				if err := vouchFor(tx, obj, remainingSigners(policy, &r, gone), m, r.BundleID); err == nil {
					return nil
				}
				why = reason
			case signedBy(obj, narrowed):
				if err := vouchFor(tx, obj, remainingSigners(policy, &r, nil), m, r.BundleID); err == nil {
					return nil
				}
				why = reason
			default:
				return nil
			}
		}
		if why == "" {
			return nil
		}
		r.Revoked = why
		marked = append(marked, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range marked {
		if err := b.Put([]byte(r.BundleID), encode(r)); err != nil {
			return nil, err
		}
		out = append(out, bundle.BundleVersion{BundleID: r.BundleID, Version: r.Version}.String())
	}
	sort.Strings(out)
	return out, nil
}

// RevokeResult describes an applied revocation statement.
type RevokeResult struct {
	Scope        string   `json:"scope"`
	Signers      []string `json:"signers"`
	RevokedKeys  []string `json:"revoked_keys"`  // did:keys the statement names
	RemovedTrust []string `json:"removed_trust"` // names of trusted keys it removed
	// NarrowedTrust are the names of revoked keys still trusted for scopes
	// disjoint from the statement's (their trust for its scope is removed).
	NarrowedTrust  []string `json:"narrowed_trust"`
	RevokedBundles []string `json:"revoked_versions"` // bundle_id@version it names
	FailedClosed   []string `json:"failed_closed"`    // installed bundles that now fail closed
	Unchanged      bool     `json:"unchanged"`        // everything it says was already recorded
	Generation     uint64   `json:"generation"`
}

// ApplyRevocation verifies a revocation statement (docs/FORMAT.md §21)
// against the store's trust and applies it, in one transaction: the keys
// it names are no longer trusted (their trust entries go, and trust add
// refuses them for any scope overlapping the statement's), the bundle
// versions it names can no longer be imported, and every installed bundle
// it covers fails closed at its next use (5002 bundle_revoked): a version
// it names, or a bundle under its scope signed by a revoked key (matched by
// kid, trusted or not) whose remaining signers, counted by key, are fewer
// than its threshold (failClosed). Installed bundles stay listed (ls,
// check) until removed or replaced by a newer version. A statement is valid
// when signed by distinct keys trusted for its scope reaching
// bundle.Policy.RequiredWithin of it; it revokes a key for the scopes
// under its own (withdrawScope: the key stays trusted for disjoint scopes,
// NarrowedTrust) and refuses a key trusted for a broader scope
// (revocation_out_of_scope). Audited ("revoke";
// a refusal as "import_refused"); changes the generation.
func (s *Store) ApplyRevocation(data []byte) (_ *RevokeResult, err error) {
	fileSum, end, err := s.beginStatement(data)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	rev, obj, err := bundle.ParseRevocation(data)
	if err != nil {
		return nil, err
	}
	policy, err := s.policy()
	if err != nil {
		return nil, err
	}
	signers, err := bundle.VerifyStatement(obj, policy, rev.Scope)
	if err != nil {
		return nil, err
	}
	res := &RevokeResult{Scope: rev.Scope, RevokedKeys: append([]string{}, rev.Keys...), RemovedTrust: []string{}, NarrowedTrust: []string{}, RevokedBundles: []string{}, FailedClosed: []string{}}
	for _, k := range signers {
		res.Signers = append(res.Signers, k.Name)
	}
	for _, b := range rev.Bundles {
		res.RevokedBundles = append(res.RevokedBundles, b.String())
	}
	var gen uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := checkVersionAuthority(tx, obj, policy, signers, rev.Bundles); err != nil {
			return err
		}
		now := formatTime(s.opts.Now())
		rb := bucket(tx, bRevoked)
		tb := bucket(tx, bTrust)
		gone := map[string]bool{}     // trust names the statement removes
		var narrowed []trustRecord    // keys it leaves trusted for scopes disjoint from its own
		goneKeys := map[string]bool{} // every did:key it names
		fresh := false
		for _, did := range rev.Keys {
			goneKeys[did] = true
			pub, _ := bundle.KeyFromKID(did)
			if err := tb.ForEach(func(_, v []byte) error {
				var r trustRecord
				if err := decode(v, &r); err != nil {
					return err
				}
				if !bytes.Equal(r.Key, pub) {
					return nil
				}
				kept, ok := withdrawScope(r.Scopes, rev.Scope)
				if !ok {
					return fail(ErrRevocationScope, "key %s (%s) is trusted for %s, broader than the statement's scope %s: only a statement for a scope covering it revokes it there",
						r.Name, did, strings.Join(r.Scopes, ", "), rev.Scope)
				}
				if len(kept) == 0 {
					gone[r.Name] = true
					return nil
				}
				if len(kept) == len(r.Scopes) {
					return nil // trusted only for scopes disjoint from the statement's
				}
				r.Scopes = kept
				narrowed = append(narrowed, r)
				return nil
			}); err != nil {
				return err
			}
			rr := revokedRecord{StatementSHA256: fileSum, At: now, Scopes: []string{rev.Scope}}
			if raw := rb.Get(revokedKeyKey(did)); raw != nil {
				if decode(raw, &rr) != nil || len(rr.Scopes) == 0 || slices.Contains(rr.Scopes, rev.Scope) {
					continue // already revoked for this scope (or everywhere)
				}
				rr.Scopes = append(rr.Scopes, rev.Scope)
				sort.Strings(rr.Scopes)
			}
			fresh = true
			if err := rb.Put(revokedKeyKey(did), encode(rr)); err != nil {
				return err
			}
		}
		rec := encode(revokedRecord{StatementSHA256: fileSum, At: now})
		versions := map[bundle.BundleVersion]bool{}
		for _, b := range rev.Bundles {
			versions[b] = true
			if rb.Get(revokedBundleKey(b.BundleID, b.Version)) == nil {
				fresh = true
				if err := rb.Put(revokedBundleKey(b.BundleID, b.Version), rec); err != nil {
					return err
				}
			}
		}
		for name := range gone {
			res.RemovedTrust = append(res.RemovedTrust, name)
			if err := tb.Delete([]byte(name)); err != nil {
				return err
			}
		}
		sort.Strings(res.RemovedTrust)
		narrowedKeys := map[string]bool{}
		for _, r := range narrowed {
			narrowedKeys[amp.DIDKey(r.Key)] = true
			res.NarrowedTrust = append(res.NarrowedTrust, r.Name)
			if err := tb.Put([]byte(r.Name), encode(r)); err != nil {
				return err
			}
		}
		sort.Strings(res.NarrowedTrust)
		failed, err := failClosed(tx, goneKeys, narrowedKeys, versions, rev.Scope, "a signer's key is revoked and the signers still trusted are fewer than the threshold")
		if err != nil {
			return err
		}
		res.FailedClosed = append(res.FailedClosed, failed...)
		res.Unchanged = !fresh && len(gone) == 0 && len(narrowed) == 0 && len(failed) == 0
		if err := recordStatement(tx, data, fileSum); err != nil {
			return err
		}
		verdict := verdictAccepted
		if res.Unchanged {
			verdict = "unchanged"
		}
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "revoke", Actor: s.actor(), Verdict: verdict, Scopes: []string{rev.Scope},
			Signers: res.Signers, FileSHA256: fileSum, RevokedKeys: rev.Keys, RevokedBundles: appendStrings(res.RevokedBundles, res.FailedClosed)}); err != nil {
			return err
		}
		if res.Unchanged {
			return nil
		}
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	if gen != 0 {
		s.gen.Store(gen)
	}
	res.Generation = s.gen.Load()
	return res, nil
}

func appendStrings(a, b []string) []string {
	out := append([]string{}, a...)
	for _, v := range b {
		dup := false
		for _, w := range a {
			dup = dup || w == v
		}
		if !dup {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// TrustRemoveFailClosed stops trusting a key, as TrustRemove, and in the
// same transaction fails closed every installed bundle it signed whose
// other still-trusted signers are fewer than its threshold (5002
// bundle_revoked from then on). It returns those bundles. Audited
// ("trust_remove", then "fail_closed" when it failed any).
func (s *Store) TrustRemoveFailClosed(name string) ([]string, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen uint64
	var failed []string
	err := s.db.Update(func(tx *bolt.Tx) error {
		var r trustRecord
		if raw := bucket(tx, bTrust).Get([]byte(name)); raw != nil {
			if err := decode(raw, &r); err != nil {
				return err
			}
		}
		if err := s.trustRemoveTx(tx, name); err != nil {
			return err
		}
		var err error
		failed, err = failClosed(tx, map[string]bool{amp.DIDKey(r.Key): true}, nil, nil, "", "its signer "+name+" is no longer trusted (trust rm --fail-closed)")
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "fail_closed", Actor: s.actor(), Verdict: verdictAccepted,
				TrustName: name, RevokedBundles: failed}); err != nil {
				return err
			}
		}
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	s.gen.Store(gen)
	return failed, nil
}
