package resolver

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/trust"
)

// versionRevoked reports whether a bundle version is revoked.
func versionRevoked(tx *bolt.Tx, id string, version uint64) bool {
	return bucket(tx, bRevoked).Get(revokedBundleKey(id, version)) != nil
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
// against the store's trust and applies it in one transaction, as
// trust.ApplyRevocation decides: the keys it names lose their trust under
// its scope, the versions it names can no longer be imported, and the
// installed bundles it covers fail closed at their next use (5002
// bundle_revoked; still listed until removed or replaced). Audited
// ("revoke"; a refusal as "import_refused"); changes the generation
// unless Unchanged.
func (s *Store) ApplyRevocation(data []byte) (*RevokeResult, error) {
	r, gen, err := applyStatement(s, data, revocationSel, trust.ApplyRevocation)
	if err != nil {
		return nil, err
	}
	return &RevokeResult{Scope: r.Scope, Signers: r.Signers, RevokedKeys: r.RevokedKeys, RemovedTrust: r.RemovedTrust, NarrowedTrust: r.NarrowedTrust,
		RevokedBundles: r.RevokedBundles, FailedClosed: r.FailedClosed, Unchanged: r.Unchanged, Generation: gen}, nil
}
