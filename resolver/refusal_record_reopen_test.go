package resolver

import (
	"crypto/sha256"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestRefusalByAStoreLimitIsNotAnsweredAfterReopen: a refusal that a
// store option decided (here MaxArtifactSize: limit_exceeded) was
// recorded at the store's generation, which counts changes of the store's
// contents only. The operator raises the limit (ampagent restarted with a
// larger --max-artifact-size): nothing moved the generation, so RefusedAt
// still said refused and sync skipped the very file the limit was raised
// for, for up to a day. Every Open now has an epoch, a digest of the
// options a verdict reads and of the build, kept in the record; RefusedAt
// answers only for refusals of the same epoch (MIRROR-13).
func TestRefusalByAStoreLimitIsNotAnsweredAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	open := func(limit int64) *Store {
		t.Helper()
		s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true, MaxArtifactSize: limit})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(64)
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	data := variant(t, 2, nil)
	sum := sha256.Sum256(data)
	if _, err := importBytes(t, s, data, ImportOptions{FileSHA256: sum[:]}); amp.NameOf(err) != bundle.ErrTooLarge {
		t.Fatalf("an artifact over a 64-byte limit: %v, want %s", err, bundle.ErrTooLarge)
	}
	s.Close()
	s = open(0) // the default limit, 256 MiB
	defer s.Close()
	if v, ok, err := s.RefusedAt(sum[:]); err != nil || ok {
		t.Fatalf("after the limit was raised and the store opened again, RefusedAt = %q %v %v: sync skips the file for up to a day; want not refused", v, ok, err)
	}
	if _, err := importBytes(t, s, data, ImportOptions{FileSHA256: sum[:]}); err != nil {
		t.Fatalf("the file under the raised limit: %v", err)
	}
}
