package resolver

import (
	"bytes"
	"crypto/ed25519"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
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

const maxTrustName = 64

func validTrustName(n string) bool {
	if n == "" || len(n) > maxTrustName {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-@", c) >= 0) {
			return false
		}
	}
	return true
}

// TrustAdd trusts a publisher key for the given scopes ("*" or
// reverse-domain prefixes such as "org.example"). Names are unique, and a
// key is trusted under one name only. Audited; changes the generation.
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
		return thresholdRange()
	}
	return s.trustAdd(name, key, scopes, n)
}

// trustAdd is TrustAdd, and with threshold > 0 also sets the threshold of
// every scope, in the same transaction.
func (s *Store) trustAdd(name string, key ed25519.PublicKey, scopes []string, threshold int) error {
	if err := s.writable(); err != nil {
		return err
	}
	if !validTrustName(name) {
		return fail(ErrInvalidTrust, "trust name must be 1-%d characters of [A-Za-z0-9._-@]", maxTrustName)
	}
	if len(key) != ed25519.PublicKeySize {
		return fail(ErrInvalidTrust, "trusted key must be an ed25519 public key")
	}
	if len(scopes) == 0 {
		return fail(ErrInvalidTrust, "a trusted key needs at least one scope (a reverse-domain prefix, or * for everything)")
	}
	clean := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		if err := bundle.ValidateScope(sc); err != nil {
			return fail(ErrInvalidTrust, "scope must be * or a reverse-domain prefix such as org.example").WithCause(err)
		}
		sc = strings.TrimSuffix(sc, ".")
		if sc == "" {
			sc = "*"
		}
		clean = append(clean, sc)
	}
	sort.Strings(clean)
	clean = dedup(clean)
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := bucket(tx, bTrust)
		if by, ok := keyRevokedFor(tx, amp.DIDKey(key), clean); ok {
			return fail(ErrKeyRevoked, "key %s is revoked for scope %s (a revocation statement this store applied); it cannot be trusted for a scope overlapping it", amp.DIDKey(key), by)
		}
		if b.Get([]byte(name)) != nil {
			return fail(ErrTrustExists, "a trusted key named %s exists; remove it first", name)
		}
		if err := b.ForEach(func(_, v []byte) error {
			var r trustRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			if bytes.Equal(r.Key, key) {
				return fail(ErrTrustExists, "this key is already trusted as %s", r.Name)
			}
			return nil
		}); err != nil {
			return err
		}
		now := s.opts.Now()
		if err := b.Put([]byte(name), encode(trustRecord{Name: name, Key: key, Scopes: clean, AddedAt: formatTime(now)})); err != nil {
			return err
		}
		if err := appendAudit(tx, now, AuditEntry{Actor: s.actor(), Verdict: verdictAccepted, Action: "trust_add", TrustName: name, Key: amp.DIDKey(key), Scopes: clean}); err != nil {
			return err
		}
		if threshold > 0 {
			for _, sc := range clean {
				if err := putThreshold(tx, s.opts.Now(), s.actor(), sc, uint64(threshold)); err != nil {
					return err
				}
			}
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

// TrustRemove stops trusting a key for future imports. Bundles it signed
// stay installed and served (they were verified when imported); remove them
// with Remove if they must go. This is the opt-out (ampbundle trust rm
// --keep-serving): the safe default, which fails closed the bundles no
// trusted key vouches for any more, is TrustRemoveFailClosed. Audited;
// changes the generation.
func (s *Store) TrustRemove(name string) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := s.trustRemoveTx(tx, name); err != nil {
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

// trustRemoveTx deletes a trust entry and audits it.
func (s *Store) trustRemoveTx(tx *bolt.Tx, name string) error {
	b := bucket(tx, bTrust)
	raw := b.Get([]byte(name))
	if raw == nil {
		return fail(ErrUnknownTrust, "no trusted key is named %s", name)
	}
	var r trustRecord
	if err := decode(raw, &r); err != nil {
		return err
	}
	if err := b.Delete([]byte(name)); err != nil {
		return err
	}
	return appendAudit(tx, s.opts.Now(), AuditEntry{Actor: s.actor(), Verdict: verdictAccepted, Action: "trust_remove", TrustName: name, Key: amp.DIDKey(r.Key), Scopes: r.Scopes})
}

// TrustList returns the trusted keys, by name.
func (s *Store) TrustList() ([]TrustKey, error) {
	var out []TrustKey
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bTrust).ForEach(func(_, v []byte) error {
			var r trustRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			out = append(out, TrustKey{Name: r.Name, Key: ed25519.PublicKey(clone(r.Key)), Scopes: r.Scopes, AddedAt: r.AddedAt,
				Except: revokedScopes(tx, amp.DIDKey(r.Key))})
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// policy returns the bundle trust policy of the store (policyTx).
func (s *Store) policy() (*bundle.Policy, error) {
	var p *bundle.Policy
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		p, err = policyTx(tx)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	if len(p.Keys) == 0 {
		return nil, amp.Named(0, bundle.ErrUntrustedKey, "the store trusts no publisher key yet (ampbundle trust add)")
	}
	return p, nil
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
