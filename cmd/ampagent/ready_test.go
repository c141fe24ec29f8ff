//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
)

// getReady fetches /readyz and decodes it.
func getReady(t *testing.T, url string) (int, readyReport) {
	t.Helper()
	resp, err := http.Get(url + ReadyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep readyReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatalf("readyz body: %v", err)
	}
	return resp.StatusCode, rep
}

// hasProblem reports whether rep lists a problem of the check and code
// about subject ("" matches any subject).
func hasProblem(rep readyReport, check, code, subject string) bool {
	for _, p := range rep.Problems {
		if p.Check == check && p.Code == code && (subject == "" || p.Subject == subject) {
			return true
		}
	}
	return false
}

// notReadyLogged reports whether the log names a readiness problem of
// code about subject: /readyz itself names no subject (MIRROR-9).
func notReadyLogged(log, code, subject string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "not ready") && strings.Contains(line, code) && strings.Contains(line, subject) {
			return true
		}
	}
	return false
}

// okHandler is a handler config whose program exists.
var okHandler = map[string]any{"command": []string{"/bin/sh", "-c", `echo '{"text":"x","detected_source":"en"}'`}}

// TestReadyzSoundAgent: a sound store, present programs and a far expiry
// are ready (200), while /healthz stays the liveness answer.
func TestReadyzSoundAgent(t *testing.T) {
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": okHandler}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	code, rep := getReady(t, r.url)
	if code != http.StatusOK || rep.Status != "ready" || len(rep.Problems) != 0 || rep.Generation == 0 || rep.CheckedAt == "" {
		t.Fatalf("readyz: %d %+v", code, rep)
	}
}

// TestReadyzRefusedMethodForbidsSniffingAndScript: a POST to /readyz is
// refused 405 with the headers of every other /readyz answer, nosniff and
// the script-less CSP (threat: an answer of the agent's origin that a
// browser would run script in).
func TestReadyzRefusedMethodForbidsSniffingAndScript(t *testing.T) {
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": okHandler}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	resp, err := http.Post(r.url+"/readyz", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		resp.Header.Get("Content-Security-Policy") != mirror.ContentSecurityPolicy {
		t.Fatalf("POST /readyz: %d, nosniff %q, CSP %q", resp.StatusCode, resp.Header.Get("X-Content-Type-Options"), resp.Header.Get("Content-Security-Policy"))
	}
}

// TestReadyzTamperedStore: a store whose schema bytes were altered on disk
// is not ready (threat: a health check saying ok while every invocation of
// the tampered capability fails closed, so no one replaces the store).
func TestReadyzTamperedStore(t *testing.T) {
	db, key := serveStore(t)
	schema := sampleFile(t, "translate/capabilities/org.example.translate.text/1.0.0/output.schema.json")
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], schema)
		if j < 0 {
			break
		}
		raw[i+j+len(schema)/2] ^= 0x01
		i += j + len(schema)
		n++
	}
	if n == 0 {
		t.Fatal("the schema is not in the store file")
	}
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	r := startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.")
	code, rep := getReady(t, r.url)
	// The answer names the check and code only; the kind of damage
	// (subject "blob") and the check's messages go to the log (MIRROR-9).
	if code != http.StatusServiceUnavailable || rep.Status != "not_ready" || !hasProblem(rep, "integrity", "store_damaged", "") ||
		hasProblem(rep, "integrity", "store_damaged", "blob") {
		t.Fatalf("readyz on a tampered store: %d %+v", code, rep)
	}
	if !notReadyLogged(r.stderr(), "store_damaged", "blob") {
		t.Fatalf("the log does not name the damage:\n%s", r.stderr())
	}
	resp, err := http.Get(r.url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz (liveness) on a tampered store: %v", err)
	}
	resp.Body.Close()
}

// TestReadyzMissingHandlerProgram: serve refuses to start when a handler's
// program does not exist or is not executable (threat: an agent that
// advertises a capability and answers every invocation 5001); with
// --allow-missing-handlers it starts, /readyz says handler_program_missing
// and the log names the capability (the answer, public, does not:
// MIRROR-9).
func TestReadyzMissingHandlerProgram(t *testing.T) {
	db, key := serveStore(t)
	dir := t.TempDir()
	notExec := filepath.Join(dir, "translate")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, program, detail string }{
		{"missing", filepath.Join(dir, "none"), "does not exist"},
		{"not executable", notExec, "is not executable"},
		{"a directory", dir, "is not a regular file"},
		{"not in PATH", "no-such-program-h16a", "is not in PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example."},
				"handlers": map[string]any{
					"org.example.translate.text:2.1.0": map[string]any{"command": []string{tc.program}},
					"org.example.translate.text:2.0.0": okHandler,
				}})
			res := serveRefusal(t, "--json", "--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", cfg)
			code, _ := errorDoc(t, res)
			if res.code != 1 || code != "handler_program_missing" || !bytes.Contains([]byte(res.stdout), []byte(tc.detail)) {
				t.Fatalf("serve with a %s program: exit %d %s", tc.name, res.code, res.stdout)
			}
			r := startServe(t, "--db", db, "--key", key, "--config", cfg, "--allow-missing-handlers")
			status, rep := getReady(t, r.url)
			if status != http.StatusServiceUnavailable || !hasProblem(rep, "handlers", "handler_program_missing", "") ||
				len(rep.Problems) != 1 || rep.Problems[0].Subject != "" || strings.Contains(rep.Problems[0].Message, tc.program) {
				t.Fatalf("readyz: %d %+v, want handler_program_missing naming neither capability nor program", status, rep)
			}
			if log := r.stderr(); !notReadyLogged(log, "handler_program_missing", "org.example.translate.text:2.1.0") ||
				notReadyLogged(log, "handler_program_missing", "org.example.translate.text:2.0.0") {
				t.Fatalf("the log does not name the one capability whose program cannot run:\n%s", log)
			}
			if res := r.stop(); !bytes.Contains([]byte(res.stderr), []byte("handler program cannot run")) {
				t.Fatalf("no warning logged: %s", res.stderr)
			}
		})
	}
}

