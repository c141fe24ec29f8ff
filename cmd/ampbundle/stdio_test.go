package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// runStdin runs the CLI with stdin, stderr a terminal or not.
func runStdin(t *testing.T, stdin []byte, tty bool, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{
		Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return cliNow }, Rand: rand.Reader,
		Getenv: func(string) string { return "" }, StderrIsTerminal: tty,
	}
	code := run(context.Background(), env, append([]string{"ampbundle"}, args...))
	return result{code, out.String(), errb.String()}
}

// splitSample splits the big translate bundle into dir and returns the
// bundle's bytes and the index path.
func splitSample(t *testing.T, dir string) ([]byte, string) {
	t.Helper()
	file := bigTranslate(t)
	want, _ := os.ReadFile(file)
	mustRun(t, "split", file, "--size", "64K", "--key", sampleKey(t, "example-publisher"), "--out-dir", dir)
	return want, filepath.Join(dir, "big.ampb.parts")
}

// leftovers puts in dir what killed runs leave (our temporary files, an
// hour older than the CLI's clock) and what a user keeps there that looks
// alike; it returns both lists.
func leftovers(t *testing.T, dir string) (ours, users []string) {
	t.Helper()
	old := cliNow.Add(-time.Hour)
	for _, n := range []string{".ampbundle-join-4242.tmp", ".ampbundle-export-4243.tmp", ".ampbundle-4244.tmp", ".ampbundle-part-4245.tmp"} {
		p := filepath.Join(dir, n)
		os.WriteFile(p, make([]byte, 1<<20), 0o600)
		os.Chtimes(p, old, old)
		ours = append(ours, p)
	}
	stage := filepath.Join(dir, ".ampbundle-split-4246.tmp")
	os.Mkdir(stage, 0o700)
	os.WriteFile(filepath.Join(stage, "big.ampb.part001"), make([]byte, 1<<16), 0o600)
	os.Chtimes(stage, old, old)
	ours = append(ours, stage)
	for _, n := range []string{".ampbundle-notes.txt", "ampbundle-4242.tmp", ".ampbundle-join-4242.tmp.keep"} {
		p := filepath.Join(dir, n)
		os.WriteFile(p, []byte("mine"), 0o600)
		os.Chtimes(p, old, old)
		users = append(users, p)
	}
	return ours, users
}

// TestJoinLeftoverTempFilesFromAKilledRunAreRemoved: the temporary files a
// join, export or split killed with SIGKILL leaves in a folder (35–46 MB
// each in the attack run) are removed by the next join, export or split
// writing there; files that only look alike stay.
func TestJoinLeftoverTempFilesFromAKilledRunAreRemoved(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	db := storeWithSamples(t)
	for _, c := range []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"join", func(t *testing.T, dir string) {
			_, index := splitSample(t, t.TempDir())
			mustRun(t, "join", index, "-o", filepath.Join(dir, "joined.ampb"))
		}},
		{"export", func(t *testing.T, dir string) {
			mustRun(t, "export", translateID, "--db", db, "-o", filepath.Join(dir, "t.ampb"))
		}},
		{"split", func(t *testing.T, dir string) {
			mustRun(t, "split", bigTranslate(t), "--size", "64K", "--key", sampleKey(t, "example-publisher"), "--out-dir", dir)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ours, users := leftovers(t, dir)
			c.run(t, dir)
			for _, p := range ours {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the leftover %s is still there after %s", filepath.Base(p), c.name)
				}
			}
			for _, p := range users {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("%s removed the user's file %s", c.name, filepath.Base(p))
				}
			}
		})
	}
}

