package trust

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// Key is a publisher key the store trusts under a name, for scopes ("*"
// or reverse-domain prefixes, in their stored form: CleanScopes).
type Key struct {
	Name    string
	Key     ed25519.PublicKey
	Scopes  []string
	AddedAt string // RFC 3339 UTC
	// Origin is, for a key a trust statement added, the account of the
	// statement's signers (Account): the operator-trusted key its trust
	// descends from, which its heartbeats of lines not installed and the
	// statements it signs are charged to. "" for a key the operator added
	// (trust add, a policy file), or one a statement added before origins
	// were kept: its own account.
	Origin string
}

// DID returns the key's did:key.
func (k Key) DID() string { return amp.DIDKey(k.Key) }

// usable reports whether a signature can be held to k's key: it passes
// amp.CheckEd25519PublicKey (docs/SPEC-DECISIONS.md TRUST-21). No
// function of this package trusts a key that fails it, but a store
// written before AddKey checked may hold one: it is trusted for nothing
// (Policy leaves it out, covering does not count it), since
// crypto/ed25519.Verify accepts forged signatures for it.
func (k Key) usable() bool { return amp.CheckEd25519PublicKey(k.Key) == nil }

// RefusedSmallOrder is what Key.Refused names a key of small order or not
// in canonical form (docs/SPEC-DECISIONS.md TRUST-21).
const RefusedSmallOrder = "small_order"

// Refused names why k, although the trust records hold it, is trusted for
// nothing (Policy leaves it out): RefusedSmallOrder for a key of small
// order or not in canonical form, which a store written before that check
// may hold; "" for a key that is trusted. What lists the keys shows it so
// that the operator can remove it (trust rm).
func (k Key) Refused() string {
	if k.usable() {
		return ""
	}
	return RefusedSmallOrder
}

// errUnusableKey is the refusal of a key of small order or not in
// canonical form (usable).
func errUnusableKey() *amp.Error {
	return fail(ErrInvalidTrust, "trusted key is an ed25519 key of small order or not in canonical form: no one holds its private key, and anybody can sign as it")
}

// Account returns the account a key's share of heartbeats of lines not
// installed (docs/SPEC-DECISIONS.md TRUST-17) and of kept statements
// (TRUST-18, ChargeStatement) is charged to: the did:key of the
// operator-trusted key its trust descends from (Key.Origin) — the key
// itself when the operator added it, or when s no longer trusts it.
func (s *State) Account(did string) string {
	if k, ok := s.keyByDID(did); ok && k.Origin != "" {
		return k.Origin
	}
	return did
}

// LeastUnderShare returns the account a kept item (a statement,
// ChargeStatement; a heartbeat of a line not installed, TRUST-17) is
// charged to: the least of accounts charged fewer than share (charged:
// per account; absent is none), so that every store charges the same
// one; "" when each has had its share.
func LeastUnderShare(accounts []string, charged map[string]int, share int) string {
	var out string
	for _, a := range accounts {
		if charged[a] < share && (out == "" || a < out) {
			out = a
		}
	}
	return out
}

// Revocation is what a store keeps of a revoked key or bundle version:
// the statement that revoked it and when. Scopes (keys only) are the
// scopes of the statements that revoked the key; nil means everywhere
// ("*": a record written before scopes were kept, or one unreadable).
type Revocation struct {
	StatementSHA256 []byte // empty for trust rm --fail-closed
	At              string
	Scopes          []string
}

// Heartbeat is the newest heartbeat a store applied for one bundle line
// (docs/FORMAT.md §23).
type Heartbeat struct {
	Version         uint64
	CreatedAt       string
	StatementSHA256 []byte
	At              string
	// Signers are the did:keys that counted for it (nil in records kept
	// before they were: such a heartbeat counts as it did then).
	Signers []string
	// Threshold is the number of signers it needed when it was applied,
	// judged as a bundle of its line (LineOf), and LineSHA256 the digest
	// of the names it was judged for (LineDigest): while the installed
	// bundle has those names, a threshold raised since does not unpin the
	// line (Vouches). Zero and nil in records kept before they were.
	Threshold  uint64
	LineSHA256 []byte
	// Charged is the account (State.Account) charged for it when it was
	// kept for a line with no bundle installed ("" when none was): a
	// newer heartbeat of the line keeps the charge, whoever signed it.
	Charged string
	// Unreadable is set for a kept record that does not decode: its line
	// fails closed as stale and takes no heartbeat until reset.
	Unreadable bool
}

// NoVersionBound is Freshness.MaxVersions when only an age bound is set.
const NoVersionBound = ^uint64(0)