// TestReadyzExpiringBundle: a bundle that expires within the window makes
// the agent not ready before it expires (threat: schemas silently stop
// being served at the expiry, failing every invocation closed).
func TestReadyzExpiringBundle(t *testing.T) {
	db, key := serveStore(t)
	r := startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--ready-expiry-window", "100000h")
	code, rep := getReady(t, r.url)
	if code != http.StatusServiceUnavailable || !hasProblem(rep, "expiry", "bundle_expiring", "") {
		t.Fatalf("readyz with an expiring bundle: %d %+v", code, rep)
	}
	if !notReadyLogged(r.stderr(), "bundle_expiring", "org.example.translate") {
		t.Fatalf("the log does not name the expiring bundle:\n%s", r.stderr())
	}
	if res := r.stop(); bytes.Contains([]byte(res.stderr), []byte("http request refused")) {
		t.Fatalf("a not-ready answer logged as a refusal: %s", res.stderr)
	}
}

// TestExpiryProblems covers the expiry check's cases with a fixed clock.
func TestExpiryProblems(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, expires, want string
	}{
		{"no expiry", "", ""},
		{"far", "2031-01-01T00:00:00Z", ""},
		{"within the window", "2030-01-01T12:00:00Z", "bundle_expiring"},
		{"at the window's edge", "2030-01-02T00:00:00Z", "bundle_expiring"},
		{"expired now", "2030-01-01T00:00:00Z", "bundle_expired"},
		{"expired", "2029-01-01T00:00:00Z", "bundle_expired"},
		{"unreadable", "soon", "bundle_expiry_unreadable"},
	}
	for _, tt := range tests {
		ps := expiryProblems([]resolver.Bundle{{BundleID: "org.example.b", ExpiresAt: tt.expires}}, now, 24*time.Hour)
		got := ""
		if len(ps) == 1 {
			got = ps[0].Code
		}
		if got != tt.want || len(ps) > 1 {
			t.Errorf("%s: %+v, want %q", tt.name, ps, tt.want)
		}
	}
}

// TestReadyzRecheck: the store check behind /readyz is re-run when the
// store's generation changes and once --ready-recheck has passed, and not
// in between (threat: a readiness probe re-hashing the whole store on
// every request; or a stale "sound" kept after the store changed).
func TestReadyzRecheck(t *testing.T) {
	db, _ := serveStore(t)
	s, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &readiness{store: s, now: func() time.Time { return now }, window: time.Hour, recheck: 10 * time.Minute}
	first := r.report()
	if first.Status != "ready" || first.CheckedAt != "2030-01-01T00:00:00Z" {
		t.Fatalf("first: %+v", first)
	}
	now = now.Add(5 * time.Minute)
	if rep := r.report(); rep.CheckedAt != first.CheckedAt {
		t.Fatalf("re-checked within the interval: %+v", rep)
	}
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	rep := r.report()
	if rep.CheckedAt != "2030-01-01T00:05:00Z" || rep.Generation == first.Generation {
		t.Fatalf("not re-checked after the store changed: %+v", rep)
	}
	now = now.Add(11 * time.Minute)
	if rep := r.report(); rep.CheckedAt != "2030-01-01T00:16:00Z" {
		t.Fatalf("not re-checked after the interval: %+v", rep)
	}
}

// docBlock returns the fenced block of doc that starts with prefix, up to
// its closing fence.
func docBlock(t *testing.T, doc []byte, prefix string) []byte {
	t.Helper()
	start := bytes.Index(doc, []byte(prefix))
	if start < 0 {
		t.Fatalf("the docs show no %s", prefix)
	}
	end := bytes.Index(doc[start:], []byte("```"))
	if end < 0 {
		t.Fatalf("the docs: the block starting %s does not end", prefix)
	}
	return bytes.TrimSpace(doc[start : start+end])
}

