package resolver

import (
	"bytes"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestCheckImportGivesImportsVerdictAndWritesNothing: ampbundle sync
// --oci judges a candidate it will not install (a cut newest version) by
// CheckImport; were that judgement only the signatures, a revoked or
// rolled-back version would pass it and hold back the installable one.
// CheckImport gives the refusal Import would give (revoked, rollback),
// says unchanged of the installed bundle, accepts a newer version, and
// leaves the store as it was: no bundle, no audit entry, no high-water
// mark (docs/SPEC-DECISIONS.md OCI-9, amended in review 39).
func TestCheckImportGivesImportsVerdictAndWritesNothing(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 2, nil))
	k := sampleKey(t, "example-publisher")
	if _, err := s.ApplyRevocation(revocation(t, "org.example", nil, []bundle.BundleVersion{{BundleID: "org.example.translate", Version: 3}}, k)); err != nil {
		t.Fatal(err)
	}
	before := dumpBesidesAudit(t, s)
	audit, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		version   uint64
		want      amp.ErrName
		unchanged bool
	}{
		{version: 3, want: ErrRevoked},
		{version: 1, want: ErrRollback},
		{version: 2, unchanged: true},
		{version: 4},
	} {
		res, err := s.CheckImport(bytes.NewReader(variant(t, c.version, nil)))
		if c.want != "" {
			expectName(t, err, c.want)
			continue
		}
		if err != nil || res.Unchanged != c.unchanged || res.Version != c.version {
			t.Fatalf("version %d: %+v %v; want accepted, unchanged %v", c.version, res, err, c.unchanged)
		}
	}
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("CheckImport changed the store")
	}
	if after, _ := s.Audit(); len(after) != len(audit) {
		t.Fatalf("CheckImport wrote %d audit entries", len(after)-len(audit))
	}
}
