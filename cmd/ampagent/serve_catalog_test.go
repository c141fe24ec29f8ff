//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// getPage GETs url and returns the status and the body.
func getPage(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return res.StatusCode, string(body)
}

// startServeDoc runs serve with --json on 127.0.0.1:0 and returns its
// start document, waiting at most serveDeadline for it (serve_test.go);
// serve stops (SIGTERM) when the test ends.
func startServeDoc(t *testing.T, args ...string) map[string]any {
	t.Helper()
	pr, pw := io.Pipe()
	p := launchServe(t, pw, time.Now, append([]string{"serve", "--json", "--listen", "127.0.0.1:0"}, args...)...)
	raw := p.firstDoc(t, json.NewDecoder(pr), pr)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc["listening"] == nil {
		pr.Close()
		t.Fatalf("serve did not start: %v %s\nstderr: %s", err, raw, p.stderr.String())
	}
	go io.Copy(io.Discard, pr)
	return doc
}

// TestCatalogListenKeepsTheCatalogOffTheAgentListener: with
// --catalog-listen the catalog is served on a listener of its own, and
// the agent's listener, which its AMP peers reach, does not serve it;
// the catalog listener serves nothing but the catalog.
func TestCatalogListenKeepsTheCatalogOffTheAgentListener(t *testing.T) {
	db, key := serveStore(t)
	doc := startServeDoc(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--catalog-listen", "127.0.0.1:0")
	cat, _ := doc["catalog"].(string)
	agentURL, _ := doc["listening"].(string)
	if !strings.HasPrefix(cat, "http://127.0.0.1:") || !strings.HasSuffix(cat, "/ui/") {
		t.Fatalf("start document names no catalog listener: %v", doc)
	}
	if code, body := getPage(t, cat); code != http.StatusOK || !strings.Contains(body, "org.example.translate") {
		t.Errorf("catalog listener: %d", code)
	}
	if code, _ := getPage(t, agentURL+"/ui/"); code != http.StatusNotFound {
		t.Errorf("the agent listener serves the catalog too: %d", code)
	}
	if code, _ := getPage(t, strings.TrimSuffix(cat, "/ui/")+"/healthz"); code != http.StatusNotFound {
		t.Errorf("the catalog listener serves an agent path: %d", code)
	}
}

// TestCatalogOnLoopbackAgentListener: --catalog alone keeps serving the
// catalog on a loopback agent listener, as before.
func TestCatalogOnLoopbackAgentListener(t *testing.T) {
	db, key := serveStore(t)
	doc := startServeDoc(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--catalog")
	agentURL, _ := doc["listening"].(string)
	if code, _ := getPage(t, agentURL+"/ui/"); code != http.StatusOK {
		t.Errorf("--catalog: /ui/ answers %d", code)
	}
	if got := doc["catalog"]; got != agentURL+"/ui/" {
		t.Errorf("--catalog alone: the start document names the catalog at %v, want the agent listener's %s/ui/ (CLI-13)", got, agentURL)
	}
}

// TestCatalogNeverFacesTheNetworkUnasked: a catalog address off loopback
// without --unsafe-listen, and --catalog alone on an agent listener off
// loopback (said --unsafe-listen for AMP, not for the catalog), are
// refused before anything is served.
func TestCatalogNeverFacesTheNetworkUnasked(t *testing.T) {
	db, key := serveStore(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"catalog listener off loopback", []string{"--listen", "127.0.0.1:0", "--catalog-listen", "0.0.0.0:0"}},
		{"catalog on a network agent listener", []string{"--listen", "0.0.0.0:0", "--unsafe-listen", "--catalog"}},
	} {
		args := append([]string{"--db", db, "--key", key, "--allow", "*=org.example."}, c.args...)
		if code, exit := serveFails(t, args...); code != "unsafe_listen" || exit != 1 {
			t.Errorf("%s: got %s exit %d", c.name, code, exit)
		}
	}
}
