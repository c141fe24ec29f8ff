package resolver

import bolt "go.etcd.io/bbolt"

// highwaterOf returns the high-water mark of bundle id: the highest
// version ever imported (0: none). It is the rollback protection of a
// removed bundle, so a value of the wrong size is store_io (strictU64),
// never 0, the loosest mark there is (docs/SPEC-DECISIONS.md TSTATE-6);
// ampbundle check reports it (checkMetaValues).
func highwaterOf(tx *bolt.Tx, id string) (uint64, error) {
	v := bucket(tx, bHighwater).Get([]byte(id))
	if v == nil {
		return 0, nil
	}
	return strictU64(v, "high-water mark")
}