// TestJoinSplitExportRefuseToOverwriteWithoutForce: an existing output is
// never replaced by mistake (file_exists, the file unchanged, nothing else
// left); --force replaces it.
func TestJoinSplitExportRefuseToOverwriteWithoutForce(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	db := storeWithSamples(t)
	want, index := splitSample(t, t.TempDir())
	file := bigTranslate(t)
	key := sampleKey(t, "example-publisher")
	for _, c := range []struct {
		name, existing string
		args           []string
	}{
		{"join", "joined.ampb", []string{"join", index, "-o", "OUT"}},
		{"export", "t.ampb", []string{"export", translateID, "--db", db, "-o", "OUT"}},
		{"split index", "big.ampb.parts", []string{"split", file, "--size", "64K", "--key", key, "--out-dir", "DIR"}},
		{"split part", "big.ampb.part003", []string{"split", file, "--size", "64K", "--key", key, "--out-dir", "DIR"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, c.existing)
			os.WriteFile(out, []byte("mine"), 0o644)
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.NewReplacer("OUT", out, "DIR", dir).Replace(a)
			}
			r := failsWith(t, "file_exists", args...)
			if !strings.Contains(r.stdout, "--force") {
				t.Fatalf("the refusal does not say how to replace it: %s", r.stdout)
			}
			if got, _ := os.ReadFile(out); string(got) != "mine" {
				t.Fatal("the existing output was changed")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("a refused %s left %d entries", c.name, len(entries))
			}
			mustRun(t, append(args, "--force")...)
			if got, _ := os.ReadFile(out); string(got) == "mine" {
				t.Fatal("--force did not replace the output")
			}
		})
	}
	// The joined bytes with --force are the original's.
	out := filepath.Join(t.TempDir(), "j.ampb")
	os.WriteFile(out, []byte("mine"), 0o644)
	mustRun(t, "join", index, "-o", out, "--force")
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("join --force did not write the original bytes")
	}
}

// TestDashIsStdinAndStdout: "-" reads the bundle from stdin (verify,
// inspect, import) and writes it to stdout (export, join, build -o), with
// the summary on stderr; the bytes are the file's.
func TestDashIsStdinAndStdout(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	sample, err := os.ReadFile(sampleFile("translate"))
	if err != nil {
		t.Fatal(err)
	}
	pub := samplePub("example-publisher")
	if r := runStdin(t, sample, false, "verify", "-", "--trust", pub); r.code != 0 || !strings.Contains(r.stdout, "verified: signature and all") || !strings.Contains(r.stdout, "stdin") {
		t.Fatalf("verify -: %d %s %s", r.code, r.stdout, r.stderr)
	}
	bad := bytes.Clone(sample)
	bad[len(bad)-10] ^= 1
	if r := runStdin(t, bad, false, "verify", "-", "--trust", pub, "--json"); r.code != 1 || errorCode(t, r) != "hash_mismatch" {
		t.Fatalf("verify - of a tampered bundle: %d %s", r.code, r.stdout)
	}
	if r := runStdin(t, sample, false, "inspect", "-"); r.code != 0 || !strings.Contains(r.stdout, "signature NOT checked") || !strings.Contains(r.stdout, translateID) {
		t.Fatalf("inspect -: %d %s %s", r.code, r.stdout, r.stderr)
	}
	db := newStore(t)
	// A tampered bundle on stdin lands nothing.
	if r := runStdin(t, bad, false, "import", "-", "--db", db, "--json"); r.code != 1 || errorCode(t, r) != "hash_mismatch" {
		t.Fatalf("import - of a tampered bundle: %d %s", r.code, r.stdout)
	}
	var ls struct {
		Bundles []struct{} `json:"bundles"`
	}
	mustJSON(t, &ls, "ls", "--db", db)
	if len(ls.Bundles) != 0 {
		t.Fatalf("a refused import from stdin installed %d bundles", len(ls.Bundles))
	}
	// Over the bound: limit_exceeded, nothing read further.
	if r := runStdin(t, sample, false, "import", "-", "--db", db, "--max-stdin-size", "1K", "--json"); r.code != 1 || errorCode(t, r) != "limit_exceeded" {
		t.Fatalf("import - over --max-stdin-size: %d %s", r.code, r.stdout)
	}
	r := runStdin(t, sample, false, "import", "-", "--db", db, "--json")
	var imp importJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &imp) != nil || imp.BundleID != translateID || imp.File != "stdin" {
		t.Fatalf("import -: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// export -o -: the bytes on stdout, the summary on stderr.
	r = runStdin(t, nil, false, "export", translateID, "--db", db, "-o", "-")
	if r.code != 0 || r.stdout != string(sample) || !strings.Contains(r.stderr, "exported "+translateID) {
		t.Fatalf("export -o -: %d, %d bytes on stdout, stderr %q", r.code, len(r.stdout), r.stderr)
	}
	// join -o -.
	want, index := splitSample(t, t.TempDir())
	r = runStdin(t, nil, false, "join", index, "-o", "-", "--trust", pub)
	if r.code != 0 || r.stdout != string(want) || !strings.Contains(r.stderr, "joined") {
		t.Fatalf("join -o -: %d, %d bytes on stdout, stderr %q", r.code, len(r.stdout), r.stderr)
	}
	// build -o -: the same bytes as build -o FILE.
	key := sampleKey(t, "example-publisher")
	r = runStdin(t, nil, false, "build", filepath.Join(testdata, "translate"), "-o", "-", "--key", key, "--created", "2026-11-01T00:00:00Z")
	if r.code != 0 || r.stdout != string(sample) || !strings.Contains(r.stderr, "wrote stdout") {
		t.Fatalf("build -o -: %d, %d bytes on stdout, stderr %q", r.code, len(r.stdout), r.stderr)
	}
	if entries, _ := os.ReadDir(os.Getenv("TMPDIR")); len(entries) != 0 {
		t.Fatalf("stdin and stdout left temporary files: %v", entries)
	}
}

// TestJoinToStdoutOfAnAlteredPartWritesNothing: with -o -, bytes reach
// stdout only once every part and the whole matched the index; a part
// altered in its last byte (found only at the end of the stream) leaves
// stdout empty and fails with part_mismatch.
func TestJoinToStdoutOfAnAlteredPartWritesNothing(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	_, index := splitSample(t, dir)
	entries, _ := os.ReadDir(dir)
	last := ""
	for _, e := range entries {
		if strings.Contains(e.Name(), ".part0") {
			last = filepath.Join(dir, e.Name())
		}
	}
	data, _ := os.ReadFile(last)
	data[len(data)-1] ^= 1
	os.WriteFile(last, data, 0o644)
	r := runStdin(t, nil, false, "join", index, "-o", "-")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "part") {
		t.Fatalf("join -o - of an altered part: %d, %d bytes on stdout, stderr %q", r.code, len(r.stdout), r.stderr)
	}
}

