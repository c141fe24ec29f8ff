//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestServeRefusesASpoolBaseOthersMayWrite: serve took a DB.mirror/ that
// group and others may write (MIRROR-34 left it unjudged), where another
// user could swap a running serve's run-N for a link and have its exports
// written, and each prune's removals made, in the link's target. Should:
// serve refuses to start, io_error naming the folder and what is wrong
// with it, with the hint to give --spool; nothing in the folder is
// removed; with --spool it starts.
func TestServeRefusesASpoolBaseOthersMayWrite(t *testing.T) {
	db := storeWithSamples(t)
	base := db + ".mirror"
	killed := filepath.Join(base, "run-1")
	mustNil(t, os.MkdirAll(killed, 0o700))
	mustNil(t, os.Chmod(base, 0o777))
	r := runServeBriefly(t, "--json", "--db", db, "--listen", "127.0.0.1:0")
	if r.code != 1 || errorCode(t, r) != "io_error" || !strings.Contains(r.stdout, "may be written by group or others") {
		t.Fatalf("exit %d, %s: want io_error saying what is wrong with %s", r.code, r.stdout, base)
	}
	h := runServeBriefly(t, "--db", db, "--listen", "127.0.0.1:0")
	if h.code != 1 || !strings.Contains(h.stderr, "hint: give --spool") {
		t.Fatalf("exit %d, stderr %q: want the --spool hint", h.code, h.stderr)
	}
	if _, err := os.Lstat(killed); err != nil {
		t.Fatalf("%s was removed from a base refused: %v", killed, err)
	}
	startMirrorCLI(t, db, "--spool", filepath.Join(t.TempDir(), "spool"))
}

// runServeBriefly runs 'ampbundle serve' with args for at most a few
// seconds: a serve that starts where it should refuse ends (exit 0) rather
// than hanging the test.
func runServeBriefly(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return cliNow }, Rand: rand.Reader, Getenv: func(string) string { return "" }}
	code := run(ctx, env, append([]string{"ampbundle", "serve"}, args...))
	return result{code, out.String(), errb.String()}
}
