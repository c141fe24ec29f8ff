package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputPathsWithTerminalEscapesAreNotPrinted: the threat: a script
// passes on to ampbundle a file name taken from a folder others can write,
// and the name carries terminal escapes (ESC [ 2 J clears the screen) or a
// bidi override (U+202E shows the rest of the line reversed, so that
// "wrote x.ampb" can read as another file). Every command printed such a
// path as given ("wrote PATH", "exported ... to PATH", "store PATH is
// sound"), so the name's author drove the operator's terminal. Expected:
// each command, run for real with such a path, succeeds and shows the path
// escaped through cliutil.Sanitize (docs/SPEC-DECISIONS.md CLI-52) on
// stdout and stderr, which then hold neither raw byte sequence.
func TestOutputPathsWithTerminalEscapesAreNotPrinted(t *testing.T) {
	const (
		created = "2026-11-22T12:00:00Z"
		hostile = "x\x1b[2J\u202e" // ESC [ 2 J, then RIGHT-TO-LEFT OVERRIDE
		escaped = `x\x1b[2J\u202e` // as Sanitize shows it
	)
	dir := t.TempDir()
	named := func(name string) string { return filepath.Join(dir, name+hostile+".out") }
	if err := os.WriteFile(named("probe"), nil, 0o600); err != nil {
		t.Skip("this file system refuses the name:", err)
	}
	key, pub := sampleKey(t, "example-publisher"), samplePub("example-publisher")
	cosigner, _ := officers(t, 1)
	// copyTo copies the sample bundle to the hostile name given.
	copyTo := func(t *testing.T, path string) string {
		t.Helper()
		data, err := os.ReadFile(sampleFile("translate"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name string
		args func(t *testing.T, out string) []string // out: a fresh hostile path
	}{
		{"keygen -o and --pub", func(_ *testing.T, out string) []string {
			return []string{"keygen", "-o", out, "--pub", out + ".pub"}
		}},
		{"build -o", func(_ *testing.T, out string) []string {
			return []string{"build", filepath.Join(testdata, "translate"), "-o", out, "--key", key, "--created", created}
		}},
		{"sign -o", func(_ *testing.T, out string) []string {
			return []string{"sign", sampleFile("translate"), "-o", out, "--key", cosigner[0]}
		}},
		{"sign FILE (a statement) -o", func(t *testing.T, out string) []string {
			stmt := out + ".in"
			mustRun(t, "revoke", "-o", stmt, "--scope", "org.example", "--revoke-bundle", translateID+"@1", "--key", key, "--created", created)
			return []string{"sign", stmt, "-o", out, "--key", cosigner[0]}
		}},
		{"heartbeat -o", func(_ *testing.T, out string) []string {
			return []string{"heartbeat", "-o", out, "--bundle-id", translateID, "--version", "1", "--key", key, "--created", created}
		}},
		{"revoke -o", func(_ *testing.T, out string) []string {
			return []string{"revoke", "-o", out, "--scope", "org.example", "--revoke-bundle", translateID + "@1", "--key", key, "--created", created}
		}},
		{"rotate -o", func(_ *testing.T, out string) []string {
			return []string{"rotate", "-o", out, "--scope", "org.example", "--add", "next=" + samplePub("acme-publisher"), "--key", key, "--created", created}
		}},
		{"receipt -o", func(t *testing.T, out string) []string {
			return []string{"receipt", "--db", storeWithSamples(t), "--key", key, "-o", out}
		}},
		{"export -o", func(t *testing.T, out string) []string {
			return []string{"export", translateID, "--db", storeWithSamples(t), "-o", out}
		}},
		{"split --out-dir", func(t *testing.T, out string) []string {
			// split refuses such a bundle file name for its parts; a
			// folder may be named so.
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"split", sampleFile("translate"), "--size", "10M", "--key", key, "--out-dir", out}
		}},
		{"join -o", func(t *testing.T, out string) []string {
			parts := t.TempDir()
			mustRun(t, "split", sampleFile("translate"), "--size", "10M", "--key", key, "--out-dir", parts)
			return []string{"join", filepath.Join(parts, "translate.ampb.parts"), "-o", out, "--trust", pub}
		}},
		{"verify FILE", func(t *testing.T, out string) []string {
			return []string{"verify", copyTo(t, out), "--trust", pub}
		}},
		{"import FILE already installed", func(t *testing.T, out string) []string {
			return []string{"import", copyTo(t, out), "--db", storeWithSamples(t)}
		}},
		{"import a statement already applied", func(t *testing.T, out string) []string {
			db := storeWithSamples(t)
			mustRun(t, "heartbeat", "-o", out, "--bundle-id", translateID, "--version", "1", "--key", key, "--created", created)
			mustRun(t, "import", out, "--db", db)
			return []string{"import", out, "--db", db}
		}},
		{"trust add creating --db", func(_ *testing.T, out string) []string {
			return []string{"trust", "add", pub, "--db", out, "--name", "example", "--scope", "org.example"}
		}},
		{"check --db", func(t *testing.T, out string) []string {
			mustRun(t, "trust", "add", pub, "--db", out, "--name", "example", "--scope", "org.example")
			return []string{"check", "--db", out}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := named(strings.ReplaceAll(tc.name, " ", "-"))
			args := tc.args(t, out)
			r := runCLI(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("%s: exit %d\nstdout: %q\nstderr: %q", strings.Join(args, " "), r.code, r.stdout, r.stderr)
			}
			for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
				for _, raw := range []string{"\x1b", "\u202e"} {
					if strings.Contains(text, raw) {
						t.Errorf("%s carries the path's %q as it is: %q", what, raw, text)
					}
				}
			}
			if !strings.Contains(r.stdout+r.stderr, escaped) {
				t.Errorf("the path is not shown escaped (%s):\nstdout: %q\nstderr: %q", escaped, r.stdout, r.stderr)
			}
		})
	}
}
