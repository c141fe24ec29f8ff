package trust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// RotationEffects are the Effects of an applied trust statement and what
// it did, by name.
type RotationEffects struct {
	*Effects
	Scope     string
	Sequence  uint64
	Threshold uint64
	Signers   []string
	Added     []string // names of the keys it added
	Retired   []string // names of the trusted keys it retired
	Unchanged bool     // this statement (its payload, whatever its signatures) was applied before
	// StillInstalled are the installed bundles signed by a retired key,
	// as bundle_id@version, by bundle_id.
	StillInstalled []string
}

// chainHead returns the sequence of the last applied statement of scope
// and the values a next statement's prev may have (links): the SHA-256 of
// its payload and of its whole file (0, nil for none). The payload names
// the statement whatever signatures its file carries (TRUST-19); the file
// is how writers before it linked, still accepted for chains already
// published.
func (s *State) chainHead(scope string) (seq uint64, links [][]byte) {
	c := s.Chains[scope]
	if len(c) == 0 {
		return 0, nil
	}
	head := c[len(c)-1]
	file := sha256.Sum256(head.Data)
	if id := statementID(head.Data); id != nil {
		links = append(links, id)
	}
	return head.Seq, append(links, file[:])
}

// statementID is the identity of the kept trust statement data, the
// SHA-256 of its payload (bundle.SignedObject.PayloadSHA256); nil when it
// does not decode (then only its file's SHA-256 names it).
func statementID(data []byte) []byte {
	obj, err := bundle.DecodeObject(data, bundle.MediaTypeRotation)
	if err != nil {
		return nil
	}
	return obj.PayloadSHA256()
}

// applied returns the statement of scope the store applied at seq (nil
// for none).
func (s *State) applied(scope string, seq uint64) []byte {
	for _, e := range s.Chains[scope] {
		if e.Seq == seq {
			return e.Data
		}
	}
	return nil
}

