package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/mirror"
)

// serveOptionsOf parses args as 'ampbundle serve' does (its flags, checked
// by checkMirrorFlags) and returns the mirror.Options serve would start
// the mirror with; nothing is opened or served.
func serveOptionsOf(t *testing.T, args ...string) (mirror.Options, error) {
	t.Helper()
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	cmd := serveCommand(env)
	var got mirror.Options
	cmd.Action = func(c *cli.Context) error {
		if _, err := checkMirrorFlags(c); err != nil {
			return err
		}
		got = mirrorOptions(c, env, nil, "", nil)
		return nil
	}
	app := &cli.App{Name: "ampbundle", Commands: []*cli.Command{cmd}, Writer: env.Stdout, ErrWriter: env.Stderr,
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"ampbundle", "serve"}, args...))
	return got, err
}

// TestServeMinRateLetsASlowLinkSiteLowerTheMirrorRate: the mirror cuts
// off a reader below its minimum data rate (MIRROR-14), 128 KiB/s by
// default, so a site that syncs over a link slower than 1 Mbit/s was cut
// off on every large bundle with no way to lower it (threat: an honest
// slow site denied service by the rule against slow readers).
// --min-rate, spelled and bounded as sync's, is the mirror's
// Options.MinDataRate; left out, the mirror's default.
func TestServeMinRateLetsASlowLinkSiteLowerTheMirrorRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int64
	}{
		{"left out: the mirror's default", nil, 0},
		{"the lowest sync takes", []string{"--min-rate", "1024"}, 1024},
		{"a 64 kbit/s link", []string{"--min-rate", "8000"}, 8000},
		{"above the default", []string{"--min-rate", "1048576"}, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := serveOptionsOf(t, tc.args...)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if o.MinDataRate != tc.want {
				t.Fatalf("the mirror's MinDataRate is %d, want %d", o.MinDataRate, tc.want)
			}
		})
	}
	// Through the whole command: the flag is taken and serve goes on to
	// open the store (absent here).
	db := filepath.Join(t.TempDir(), "absent.db")
	failsWith(t, "store_missing", "serve", "--db", db, "--min-rate", "8000")
}

// TestServeMinRateUnderTheFloorIsRefusedBeforeAnything: a --min-rate of 0
// or less would read as the default and one under 1 KiB/s lets a reader
// hold a request slot for the whole write timeout at almost no cost
// (threat: an operator's typo silently starting a mirror with another
// rule than asked, or one without a useful rule). Each is a usage error
// (exit 2) naming the floor, before the store is opened (the store named
// is absent: a later check would answer store_missing) and before the
// spool folder is written.
func TestServeMinRateUnderTheFloorIsRefusedBeforeAnything(t *testing.T) {
	for _, v := range []string{"0", "-1", "-131072", "1023"} {
		t.Run(v, func(t *testing.T) {
			dir := t.TempDir()
			spool := filepath.Join(dir, "spool")
			if err := os.Mkdir(spool, 0o700); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, nil, "serve", "--json", "--db", filepath.Join(dir, "absent.db"), "--spool", spool, "--min-rate="+v)
			if r.code != 2 || errorCode(t, r) != "usage" || !strings.Contains(r.stdout, "--min-rate must be at least 1024") {
				t.Fatalf("--min-rate %s: exit %d, want a usage error naming the floor (exit 2)\nstdout: %s\nstderr: %s", v, r.code, r.stdout, r.stderr)
			}
			if left, _ := os.ReadDir(spool); len(left) != 0 {
				t.Fatalf("a refused start left %d files in the spool", len(left))
			}
			if _, err := serveOptionsOf(t, "--min-rate="+v); err == nil {
				t.Fatal("checkMirrorFlags passed the rate")
			}
		})
	}
	// Not a number: a malformed flag value, a usage error too.
	if r := runCLI(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "absent.db"), "--min-rate", "fast"); r.code != 2 {
		t.Fatalf("--min-rate fast: exit %d, want 2\n%s", r.code, r.stderr)
	}
}