// Freshness is an operator's staleness bound for a scope.
type Freshness struct {
	MaxVersions   uint64 // NoVersionBound: none
	MaxAgeSeconds uint64 // 0: none
}

// Installed is an installed bundle as trust judges it.
type Installed struct {
	BundleID string
	Version  uint64
	Signed   []byte   // the COSE_Sign manifest exactly as received
	Signers  []string // SignerKeys: did:keys that counted at import (nil when not kept)
	Revoked  string   // why it fails closed ("" when it does not)
	// Floor is the time floor an act that narrowed trust pinned for this
	// version (Unix seconds; 0: none): its floor never goes below it
	// (InstalledFloor, pinFloors).
	Floor int64
	// FloorKeys are the did:keys whose signed times Floor rests on
	// (sorted; nil for a pin kept before they were recorded): the pin
	// lives only while one of them is trusted for the bundle or signed it.
	FloorKeys []string
}

// Manifest decodes the signed manifest of an installed bundle.
func (in *Installed) Manifest() (*bundle.SignedObject, *bundle.Manifest, bool) {
	obj, err := bundle.DecodeObject(in.Signed, bundle.MediaTypeManifest)
	if err != nil {
		return nil, nil, false
	}
	m, err := bundle.DecodeManifest(obj.Payload)
	return obj, m, err == nil
}

// ChainEntry is one applied trust statement of a scope's chain.
type ChainEntry struct {
	Seq  uint64
	Data []byte // the signed statement as applied
}

// Records is where a State finds what a store may keep without bound and
// a State therefore does not hold: the revoked bundle versions (a
// publisher trusted for one scope can revoke thousands of its own), the
// revocations of keys the store does not trust (a revocation may name any
// did:key), and the DID documents of the installed bundles. A store backs it with its
// storage as it was when it loaded the State, in the same transaction
// (package resolver reads its bbolt transaction), so the functions of this
// package remain functions of the state: they only ask, for the versions
// a statement names and the bundles they judge, and never write through
// it. Its answers must not change while the State is in use.
type Records interface {
	// RevokedVersion returns the revocation the store keeps of the bundle
	// version v, and whether it keeps one (a record that does not decode
	// is one: Revocation{}).
	RevokedVersion(v bundle.BundleVersion) (Revocation, bool)
	// RevokedKey returns the revocation the store keeps of the key did (a
	// did:key no trusted key has: those of trusted keys are in
	// State.RevokedKeys), and whether it keeps one (a record that does not
	// decode is one: Revocation{}, everywhere).
	RevokedKey(did string) (Revocation, bool)
	// BundleDIDs returns the DID documents the installed bundle bundleID
	// carries, as (did, artifact key) pairs sorted by did, or an error
	// when the store cannot read them: a bundle whose DIDs cannot be read
	// is judged as one its signers no longer vouch for.
	BundleDIDs(bundleID string) ([][2]string, error)
}

// State is the trust state of a store. The functions of this package
// never modify a State they are given, and the State they return shares
// no memory with it (Clone is deep). Maps that a store did not load
// (Installed, Heartbeats for other lines) are nil or partial; each
// function says what it reads.
type State struct {
	Keys       map[string]Key    // by name
	Thresholds map[string]uint64 // scope -> n (2 to bundle.MaxSignatures; absent: 1)
	// RevokedKeys are the revoked keys the State holds: the revocation of
	// every trusted key that has one, those its functions looked up or
	// added and, when Records is nil, every one the store keeps. A key
	// absent here and not trusted is looked up in Records (revokedKey).
	RevokedKeys map[string]Revocation // did:key -> revocation
	// RemovedKeys are the keys the operator stopped trusting with trust rm
	// (did:key -> the trust name it had): a policy file does not trust one again
	// (ApplyPolicy); trust add does (a trust statement adding it trusts
	// it for its scope and keeps the record: TRUST-16).
	RemovedKeys map[string]string
	// RevokedVersions are the revoked bundle versions the State holds:
	// those its functions added and, when Records is nil, every one the
	// store keeps. A version absent here is looked up in Records.
	RevokedVersions map[bundle.BundleVersion]Revocation
	Chains          map[string][]ChainEntry // scope -> applied statements by sequence
	Heartbeats      map[string]Heartbeat    // bundle_id -> newest kept heartbeat
	// HeartbeatKept is, per bundle_id, the SHA-256 of the heartbeat bytes
	// the store keeps for a mirror (absent when it keeps none).
	HeartbeatKept map[string][]byte
	Freshness     map[string]Freshness // scope -> bound
	KeyFloors     map[string]int64     // did:key -> newest signed time it vouched for (Unix seconds)
	TimeFloor     int64                // newest signed time any key vouched for
	Highwater     map[string]uint64    // bundle_id -> highest version ever imported
	Installed     map[string]Installed // bundle_id -> installed bundle
	// Records looks up the revoked versions RevokedVersions does not hold
	// and the DID documents of installed bundles; nil for a store that
	// keeps no more revoked versions than RevokedVersions and no DID
	// documents.
	Records Records
	// KeyDIDs, when not nil, holds did:keys already encoded, by the
	// public key's bytes (amp.DIDKey of each): the policy (policy, DIDOf;
	// so Prepare, pinFloors and failClosed) reads a trusted key's there
	// instead of encoding it again. A store loading
	// its state fills it as it looks each key's origin and revocation up
	// by did:key, so that a load and its policy encode each key once, not
	// three times (docs/SPEC-DECISIONS.md TRUST-28). Every entry must be
	// amp.DIDKey of its key; a key absent is encoded. Like Records, it is
	// read-only once the State is in use, and Clone shares it.
	KeyDIDs map[string]string
}

