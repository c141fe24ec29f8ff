package resolver

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/trust"
)

// RotateResult describes an applied trust statement.
type RotateResult struct {
	Scope     string   `json:"scope"`
	Sequence  uint64   `json:"sequence"`
	Signers   []string `json:"signers"`
	Added     []string `json:"added"`   // names of the keys it added
	Retired   []string `json:"retired"` // names of the trusted keys it retired
	Threshold uint64   `json:"threshold"`
	Unchanged bool     `json:"unchanged"` // this statement (its payload, whatever its signatures) was applied before
	// StillInstalled are the installed bundles signed by a retired key:
	// they stay (they were verified before the statement); a retired key
	// counts for no import from now on.
	StillInstalled []string `json:"still_installed"`
	Generation     uint64   `json:"generation"`
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
// it in one transaction, as trust.ApplyRotation decides: the next of its
// scope's chain (else rotation_gap or rotation_fork), signed by enough keys
// trusted for the scope, it adds and retires keys and sets the scope's
// threshold (bundles signed by a retired key stay installed). The store
// keeps every applied statement, once per payload (docs/SPEC-DECISIONS.md
// TRUST-19); applying one again, under whatever signatures, changes
// nothing.
// Audited ("rotate"); changes the generation.
func (s *Store) ApplyRotation(data []byte) (*RotateResult, error) {
	r, gen, err := applyStatement(s, data, chainOf(data), trust.ApplyRotation)
	if err != nil {
		return nil, err
	}
	return &RotateResult{Scope: r.Scope, Sequence: r.Sequence, Signers: r.Signers, Added: r.Added, Retired: r.Retired, Threshold: r.Threshold,
		Unchanged: r.Unchanged, StillInstalled: r.StillInstalled, Generation: gen}, nil
}
