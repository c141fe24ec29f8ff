//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
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
// start document; serve stops (SIGTERM) when the test ends.
func startServeDoc(t *testing.T, args ...string) map[string]any {
	t.Helper()
	pr, pw := io.Pipe()
	sigs := make(chan os.Signal, 1)
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: io.Discard,
		Now: time.Now, Rand: rand.Reader, Getenv: func(string) string { return "" }, Signals: sigs}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), env, append([]string{"ampagent", "serve", "--json", "--listen", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	var doc map[string]any
	if err := json.NewDecoder(pr).Decode(&doc); err != nil {
		t.Fatalf("serve did not start: %v", err)
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		sigs <- syscall.SIGTERM
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop on SIGTERM")
		}
	})
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
	if _, ok := doc["catalog"]; ok {
		t.Errorf("--catalog alone names a listener of its own: %v", doc)
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