// Clone returns a deep copy of s: changing the copy (its maps, or the
// slices and bytes of their values) changes nothing of s. Records, a
// read-only view of the store, is shared. Every map of the copy is made,
// even where s's is nil.
func (s *State) Clone() *State {
	return &State{
		Keys: cloneMap(s.Keys, cloneKey), Thresholds: cloneMap(s.Thresholds, same), RevokedKeys: cloneMap(s.RevokedKeys, cloneRevocation),
		RemovedKeys:     cloneMap(s.RemovedKeys, same),
		RevokedVersions: cloneMap(s.RevokedVersions, cloneRevocation), Chains: cloneMap(s.Chains, cloneChain),
		Heartbeats: cloneMap(s.Heartbeats, cloneHeartbeat), HeartbeatKept: cloneMap(s.HeartbeatKept, bytes.Clone),
		Freshness: cloneMap(s.Freshness, same), KeyFloors: cloneMap(s.KeyFloors, same), TimeFloor: s.TimeFloor,
		Highwater: cloneMap(s.Highwater, same), Installed: cloneMap(s.Installed, cloneInstalled), Records: s.Records,
		KeyDIDs: s.KeyDIDs,
	}
}

// cloneMap returns a map holding cp of each value of m (an empty map for
// a nil one).
func cloneMap[K comparable, V any](m map[K]V, cp func(V) V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = cp(v)
	}
	return out
}

func same[V any](v V) V { return v }

func cloneKey(k Key) Key {
	k.Key, k.Scopes = ed25519.PublicKey(bytes.Clone(k.Key)), slices.Clone(k.Scopes)
	return k
}

func cloneRevocation(r Revocation) Revocation {
	r.StatementSHA256, r.Scopes = bytes.Clone(r.StatementSHA256), slices.Clone(r.Scopes)
	return r
}

func cloneChain(c []ChainEntry) []ChainEntry {
	if c == nil {
		return nil
	}
	out := make([]ChainEntry, len(c))
	for i, e := range c {
		out[i] = ChainEntry{Seq: e.Seq, Data: bytes.Clone(e.Data)}
	}
	return out
}

func cloneHeartbeat(h Heartbeat) Heartbeat {
	h.StatementSHA256, h.Signers, h.LineSHA256 = bytes.Clone(h.StatementSHA256), slices.Clone(h.Signers), bytes.Clone(h.LineSHA256)
	return h
}

func cloneInstalled(in Installed) Installed {
	in.Signed, in.Signers = bytes.Clone(in.Signed), slices.Clone(in.Signers)
	return in
}

// revokedVersion returns the revocation of the bundle version v, from
// RevokedVersions or else Records, and whether there is one.
func (s *State) revokedVersion(v bundle.BundleVersion) (Revocation, bool) {
	if r, ok := s.RevokedVersions[v]; ok {
		return r, true
	}
	if s.Records == nil {
		return Revocation{}, false
	}
	return s.Records.RevokedVersion(v)
}

// revokedKey returns the revocation of the key did, from RevokedKeys or,
// for a key the state does not trust, Records, and whether there is one.
func (s *State) revokedKey(did string) (Revocation, bool) {
	if _, ok := s.RevokedKeys[did]; ok || s.Records == nil {
		return s.revokedKeyOf(did, false)
	}
	_, trusted := s.keyByDID(did)
	return s.revokedKeyOf(did, trusted)
}

