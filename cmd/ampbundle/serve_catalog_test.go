package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestServeCatalogIsMountedReadOnlyBesideTheMirror: 'ampbundle serve'
// serves the catalog at /ui/ with its strict headers, refuses writes
// there, keeps the mirror's own paths as they were, and --catalog=false
// leaves /ui/ to the mirror's 404.
func TestServeCatalogIsMountedReadOnlyBesideTheMirror(t *testing.T) {
	db := storeWithSamples(t)
	url := startMirrorCLI(t, db)
	res, err := http.Get(url + "/ui/cap?name=org.example.translate.text")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != catalog.ContentSecurityPolicy {
		t.Fatalf("catalog page: %d %v", res.StatusCode, res.Header)
	}
	code, body := httpGet(t, url+"/ui/")
	if code != 200 || !strings.Contains(string(body), "com.acme.geo.distance") {
		t.Fatalf("index: %d", code)
	}
	post, err := http.Post(url+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d", post.StatusCode)
	}
	if code, _ := httpGet(t, url+"/index.json"); code != 200 {
		t.Errorf("the mirror's index: %d", code)
	}
	off := startMirrorCLI(t, db, "--catalog=false")
	if code, _ := httpGet(t, off+"/ui/"); code != http.StatusNotFound {
		t.Errorf("--catalog=false: /ui/ is %d", code)
	}
}

// TestLsAndCompatJSONComeFromTheCatalogModel: the JSON of 'ls' and
// 'compat --db' is byte for byte the catalog model's views of one read of
// the same store.
func TestLsAndCompatJSONComeFromTheCatalogModel(t *testing.T) {
	db := storeWithSamples(t)
	ls := mustRun(t, "ls", "--db", db, "--json").stdout
	cm := mustRun(t, "compat", "--db", db, "--json").stdout
	s, err := resolver.Open(db, resolver.Options{ReadOnly: true, Now: func() time.Time { return cliNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := catalog.Read(s, catalog.ReadOptions{Now: func() time.Time { return cliNow }, Parts: catalog.Parts{Compat: true}})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := cliutil.PrintJSON(&want, m.Listing()); err != nil {
		t.Fatal(err)
	}
	if ls != want.String() {
		t.Errorf("ls --json is not the model's listing:\n%s\nmodel:\n%s", ls, want.String())
	}
	want.Reset()
	if err := cliutil.PrintJSON(&want, map[string]any{"matrices": m.Matrices}); err != nil {
		t.Fatal(err)
	}
	if cm != want.String() || len(m.Matrices) != 3 {
		t.Errorf("compat --json is not the model's matrices (%d)", len(m.Matrices))
	}
}
