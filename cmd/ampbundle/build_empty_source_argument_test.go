package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBuildEmptySourceArgumentNeverSignsTheWorkingFolder: the attack: a CI
// step runs `ampbundle build "$SRC" -o out.ampb --key release.pem` with SRC
// unset or misspelt, so SRC is the empty argument "". sourceFolder lets a
// path it cannot Stat through ("LoadSource names a missing folder"), and
// the walk now makes the path absolute before walking it
// (filepath.Abs("") is the working folder, bundlebuild/source.go,
// walkSource): the release key signs whatever folder the job runs in (a
// shared workspace, another job's checkout) instead of refusing a source
// nobody named. Before review 34 the walk of "" failed; before review 43:
// exit 0, a signed bundle of the working folder. Now: an empty SRC is
// refused (usage error, or invalid_source naming the missing folder),
// nothing written.
func TestBuildEmptySourceArgumentNeverSignsTheWorkingFolder(t *testing.T) {
	src := t.TempDir()
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	key := sampleKey(t, "example-publisher")
	out := filepath.Join(t.TempDir(), "out.ampb")
	t.Chdir(src)
	r := runCLI(t, nil, "build", "", "-o", out, "--key", key, "--created", "2026-11-01T00:00:00Z", "--json")
	if r.code == 0 {
		t.Fatalf("ampbundle build \"\" exited 0 and signed the working folder into %s: %s", out, r.stdout)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Fatalf("ampbundle build \"\" exited %d but left %s behind", r.code, out)
	}
}
