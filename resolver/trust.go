package resolver

import (
	"crypto/ed25519"
	"maps"
	"slices"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TrustKey is a publisher key the store trusts, with its scopes.
type TrustKey struct {
	Name    string
	Key     ed25519.PublicKey
	Scopes  []string
	AddedAt string
	// Except are the scopes a revocation this store applied names the
	// key for: it counts for nothing under them, whatever Scopes say
	// (bundle.TrustedKey.Except).
	Except []string
}

// DID returns the key's did:key.
func (k TrustKey) DID() string { return amp.DIDKey(k.Key) }

// TrustAdd trusts a publisher key for the given scopes ("*" or
// reverse-domain prefixes such as "org.example"). Names are unique, and a
// key is trusted under one name only (trust.AddKey). Audited; changes the
// generation.
func (s *Store) TrustAdd(name string, key ed25519.PublicKey, scopes []string) error {
	return s.trustAdd(name, key, scopes, 0)
}

// TrustAddWithThreshold trusts a key as TrustAdd does and sets the
// threshold of each of its scopes to n (as TrustSetThreshold does), in one
// transaction: n out of range, or any refusal of the key, changes nothing.
// Audited (one trust_add and one trust_threshold entry per scope); changes
// the generation once.
func (s *Store) TrustAddWithThreshold(name string, key ed25519.PublicKey, scopes []string, n int) error {
	if n < 1 || n > bundle.MaxSignatures {
		return trust.ThresholdRange()
	}
	return s.trustAdd(name, key, scopes, n)
}

// trustAdd is TrustAdd, and with threshold > 0 also sets the threshold of
// every scope, in the same transaction.
func (s *Store) trustAdd(name string, key ed25519.PublicKey, scopes []string, threshold int) error {
	sel := selTrust // adding a key lowers no floor; a threshold may
	if threshold != 0 {
		sel = selFloors
	}
	_, err := s.updateTrust(sel, func(st *trust.State, now time.Time) (*trust.Effects, error) {
		_, e, err := trust.AddKey(st, name, key, scopes, threshold, now)
		return e, err
	})
	return err
}

// TrustRemove stops trusting a key for future imports. Bundles it signed
// stay installed and served (they were verified when imported); remove them
// with Remove if they must go. This is the opt-out (ampbundle trust rm
// --keep-serving): the safe default, which fails closed the bundles no
// trusted key vouches for any more, is TrustRemoveFailClosed. Audited;
// changes the generation.
func (s *Store) TrustRemove(name string) error {
	_, err := s.updateTrust(selFloors, func(st *trust.State, _ time.Time) (*trust.Effects, error) {
		_, e, err := trust.RemoveKey(st, name, false)
		return e, err
	})
	return err
}

// TrustRemoveFailClosed stops trusting a key, as TrustRemove, and in the
// same transaction fails closed every installed bundle it signed whose
// other still-trusted signers are fewer than its threshold (5002
// bundle_revoked from then on). It returns those bundles. Audited
// ("trust_remove", then "fail_closed" when it failed any).
func (s *Store) TrustRemoveFailClosed(name string) ([]string, error) {
	var failed []string
	_, err := s.updateTrust(selJudged, func(st *trust.State, _ time.Time) (*trust.Effects, error) {
		_, e, err := trust.RemoveKey(st, name, true)
		if err == nil {
			failed = e.FailedClosed()
		}
		return e, err
	})
	if err != nil {
		return nil, err
	}
	if len(failed) == 0 {
		return nil, nil
	}
	return failed, nil
}

// TrustList returns the trusted keys, by name.
func (s *Store) TrustList() ([]TrustKey, error) {
	st, err := s.readState(selTrust)
	if err != nil {
		return nil, err
	}
	var out []TrustKey
	for _, k := range st.Policy().Keys {
		out = append(out, TrustKey{Name: k.Name, Key: k.Key, Scopes: k.Scopes, AddedAt: st.Keys[k.Name].AddedAt, Except: k.Except})
	}
	return out, nil
}

// RefusedTrustKey is a key the store's trust records hold but trust for
// nothing (trust.Key.Refused): a key of small order or not in canonical
// form that a store written before that check kept (docs/SPEC-DECISIONS.md
// TRUST-21). TrustList leaves it out; TrustRefused lists it, so that the
// operator sees it and removes it (TrustRemove).
type RefusedTrustKey struct {
	Name    string   `json:"name"`
	Key     string   `json:"key"` // its did:key
	Scopes  []string `json:"scopes"`
	AddedAt string   `json:"added_at"`
	// Refused says why it is trusted for nothing: trust.RefusedSmallOrder.
	Refused string `json:"refused"`
}

// TrustRefused returns the keys the store's trust records hold but trust
// for nothing, by name (none on a store written by this version).
func (s *Store) TrustRefused() ([]RefusedTrustKey, error) {
	st, err := s.readState(selTrust)
	if err != nil {
		return nil, err
	}
	out := []RefusedTrustKey{}
	for _, name := range slices.Sorted(maps.Keys(st.Keys)) {
		k := st.Keys[name]
		if why := k.Refused(); why != "" {
			out = append(out, RefusedTrustKey{Name: k.Name, Key: k.DID(), Scopes: slices.Clone(k.Scopes), AddedAt: k.AddedAt, Refused: why})
		}
	}
	return out, nil
}

// policy returns the bundle trust policy of the store (refused when it
// trusts no key).
func (s *Store) policy() (*bundle.Policy, error) {
	st, err := s.readState(selTrust)
	if err != nil {
		return nil, err
	}
	return st.VerifyingPolicy()
}

// TrustSetThreshold sets how many distinct trusted keys must sign what lies
// under scope (FORMAT.md §5 step 4): 1 (the default) to bundle.MaxSignatures.
// A name under several scopes needs the largest of their thresholds. It
// applies to imports from now on; installed bundles stay. Audited; changes
// the generation.
func (s *Store) TrustSetThreshold(scope string, n int) error {
	_, err := s.updateTrust(selFloors, func(st *trust.State, _ time.Time) (*trust.Effects, error) {
		_, e, err := trust.SetThreshold(st, scope, n)
		return e, err
	})
	return err
}

// TrustThresholds returns the thresholds set per scope (scopes not listed
// need 1 signature).
func (s *Store) TrustThresholds() (map[string]int, error) {
	st, err := s.readState(selTrust)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for sc, n := range st.Thresholds {
		if n < 1 || n > bundle.MaxSignatures {
			return nil, fail(ErrStoreIO, "the threshold of scope %s is unreadable", sc)
		}
		out[sc] = int(n)
	}
	return out, nil
}
