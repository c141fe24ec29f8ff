package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// runCLIAt is runCLI with the clock at now.
func runCLIAt(t *testing.T, now time.Time, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return now }, Rand: rand.Reader,
		Getenv: func(string) string { return "" },
	}
	code := run(context.Background(), env, append([]string{"ampbundle"}, args...))
	return result{code, out.String(), errb.String()}
}

// translateExpiring builds the translate sample with expires_at at, signed
// by its test key, and returns the file.
func translateExpiring(t *testing.T, at time.Time) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "translate")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(src, "bundle.json")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"2036-01-01T00:00:00Z"`), []byte(`"`+at.UTC().Format(time.RFC3339)+`"`), 1)
	data = bytes.Replace(data, []byte(`"version": 1,`), []byte(`"version": 7,`), 1)
	if err := os.WriteFile(manifest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "expiring.ampb")
	mustRun(t, "build", src, "-o", out, "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-01T00:00:00Z")
	return out
}

// TestImportWarnsOfABundleExpiringSoon: importing a bundle that expires
// within --expiry-warning (default 7 days) warns on stderr, saying when,
// with or without --json; a far expiry, a shorter window and 0 say nothing
// (threat: an operator installing a bundle that stops being served days
// later, with no word of it until callers get 5002).
func TestImportWarnsOfABundleExpiringSoon(t *testing.T) {
	file := translateExpiring(t, cliNow.Add(3*24*time.Hour))
	tests := []struct {
		name  string
		file  string
		extra []string
		warn  bool
	}{
		{"default window", file, nil, true},
		{"default window, json", file, []string{"--json"}, true},
		{"window wider", file, []string{"--expiry-warning", "720h"}, true},
		{"window shorter", file, []string{"--expiry-warning", "48h"}, false},
		{"warning off", file, []string{"--expiry-warning", "0"}, false},
		{"far expiry", sampleFile("translate"), nil, false},
	}
	for _, tt := range tests {
		db := newStore(t)
		r := mustRun(t, append([]string{"import", tt.file, "--db", db}, tt.extra...)...)
		warned := strings.Contains(r.stderr, "WARNING: org.example.translate version 7 expires in 3 d (at 2026-11-25T12:00:00Z)")
		if warned != tt.warn {
			t.Errorf("%s: stderr %q, want a warning: %v", tt.name, r.stderr, tt.warn)
		}
		if tt.warn && strings.Contains(r.stdout, "WARNING") {
			t.Errorf("%s: the warning is on stdout: %q", tt.name, r.stdout)
		}
	}
}

// TestLsCountsDownToExpiry: ls says "expires in N d" for a bundle that
// expires within 30 days, and nothing for one further away (threat: an
// expiry date read past, the count in days being what an operator notices).
func TestLsCountsDownToExpiry(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", translateExpiring(t, cliNow.Add(20*24*time.Hour+time.Hour)), "--db", db)
	mustRun(t, "import", sampleFile("geo"), "--db", db)
	r := mustRun(t, "ls", "--db", db)
	if !strings.Contains(r.stdout, "  expires    2026-12-12T13:00:00Z (expires in 20 d)\n") {
		t.Fatalf("ls:\n%s", r.stdout)
	}
	r = runCLIAt(t, cliNow.Add(20*24*time.Hour), "ls", "--db", db)
	if !strings.Contains(r.stdout, "(expires in 1 h)") {
		t.Fatalf("ls an hour before:\n%s", r.stdout)
	}
	db2 := newStore(t)
	mustRun(t, "import", sampleFile("translate"), "--db", db2)
	if r := mustRun(t, "ls", "--db", db2); strings.Contains(r.stdout, "expires in") {
		t.Fatalf("a far expiry is counted down:\n%s", r.stdout)
	}
}

// TestLsSaysHowLongAgoABundleExpired: ls of a bundle whose expiry has
// passed marks it EXPIRED with how long ago, and near or past the expiry
// it counts in hours and minutes, not "0 h" or a day count that hides most
// of a day (threat: an operator reading a bare date, or "(expires in 0
// h)", and not seeing that the bundle is about to stop, or has stopped,
// being served).
func TestLsSaysHowLongAgoABundleExpired(t *testing.T) {
	zeroCount := regexp.MustCompile(`[^0-9]0 (d|h|min)\b`)
	at := cliNow.Add(20 * 24 * time.Hour)
	db := newStore(t)
	mustRun(t, "import", translateExpiring(t, at), "--db", db)
	tests := []struct {
		now  time.Time
		want string
	}{
		{at.Add(-(2*24*time.Hour + 23*time.Hour + 30*time.Minute)), "(expires in 2 d 23 h)"},
		{at.Add(-(5*time.Hour + 30*time.Minute)), "(expires in 5 h 30 min)"},
		{at.Add(-20 * time.Minute), "(expires in 20 min)"},
		{at.Add(-20 * time.Second), "(expires in under 1 min)"},
		{at, "(EXPIRED just now)"},
		{at.Add(2 * time.Hour), "(EXPIRED 2 h ago)"},
		{at.Add(3*24*time.Hour + time.Hour), "(EXPIRED 3 d 1 h ago)"},
		{at.Add(40 * 24 * time.Hour), "(EXPIRED 40 d ago)"},
	}
	for _, tt := range tests {
		r := runCLIAt(t, tt.now, "ls", "--db", db)
		if r.code != 0 || !strings.Contains(r.stdout, "  expires    "+at.UTC().Format(time.RFC3339)+" "+tt.want+"\n") {
			t.Errorf("%s before the expiry: want %q in\n%s", at.Sub(tt.now), tt.want, r.stdout)
		}
		if zeroCount.MatchString(r.stdout) {
			t.Errorf("a zero count: %s", r.stdout)
		}
	}
}

// TestCheckFailsOnAnExpiredBundle: check of a sound store holding an
// expired bundle exits 1 with bundle_expired, naming it (threat: a
// monitoring "ampbundle check" staying green while the store serves
// nothing of a bundle that expired).
func TestCheckFailsOnAnExpiredBundle(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", translateExpiring(t, cliNow.Add(3*24*time.Hour)), "--db", db)
	mustRun(t, "check", "--db", db)
	later := cliNow.Add(4 * 24 * time.Hour)
	r := runCLIAt(t, later, "check", "--db", db, "--json")
	if r.code != 1 || errorCode(t, r) != "bundle_expired" {
		t.Fatalf("check --json after expiry: exit %d %s", r.code, r.stdout)
	}
	var doc struct {
		Error struct {
			Details struct {
				Expired []string `json:"expired"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Error.Details.Expired) != 1 || doc.Error.Details.Expired[0] != "org.example.translate@7" {
		t.Fatalf("details: %v %s", err, r.stdout)
	}
	r = runCLIAt(t, later, "check", "--db", db)
	if r.code != 1 || !strings.Contains(r.stdout, "is sound") || !strings.Contains(r.stderr, "org.example.translate@7") || !strings.Contains(r.stderr, "hint:") {
		t.Fatalf("check after expiry: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
