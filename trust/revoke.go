package trust

import (
	"crypto/sha256"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// RevocationEffects are the Effects of an applied revocation statement
// and what it did, by name.
type RevocationEffects struct {
	*Effects
	Scope          string
	Signers        []string // names of the keys that counted
	RevokedKeys    []string // did:keys the statement names
	RemovedTrust   []string // names of trusted keys it removed
	NarrowedTrust  []string // names of keys still trusted for scopes disjoint from its own
	RevokedBundles []string // bundle_id@version it names
	FailedClosed   []string // installed bundles that now fail closed
	Unchanged      bool     // everything it says was already recorded
}

// ApplyRevocation verifies a revocation statement (docs/FORMAT.md §21)
// against the state's trust and applies it: the keys it names are no
// longer trusted for the scopes under its own (withdrawScope; a key
// trusted for a broader scope is revocation_out_of_scope), the versions it
// names are revoked, and every installed bundle it covers fails closed
// (failClosed). A statement is valid when signed by distinct keys trusted
// for its scope reaching bundle.Policy.RequiredWithin of it, and, for each
// line whose versions it names, as that line's own bundles must be
// (checkVersionAuthority). It reads every field but Chains, Heartbeats
// and Freshness, and of Records only the versions and keys it names and
// the DID documents of the installed bundles it judges.
func ApplyRevocation(st *State, data []byte, now time.Time) (*State, *RevocationEffects, error) {
	rev, obj, err := bundle.ParseRevocation(data)
	if err != nil {
		return nil, nil, err
	}
	policy, signers, names, err := st.verifyStatement(obj, rev.Scope)
	if err != nil {
		return nil, nil, err
	}
	res := &RevocationEffects{Scope: rev.Scope, Signers: names, RevokedKeys: append([]string{}, rev.Keys...), RemovedTrust: []string{}, NarrowedTrust: []string{}, RevokedBundles: []string{}}
	for _, b := range rev.Bundles {
		res.RevokedBundles = append(res.RevokedBundles, b.String())
	}
	if err := st.checkVersionAuthority(obj, policy, signers, rev.Bundles); err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(data)
	next := st.Clone()
	fresh, goneKeys, narrowedKeys, kept, err := next.revokeKeys(res, rev, sum[:], formatTime(now))
	if err != nil {
		return nil, nil, err
	}
	versions := map[bundle.BundleVersion]bool{}
	for _, b := range rev.Bundles {
		versions[b] = true
		if _, ok := next.revokedVersion(b); !ok {
			fresh = true
			next.RevokedVersions[b] = Revocation{StatementSHA256: sum[:], At: formatTime(now)}
		}
	}
	res.FailedClosed = next.failClosed(goneKeys, narrowedKeys, versions, rev.Scope, "a signer's key is revoked and the signers still trusted are fewer than the threshold")
	res.Unchanged = !fresh && len(res.RemovedTrust) == 0 && len(res.NarrowedTrust) == 0 && len(res.FailedClosed) == 0
	verdict := verdictAccepted
	if res.Unchanged {
		verdict = verdictUnchanged
	}
	res.Effects = finish(st, next, Event{Action: "revoke", Verdict: verdict, Scopes: []string{rev.Scope},
		Signers: res.Signers, FileSHA256: sum[:], RevokedKeys: rev.Keys, RevokedBundles: union(res.RevokedBundles, res.FailedClosed)})
	// Kept even when it changes nothing here (a mirror passes it on to
	// the stores where it does), but once per payload: the store keeps
	// and charges no second file of the same StatementID, and audits none
	// that changes nothing (TRUST-19).
	res.Statement, res.StatementID, res.StatementAccounts, res.Changed = data, obj.PayloadSHA256(), st.statementAccounts(signers), !res.Unchanged
	res.StatementCharge = max(1, kept) // docs/SPEC-DECISIONS.md TRUST-33
	return next, res, nil
}

// revokeKeys withdraws the keys rev names from the scopes under its own
// and records their revocation; it fills res's RemovedTrust and
// NarrowedTrust and returns whether it recorded something new, the
// did:keys named, those left trusted for disjoint scopes, and kept: how
// many records of keys that stay trusted, none of their trust withdrawn,
// it lengthened. Those are read by every load of the store's trust
// state, so the statement is charged one kept statement for each
// (ApplyRevocation, Effects.StatementCharge; docs/SPEC-DECISIONS.md
// TRUST-33). A scope lying under one the record holds is not added;
// the scopes the record holds under it are replaced by it (withScope).
func (s *State) revokeKeys(res *RevocationEffects, rev *bundle.Revocation, sum []byte, at string) (fresh bool, named, narrowed map[string]bool, kept int, err error) {
	named, narrowed = map[string]bool{}, map[string]bool{}
	idx := s.keysByPublic() // one pass over the keys, not one per named key (TRUST-24)
	for _, did := range rev.Keys {
		named[did] = true
		withdrawn := false
		if k, ok := s.trustedByDID(idx, did); ok {
			left, ok := withdrawScope(k.Scopes, rev.Scope)
			withdrawn = ok && len(left) < len(k.Scopes)
			switch {
			case !ok:
				return false, nil, nil, 0, fail(ErrRevocationScope, "key %s (%s) is trusted for %s, broader than the statement's scope %s: only a statement for a scope covering it revokes it there",
					k.Name, did, strings.Join(k.Scopes, ", "), rev.Scope)
			case len(left) == 0:
				delete(s.Keys, k.Name)
				res.RemovedTrust = append(res.RemovedTrust, k.Name)
			case len(left) < len(k.Scopes):
				k.Scopes = left
				s.Keys[k.Name] = k
				narrowed[k.DID()] = true
				res.NarrowedTrust = append(res.NarrowedTrust, k.Name)
			}
		}
		rr := Revocation{StatementSHA256: sum, At: at, Scopes: []string{rev.Scope}}
		_, trusted := s.trustedByDID(idx, did)
		longer := true
		if old, ok := s.revokedKeyOf(did, trusted); ok {
			scopes, changed := withScope(old.Scopes, rev.Scope)
			if len(old.Scopes) == 0 || !changed {
				continue // already revoked for this scope (or everywhere)
			}
			rr.At, rr.Scopes, longer = old.At, scopes, len(scopes) > len(old.Scopes)
			if len(old.StatementSHA256) > 0 {
				rr.StatementSHA256 = old.StatementSHA256
			}
		}
		if trusted && !withdrawn && longer {
			kept++
		}
		fresh = true
		s.RevokedKeys[did] = rr
	}
	sort.Strings(res.RemovedTrust)
	sort.Strings(res.NarrowedTrust)
	return fresh, named, narrowed, kept, nil
}

// withScope returns the scopes of a key's revocation once revoked for
// scope as well, sorted, and whether they changed: a scope lying under
// one of them (equal or narrower) adds nothing, and those lying under
// scope are replaced by it. The key counts nowhere under any of them
// (KeyRevokedFor, bundle.TrustedKey.Except), so both forms forbid the
// same names; without this, a key revoked for org.example took
// org.example.a1, org.example.a2, ... on top of it, each kept and loaded
// (docs/SPEC-DECISIONS.md TRUST-33).
func withScope(scopes []string, scope string) ([]string, bool) {
	for _, sc := range scopes {
		if bundle.ScopesUnder([]string{scope}, sc) {
			return scopes, false
		}
	}
	out := []string{scope}
	for _, sc := range scopes {
		if !bundle.ScopesUnder([]string{sc}, scope) {
			out = append(out, sc)
		}
	}
	sort.Strings(out)
	return out, true
}

// verifyStatement verifies a statement of scope against the state's trust
// (bundle.VerifyStatement) and returns the policy, the keys that counted
// and their names.
func (s *State) verifyStatement(obj *bundle.SignedObject, scope string) (*bundle.Policy, []bundle.TrustedKey, []string, error) {
	policy, err := s.VerifyingPolicy()
	if err != nil {
		return nil, nil, nil, err
	}
	signers, err := bundle.VerifyStatement(obj, policy, scope)
	if err != nil {
		return nil, nil, nil, err
	}
	var names []string
	for _, k := range signers {
		names = append(names, k.Name)
	}
	return policy, signers, names, nil
}

// union returns a and the strings of b not in a, sorted.
func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, v := range b {
		if !slices.Contains(a, v) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
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

// vouchFor checks that the keys of p whose signatures on obj verify vouch
// for the installed bundle in with manifest m as its import required
// (docs/FORMAT.md §5 steps 4 and 7): enough of them trusted for its bundle
// id and every namespace (bundle.VerifyFor), and, for every DID document
// it carries, enough of those trusted for the DID's domain. The recount of
// a bundle's remaining signers and the check of a statement that reaches
// one bundle (a version revocation) both use it, so neither needs less
// than the bundle's own names. DID documents that cannot be read
// (bundleDIDs) vouch for nothing: the error is returned.
func (s *State) vouchFor(obj *bundle.SignedObject, p *bundle.Policy, m *bundle.Manifest, in *Installed) error {
	signers, err := bundle.VerifyFor(obj, p, m)
	if err != nil {
		return err
	}
	return s.vouchDIDs(p, signers, in)
}

// vouchDIDs is vouchFor's check of the DID documents the installed
// bundle in carries, by signers (bundle.VerifyFor's answer).
func (s *State) vouchDIDs(p *bundle.Policy, signers []bundle.TrustedKey, in *Installed) error {
	dids, err := s.bundleDIDs(in.BundleID)
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

// checkVersionAuthority refuses a revocation of bundle versions whose
// counted signers (those VerifyStatement returned, trusted for the
// statement's scope) do not vouch for the line as its own bundle needs
// (docs/FORMAT.md §21): for a line installed, the threshold of its bundle
// id, every namespace and every DID it carries (vouchFor over the installed
// manifest); for a line not installed, whose other names the store cannot
// know, the threshold of its bundle id and every scope around or under it
// (bundle.Policy.RequiredWithin).
func (s *State) checkVersionAuthority(obj *bundle.SignedObject, policy *bundle.Policy, signers []bundle.TrustedKey, versions []bundle.BundleVersion) error {
	counted := &bundle.Policy{Keys: signers, Thresholds: policy.Thresholds}
	verify := verifierFor(obj, counted)
	seen := map[string]bool{}
	for _, v := range versions {
		if seen[v.BundleID] {
			continue
		}
		seen[v.BundleID] = true
		in, installed := s.Installed[v.BundleID]
		if !installed {
			if need, by := policy.RequiredWithin(v.BundleID); len(signers) < need {
				return fail(bundle.ErrThreshold, "the revocation of versions of %s needs %d signatures by distinct keys trusted for it (threshold of scope %s); found %d",
					v.BundleID, need, by, len(signers))
			}
			continue
		}
		if _, m, ok := in.Manifest(); !ok {
			return fail(ErrStoreIO, "the signed manifest of installed bundle %s is unreadable", v.BundleID)
		} else if err := s.vouchLine(verify, counted, m, &in); err != nil {
			e := amp.AsError(err)
			return amp.Named(e.Code, e.Name, "the revocation of versions of %s is not signed as the installed bundle itself must be: %s", v.BundleID, e.Message).WithDetails(e.Details)
		}
	}
	return nil
}

// vouchLine is vouchFor for one installed line of a version revocation,
// its signatures verified by verify (verifierFor).
func (s *State) vouchLine(verify func(*bundle.Manifest) ([]bundle.TrustedKey, error), p *bundle.Policy, m *bundle.Manifest, in *Installed) error {
	signers, err := verify(m)
	if err != nil {
		return err
	}
	return s.vouchDIDs(p, signers, in)
}

// verifierFor returns bundle.VerifyFor(obj, p, m) as a function of m,
// for the many installed lines one version revocation names
// (checkVersionAuthority): obj's signatures are verified once for each
// answer, not once per line. VerifyFor verifies the signatures by p's
// keys whatever m is, then admits those of the keys covering m, against
// m's threshold; so its answer depends on m only through which keys of
// p cover m and p.RequiredFor(m), and an answer that admits is kept
// under those. A refusal is never kept: it ends the check. Each
// verification builds the signed bytes, the whole payload, per
// signature, so a statement naming 1,000 lines under 8 signatures cost
// 8,000 verifications of its own 44 KB payload, 479 MB allocated
// (docs/SPEC-DECISIONS.md TRUST-32). A policy of more than 64 keys,
// which VerifyStatement's signers never make, is verified per call.
func verifierFor(obj *bundle.SignedObject, p *bundle.Policy) func(*bundle.Manifest) ([]bundle.TrustedKey, error) {
	type answer struct {
		covering uint64 // bit i: p.Keys[i] covers m
		need     int
	}
	admitted := map[answer][]bundle.TrustedKey{}
	return func(m *bundle.Manifest) ([]bundle.TrustedKey, error) {
		if len(p.Keys) > 64 {
			return bundle.VerifyFor(obj, p, m)
		}
		a, covers := answer{need: p.RequiredFor(m)}, coverer(m)
		for i, k := range p.Keys {
			if covers(k) {
				a.covering |= 1 << i
			}
		}
		if out, ok := admitted[a]; ok {
			return out, nil
		}
		out, err := bundle.VerifyFor(obj, p, m)
		if err == nil {
			admitted[a] = out
		}
		return out, err
	}
}

// reachedBy reports whether a revocation of scope within naming the keys
// gone speaks for the installed bundle in with manifest m: its bundle id
// and every namespace lie under within, or one of its names (its bundle
// id, a namespace, the domain of a DID document it carries) does and a key
// of gone counted for it at import (every key that signed it, for a
// record that does not keep its signers). A key trusted for two scopes
// and retired from one no longer counts there, but a bundle spanning both
// that it vouched for is still reached by either scope's revocation of
// it: the key's authority over each of its names was what let it in. A
// statement of another scope, naming a key that never counted for the
// bundle, reaches none of it. DID documents that cannot be read
// (bundleDIDs) count as a name under within: the recount, which needs
// them too, then fails the bundle closed.
func (s *State) reachedBy(in *Installed, m *bundle.Manifest, gone map[string]bool, within string) bool {
	if bundle.ManifestUnder(m, within) {
		return true
	}
	counted := len(in.Signers) == 0 // signedBy holds: every signer may have counted
	for _, did := range in.Signers {
		counted = counted || gone[did]
	}
	if !counted {
		return false
	}
	for _, name := range append([]string{m.BundleID}, m.Namespaces()...) {
		if bundle.ScopesUnder([]string{name}, within) {
			return true
		}
	}
	dids, err := s.bundleDIDs(in.BundleID)
	if err != nil {
		return true
	}
	for _, d := range dids {
		if name, ok := bundle.DIDScopeName(d[0]); ok && bundle.ScopesUnder([]string{name}, within) {
			return true
		}
	}
	return false
}

// remainingSigners returns the policy of the keys that still vouch for an
// installed bundle: trusted now, not in gone, and (when the record keeps
// them) among the signers that counted when it was imported. dids are
// the did:keys of p's keys (State.policy), found once for every bundle
// an act recounts. Only the keys whose did:key is the kid of a signature
// of obj are kept: no other key of p can verify one (bundle.Policy.find
// matches a kid to a key's did:key exactly), and copying all of p per
// recounted bundle made a recount cost bundles × trusted keys in memory
// (docs/SPEC-DECISIONS.md TRUST-27).
func remainingSigners(p *bundle.Policy, dids []string, obj *bundle.SignedObject, in *Installed, gone map[string]bool) *bundle.Policy {
	out := &bundle.Policy{Thresholds: p.Thresholds}
	for i, k := range p.Keys {
		did := dids[i]
		if !signedAs(obj, did) || gone[did] || len(in.Signers) > 0 && !slices.Contains(in.Signers, did) {
			continue
		}
		out.Keys = append(out.Keys, k)
	}
	return out
}

// signedAs reports whether a signature of obj has the kid did.
func signedAs(obj *bundle.SignedObject, did string) bool {
	for _, sg := range obj.Signatures {
		if sg.KID == did {
			return true
		}
	}
	return false
}

// failClosed marks the installed bundles that can no longer be trusted
// (docs/FORMAT.md §21): every version listed in versions, and every bundle
// whose signed manifest carries a signature by a key in gone (did:keys,
// matched against the signatures' kids whether or not a trust entry still
// names the key) when the signers that still vouch for it — counted at its
// import, trusted now for its bundle id and every namespace, not in gone,
// counted by key — no longer vouch for it as its import required
// (vouchFor). within, when not "", limits that second rule to bundles
// the statement of scope within speaks for (reachedBy): those whose bundle
// id and namespaces all lie under it, and those with one name under it
// for which a key in gone counted at import. reason says why. It returns
// them as "bundle_id@version", sorted.
//
// narrowed are did:keys the statement left trusted for scopes disjoint
// from within (withdrawScope): every bundle they signed, under within or
// not, is recounted as the store now trusts them (a bundle with a name
// under within no longer counts them), since a key that lost part of its
// trust may have been what a bundle spanning two scopes needed.
func (s *State) failClosed(gone, narrowed map[string]bool, versions map[bundle.BundleVersion]bool, within, reason string) []string {
	// The did:keys of policy's keys, for the recounts (none without gone
	// or narrowed keys).
	policy, dids := s.policy(len(s.Installed) > 0 && (len(gone) > 0 || len(narrowed) > 0))
	out := []string{}
	for _, id := range slices.Sorted(maps.Keys(s.Installed)) {
		in := s.Installed[id]
		if in.Revoked != "" {
			continue
		}
		why := ""
		if versions[bundle.BundleVersion{BundleID: in.BundleID, Version: in.Version}] {
			why = "this version is revoked"
		} else if len(gone) > 0 || len(narrowed) > 0 {
			why = s.recount(policy, dids, &in, gone, narrowed, within, reason)
		}
		if why == "" {
			continue
		}
		in.Revoked = why
		s.Installed[id] = in
		out = append(out, bundle.BundleVersion{BundleID: in.BundleID, Version: in.Version}.String())
	}
	sort.Strings(out)
	return out
}

// recount is failClosed's second rule for one installed bundle: reason
// when it fails closed, "" when it stays (dids: the did:keys of
// policy's keys).
func (s *State) recount(policy *bundle.Policy, dids []string, in *Installed, gone, narrowed map[string]bool, within, reason string) string {
	obj, m, ok := in.Manifest()
	switch {
	case !ok:
		return "its signed manifest is unreadable" // cannot tell who signed it: fail closed
	case signedBy(obj, gone) && (within == "" || s.reachedBy(in, m, gone, within)):
		if s.vouchFor(obj, remainingSigners(policy, dids, obj, in, gone), m, in) == nil {
			return ""
		}
		return reason
	case signedBy(obj, narrowed):
		if s.vouchFor(obj, remainingSigners(policy, dids, obj, in, nil), m, in) == nil {
			return ""
		}
		return reason
	}
	return ""
}