// ApplyRotation verifies a trust statement (docs/FORMAT.md §22) and applies
// it: it must be the next of its scope's chain (sequence one more than the
// last applied, prev the SHA-256 of its payload or of the file applied; a
// later one is rotation_gap, another statement of an applied number or one
// chaining elsewhere rotation_fork; the file applied before is Unchanged,
// and so is another file of its payload whose signatures verify as a new
// statement's must against the trust of now (else its refusal), and
// neither changes anything),
// signed by distinct keys trusted for the scope reaching, before it,
// bundle.Policy.RequiredWithin of the scope. Then its added keys are
// trusted for the scope, its retired keys are withdrawn from it
// (withdrawScope), and the scope's threshold is set; a statement that
// would leave fewer keys for the scope than its threshold is refused, and
// one adding keys that would keep more than MaxMintedKeys keys of its
// account trusted is limit_exceeded (checkMinted). It
// reads every field but Heartbeats and Freshness, and of Chains only its
// scope's last statement and the one at its sequence; of Records, the
// revocations of the keys it adds.
func ApplyRotation(st *State, data []byte, now time.Time) (*State, *RotationEffects, error) {
	rot, obj, err := bundle.ParseRotation(data)
	if err != nil {
		return nil, nil, err
	}
	res := &RotationEffects{Scope: rot.Scope, Sequence: rot.Sequence, Threshold: rot.Threshold, Added: []string{}, Retired: []string{}, StillInstalled: []string{}}
	// The chain position first: a statement out of order is refused
	// whoever signed it, and one already applied is a no-op.
	// A statement is its payload (TRUST-19): the one applied at this
	// number under other signatures is that statement, and prev names
	// statement n-1 by its payload or, as earlier writers did, by the file
	// this store applied.
	sum, id := sha256.Sum256(data), obj.PayloadSHA256()
	head, links := st.chainHead(rot.Scope)
	switch {
	case rot.Sequence <= head:
		applied := st.applied(rot.Scope, rot.Sequence)
		if !bytes.Equal(applied, data) {
			if !bytes.Equal(statementID(applied), id) {
				return nil, nil, fail(ErrRotationFork, "trust statement %d of scope %s is not the one this store applied (a fork of the chain)", rot.Sequence, rot.Scope)
			}
			// Another file of the applied statement is judged as any
			// statement (every signature verifies, enough keys trusted
			// for the scope now) before it is answered unchanged: a
			// tampered copy is bad_signature, as a revocation's is. The
			// file applied is not judged again (the chain may since have
			// retired its signers).
			if _, _, _, err := st.verifyStatement(obj, rot.Scope); err != nil {
				return nil, nil, err
			}
		}
		res.Unchanged, res.Effects = true, &Effects{}
		return st.Clone(), res, nil // never st itself: next shares nothing with the input
	case rot.Sequence > head+1:
		return nil, nil, fail(ErrRotationGap, "this store applied trust statements of scope %s up to %d: apply %d to %d first, in order", rot.Scope, head, head+1, rot.Sequence-1)
	case head == 0 && !bytes.Equal(rot.Prev, make([]byte, 32)), head > 0 && !slices.ContainsFunc(links, func(l []byte) bool { return bytes.Equal(rot.Prev, l) }):
		return nil, nil, fail(ErrRotationFork, "trust statement %d of scope %s does not chain to statement %d this store applied (a fork of the chain; prev must be the SHA-256 of that statement's payload, or of the file this store applied)", rot.Sequence, rot.Scope, head)
	}
	_, signers, names, err := st.verifyStatement(obj, rot.Scope)
	if err != nil {
		return nil, nil, err
	}
	res.Signers = names
	// The keys it adds descend from its signers' account (the least, so
	// that every store charges the same one): a scope's owners minting
	// keys never mint shares (docs/SPEC-DECISIONS.md TRUST-17).
	var origin string
	accounts := st.statementAccounts(signers)
	if len(accounts) > 0 { // always: VerifyStatement returns a signer or an error
		origin = accounts[0]
	}
	next := st.Clone()
	retired, err := next.retire(res, rot)
	if err != nil {
		return nil, nil, err
	}
	held, err := next.add(res, rot, formatTime(now), origin)
	if err != nil {
		return nil, nil, err
	}
	if err := next.checkMinted(origin, len(res.Added), st.minted(origin)); err != nil {
		return nil, nil, err
	}
	next.setThreshold(rot.Scope, rot.Threshold)
	if covering := next.covering(rot.Scope); uint64(covering) < rot.Threshold {
		return nil, nil, fail(bundle.ErrInvalidStatement, "the statement would leave %d key(s) trusted for %s, fewer than its threshold %d", covering, rot.Scope, rot.Threshold)
	}
	link := &ChainLink{Scope: rot.Scope, ChainEntry: ChainEntry{Seq: rot.Sequence, Data: data}}
	next.Chains[rot.Scope] = append(slices.Clone(st.Chains[rot.Scope]), link.ChainEntry)
	for _, id := range slices.Sorted(maps.Keys(next.Installed)) {
		// By key, as revocation matches (a trust name may since have
		// been given to another key).
		in := next.Installed[id]
		if obj, err := bundle.DecodeObject(in.Signed, bundle.MediaTypeManifest); err == nil && signedBy(obj, retired) {
			res.StillInstalled = append(res.StillInstalled, bundle.BundleVersion{BundleID: in.BundleID, Version: in.Version}.String())
		}
	}
	var added []string
	for _, a := range rot.Add {
		added = append(added, a.Key)
	}
	slices.Sort(res.Retired)
	res.Effects = finish(st, next, Event{Action: "rotate", Verdict: verdictAccepted, Scopes: []string{rot.Scope},
		Sequence: rot.Sequence, Threshold: rot.Threshold, Signers: res.Signers, FileSHA256: sum[:], AddedKeys: added, RetiredKeys: rot.Retire})
	res.Chain, res.Statement, res.StatementID, res.StatementAccounts = link, data, id, accounts
	res.StatementCharge = max(1, held) // docs/SPEC-DECISIONS.md TRUST-33
	return next, res, nil
}

// MaxMintedKeys bounds the keys trust statements keep trusted under one
// account (Key.Origin, docs/SPEC-DECISIONS.md TRUST-25): as many as a
// trust policy file lists. Without it an authority's share of statements
// (StatementShare, each adding bundle.MaxRotationKeys) trusted 64,000
// keys, which every later import, statement and judgement of an
// installed bundle loads and walks.
const MaxMintedKeys = 1000

// minted counts the trusted keys descending from origin.
func (s *State) minted(origin string) int {
	n := 0
	for _, k := range s.Keys {
		if k.Origin == origin {
			n++
		}
	}
	return n
}

