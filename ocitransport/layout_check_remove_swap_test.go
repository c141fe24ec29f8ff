package ocitransport

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLayoutFileCheckedInOneFolderIsNeverRemovedFromAnother: the attack.
// Where no folder was held by descriptor (every system but Linux with its
// proc file system), each use of a layout's folder looked the layout's
// path up again, from the root's name (links followed) down, checking
// each folder below just before the use: another user who may repoint a
// link in that path, or replace blobs with a folder of theirs, between a
// writer's check of a stale temporary file (lstat) and its removal, had
// the removal land in another folder, deleting a live .index.json-* or
// .ingest-* file of a concurrent writer there (whose copy then fails). The
// folders are now held as an os.Root on every system, opened once: the
// check and the removal are in the same folder, wherever it was moved,
// and nothing in the other folder is touched (docs/SPEC-DECISIONS.md
// OCI-26).
func TestLayoutFileCheckedInOneFolderIsNeverRemovedFromAnother(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		blobs      bool
		swap       func(t *testing.T, base string)
		// where, after the swap, the concurrent writer's live file and
		// the stale file checked are (below the test's folder)
		live, held string
	}{
		{"root repointed, index temp", indexTempPrefix + "a", false, func(t *testing.T, base string) {
			repointLink(t, filepath.Join(base, "shared"), filepath.Join(base, "other"))
		}, "other/" + indexTempPrefix + "a", "genuine/" + indexTempPrefix + "a"},
		{"root repointed, ingest temp", ingestPrefix + "a", true, func(t *testing.T, base string) {
			repointLink(t, filepath.Join(base, "shared"), filepath.Join(base, "other"))
		}, "other/blobs/sha256/" + ingestPrefix + "a", "genuine/blobs/sha256/" + ingestPrefix + "a"},
		{"blobs replaced by another folder", ingestPrefix + "a", true, func(t *testing.T, base string) {
			mustRename(t, filepath.Join(base, "genuine", "blobs"), filepath.Join(base, "moved-blobs"))
			mustRename(t, filepath.Join(base, "other", "blobs"), filepath.Join(base, "genuine", "blobs"))
		}, "genuine/blobs/sha256/" + ingestPrefix + "a", "moved-blobs/sha256/" + ingestPrefix + "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			rel := tc.file
			if tc.blobs {
				rel = filepath.Join("blobs", "sha256", tc.file)
			}
			old := time.Now().Add(-2 * StaleLayoutTempAge)
			for _, l := range []string{"genuine", "other"} {
				if err := os.MkdirAll(filepath.Join(base, l, "blobs", "sha256"), 0o755); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(base, l, rel)
				if err := os.WriteFile(p, []byte(l), 0o644); err != nil {
					t.Fatal(err)
				}
				if l == "genuine" { // a killed writer's, stale
					if err := os.Chtimes(p, old, old); err != nil {
						t.Fatal(err)
					}
				}
			}
			repointLink(t, filepath.Join(base, "shared"), filepath.Join(base, "genuine"))
			lf, err := openLayoutFolders(filepath.Join(base, "shared"))
			if err != nil {
				t.Fatal(err)
			}
			defer lf.Close()
			d := lf.top
			if tc.blobs {
				d = lf.blobs
			}
			st, err := d.lstat(tc.file)
			if err != nil || time.Since(st.ModTime()) < StaleLayoutTempAge {
				t.Fatalf("the check found %v (%v), want the stale file of the folder opened", st, err)
			}
			tc.swap(t, base)
			if err := d.remove(tc.file); err != nil {
				t.Fatalf("the removal after the swap: %v, want the checked file removed", err)
			}
			if b, err := os.ReadFile(filepath.Join(base, filepath.FromSlash(tc.live))); err != nil || string(b) != "other" {
				t.Errorf("the concurrent writer's live %s is gone (%v): the check and the removal landed in different folders", tc.file, err)
			}
			if _, err := os.Lstat(filepath.Join(base, filepath.FromSlash(tc.held))); err == nil {
				t.Errorf("the stale %s checked was not removed", tc.file)
			}
		})
	}
}

// repointLink makes the symbolic link l name target (a rename over it).
func repointLink(t *testing.T, l, target string) {
	t.Helper()
	if err := os.Symlink(target, l+".new"); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	mustRename(t, l+".new", l)
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// TestPulledFilesNameIsDurableWhenPullReturns: the failure. PullFile
// synced the bundle file, then renamed it into place without syncing the
// folder: after a power loss the file system could keep the old file, or
// none, at the name a pull reported written. The folder is now synced
// after the rename, before PullFile returns, as a tar's Commit does
// (renameSynced; docs/SPEC-DECISIONS.md OCI-25, OCI-26).
func TestPulledFilesNameIsDurableWhenPullReturns(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "layout")
	w, err := Open(ctx, Location{Kind: KindLayout, Path: dir}, Options{}, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../testdata/bundles/translate.ampb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := w.PushBundle(ctx, f, "translate.ampb", "v1"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var steps []string
	src, err := Open(ctx, Location{Kind: KindLayout, Path: dir}, Options{trace: func(s string) { steps = append(steps, s) }}, ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	a, err := src.Resolve(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	steps = nil
	if err := src.PullFile(ctx, a, filepath.Join(t.TempDir(), "out.ampb")); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0] != "renamed:pull" || steps[1] != "synced:pull-folder" {
		t.Errorf("PullFile's steps %v, want [renamed:pull synced:pull-folder]: the new name's folder synced after the rename", steps)
	}
}