// TestReadyzDocExample: the /readyz answers docs/FORMAT.md shows ("Health,
// readiness and metrics", "The mirror's health, readiness and metrics") are
// byte for byte what the agent serves, the log line it shows is
// the one logged, once however often the probe asks, and every fixed
// message its readiness tables list is the one served (threat: a doc that
// shows, so an operator expects, a capability and a program path in the
// public answer that MIRROR-9 took out of it, or a probe script matching
// on a text the server does not send).
func TestReadyzDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/local/bin/translate"); err == nil {
		t.Skip("this machine has /usr/local/bin/translate")
	}
	missing := map[string]execHandler{"org.example.translate.text:2.1.0": {Command: []string{"/usr/local/bin/translate"}}}
	present := map[string]execHandler{"org.example.translate.text:2.1.0": {Command: []string{"/bin/sh"}}}
	for _, tc := range []struct {
		name, prefix string
		handlers     map[string]execHandler
		status       int
		logged       string // the line the doc shows, "" for none
	}{
		{"not ready (§3.4)", `{"status":"not_ready"`, missing, http.StatusServiceUnavailable, `level=WARN msg="not ready"`},
		{"ready (§2.15)", `{"status":"ready"`, present, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shown bytes.Buffer
			if err := json.Compact(&shown, docBlock(t, doc, tc.prefix)); err != nil {
				t.Fatalf("the documented /readyz answer is not JSON: %v", err)
			}
			var rep readyReport
			if err := json.Unmarshal(shown.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339, rep.CheckedAt)
			if err != nil {
				t.Fatalf("integrity_checked_at: %v", err)
			}
			now := func() time.Time { return at }
			db, _ := serveStore(t)
			s, err := resolver.Open(db, resolver.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var log bytes.Buffer
			r := &readiness{store: s, now: now, window: defaultExpiryWindow, recheck: defaultRecheck,
				log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
					if len(groups) == 0 && a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				}}))}
			r.setHandlers(tc.handlers)
			for i := range 3 {
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ReadyPath, nil))
				// The generation is the test store's; the doc's may be any.
				served := bytes.Replace(bytes.TrimSuffix(rec.Body.Bytes(), []byte("\n")),
					fmt.Appendf(nil, `"generation":%d,`, s.Generation()), fmt.Appendf(nil, `"generation":%d,`, rep.Generation), 1)
				if rec.Code != tc.status || !bytes.Equal(served, shown.Bytes()) ||
					rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
					t.Fatalf("request %d: the docs show\n%s\nthe agent serves %d %v\n%s", i, shown.Bytes(), rec.Code, rec.Header(), served)
				}
			}
			var want []string
			if tc.logged != "" {
				want = []string{strings.TrimSpace(string(docBlock(t, doc, tc.logged)))}
			} else {
				want = []string{fmt.Sprintf("level=INFO msg=ready generation=%d", s.Generation())}
			}
			if got := strings.Split(strings.TrimSpace(log.String()), "\n"); !slices.Equal(got, want) {
				t.Errorf("after 3 probes the log has\n%s\nwant (the docs)\n%s", log.String(), strings.Join(want, "\n"))
			}
		})
	}

	// The readiness tables: | check | code | when | fixed `message` |.
	tables, rows := 0, 0
	lines := strings.Split(string(doc), "\n")
	for i, line := range lines {
		if line != "| check | code | when | fixed `message` |" {
			continue
		}
		tables++
		for _, row := range lines[i+2:] {
			if !strings.HasPrefix(row, "| ") {
				break
			}
			cells := strings.Split(strings.Trim(row, "| "), " | ")
			if len(cells) != 4 {
				t.Errorf("a readiness table row of %d cells: %s", len(cells), row)
				continue
			}
			rows++
			check, code, msg := strings.Trim(cells[0], "`"), strings.Trim(cells[1], "`"), strings.Trim(cells[3], "`")
			served := readyReport{Status: "not_ready", Problems: []readyProblem{{Check: check, Code: code, Subject: "s", Message: "m"}}}.Public()
			if len(served.Problems) != 1 || served.Problems[0] != (readyProblem{Check: check, Code: code, Message: msg}) {
				t.Errorf("the docs: %s/%s says %q, /readyz serves %+v", check, code, msg, served.Problems)
			}
		}
	}
	if tables != 2 || rows != 12 {
		t.Errorf("the docs have %d readiness tables of %d rows in all, want CLI.md §2.15's (3) and FORMAT.md's (9)", tables, rows)
	}
}

// TestReadyzNotReadyWhenNoKeyIsTrusted: once the last trusted key is
// removed through the admin socket, /readyz says not ready with
// empty_trust_store (threat: a load balancer sending callers to an agent
// that can verify nothing, which serve itself refuses to start as).
func TestReadyzNotReadyWhenNoKeyIsTrusted(t *testing.T) {
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": okHandler}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	if code, rep := getReady(t, r.url); code != http.StatusOK {
		t.Fatalf("readyz before: %d %+v", code, rep)
	}
	ac, err := admin.Dial(r.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	if err := ac.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
	code, rep := getReady(t, r.url)
	if code != http.StatusServiceUnavailable || rep.Status != "not_ready" || !hasProblem(rep, "trust", "empty_trust_store", "") {
		t.Fatalf("readyz with no trusted key: %d %+v", code, rep)
	}
}
