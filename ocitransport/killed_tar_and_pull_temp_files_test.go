//go:build unix

package ocitransport_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestKilledTarCommitsAndPullsTempFilesAreRemovedOnceStale: the failure.
// A tar's Commit writes the whole tar to .ampbundle-ocitar-DIGITS.tmp next
// to it, and PullFile the whole bundle to .ampbundle-pull-DIGITS.tmp next
// to its output; one killed (or cut by a power loss) left that copy, up
// to the whole tar or bundle, and no later writer ever removed it: a site
// whose copies were cut repeatedly filled its disk. The next writer of a
// tar in that folder, and the next pull into it, now remove the house's
// temporary files there that are stale and that no live process holds
// locked (bundlebuild.RemoveStaleTemps); a young one (a live writer's) and
// names not the house's are left.
func TestKilledTarCommitsAndPullsTempFilesAreRemovedOnceStale(t *testing.T) {
	now := time.Now()
	stale := now.Add(-2 * bundlebuild.StaleTempAge)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"a tar's writer", func(t *testing.T, dir string) {
			w := mustOpen(t, "oci-layout:"+filepath.Join(dir, "site.tar"), ocitransport.Options{}, ocitransport.ReadWrite)
			w.Close()
		}},
		{"a pull", func(t *testing.T, dir string) {
			loc := "oci-layout:" + filepath.Join(t.TempDir(), "layout")
			dst := mustOpen(t, loc, ocitransport.Options{}, ocitransport.ReadWrite)
			a := pushSample(t, dst, "v1")
			if err := dst.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := dst.PullFile(context.Background(), a, filepath.Join(dir, "out.ampb")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := []struct {
				name   string
				at     time.Time
				remove bool
			}{
				{".ampbundle-ocitar-1234.tmp", stale, true},
				{".ampbundle-pull-99.tmp", stale, true},
				{".ampbundle-ocitar-5678.tmp", now, false},
				{"ampbundle-ocitar-1.tmp", stale, false},
				{".ampbundle-ocitar-1.tmp.keep", stale, false},
			}
			for _, f := range files {
				p := filepath.Join(dir, f.name)
				if err := os.WriteFile(p, []byte("a killed writer's partial copy"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, f.at, f.at); err != nil {
					t.Fatal(err)
				}
			}
			tc.run(t, dir)
			for _, f := range files {
				_, err := os.Lstat(filepath.Join(dir, f.name))
				if gone := os.IsNotExist(err); gone != f.remove {
					t.Errorf("%s: removed %v, want %v", f.name, gone, f.remove)
				}
			}
		})
	}
}