// TestJoinWithoutTrustSaysTheSignatureWasNotChecked: join without --trust
// does not check the index signature and says so, as inspect does; with
// --trust it does not.
func TestJoinWithoutTrustSaysTheSignatureWasNotChecked(t *testing.T) {
	_, index := splitSample(t, t.TempDir())
	r := mustRun(t, "join", index, "-o", filepath.Join(t.TempDir(), "a.ampb"))
	if !strings.Contains(r.stdout, "signature NOT checked") {
		t.Fatalf("join without --trust: %q", r.stdout)
	}
	r = mustRun(t, "join", index, "-o", filepath.Join(t.TempDir(), "b.ampb"), "--trust", samplePub("example-publisher"))
	if strings.Contains(r.stdout, "NOT checked") {
		t.Fatalf("join with --trust: %q", r.stdout)
	}
}

// TestSplitAndJoinShowProgressOnATerminal: split and join draw progress on
// a terminal as import does, never under --json.
func TestSplitAndJoinShowProgressOnATerminal(t *testing.T) {
	file := bigTranslate(t)
	dir := t.TempDir()
	key := sampleKey(t, "example-publisher")
	if r := runTTY(t, "split", file, "--size", "64K", "--key", key, "--out-dir", dir); r.code != 0 || !strings.Contains(r.stderr, "splitting 100%") {
		t.Fatalf("tty split: %d %q", r.code, r.stderr)
	}
	index := filepath.Join(dir, "big.ampb.parts")
	if r := runTTY(t, "join", index, "-o", filepath.Join(t.TempDir(), "j.ampb")); r.code != 0 || !strings.Contains(r.stderr, "joining 100%") {
		t.Fatalf("tty join: %d %q", r.code, r.stderr)
	}
	if r := runTTY(t, "join", index, "-o", filepath.Join(t.TempDir(), "k.ampb"), "--json"); r.code != 0 || r.stderr != "" {
		t.Fatalf("tty --json join: %d %q", r.code, r.stderr)
	}
}
