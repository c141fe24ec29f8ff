package resolver

import (
	"bytes"
	"testing"
)

// TestSchemaCacheNeverServesAReferenceWhoseHashDoesNotMatch: Schema keyed
// its cache by the reference's hash copied into 64 zero-padded bytes, so
// once a schema was compiled, a reference naming the same artifact with
// that hash and zero bytes appended (or, for a hash ending in zero bytes,
// cut short) was the same cache entry and got the schema, although no bytes
// hash to it: Resolve refuses such a reference (hash_mismatch), and so must
// Schema, before and after the schema is cached (verify before use).
func TestSchemaCacheNeverServesAReferenceWhoseHashDoesNotMatch(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	ref := descriptorRef(t, s)
	if _, err := s.Schema(ref); err != nil {
		t.Fatal(err)
	}
	for _, pad := range []int{1, 32} {
		bad := ref
		bad.Hash = append(bytes.Clone(ref.Hash), make([]byte, pad)...)
		_, err := s.Resolve(bad)
		expect5002(t, err, ErrHashMismatch)
		_, err = s.Schema(bad)
		expect5002(t, err, ErrHashMismatch)
	}
}
