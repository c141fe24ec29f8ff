//go:build linux

package bundlebuild

import (
	"crypto/ed25519"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors here: %v", err)
	}
	return len(entries)
}

// TestSourceFolderDescriptorsPileUpUntilGC: the attack: LoadSource is
// exported; an embedder that builds bundles in a long-running process (a
// build service, a CI runner that checks every pushed source folder, a
// folder a submitter makes fail on purpose) calls it again and again.
// Were the source folder opened as an os.Root that lives as long as the
// draft (BUILD-4), closed only by its finalizer, every refused source and
// every draft written and dropped would hold one descriptor until a
// garbage collection, and a process with a large live heap collects
// rarely (GOGC is relative to the live heap): a few thousand builds
// exhaust RLIMIT_NOFILE and the embedder's listeners, stores and logs fail
// with EMFILE. Expected: the folder is opened per read and closed before
// the read returns (BUILD-4, amended in review 34): the count of
// descriptors stays flat with the GC held off, which stands for "no
// collection yet" (a finalizer is not a release).
func TestSourceFolderDescriptorsPileUpUntilGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const rounds = 40
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}

	refused := t.TempDir()
	// Read during the walk, refused right after.
	if err := os.WriteFile(filepath.Join(refused, "bundle.json"), []byte(`{"bundle_id":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	valid := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	for _, tc := range []struct {
		name  string
		round func(t *testing.T)
	}{
		{"refused source", func(t *testing.T) {
			if _, err := LoadSource(refused, opts); err == nil {
				t.Fatal("the source was accepted; the test needs a refused one")
			}
		}},
		{"draft written and dropped", func(t *testing.T) {
			d, err := LoadSource(valid, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bundle.Write(io.Discard, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"draft kept and never written", func(t *testing.T) {
			if _, err := LoadSource(valid, opts); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.round(t)
			before := openFDs(t)
			for range rounds {
				tc.round(t)
			}
			if after := openFDs(t); after > before+2 {
				t.Fatalf("%d rounds left %d more descriptors open (%d -> %d): the source folder stays open until a garbage collection", rounds, after-before, before, after)
			}
		})
	}
}
