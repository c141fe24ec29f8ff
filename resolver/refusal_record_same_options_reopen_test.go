package resolver

import (
	"crypto/sha256"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestRefusalIsAnsweredAfterReopenWithTheSameOptions: 'ampbundle sync'
// without an agent opens the store read-write once a run. A random epoch
// per open (review 14) had RefusedAt answer no refusal of an earlier run,
// so every run downloaded every refused file again (each up to 1 GiB).
// The epoch is now a digest of the options a verdict may depend on
// (refusalEpoch): a reopen with the same options answers the refusal, one
// with MaxArtifactSize changed does not (the limit was raised for it).
func TestRefusalIsAnsweredAfterReopenWithTheSameOptions(t *testing.T) {
	data := variant(t, 2, nil)
	sum := sha256.Sum256(data)
	for _, c := range []struct {
		name   string
		reopen int64 // MaxArtifactSize of the second open
		want   bool
	}{
		{"the same options (the next CLI sync run)", 64, true},
		{"MaxArtifactSize raised (the operator's fix)", 1 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true, MaxArtifactSize: 64})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			if _, err := importBytes(t, s, data, ImportOptions{FileSHA256: sum[:]}); amp.NameOf(err) != bundle.ErrTooLarge {
				t.Fatalf("an artifact over a 64-byte limit: %v, want %s", err, bundle.ErrTooLarge)
			}
			s.Close()
			if s, err = Open(path, Options{Now: func() time.Time { return testNow }, MaxArtifactSize: c.reopen}); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if v, ok, err := s.RefusedAt(sum[:]); err != nil || ok != c.want {
				t.Fatalf("reopened, RefusedAt = %q %v %v; want answered %v (same options: else each CLI sync run downloads every refused file again; "+
					"a raised limit: else sync skips the file the limit was raised for)", v, ok, err, c.want)
			}
		})
	}
}
