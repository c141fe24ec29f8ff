package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/termtest"
)

// TestMirrorCannotInjectTerminalSequences: a key of the endpoints object of
// a mirror's capabilities document, which 'ampbundle sync' refuses, does
// not reach the terminal raw (threat: a hostile mirror writing terminal
// sequences or fake lines to the operator's terminal).
func TestMirrorCannotInjectTerminalSequences(t *testing.T) {
	wk, err := os.ReadFile(filepath.Join("..", "..", "testdata", "mirror", "well-known.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc []byte
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	}))
	defer hostile.Close()
	db := newStore(t)
	for _, p := range termtest.Payloads {
		var d map[string]any
		if err := json.Unmarshal(wk, &d); err != nil {
			t.Fatal(err)
		}
		d["endpoints"].(map[string]any)[p.Text] = "relative"
		if doc, err = json.Marshal(d); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, nil, "sync", hostile.URL, "--db", db)
		if r.code != 1 {
			t.Fatalf("%s: sync exit %d: %s", p.Name, r.code, r.stderr)
		}
		termtest.Check(t, p.Name, r.stdout+r.stderr, 2*cliutil.MaxShown)
	}
}

// TestBundleTextCannotInjectTerminalSequences: text of a bundle file (here
// a legacy type alias, which the format lets hold any printable UTF-8) is
// printed escaped by inspect, which reads it before any signature is
// checked, by verify, and by ls once imported; a build refusing the text
// does not echo it (threat: a bundle file driving the terminal of whoever
// inspects it).
func TestBundleTextCannotInjectTerminalSequences(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	built := 0
	for _, p := range termtest.Payloads {
		src := filepath.Join(t.TempDir(), "translate")
		if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
			t.Fatal(err)
		}
		manifest := filepath.Join(src, "bundle.json")
		var m map[string]any
		data, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		m["aliases"].(map[string]any)[p.Text] = "org.example.translate.text"
		if data, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(manifest, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "t.ampb")
		r := runCLI(t, nil, "build", src, "-o", out, "--key", key, "--created", "2026-11-10T00:00:00Z")
		termtest.Check(t, p.Name+", build", r.stdout+r.stderr, 2*cliutil.MaxShown)
		if r.code != 0 {
			continue // refused: C0 controls, DEL, or too long for an alias
		}
		built++
		db := newStore(t)
		for _, args := range [][]string{
			{"inspect", out},
			{"verify", out, "--trust", samplePub("example-publisher")},
			{"import", out, "--db", db},
			{"ls", "--db", db},
		} {
			r := runCLI(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("%s, %s: exit %d %s", p.Name, args[0], r.code, r.stderr)
			}
			termtest.Check(t, p.Name+", "+args[0], r.stdout+r.stderr, 1<<16)
			if args[0] != "import" && !strings.Contains(r.stdout, "alias") {
				t.Errorf("%s, %s: the alias is not shown: %s", p.Name, args[0], r.stdout)
			}
		}
	}
	if built < 4 { // the C1 and bidi payloads
		t.Fatalf("only %d hostile aliases were built", built)
	}
}
