//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport/ocitest"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/urfave/cli/v2"
)

// blockAfterCommit is a slog handler for an agent's admin socket that,
// at the log line the agent writes once an import through the socket has
// committed (and before its answer is written), says so on committed and
// waits for release: the window between an agent's commit and the
// command hearing of it, held open without timing.
type blockAfterCommit struct {
	committed chan struct{}
	release   chan struct{}
}

func (h *blockAfterCommit) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockAfterCommit) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *blockAfterCommit) WithGroup(string) slog.Handler            { return h }
func (h *blockAfterCommit) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "bundle imported through the admin socket" {
		close(h.committed)
		<-h.release
	}
	return nil
}

// TestCtrlCAfterTheAgentCommittedDoesNotSayNothingWasImported: an import
// that goes through a running agent's admin socket and is interrupted
// after the agent committed it must not exit 130 saying "interrupted:
// nothing was imported" (threat: the operator believes the store still
// serves the old line, re-imports or walks away, while the agent serves
// the new bundle; the message lies about the store, CLI-22).
func TestCtrlCAfterTheAgentCommittedDoesNotSayNothingWasImported(t *testing.T) {
	db := newStore(t)
	s, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := admin.Listen(admin.SocketPath(db))
	if err != nil {
		t.Fatal(err)
	}
	h := &blockAfterCommit{committed: make(chan struct{}), release: make(chan struct{})}
	srv := &http.Server{Handler: admin.NewHandler(s, slog.New(h)), ConnContext: admin.ConnContext}
	go srv.Serve(ln)
	released := false
	t.Cleanup(func() {
		if !released {
			close(h.release)
		}
		srv.Close()
		s.Close()
	})

	sigs := make(chan os.Signal, 1)
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), signalEnv(sigs, &errb, &out), []string{"ampbundle", "import", sampleFile("translate"), "--db", db})
	}()
	select {
	case <-h.committed:
	case code := <-done:
		t.Fatalf("the import ended before the agent committed: exit %d %q", code, errb.String())
	case <-time.After(30 * time.Second): // a hang guard: an import is real work (crypto, the store) on a loaded machine
		t.Fatal("the agent never committed the import")
	}
	sigs <- syscall.SIGINT // Ctrl-C while the agent writes its answer
	var code int
	select {
	case code = <-done:
	case <-time.After(5 * time.Second):
		// The command waited for the agent's answer: release it.
		close(h.release)
		released = true
		code = <-done
	}
	if !released {
		close(h.release)
		released = true
	}
	bs, err := s.Bundles()
	if err != nil || len(bs) != 1 || bs[0].BundleID != translateID {
		t.Fatalf("the agent did not commit the import: %+v %v", bs, err)
	}
	if code == cliutil.ExitInterrupted || strings.Contains(errb.String(), "nothing was imported") {
		t.Fatalf("the agent serves %s@%d, yet the command exits %d saying %q", translateID, bs[0].Version, code, errb.String())
	}
}

// TestCheckRepairJSONSaysWhatItRolledBackWhenTheCheckFails: check
// --repair --json on a store with an interrupted import and a revoked
// bundle rolls the import back (what it removed is gone for good), then
// fails with bundle_revoked (CLI-21); the JSON must still say what the
// repair removed, as the human output does (threat: a timer reading the
// JSON never learns that a repair deleted staged blobs and journal
// entries, the one record of an interrupted import).
func TestCheckRepairJSONSaysWhatItRolledBackWhenTheCheckFails(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", sampleFile("translate"), "--db", db)
	mustRun(t, "import", revokeTranslate(t), "--db", db)
	interruptImport(t, db)

	human := runCLI(t, nil, "check", "--repair", "--db", db)
	if !strings.Contains(human.stdout, "repair: rolled back 1 interrupted import(s)") {
		t.Fatalf("setup: the human repair did not roll back: exit %d %q %q", human.code, human.stdout, human.stderr)
	}
	interruptImport(t, db)
	r := failsWith(t, "bundle_revoked", "check", "--repair", "--db", db)
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, `"rolled_back"`) {
		t.Fatalf("check --repair --json rolled an import back (the human output says so) but its JSON does not:\n%s", r.stdout)
	}
}

// signalAfterImport is a terminal's stderr that sends a stop signal on
// sigs when the import clears its progress line, which it does once the
// store has committed (prog.Done after Store.Import), and waits until
// the command has taken it.
type signalAfterImport struct {
	bytes.Buffer
	sigs chan os.Signal
	sent bool
}

func (w *signalAfterImport) Write(p []byte) (int, error) {
	if !w.sent && bytes.Contains(p, []byte("\x1b[K")) {
		w.sent = true
		w.sigs <- syscall.SIGINT
		for len(w.sigs) > 0 {
			time.Sleep(time.Millisecond)
		}
		// Taken: give the watcher the moment it needs to cancel.
		time.Sleep(50 * time.Millisecond)
	}
	return w.Buffer.Write(p)
}

