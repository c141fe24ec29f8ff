package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport/ocitest"
)

// layoutWithRevocation is an OCI layout tar holding the translate sample
// at :v3 and a revocation of it whose subject it is, as 'ampbundle pull …
// -o oci-layout:carry.tar' leaves on the far side of an air gap.
func layoutWithRevocation(t *testing.T) string {
	t.Helper()
	carry := filepath.Join(t.TempDir(), "carry.tar")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+carry+":v3")
	mustRun(t, "push", revokeTranslate(t), "oci-layout:"+carry+":v3")
	return carry
}

// TestOCIImportSaysTheCarriedRevocationWasNotApplied: importing a bundle
// whose artifact carries a revocation says, on stderr and in --json, that
// the statement was not applied and which sync applies it (threat: a
// newcomer following "import oci-layout:carry.tar:v3" serving a bundle
// the revocation beside it revokes, with no word of it).
func TestOCIImportSaysTheCarriedRevocationWasNotApplied(t *testing.T) {
	carry := layoutWithRevocation(t)
	db := newStore(t)
	r := mustRun(t, "import", "oci-layout:"+carry+":v3", "--db", db)
	want := "note: 1 statement carried with this artifact was not applied; `ampbundle sync oci-layout:" + carry + "` applies them\n"
	if !strings.Contains(r.stdout, "imported org.example.translate version 1") || r.stderr != want {
		t.Fatalf("import: stdout %q\nstderr %q\nwant stderr %q", r.stdout, r.stderr, want)
	}
	var v importJSON
	r = runCLI(t, nil, "import", "oci-layout:"+carry+":v3", "--db", db, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 || v.StatementsNotApplied != 1 || !v.Unchanged || r.stderr != want {
		t.Fatalf("import --json: exit %d %v %+v\n%s", r.code, err, v, r.stderr)
	}
	// The sync it names applies the revocation: the store then serves
	// nothing of the bundle, and check says so.
	runCLI(t, nil, "sync", "oci-layout:"+carry, "--db", db)
	failsWith(t, "bundle_revoked", "check", "--db", db)

	// A file import, and an artifact carrying nothing, say nothing of it.
	plain := filepath.Join(t.TempDir(), "plain.tar")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+plain+":v1")
	if r := mustRun(t, "import", "oci-layout:"+plain+":v1", "--db", newStore(t)); r.stderr != "" {
		t.Fatalf("nothing carried, yet: %q", r.stderr)
	}
	if r := runCLI(t, nil, "import", "oci-layout:"+plain+":v1", "--db", newStore(t), "--json"); strings.Contains(r.stdout, "statements_not_applied") {
		t.Fatalf("nothing carried, yet: %s", r.stdout)
	}
}

// TestPlainHTTPRegistryWithoutTheFlagSaysAddPlainHTTP: push, pull, import
// and sync to a loopback registry that speaks plain HTTP, without
// --plain-http, say what to add, and never echo Go's raw error with the
// URL (threat: a newcomer reading "http: server gave HTTP response to
// HTTPS client" and reaching for TLS settings). Needs the real registry
// (scripts/ci-oci.sh).
func TestPlainHTTPRegistryWithoutTheFlagSaysAddPlainHTTP(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Config{})
	repo := "oci://" + reg.Host + "/amp/translate"
	mustRun(t, "push", sampleFile("translate"), repo+":v1", "--plain-http")
	db := newStore(t)
	for _, args := range [][]string{
		{"push", sampleFile("translate"), repo + ":v2"},
		{"pull", repo + ":v1", "-o", filepath.Join(t.TempDir(), "x.ampb")},
		{"import", repo + ":v1", "--db", db},
		{"sync", repo, "--db", db},
	} {
		r := runCLI(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "the registry answered plain HTTP; for a loopback registry add --plain-http (docs/CLI.md)") {
			t.Errorf("%s: exit %d, stderr %q", args[0], r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "HTTPS client") || strings.Contains(r.stderr, "https://") {
			t.Errorf("%s: the raw error is echoed: %q", args[0], r.stderr)
		}
	}
	if got := installed(t, db, translateID); got != 0 {
		t.Fatalf("installed version %d", got)
	}
}

// signalEnv is runCLI's Env with the stop signals of the test.
func signalEnv(sigs chan os.Signal, stderr *bytes.Buffer, out *bytes.Buffer) *cliutil.Env {
	return &cliutil.Env{
		Stdin: strings.NewReader(""), Stdout: out, Stderr: stderr,
		Now: func() time.Time { return cliNow }, Rand: rand.Reader,
		Getenv: func(string) string { return "" }, Signals: sigs,
	}
}

// signalOnProgress is a terminal's stderr that sends SIGINT on sigs when
// the import draws its first progress, so that the signal arrives while
// the bundle is being staged, and waits until the command has taken it.
type signalOnProgress struct {
	bytes.Buffer
	sigs chan os.Signal
	once sync.Once
}

