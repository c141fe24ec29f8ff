package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// syncJSON runs 'sync --json --detailed-exitcode' (so that the exit code
// says what changed) and decodes the report.
func syncJSON(t *testing.T, url, db string, extra ...string) (int, mirror.SyncReport) {
	t.Helper()
	r := runCLI(t, nil, append([]string{"sync", url, "--db", db, "--json", "--detailed-exitcode"}, extra...)...)
	var rep mirror.SyncReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("sync: exit %d, not a report: %s\n%s", r.code, r.stdout, r.stderr)
	}
	return r.code, rep
}

// invokeTranslate runs an agent over the store db on loopback HTTP and
// invokes the translate capability through it.
func invokeTranslate(t *testing.T, db string) string {
	t.Helper()
	store, err := resolver.Open(db, resolver.Options{Now: func() time.Time { return cliNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newIdentity := func() amp.Identity {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		x, _ := amp.AgreementKeyFromEd25519(k)
		return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
	}
	provider, caller := newIdentity(), newIdentity()
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: provider, Store: store, Now: func() time.Time { return cliNow }, Rand: rand.Reader,
		Policy: agent.Rules{{Caller: caller.DID, Prefix: "org.example"}},
		Handlers: map[string]agent.Handler{"org.example.translate.text:2.1.0": func(ctx context.Context, params any) (any, error) {
			p := params.(map[string]any)
			return map[string]any{"text": "[" + p["target"].(string) + "] " + p["text"].(string), "detected_source": "en"}, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(amphttp.NewHandler(a, amphttp.Options{}))
	defer srv.Close()
	tr, err := amphttp.NewTransport(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := client.New(client.Config{Identity: caller, Peer: provider.DID, Transport: tr, Now: func() time.Time { return cliNow }, Rand: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := capability.ParseVersion("2.1.0")
	params, _ := amp.Marshal(map[string]any{"text": "hello", "target": "de"})
	res, _, err := c.Invoke(context.Background(), capability.Invoke{ID: capability.ID{Name: "org.example.translate.text", Version: v}, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := amp.JSONValue(res.Result)
	return string(out)
}

// The site of the issue: one import station served by 'ampbundle serve',
// three agent stores synced from it, each then serving invocations; a
// tampered mirror in front of the same station changes none of them.
func TestStationMirrorThreeAgentsEndToEnd(t *testing.T) {
	station := storeWithSamples(t)
	url := startMirrorCLI(t, station)
	// A mirror that flips one byte in the middle of every bundle file, and
	// whose index says so (the hashes and sizes match what it serves).
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(url + r.URL.Path)
		if err != nil {
			http.Error(w, "x", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/bundles/"):
			body[len(body)/2] ^= 1
		case r.URL.Path == "/index.json":
			var ix mirror.Index
			json.Unmarshal(body, &ix)
			for i, e := range ix.Bundles {
				b := fetch(t, url+e.Href)
				b[len(b)/2] ^= 1
				ix.Bundles[i].SHA256 = sha256hex(b)
			}
			body, _ = json.Marshal(ix)
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	}))
	defer evil.Close()

	for i := range 3 {
		db := newStore(t)
		before := mustRun(t, "ls", "--db", db, "--json").stdout
		code, rep := syncJSON(t, evil.URL, db)
		if code != syncExitRefused || rep.Count(mirror.OutcomeRefused) != 2 {
			t.Fatalf("agent %d, tampered mirror: exit %d, %+v", i, code, rep.Items)
		}
		if after := mustRun(t, "ls", "--db", db, "--json").stdout; after != before {
			t.Fatalf("agent %d: a tampered mirror changed the store", i)
		}
		code, rep = syncJSON(t, url, db, "--dry-run")
		if code != syncExitImported || rep.Count(mirror.OutcomePlanned) != 2 {
			t.Fatalf("agent %d, dry run: exit %d, %+v", i, code, rep.Items)
		}
		code, rep = syncJSON(t, url, db)
		if code != syncExitImported || rep.Count(mirror.OutcomeImported) != 2 {
			t.Fatalf("agent %d: exit %d, %+v", i, code, rep.Items)
		}
		if code, _ := syncJSON(t, url, db); code != 0 {
			t.Fatalf("agent %d, second sync: exit %d, want 0 (nothing new)", i, code)
		}
		if got := invokeTranslate(t, db); got != `{"text":"[de] hello","detected_source":"en"}` {
			t.Fatalf("agent %d: invocation gave %s", i, got)
		}
		// The audit log of the agent store records the imports.
		if a := mustRun(t, "audit", "--db", db).stdout; strings.Count(a, " import ") != 2 {
			t.Fatalf("agent %d audit:\n%s", i, a)
		}
	}
	// An unreachable mirror is exit 1, not "nothing new".
	db := newStore(t)
	failsWith(t, "mirror_unreachable", "sync", "http://127.0.0.1:1", "--db", db)
	// A minimum rate below 1 KiB/s would let a trickling mirror hold a
	// sync for ever: a usage error.
	if r := runCLI(t, nil, "sync", "http://127.0.0.1:1", "--db", db, "--min-rate", "10"); r.code != 2 {
		t.Fatalf("--min-rate 10: exit %d, want 2", r.code)
	}
	failsWith(t, "mirror_unreachable", "sync", "http://127.0.0.1:1", "--db", db, "--min-rate", "4096")
}

func fetch(t *testing.T, url string) []byte {
	t.Helper()
	_, b := httpGet(t, url)
	return b
}

// storeTrustingExampleOnly is a store that trusts the translate sample's
// publisher and not the geo sample's: a sync from a station serving both
// imports one and refuses the other.
func storeTrustingExampleOnly(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", samplePub("example-publisher"), "--db", db, "--name", "example", "--scope", "org.example")
	return db
}

// TestSyncSuccessExitsZero: a sync that imported (or, with --dry-run,
// would import) exited 10, so 'set -e' scripts and 'sync && systemctl
// restart …' took every successful import for a failure. Without
// --detailed-exitcode a sync that ran and refused nothing is 0 whatever it
// imported; one that refused something is 1, as every command's refusal,
// with the report still on stdout.
func TestSyncSuccessExitsZero(t *testing.T) {
	url := startMirrorCLI(t, storeWithSamples(t))
	db := newStore(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"dry run", []string{"--dry-run"}, "dry run: 2 would be imported"},
		{"import", nil, "2 imported, 0 up to date, 0 refused"},
		{"nothing new", nil, "0 imported, 2 up to date, 0 refused"},
	} {
		r := runCLI(t, nil, append([]string{"sync", url, "--db", db}, c.args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) {
			t.Fatalf("%s: exit %d, want 0 and %q\n%s%s", c.name, r.code, c.want, r.stdout, r.stderr)
		}
	}
	partial := storeTrustingExampleOnly(t)
	r := runCLI(t, nil, "sync", url, "--db", partial, "--json")
	var rep mirror.SyncReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 ||
		rep.Count(mirror.OutcomeImported) != 1 || rep.Count(mirror.OutcomeRefused) != 1 {
		t.Fatalf("a sync that refused a bundle: exit %d, want 1 with the report as the one document\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSyncDetailedExitcodeSignalsChange: what timers relied on stays,
// asked for: with --detailed-exitcode, 10 when something was (or would be)
// imported, 11 when something was refused, 0 when nothing is new.
func TestSyncDetailedExitcodeSignalsChange(t *testing.T) {
	url := startMirrorCLI(t, storeWithSamples(t))
	db := newStore(t)
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"dry run", []string{"--dry-run"}, syncExitImported},
		{"import", nil, syncExitImported},
		{"nothing new", nil, 0},
	} {
		if r := runCLI(t, nil, append([]string{"sync", url, "--db", db, "--detailed-exitcode"}, c.args...)...); r.code != c.want {
			t.Fatalf("%s: exit %d, want %d\n%s%s", c.name, r.code, c.want, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, nil, "sync", url, "--db", storeTrustingExampleOnly(t), "--detailed-exitcode"); r.code != syncExitRefused {
		t.Fatalf("a refused bundle: exit %d, want %d\n%s%s", r.code, syncExitRefused, r.stdout, r.stderr)
	}
}

// TestSyncShowsProgressOnATerminal: sync drew nothing while it downloaded,
// unlike import. On a terminal it now draws a progress line per bundle file
// (cleared when done); with --json, or when stderr is not a terminal,
// nothing.
func TestSyncShowsProgressOnATerminal(t *testing.T) {
	url := startMirrorCLI(t, storeWithSamples(t))
	r := runTTY(t, "sync", url, "--db", newStore(t))
	if r.code != 0 || !strings.Contains(r.stderr, "\rdownloading "+translateID+" 100%") || !strings.Contains(r.stderr, "\r\x1b[K") {
		t.Fatalf("sync on a terminal: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runTTY(t, "sync", url, "--db", newStore(t), "--json"); strings.Contains(r.stderr, "downloading") {
		t.Fatalf("sync --json drew progress: %q", r.stderr)
	}
	if r := runCLI(t, nil, "sync", url, "--db", newStore(t)); strings.Contains(r.stderr, "downloading") {
		t.Fatalf("sync off a terminal drew progress: %q", r.stderr)
	}
}

// TestSystemdSyncUnitAsksForDetailedExitCodes: the unit counts exit 10 (an
// import) as success, which only --detailed-exitcode gives; and 11 (a
// refusal) must stay a failure of the unit, for the journal and alerts.
func TestSystemdSyncUnitAsksForDetailedExitCodes(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join("..", "..", "contrib", "systemd", "ampbundle-sync.service"))
	if err != nil {
		t.Fatal(err)
	}
	u := string(unit)
	if !strings.Contains(u, "--detailed-exitcode") || !strings.Contains(u, fmt.Sprintf("\nSuccessExitStatus=%d\n", syncExitImported)) ||
		strings.Contains(u, fmt.Sprintf("SuccessExitStatus=%d", syncExitRefused)) {
		t.Fatalf("ampbundle-sync.service must run sync --detailed-exitcode with SuccessExitStatus=%d only:\n%s", syncExitImported, u)
	}
}
