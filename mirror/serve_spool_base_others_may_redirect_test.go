//go:build unix

package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestServeSpoolRefusesABaseOthersMayRedirect: ServeSpool took any base
// folder MkdirAll accepted (MIRROR-34): a link, another user's folder, one
// group or others may write, one below a folder others may write. A
// group member who made DB.mirror 0777 before the first serve could
// later swap a running mirror's run-N for a link: its exports then wrote
// there and each prune removed every *.bundle file of the link's target;
// a DB.mirror that is a link made the sweep remove the run-* entries of
// its target. Should: such a base is refused (*SpoolBaseError, naming the
// folder), judged as the sync spool is, and nothing in it, or in a link's
// target, is made or removed; a base of this user's, 0700, below a sticky
// folder (/tmp's), is taken (the guard).
func TestServeSpoolRefusesABaseOthersMayRedirect(t *testing.T) {
	// plantKilled puts in dir a killed mirror's folder (no lock), with a
	// bundle copy, which a sweep of dir removes.
	plantKilled := func(t *testing.T, dir string) string {
		run := filepath.Join(dir, "run-1")
		mustNil(t, os.MkdirAll(run, 0o700))
		mustNil(t, os.WriteFile(filepath.Join(run, "ab.bundle"), []byte("someone's file"), 0o600))
		return run
	}
	for _, c := range []struct {
		name    string
		root    bool // chown needs root
		refused bool
		// setup makes the base to give ServeSpool in top (a fresh folder
		// 0700 of this user's) and returns it and the folder a sweep of
		// the base would clear (its target, for a link).
		setup func(t *testing.T, top string) (base, swept string)
	}{
		{"a link to another folder", false, true, func(t *testing.T, top string) (string, string) {
			target := filepath.Join(top, "elsewhere")
			mustNil(t, os.Mkdir(target, 0o700))
			base := filepath.Join(top, "store.db.mirror")
			mustNil(t, os.Symlink(target, base))
			return base, target
		}},
		{"a folder group and others may write", false, true, func(t *testing.T, top string) (string, string) {
			base := filepath.Join(top, "store.db.mirror")
			mustNil(t, os.Mkdir(base, 0o700))
			mustNil(t, os.Chmod(base, 0o777))
			return base, base
		}},
		{"a folder the group may write", false, true, func(t *testing.T, top string) (string, string) {
			base := filepath.Join(top, "store.db.mirror")
			mustNil(t, os.Mkdir(base, 0o700))
			mustNil(t, os.Chmod(base, 0o770))
			return base, base
		}},
		{"another user's folder", true, true, func(t *testing.T, top string) (string, string) {
			base := filepath.Join(top, "store.db.mirror")
			mustNil(t, os.Mkdir(base, 0o700))
			mustNil(t, os.Chown(base, 4242, 4242))
			return base, base
		}},
		{"below a folder others may write", false, true, func(t *testing.T, top string) (string, string) {
			shared := filepath.Join(top, "shared")
			mustNil(t, os.Mkdir(shared, 0o700))
			mustNil(t, os.Chmod(shared, 0o777))
			base := filepath.Join(shared, "store.db.mirror")
			mustNil(t, os.Mkdir(base, 0o700))
			return base, base
		}},
		{"this user's folder below a sticky one (guard)", false, false, func(t *testing.T, top string) (string, string) {
			shared := filepath.Join(top, "tmp")
			mustNil(t, os.Mkdir(shared, 0o700))
			mustNil(t, os.Chmod(shared, 0o777|os.ModeSticky))
			base := filepath.Join(shared, "store.db.mirror")
			mustNil(t, os.Mkdir(base, 0o700))
			return base, base
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			base, swept := c.setup(t, t.TempDir())
			killed := plantKilled(t, swept)
			dir, release, err := ServeSpool(base)
			if !c.refused {
				if err != nil {
					t.Fatalf("a sound base refused: %v", err)
				}
				release()
				if _, err := os.Lstat(killed); err == nil {
					t.Fatalf("%s, a killed mirror's folder, stays in a sound base", killed)
				}
				return
			}
			if err == nil {
				release()
				t.Fatalf("ServeSpool took %s, %s, and made %s in it", base, c.name, dir)
			}
			var be *SpoolBaseError
			if !errors.As(err, &be) || be.Path == "" || be.Why == "" {
				t.Fatalf("refusal %v (%T), want a *SpoolBaseError naming the folder", err, err)
			}
			if _, err := os.Lstat(filepath.Join(killed, "ab.bundle")); err != nil {
				t.Fatalf("%s, in a base refused, was removed: %v", killed, err)
			}
			if made, _ := filepath.Glob(filepath.Join(swept, "run-*.lock")); len(made) != 0 {
				t.Fatalf("lock files made in a base refused: %v", made)
			}
		})
	}
}

// TestServeSpoolLeavesWhatIsNoRunFolderOfItsOwn: the sweep removed with
// os.RemoveAll whatever stood in an ended run-N's place. Should: only a
// folder, not a link, of this user's is removed; a link there (to a
// folder holding bundle files) and another user's folder stay, with
// their lock file, and so does what they hold or point to.
func TestServeSpoolLeavesWhatIsNoRunFolderOfItsOwn(t *testing.T) {
	top := t.TempDir()
	base := filepath.Join(top, "store.db.mirror")
	mustNil(t, os.Mkdir(base, 0o700))
	target := filepath.Join(top, "elsewhere")
	mustNil(t, os.Mkdir(target, 0o700))
	kept := filepath.Join(target, "ab.bundle")
	mustNil(t, os.WriteFile(kept, []byte("someone's file"), 0o600))
	link := filepath.Join(base, "run-5")
	mustNil(t, os.Symlink(target, link))
	mustNil(t, os.WriteFile(link+".lock", nil, 0o600))
	stays := []string{link, link + ".lock", kept}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "run-6")
		mustNil(t, os.Mkdir(other, 0o700))
		mustNil(t, os.WriteFile(filepath.Join(other, "x.bundle"), []byte("x"), 0o600))
		mustNil(t, os.Chown(other, 4242, 4242))
		stays = append(stays, other, filepath.Join(other, "x.bundle"))
	}
	dir, release, err := ServeSpool(base)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, p := range stays {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed by the sweep: %v", p, err)
		}
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the mirror's own folder %s: %v", dir, err)
	}
}