func (w *signalOnProgress) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("importing")) {
		w.once.Do(func() {
			w.sigs <- syscall.SIGINT
			for len(w.sigs) > 0 {
				time.Sleep(time.Millisecond)
			}
			// Taken: give the command's watcher the moment it needs to
			// cancel the import before the next artifact is read.
			time.Sleep(50 * time.Millisecond)
		})
	}
	return w.Buffer.Write(p)
}

// TestCtrlCDuringImportRollsBackAndSaysSo: SIGINT or SIGTERM during an
// import stops it: what it staged is rolled back, it says "interrupted:
// nothing was imported" and exits 130, and the store checks sound with
// nothing pending (threat: Ctrl-C on a long import exiting silently and
// leaving a store whose check lists 41 problems).
func TestCtrlCDuringImportRollsBackAndSaysSo(t *testing.T) {
	t.Run("while staging", func(t *testing.T) {
		db := newStore(t)
		sigs := make(chan os.Signal, 1)
		var out bytes.Buffer
		w := &signalOnProgress{sigs: sigs}
		env := signalEnv(sigs, &w.Buffer, &out)
		env.Stderr, env.StderrIsTerminal = w, true
		code := run(context.Background(), env, []string{"ampbundle", "import", sampleFile("geo"), "--db", db})
		if code != cliutil.ExitInterrupted || !strings.HasSuffix(w.String(), "ampbundle: interrupted: nothing was imported\n") || out.Len() != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), w.String())
		}
		if got := installed(t, db, "com.acme.geo"); got != 0 {
			t.Fatalf("installed version %d", got)
		}
		if r := mustRun(t, "check", "--db", db); strings.Contains(r.stderr, "pending") {
			t.Fatalf("check: %q", r.stderr)
		}
	})
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("before reading "+sig.String(), func(t *testing.T) {
			db := newStore(t)
			sigs := make(chan os.Signal, 1)
			sigs <- sig
			var out, errb bytes.Buffer
			code := run(context.Background(), signalEnv(sigs, &errb, &out), []string{"ampbundle", "import", sampleFile("translate"), "--db", db, "--json"})
			if code != cliutil.ExitInterrupted || !strings.Contains(out.String(), `"code": "interrupted"`) || !strings.Contains(out.String(), "interrupted: nothing was imported") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
			}
			if got := installed(t, db, translateID); got != 0 {
				t.Fatalf("installed version %d", got)
			}
		})
	}
	// No signal: the import stands.
	db := newStore(t)
	var out, errb bytes.Buffer
	if code := run(context.Background(), signalEnv(make(chan os.Signal, 1), &errb, &out), []string{"ampbundle", "import", sampleFile("translate"), "--db", db}); code != 0 {
		t.Fatalf("exit %d %q", code, errb.String())
	}
}

