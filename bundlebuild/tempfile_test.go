package bundlebuild

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// aged sets path's modification time to an hour before now.
func aged(t *testing.T, path string, now time.Time) {
	t.Helper()
	old := now.Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveStaleTempsNeverRemovesAUsersFile: cleaning up after a killed
// run removes our own leftovers only: a name not exactly ours, a young
// file, a link (even to one of ours), a folder holding a subfolder, and a
// file a live process holds locked all stay.
func TestRemoveStaleTempsNeverRemovesAUsersFile(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		aged(t, p, now)
		return p
	}
	ours := []string{mk(".ampbundle-123.tmp"), mk(".ampbundle-join-4567.tmp"), mk(".ampbundle-export-1.tmp")}
	users := []string{mk("ampbundle-123.tmp"), mk(".ampbundle-123.tmp.bak"), mk(".ampbundle-Join-1.tmp"),
		mk(".ampbundle-join-12a.tmp"), mk(".ampbundle-.tmp"), mk(".ampbundle-join-.tmp"), mk("b.ampb"), mk(".ampbundle-x-y-1.tmp")}
	young := filepath.Join(dir, ".ampbundle-split-9.tmp")
	os.WriteFile(young, []byte("x"), 0o600)
	users = append(users, young)
	link := filepath.Join(dir, ".ampbundle-777.tmp")
	target := mk("target")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	users = append(users, target)
	// A folder of ours, and one that holds a folder (not what we write).
	stage := filepath.Join(dir, ".ampbundle-split-55.tmp")
	os.Mkdir(stage, 0o700)
	os.WriteFile(filepath.Join(stage, "b.ampb.part001"), []byte("x"), 0o600)
	aged(t, stage, now)
	deep := filepath.Join(dir, ".ampbundle-split-56.tmp")
	os.MkdirAll(filepath.Join(deep, "sub"), 0o700)
	aged(t, deep, now)
	ours = append(ours, stage)
	users = append(users, deep)
	// A live writer's file, however old.
	live, err := CreateTemp(dir, "join")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	aged(t, live.Name(), now)
	if runtime.GOOS != "windows" {
		users = append(users, live.Name())
	}

	removed := RemoveStaleTemps(dir, now)
	slices.Sort(removed)
	slices.Sort(ours)
	if strings.Join(removed, "\n") != strings.Join(ours, "\n") {
		t.Fatalf("removed\n%s\nwant\n%s", strings.Join(removed, "\n"), strings.Join(ours, "\n"))
	}
	for _, p := range users {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Error("the link was removed")
	}
}

// TestSplitLeftoverTempFilesFromAKilledRunAreRemoved: what a killed split
// (or join, export, build) left in the folder is removed by the next split
// there.
func TestSplitLeftoverTempFilesFromAKilledRunAreRemoved(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	file := build(t, bigDraft(t, "org.example.left", 4, 64<<10), k)
	path := filepath.Join(dir, "b.ampb")
	os.WriteFile(path, file, 0o644)
	now := time.Now()
	left := []string{filepath.Join(dir, ".ampbundle-part-31.tmp"), filepath.Join(dir, ".ampbundle-join-32.tmp")}
	for _, p := range left {
		os.WriteFile(p, make([]byte, 1<<20), 0o600)
		aged(t, p, now)
	}
	stage := filepath.Join(dir, ".ampbundle-split-33.tmp")
	os.Mkdir(stage, 0o700)
	os.WriteFile(filepath.Join(stage, "b.ampb.part001"), make([]byte, 1<<20), 0o600)
	aged(t, stage, now)
	left = append(left, stage)
	if _, _, err := SplitFileWith(path, dir, bundle.MinPartSize, []ed25519.PrivateKey{k}, SplitOptions{Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the leftover %s is still there", p)
		}
	}
}

// TestSplitRefusesToOverwriteWithoutForce: an existing part or index of
// the same name is file_exists, and nothing is written; with Force the
// new set replaces it.
func TestSplitRefusesToOverwriteWithoutForce(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	file := build(t, bigDraft(t, "org.example.force", 4, 64<<10), k)
	path := filepath.Join(dir, "b.ampb")
	os.WriteFile(path, file, 0o644)
	for _, existing := range []string{"b.ampb.parts", "b.ampb.part002"} {
		t.Run(existing, func(t *testing.T) {
			out := t.TempDir()
			mine := filepath.Join(out, existing)
			os.WriteFile(mine, []byte("mine"), 0o644)
			_, _, err := SplitFile(path, out, bundle.MinPartSize, []ed25519.PrivateKey{k})
			expectName(t, err, ErrFileExists)
			if got, _ := os.ReadFile(mine); string(got) != "mine" {
				t.Fatal("the existing file was changed")
			}
			if entries, _ := os.ReadDir(out); len(entries) != 1 {
				t.Fatalf("a refused split left %d entries", len(entries))
			}
			index, _, err := SplitFileWith(path, out, bundle.MinPartSize, []ed25519.PrivateKey{k}, SplitOptions{Force: true})
			if err != nil {
				t.Fatal(err)
			}
			x := openIndex(t, index, &bundle.Policy{Keys: []bundle.TrustedKey{{Name: "k", Key: k.Public().(ed25519.PublicKey), Scopes: []string{"*"}}}})
			if err := readParts(x, &bundle.Policy{Keys: []bundle.TrustedKey{{Name: "k", Key: k.Public().(ed25519.PublicKey), Scopes: []string{"*"}}}}, out); err != nil {
				t.Fatal(err)
			}
		})
	}
}