// revokedKeyOf is revokedKey for a key the caller knows to be trusted by
// s or not.
func (s *State) revokedKeyOf(did string, trusted bool) (Revocation, bool) {
	if r, ok := s.RevokedKeys[did]; ok {
		return r, true
	}
	if s.Records == nil || trusted {
		return Revocation{}, false // a trusted key's is in RevokedKeys
	}
	return s.Records.RevokedKey(did)
}

// holdRevocation copies the revocation of did from Records into
// RevokedKeys, where Policy reads those of trusted keys: called on a key
// about to be trusted, before it is.
func (s *State) holdRevocation(did string) {
	if r, ok := s.revokedKey(did); ok {
		s.RevokedKeys[did] = r
	}
}

// bundleDIDs returns the DID documents the installed bundle bundleID
// carries (none when the State has no Records).
func (s *State) bundleDIDs(bundleID string) ([][2]string, error) {
	if s.Records == nil {
		return nil, nil
	}
	return s.Records.BundleDIDs(bundleID)
}

// sortedKeys returns the keys of the state by name.
func (s *State) sortedKeys() []Key {
	out := make([]Key, 0, len(s.Keys))
	for _, n := range slices.Sorted(maps.Keys(s.Keys)) {
		out = append(out, s.Keys[n])
	}
	return out
}

// keyByDID returns the trusted key whose did:key is did (of two, the
// least name). One pass over Keys, nothing sorted or copied, and a plain
// comparison (a public key is no secret): trust statements add keys to a
// store without a bound of their own (bundle.MaxRotationKeys a statement,
// a share of statements an authority), and sorting them all for every
// question made one revocation of bundle.MaxRevocationEntries keys cost
// tens of seconds of the store's write lock (docs/SPEC-DECISIONS.md
// TRUST-24). A caller asking for many keys uses keysByPublic.
func (s *State) keyByDID(did string) (Key, bool) {
	pub, _ := bundle.KeyFromKID(did)
	var out Key
	found := false
	for _, k := range s.Keys {
		if string(k.Key) == string(pub) && (!found || k.Name < out.Name) {
			out, found = k, true
		}
	}
	return out, found
}

// keysByPublic indexes the trusted keys by their raw public key (of two,
// the least name), for a caller that asks keyByDID's question of many
// did:keys: trustedByDID answers it from the index in constant time.
func (s *State) keysByPublic() map[string]string {
	idx := make(map[string]string, len(s.Keys))
	for name, k := range s.Keys {
		if cur, ok := idx[string(k.Key)]; !ok || name < cur {
			idx[string(k.Key)] = name
		}
	}
	return idx
}

// trustedByDID is keyByDID answered from idx (keysByPublic of s): a key
// deleted from s since is not trusted, one changed since is as it is now.
// A name indexed for a key is never given to another key meanwhile by
// its callers.
func (s *State) trustedByDID(idx map[string]string, did string) (Key, bool) {
	pub, _ := bundle.KeyFromKID(did)
	name, ok := idx[string(pub)]
	if !ok {
		return Key{}, false
	}
	k, ok := s.Keys[name]
	return k, ok
}

// RevokedScopes returns the scopes of the revocations the store applied to
// a key (nil when none): "*" for one that keeps no scope.
func (s *State) RevokedScopes(did string) []string { return revokedScopes(s.revokedKey(did)) }

// revokedScopes returns the scopes of a key's revocation r (ok: there is
// one): "*" for one that keeps no scope.
func revokedScopes(r Revocation, ok bool) []string {
	switch {
	case !ok:
		return nil
	case len(r.Scopes) == 0:
		return []string{"*"}
	}
	return r.Scopes
}

// KeyRevokedFor returns the scope of a revocation the store applied to
// the key that one of scopes lies under (equals it or is narrower), and
// whether there is one: the key cannot be trusted for those scopes. A
// revocation by the keys of com.acme does not stop an operator from
// trusting the key for org.example, nor for a broader scope such as "*":
// there the key counts for everything but what it was revoked for
// (bundle.TrustedKey.Except, set by Policy), so one scope's keys cannot
// block a key for scopes beyond their authority.
func (s *State) KeyRevokedFor(did string, scopes []string) (string, bool) {
	for _, rs := range s.RevokedScopes(did) {
		for _, sc := range scopes {
			if bundle.ScopesUnder([]string{sc}, rs) {
				return rs, true
			}
		}
	}
	return "", false
}

// Policy returns the bundle trust policy of the state: its keys, by name,
// each counting nowhere under the scopes it was revoked for, and its
// thresholds. A key of small order or not in canonical form (usable),
// which only a store written before AddKey refused such keys can hold,
// is left out: a bundle reader checks a trusted key's signature against
// the key itself, and would accept a forged one.
func (s *State) Policy() *bundle.Policy {
	p, _ := s.policy(false)
	return p
}

