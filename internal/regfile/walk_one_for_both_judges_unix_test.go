//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkGivesEachJudgeThePartsTheLookupPassesThrough: FolderAbove and
// the agent's judge of a handler's program (cmd/ampagent's pathWriters)
// each walked a path's lookup by a copy of their own, so a fix to one
// walk (a link bound, a ".." in a link's target) could miss the other
// (threat: two walks of one lookup drifting apart, one of them judging
// a path the system resolves elsewhere). Now both are Walk, each with
// its own rule per part: Walk gives every part in the lookup's order,
// links and the parts of their targets included, with the name taken
// next; stops at the 41st link (ErrTooManyLinks) and at a missing part,
// naming it; FolderAbove judges only the folders the lookup passes
// through, as before.
func TestWalkGivesEachJudgeThePartsTheLookupPassesThrough(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b", "open/in"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "a", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for at, to := range map[string]string{"up": "a/b/../f", "abs": filepath.Join(base, "a"), "loop": "loop", "viaopen": "open/in"} {
		if err := os.Symlink(to, filepath.Join(base, at)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path  string // under base
		parts string // the parts under base the judge is given, each "PATH>NEXT"
		real  string // under base; "" when the walk fails
		err   error
		at    string // the part the failure names, under base
	}{
		{"up", "up> a>b a/b>.. a/f>", "a/f", nil, ""},
		{"abs/b", "abs>b a>b a/b>", "a/b", nil, ""},
		{"a/./b/", "a>b a/b>", "a/b", nil, ""},
		{"a/none", "a>none", "", fs.ErrNotExist, "a/none"},
		{"loop", strings.Repeat("loop> ", MaxFolderLinks+1), "", ErrTooManyLinks, "loop"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var got []string
			real, err := Walk(filepath.Join(base, tc.path), func(p Part) error {
				if p.Info == nil {
					t.Fatalf("part %s given without its lstat", p.Path)
				}
				if rel, ok := strings.CutPrefix(p.Path, base+"/"); ok {
					got = append(got, rel+">"+p.Next)
				}
				return nil
			})
			if g := strings.Join(got, " "); g != strings.TrimSpace(tc.parts) {
				t.Errorf("parts:\n %s\nwant\n %s", g, tc.parts)
			}
			var pe *fs.PathError
			switch {
			case tc.err == nil && (err != nil || real != filepath.Join(base, tc.real)):
				t.Errorf("resolved to %s, %v; want %s", real, err, tc.real)
			case tc.err != nil && (!errors.Is(err, tc.err) || !errors.As(err, &pe) || pe.Path != filepath.Join(base, tc.at)):
				t.Errorf("walk: %v, want %v naming %s", err, tc.err, tc.at)
			}
		})
	}
	stop := errors.New("judged")
	if _, err := Walk(filepath.Join(base, "a", "f"), func(p Part) error {
		if p.Path == filepath.Join(base, "a") {
			return stop
		}
		return nil
	}); err != stop {
		t.Fatalf("the judge's error: %v, want it as it is", err)
	}

	if err := os.Chmod(filepath.Join(base, "open"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(base, "a", "b"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, above string }{
		{"up", ""},            // a/b is left by "..", not passed through
		{"a/b", ""},           // dir itself is its caller's to judge
		{"a/b/c", "a/b"},      // passed through
		{"viaopen", "open"},   // a link's target's folder
		{"viaopen/x", "open"}, // and so on down
		{"loop", "loop"},      // too many links
		{"a/f/x", "a/f"},      // not a folder
		{"abs/b/../f", ""},    // Abs cleans it first
	} {
		_, a := FolderAbove(filepath.Join(base, tc.dir))
		switch {
		case tc.above == "" && a != nil:
			t.Errorf("FolderAbove(%s): %+v, want none", tc.dir, a)
		case tc.above != "" && (a == nil || a.Path != filepath.Join(base, tc.above)):
			t.Errorf("FolderAbove(%s): %+v, want %s", tc.dir, a, tc.above)
		}
	}
	if _, a := FolderAbove(filepath.Join(base, "loop")); a == nil || a.Err != ErrTooManyLinks {
		t.Errorf("FolderAbove through a loop: %+v, want ErrTooManyLinks itself", a)
	}
}
