package resolver

import (
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// cleanScope validates a trust scope and returns its stored form.
func cleanScope(sc string) (string, error) {
	if err := bundle.ValidateScope(sc); err != nil {
		return "", fail(ErrInvalidTrust, "scope must be * or a reverse-domain prefix such as org.example").WithCause(err)
	}
	sc = strings.TrimSuffix(sc, ".")
	if sc == "" {
		sc = "*"
	}
	return sc, nil
}

// TrustSetThreshold sets how many distinct trusted keys must sign what lies
// under scope (FORMAT.md §5 step 4): 1 (the default) to bundle.MaxSignatures.
// A name under several scopes needs the largest of their thresholds. It
// applies to imports from now on; installed bundles stay. Audited; changes
// the generation.
func (s *Store) TrustSetThreshold(scope string, n int) error {
	if err := s.writable(); err != nil {
		return err
	}
	sc, err := cleanScope(scope)
	if err != nil {
		return err
	}
	if n < 1 || n > bundle.MaxSignatures {
		return thresholdRange()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen uint64
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := putThreshold(tx, s.opts.Now(), s.actor(), sc, uint64(n)); err != nil {
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

// TrustThresholds returns the thresholds set per scope (scopes not listed
// need 1 signature).
func (s *Store) TrustThresholds() (map[string]int, error) {
	out := map[string]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bTrustPolicy).ForEach(func(k, v []byte) error {
			n := getU64(v)
			if n < 1 || n > bundle.MaxSignatures {
				return fail(ErrStoreIO, "the threshold of scope %s is unreadable", k)
			}
			out[string(k)] = int(n)
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

func thresholdRange() error {
	return fail(ErrInvalidTrust, "a threshold is 1 to %d signatures (a bundle carries at most %d)", bundle.MaxSignatures, bundle.MaxSignatures)
}

// putThreshold sets the threshold of the stored scope sc to n (1 removes
// the setting) and audits it as trust_threshold.
func putThreshold(tx *bolt.Tx, now time.Time, actor *Actor, sc string, n uint64) error {
	b := bucket(tx, bTrustPolicy)
	var err error
	if n == 1 {
		err = b.Delete([]byte(sc))
	} else {
		err = b.Put([]byte(sc), u64(n))
	}
	if err != nil {
		return err
	}
	return appendAudit(tx, now, AuditEntry{Actor: actor, Verdict: verdictAccepted, Action: "trust_threshold", Scopes: []string{sc}, Threshold: n})
}