// TestCheckSumsUpAnInterruptedImportInOneLine: check of a store an import
// was killed in says so in one problem line (every entry stays in --json),
// and check --repair says what it removed (threat: 41 "problem: [pending]"
// lines burying the one thing to do, and a repair that says only "sound").
func TestCheckSumsUpAnInterruptedImportInOneLine(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", sampleFile("translate"), "--db", db)
	interruptImport(t, db)
	r := runCLI(t, nil, "check", "--db", db)
	if r.code != 1 || strings.Count(r.stderr, "problem:") != 1 {
		t.Fatalf("check: exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Error struct {
			Details checkReport `json:"details"`
		} `json:"error"`
	}
	j := failsWith(t, "store_needs_recovery", "check", "--db", db)
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.Error.Details.Problems) < 2 {
		t.Fatalf("details: %v %s", err, j.stdout)
	}
	want := "problem: [pending] an import was interrupted: " + itoa(len(doc.Error.Details.Problems)) + " pending entries; `ampbundle check --repair` (or the next import) removes them\n"
	if !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("check: %q\nwant %q", r.stderr, want)
	}
	rep := mustRun(t, "check", "--repair", "--db", db)
	if !strings.HasPrefix(rep.stdout, "repair: rolled back 1 interrupted import(s): removed their ") || strings.Contains(rep.stdout, "their 0 ") || !strings.Contains(rep.stdout, " is sound: 1 bundle(s)") {
		t.Fatalf("repair: %q", rep.stdout)
	}
	var again struct {
		RolledBack struct {
			Imports int `json:"imports"`
			Blobs   int `json:"blobs"`
		} `json:"rolled_back"`
	}
	mustJSON(t, &again, "check", "--repair", "--db", db)
	if again.RolledBack.Imports != 0 {
		t.Fatalf("a second repair rolled back %+v", again.RolledBack)
	}
	if r := mustRun(t, "check", "--repair", "--db", db); !strings.HasPrefix(r.stdout, "repair: no interrupted import to roll back\n") {
		t.Fatalf("repair of a sound store: %q", r.stdout)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestCheckFailsWhenTheOnlyBundleIsRevoked: a revoked installed bundle
// fails check as an expired one does (exit 1, bundle_revoked, named in the
// message and the details; CLI-21), the sound line still printed (threat:
// a check run by a timer staying green, "ok": true, while the store serves
// nothing of that line).
func TestCheckFailsWhenTheOnlyBundleIsRevoked(t *testing.T) {
	db := storeWithSamples(t)
	mustRun(t, "import", revokeTranslate(t), "--db", db)
	r := failsWith(t, "bundle_revoked", "check", "--db", db)
	var doc struct {
		Error struct {
			Details failingClosed `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || strings.Join(doc.Error.Details.Revoked, ",") != translateID+"@1" || len(doc.Error.Details.Expired) != 0 {
		t.Fatalf("details: %v %s", err, r.stdout)
	}
	h := runCLI(t, nil, "check", "--db", db)
	if h.code != 1 || !strings.Contains(h.stdout, "is sound") || !strings.Contains(h.stderr, "revoked (5002 bundle_revoked): "+translateID+"@1") || !strings.Contains(h.stderr, "hint:") {
		t.Fatalf("check: exit %d\n%s\n%s", h.code, h.stdout, h.stderr)
	}
	// Removing it leaves a store that serves what it holds: check passes.
	mustRun(t, "rm", translateID, "--db", db)
	mustRun(t, "check", "--db", db)
}

// TestMessagesSayEachThingOnce: the messages a newcomer met saying one
// thing twice, or leaving out what they were about, say it once and name
// it (threat: an error read twice, or an error naming no file).
func TestMessagesSayEachThingOnce(t *testing.T) {
	dir := t.TempDir()
	t.Run("trust add --scope", func(t *testing.T) {
		r := runCLI(t, nil, "trust", "add", samplePub("example-publisher"), "--db", filepath.Join(dir, "s.db"), "--name", "x", "--scope", "Org.Example")
		if r.code != 1 || strings.Count(r.stderr, "reverse-domain prefix") != 1 || !strings.Contains(r.stderr, `--scope "Org.Example"`) || !strings.Contains(r.stderr, "uppercase") {
			t.Fatalf("exit %d %q", r.code, r.stderr)
		}
	})
	t.Run("pull of a missing tag", func(t *testing.T) {
		lay := filepath.Join(dir, "l")
		mustRun(t, "push", sampleFile("translate"), "oci-layout:"+lay+":v1")
		r := runCLI(t, nil, "pull", "oci-layout:"+lay+":v9", "-o", filepath.Join(dir, "x.ampb"))
		if r.code != 1 || strings.Count(r.stderr, "not found") != 1 {
			t.Fatalf("exit %d %q", r.code, r.stderr)
		}
	})
	t.Run("import of a non-bundle", func(t *testing.T) {
		f := filepath.Join(dir, "notes.txt")
		if err := os.WriteFile(f, bytes.Repeat([]byte("not a bundle\n"), 100), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, nil, "import", f, "--db", newStore(t))
		if r.code != 1 || !strings.Contains(r.stderr, f+" is not a bundle or statement") {
			t.Fatalf("exit %d %q", r.code, r.stderr)
		}
	})
	t.Run("no-op import and its audit entry", func(t *testing.T) {
		db := storeWithSamples(t)
		r := mustRun(t, "import", sampleFile("translate"), "--db", db)
		if !strings.Contains(r.stdout, "only the audit log records the attempt") || strings.Contains(r.stdout, "nothing written") {
			t.Fatalf("no-op import: %q", r.stdout)
		}
		a := mustRun(t, "audit", "--db", db)
		var cols []int
		for _, l := range strings.Split(a.stdout, "\n") {
			if strings.Contains(l, "import") {
				f := strings.Fields(l)
				cols = append(cols, strings.Index(l, f[3]))
			}
		}
		if len(cols) < 2 || cols[0] != cols[len(cols)-1] {
			t.Fatalf("the audit's columns do not line up (%v):\n%s", cols, a.stdout)
		}
	})
	t.Run("one new blob", func(t *testing.T) {
		for n, want := range map[[2]int]string{{1, 5}: "1 new blob, the others shared", {1, 1}: "1 new blob", {5, 5}: "5 new blobs", {0, 3}: "no new blobs, all shared", {2, 3}: "2 new blobs, the others shared"} {
			if got := newBlobs(n[0], n[1]); got != want {
				t.Errorf("newBlobs%v = %q, want %q", n, got, want)
			}
		}
	})
	t.Run("build of a folder without bundle.json", func(t *testing.T) {
		src := filepath.Join(dir, "notsrc")
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "video.bin"), make([]byte, 17<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, nil, "build", src, "--key", sampleKey(t, "example-publisher"), "--out", filepath.Join(dir, "o.ampb"))
		if r.code != 1 || !strings.Contains(r.stderr, "bundle.json: is missing from "+src) || strings.Contains(r.stderr, "video.bin") {
			t.Fatalf("exit %d %q", r.code, r.stderr)
		}
	})
	t.Run("serve --help placeholders", func(t *testing.T) {
		r := mustRun(t, "serve", "--help")
		for _, l := range strings.Split(r.stdout, "\n") {
			if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[0], "--") && f[1] == "value" {
				t.Errorf("placeholder \"value\": %q", l)
			}
		}
	})
}
