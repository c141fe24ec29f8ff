package bundlebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
)

// TestSourceFileNameControlBytesEchoed: the attack: anyone who
// can write in the source folder names a file, a folder or a link with
// terminal control bytes, a newline or a bidi override
// ("schemas/\x1b]0;…\a.json", "x\nok: wrote bundle"). The walk refuses such
// a name (an unsafe key), a link, a hidden folder or a special file, but
// before review 111 its error message started with the raw name: a CI
// service or an embedder that logs err.Error() (the ampbundle command
// escapes its own output, others need not) had its terminal driven or a
// log line forged by the contributor. Expected: a name that is not a safe
// artifact key is shown quoted, every control and bidi rune escaped, and
// bounded (docs/SPEC-DECISIONS.md, BUILD-6).
func TestSourceFileNameControlBytesEchoed(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(dir string) error
	}{
		{"unsafe file name", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "schemas", "a\x1b]0;pwned\a\nok: wrote bundle.json"), []byte("{}"), 0o644)
		}},
		{"link with a bidi override", func(dir string) error {
			return os.Symlink("/etc/hostname", filepath.Join(dir, "schemas", "x\u202egnp.json"))
		}},
		{"hidden folder with an escape", func(dir string) error {
			return os.Mkdir(filepath.Join(dir, "schemas", ".\x1b[2J"), 0o755)
		}},
		{"long name", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "schemas", strings.Repeat("\x1b", 250)), []byte("{}"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
			if err := tc.make(dir); err != nil {
				t.Skip(err) // a file system that refuses the name
			}
			_, err := LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0)})
			if err == nil {
				t.Fatal("a source with an unsafe name was accepted")
			}
			msg := err.Error()
			for _, r := range msg {
				if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
					t.Fatalf("the error echoes the raw file name, control or bidi rune %U included: %q", r, msg)
				}
			}
			if len(msg) > 600 {
				t.Fatalf("the error is %d bytes long: the name is not bounded: %q", len(msg), msg)
			}
		})
	}
}
