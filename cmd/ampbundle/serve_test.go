package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startMirrorCLI runs 'ampbundle serve --json' on 127.0.0.1:0 for db and
// returns its URL; the mirror is stopped with SIGTERM at cleanup, which
// must end it with exit 0.
func startMirrorCLI(t *testing.T, db string, args ...string) string {
	t.Helper()
	return startMirrorCLIDoc(t, db, args...).Listening
}

// mirrorStart is what a mirror started by startMirrorCLIDoc printed, and
// its log so far.
type mirrorStart struct {
	Listening  string `json:"listening"`
	Generation uint64 `json:"generation"`
	Metrics    string `json:"metrics"`
	log        *syncBuffer
}

// startMirrorCLIDoc is startMirrorCLI returning the start document and the
// mirror's log.
func startMirrorCLIDoc(t *testing.T, db string, args ...string) mirrorStart {
	t.Helper()
	pr, pw := io.Pipe()
	var stderr syncBuffer
	sigs := make(chan os.Signal, 1)
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: &stderr,
		Now: func() time.Time { return cliNow }, Rand: rand.Reader, Getenv: func(string) string { return "" }, Signals: sigs}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), env, append([]string{"ampbundle", "serve", "--json", "--listen", "127.0.0.1:0", "--db", db}, args...))
		pw.Close()
	}()
	doc := mirrorStart{log: &stderr}
	if err := json.NewDecoder(pr).Decode(&doc); err != nil || doc.Listening == "" {
		t.Fatalf("serve did not start: %v\nstderr: %s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		sigs <- syscall.SIGTERM
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d\nstderr: %s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop on SIGTERM")
		}
	})
	return doc
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestServeMirrorsImportedFilesByteForByte(t *testing.T) {
	db := storeWithSamples(t)
	url := startMirrorCLI(t, db)
	for id, name := range map[string]string{translateID: "translate", geoID: "geo"} {
		want, err := os.ReadFile(sampleFile(name))
		if err != nil {
			t.Fatal(err)
		}
		code, got := httpGet(t, url+"/bundles/"+id)
		if code != 200 || !bytes.Equal(got, want) {
			t.Fatalf("%s: status %d, %d bytes, want the %d bytes of the sample file", id, code, len(got), len(want))
		}
	}
	// The store stays usable by writers while the mirror runs: it holds no
	// lock between snapshots.
	mustRun(t, "rm", geoID, "--db", db)
}

func TestServeRefusesPlainHTTPOnTheNetwork(t *testing.T) {
	db := storeWithSamples(t)
	failsWith(t, "unsafe_listen", "serve", "--db", db, "--listen", "0.0.0.0:0")
	r := runCLI(t, nil, "serve", "--db", db, "--tls-cert", "x.pem")
	if r.code != 2 {
		t.Fatalf("--tls-cert without --tls-key: exit %d, want 2", r.code)
	}
	failsWith(t, "store_missing", "serve", "--db", db+".absent")
}

// TestServeHealthReadyMetrics: 'ampbundle serve' had none of the agent's
// operational endpoints. It answers /healthz and /readyz on its listener
// and, with --metrics-listen, Prometheus metrics on a listener of its own
// (never on the mirror's: its clients do not see its traffic figures); a
// metrics address on the network needs --unsafe-listen, as the agent's.
func TestServeHealthReadyMetrics(t *testing.T) {
	db := storeWithSamples(t)
	start := startMirrorCLIDoc(t, db, "--metrics-listen", "127.0.0.1:0")
	if code, body := httpGet(t, start.Listening+"/healthz"); code != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := httpGet(t, start.Listening+"/readyz"); code != 200 || !strings.Contains(string(body), `"status":"ready"`) {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if code, _ := httpGet(t, start.Listening+"/metrics"); code != 404 {
		t.Fatalf("/metrics on the mirror's listener: %d, want 404", code)
	}
	if start.Metrics == "" {
		t.Fatal("the start document names no metrics URL")
	}
	code, body := httpGet(t, start.Metrics)
	if want := fmt.Sprintf("ampbundle_mirror_generation %d\n", start.Generation); code != 200 || !strings.Contains(string(body), want) ||
		!strings.Contains(string(body), `ampbundle_mirror_http_requests_total{route="readyz",status="200"} 1`) {
		t.Fatalf("metrics: %d, want %q:\n%s", code, want, body)
	}
	failsWith(t, "unsafe_listen", "serve", "--db", db, "--metrics-listen", "0.0.0.0:0")
}