// policy is Policy and, when withDIDs, the did:key of each of its keys,
// in its order: the one policy read from KeyDIDs or encoded to look the
// key's revocation up. Prepare, pinFloors and failClosed need both, and
// encoding every key once more after Policy cost a base58 encoding per
// trusted key per listing or act (docs/SPEC-DECISIONS.md TRUST-31).
func (s *State) policy(withDIDs bool) (*bundle.Policy, []string) {
	p := &bundle.Policy{Thresholds: make(map[string]int, len(s.Thresholds))}
	for sc, n := range s.Thresholds {
		p.Thresholds[sc] = int(n)
	}
	var dids []string
	if withDIDs {
		dids = make([]string, 0, len(s.Keys))
	}
	for _, k := range s.sortedKeys() {
		if !k.usable() {
			continue
		}
		did := s.DIDOf(k)
		p.Keys = append(p.Keys, s.trustedAs(k, did))
		if withDIDs {
			dids = append(dids, did)
		}
	}
	return p, dids
}

// DIDOf returns k's did:key: its KeyDIDs entry when there is one, else
// encoded (Key.DID). The policy reads each trusted key's did:key by it,
// and so does a store looking each one's revocation up, so that both read
// one entry (docs/SPEC-DECISIONS.md TRUST-28).
func (s *State) DIDOf(k Key) string {
	if did, ok := s.KeyDIDs[string(k.Key)]; ok {
		return did
	}
	return k.DID()
}

func (s *State) trusted(k Key) bundle.TrustedKey { return s.trustedAs(k, s.DIDOf(k)) }

// trustedAs is trusted for k, whose did:key is did.
func (s *State) trustedAs(k Key, did string) bundle.TrustedKey {
	r, ok := s.RevokedKeys[did] // a trusted key's revocation is held there
	return bundle.TrustedKey{Name: k.Name, Key: k.Key, Scopes: k.Scopes, Except: revokedScopes(r, ok)}
}

// VerifyingPolicy is Policy, refused (untrusted_key) when it has no key:
// nothing can be verified against it.
func (s *State) VerifyingPolicy() (*bundle.Policy, error) {
	p := s.Policy()
	if len(p.Keys) == 0 {
		return nil, amp.Named(0, bundle.ErrUntrustedKey, "the store trusts no publisher key yet (ampbundle trust add)")
	}
	return p, nil
}

// covering counts the trusted keys that cover scope (a key revoked where
// scope reaches counts for nothing there, nor does one Policy leaves out).
func (s *State) covering(scope string) int {
	n := 0
	for _, k := range s.Keys {
		tk := s.trusted(k)
		if k.usable() && tk.CoversScope(scope) {
			n++
		}
	}
	return n
}

// ValidName reports whether n is a valid trust name: 1 to MaxNameLen
// characters of [A-Za-z0-9._-@] (bundle.ValidTrustName).
func ValidName(n string) bool { return bundle.ValidTrustName(n) }

// MaxNameLen is the longest trust name.
const MaxNameLen = 64

// CleanScope validates a trust scope and returns its stored form (no
// trailing dot; "" and "." are "*").
func CleanScope(sc string) (string, error) {
	if err := bundle.ValidateScope(sc); err != nil {
		// bundle's error says what this one says: its cause, why not.
		return "", fail(ErrInvalidTrust, "scope must be * or a reverse-domain prefix such as org.example").WithCause(errors.Unwrap(err))
	}
	sc = strings.TrimSuffix(sc, ".")
	if sc == "" {
		sc = "*"
	}
	return sc, nil
}

// CleanScopes returns the stored form of scopes, sorted and unique.
func CleanScopes(scopes []string) ([]string, error) {
	clean := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		c, err := CleanScope(sc)
		if err != nil {
			return nil, err
		}
		clean = append(clean, c)
	}
	sort.Strings(clean)
	return slices.Compact(clean), nil
}

// ThresholdRange is the error of a threshold outside 1 to
// bundle.MaxSignatures.
func ThresholdRange() error {
	return fail(ErrInvalidTrust, "a threshold is 1 to %d signatures (a bundle carries at most %d)", bundle.MaxSignatures, bundle.MaxSignatures)
}

// KeyID is the one spelling of an Ed25519 did:key the store compares by.
func KeyID(did string) string {
	if pub, ok := bundle.KeyFromKID(did); ok {
		return amp.DIDKey(pub)
	}
	return did
}
