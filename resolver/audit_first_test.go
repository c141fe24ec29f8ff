package resolver

import (
	"fmt"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestAuditNamesTheFirstAlteredEntry: an entry altered in place breaks the
// link to the entry after it, not its own; the error must still name the
// altered entry (docs/CLI.md §2.14: "names the first bad entry"), not the
// next one, whether its content, its prev or the last entry changed.
func TestAuditNamesTheFirstAlteredEntry(t *testing.T) {
	alterVersion := func(e *AuditEntry) { e.Version += 7 }
	alterPrev := func(e *AuditEntry) { e.Prev[0] ^= 1 }
	for _, tc := range []struct {
		name  string
		seq   uint64
		alter func(*AuditEntry)
	}{
		{"content of entry 3", 3, alterVersion},
		{"prev of entry 3", 3, alterPrev},
		{"content of entry 1", 1, alterVersion},
		{"prev of entry 1", 1, alterPrev},
		{"content of the last entry", 4, alterVersion},
		{"prev of the last entry", 4, alterPrev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			mustImport(t, s, sampleBytes(t, "translate"))
			if _, err := s.Remove("org.example.translate"); err != nil {
				t.Fatal(err)
			}
			if err := s.VerifyAudit(); err != nil {
				t.Fatal(err)
			}
			var orig []byte
			s.db.Update(func(tx *bolt.Tx) error {
				b := bucket(tx, bAudit)
				orig = clone(b.Get(u64(tc.seq)))
				var e AuditEntry
				if err := decode(orig, &e); err != nil {
					t.Fatal(err)
				}
				tc.alter(&e)
				return b.Put(u64(tc.seq), encode(e))
			})
			err := s.VerifyAudit()
			expectName(t, err, ErrAuditBroken)
			if want := fmt.Sprintf("audit entry %d ", tc.seq); !strings.Contains(err.Error(), want) {
				t.Fatalf("altered entry %d, error names another: %v", tc.seq, err)
			}
			// Put it back so the cleanup check passes.
			s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bAudit).Put(u64(tc.seq), orig) })
			if err := s.VerifyAudit(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