// checkMinted refuses, limit_exceeded, a statement that added keys
// (added > 0) when more than MaxMintedKeys keys descending from origin are
// trusted after it and more than before it (before). One that adds none
// (a retirement, a new threshold) is never refused by it, nor one that
// retires as many as it adds, so an account past the bound from an
// earlier build can still rotate a key and shrink.
func (s *State) checkMinted(origin string, added, before int) error {
	if added == 0 || origin == "" {
		return nil
	}
	if n := s.minted(origin); n > MaxMintedKeys && n > before {
		return fail(bundle.ErrTooLarge, "the statement would keep %d keys trusted that trust statements of the account of %s added, more than %d; retire keys in the same statement, or have the operator trust the new key itself (trust add)", n, origin, MaxMintedKeys)
	}
	return nil
}

// retire withdraws the keys rot retires from its scope and returns their
// did:keys; a key trusted for a broader scope is revocation_out_of_scope.
func (s *State) retire(res *RotationEffects, rot *bundle.Rotation) (map[string]bool, error) {
	retired := map[string]bool{}
	for _, did := range rot.Retire {
		k, ok := s.keyByDID(did)
		if !ok {
			continue // not trusted here: nothing to retire
		}
		kept, ok := withdrawScope(k.Scopes, rot.Scope)
		if !ok {
			return nil, fail(ErrRevocationScope, "key %s is trusted for %s, broader than the statement's scope %s", k.Name, strings.Join(k.Scopes, ", "), rot.Scope)
		}
		if len(kept) == len(k.Scopes) {
			continue // trusted only for scopes disjoint from the statement's: nothing to retire
		}
		retired[did] = true
		res.Retired = append(res.Retired, k.Name)
		if len(kept) > 0 { // still trusted for scopes disjoint from rot.Scope
			k.Scopes = kept
			s.Keys[k.Name] = k
			continue
		}
		delete(s.Keys, k.Name)
	}
	return retired, nil
}

// add trusts the keys rot adds for its scope (a key already trusted for
// it stays as it is), with origin (Key.Origin). held is the number of
// scopes of the revocations of the keys it trusts: every load of the
// store reads them from now on, so the statement is charged for them
// (Effects.StatementCharge), as a revocation adding them to a trusted
// key's record is (revokeKeys; docs/SPEC-DECISIONS.md TRUST-33).
func (s *State) add(res *RotationEffects, rot *bundle.Rotation, at, origin string) (held int, err error) {
	for _, a := range rot.Add {
		if by, ok := s.KeyRevokedFor(a.Key, []string{rot.Scope}); ok {
			return 0, fail(ErrKeyRevoked, "the statement adds %s, which this store has revoked for scope %s", a.Key, by)
		}
		if k, ok := s.keyByDID(a.Key); ok {
			if tk := s.trusted(k); tk.CoversScope(rot.Scope) {
				continue // already trusted for the scope
			}
			return 0, fail(ErrTrustExists, "the statement adds %s, already trusted as %s for other scopes", a.Key, k.Name)
		}
		if _, ok := s.Keys[a.Name]; ok {
			return 0, fail(ErrTrustExists, "the statement adds a key named %s, a name this store already uses", a.Name)
		}
		// bundle.ParseRotation expanded every added key already
		// (KeyFromKID refuses one of small order, amp.CheckEd25519PublicKey);
		// a key that does not expand is never trusted as an empty one.
		pub, ok := bundle.KeyFromKID(a.Key)
		if !ok || !(Key{Key: pub}).usable() {
			return 0, fail(bundle.ErrInvalidStatement, "the statement adds %s, which is not a did:key of an ed25519 key anyone holds", a.Key)
		}
		did := amp.DIDKey(pub)
		s.holdRevocation(did)
		held += len(s.RevokedKeys[did].Scopes)
		// A trust rm record (RemovedKeys) stays: the statement trusts the
		// key for its own scope, and the record keeps a policy file from
		// trusting it for any scope once no statement does
		// (docs/SPEC-DECISIONS.md TRUST-16): a statement of one scope
		// never lifts the operator's removal elsewhere.
		s.Keys[a.Name] = Key{Name: a.Name, Key: ed25519.PublicKey(pub), Scopes: []string{rot.Scope}, AddedAt: at, Origin: origin}
		res.Added = append(res.Added, a.Name)
	}
	return held, nil
}