// TestCtrlCAfterAnOCIImportCommittedStillNamesTheCarriedRevocation: an
// OCI import that committed before a Ctrl-C stands (exit 0, CLI-22), and
// must then still say that the revocation carried with the artifact was
// not applied (CLI-20); the signal must not silence the note (threat:
// the operator who pressed Ctrl-C as the import finished sees success,
// no note, and serves a bundle the revocation beside it revokes).
func TestCtrlCAfterAnOCIImportCommittedStillNamesTheCarriedRevocation(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Config{}) // scripts/ci-oci.sh
	remote := "oci://" + reg.Host + "/amp/translate"
	mustRun(t, "push", sampleFile("translate"), remote+":v3", "--plain-http")
	mustRun(t, "push", revokeTranslate(t), remote+":v3", "--plain-http")
	for _, tc := range []struct{ name, loc string }{
		{"layout", "oci-layout:" + layoutWithRevocation(t) + ":v3"},
		{"registry", remote + ":v3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newStore(t)
			sigs := make(chan os.Signal, 1)
			var out bytes.Buffer
			w := &signalAfterImport{sigs: sigs}
			env := signalEnv(sigs, &w.Buffer, &out)
			env.Stderr, env.StderrIsTerminal = w, true
			code := run(context.Background(), env, []string{"ampbundle", "import", tc.loc, "--db", db, "--plain-http"})
			if !w.sent {
				t.Fatalf("the import never cleared its progress line: exit %d %q", code, w.String())
			}
			if got := installed(t, db, translateID); got != 1 {
				t.Fatalf("setup: the import did not commit (version %d): exit %d %q", got, code, w.String())
			}
			if code != 0 || !strings.Contains(w.String(), "note: 1 statement carried with this artifact was not applied") {
				t.Fatalf("the import committed, a revocation rides with it, yet: exit %d, stdout %q, stderr %q", code, out.String(), w.String())
			}
		})
	}
}

// TestCheckHelpSaysRevokedAndStaleFailTheCheck: CLI-21 made a revoked or
// stale bundle fail check (bundle_revoked, bundle_stale), and docs/CLI.md
// says so; check's own --help (from which docs/reference and the man page
// are generated) must not still promise exit 0 unless a bundle expired
// (threat: an operator wiring check into a timer reads the help, treats
// exit 1 on a revoked store as a damaged store, and restores a backup
// that serves the revoked bundle again).
func TestCheckHelpSaysRevokedAndStaleFailTheCheck(t *testing.T) {
	r := mustRun(t, "check", "--help")
	help := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{"bundle_revoked", "bundle_stale"} {
		if !strings.Contains(help, want) {
			t.Errorf("check --help does not name %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(help, "Exit 0 when the store is sound and no installed bundle has expired.") {
		t.Errorf("check --help still promises exit 0 for a store whose bundles are revoked or stale:\n%s", r.stdout)
	}
}

// TestAnswerAfterASignalIsToldAsItIs: once a signal came, only the
// cancellation it caused is told as "interrupted" (exit 130); any other
// answer, an agent's refusal through its admin socket above all, is told
// as it is, and a success stands (threat: a forged bundle the agent
// refused reported as merely interrupted, or an import that committed
// reported as nothing imported; CLI-22).
func TestAnswerAfterASignalIsToldAsItIs(t *testing.T) {
	refusal := amp.Named(0, "untrusted_key", "no trusted key signed the bundle")
	for _, c := range []struct {
		name        string
		err         error
		interrupted bool
		wantName    string
	}{
		{"cancelled", fmt.Errorf("staging: %w", context.Canceled), true, ""},
		{"refused", refusal, false, "untrusted_key"},
		{"committed", nil, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 1)
			env := &cliutil.Env{Stdout: io.Discard, Stderr: io.Discard, Signals: sigs}
			cctx := cli.NewContext(&cli.App{}, nil, nil)
			cctx.Context = context.Background()
			err := stopOnSignal(env, cctx, msgImportInterrupted, func() error {
				sigs <- syscall.SIGINT
				<-cctx.Context.Done() // the signal was taken
				return c.err
			})
			if cliutil.IsInterrupted(err) != c.interrupted || (!c.interrupted && err != nil && string(amp.NameOf(err)) != c.wantName) || (err == nil) != (c.err == nil) {
				t.Fatalf("after a signal, do answering %v: %v (interrupted %v), want interrupted %v, name %q",
					c.err, err, cliutil.IsInterrupted(err), c.interrupted, c.wantName)
			}
		})
	}
}
