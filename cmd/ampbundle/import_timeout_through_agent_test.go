//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/resolver"
)

// writeHolder blocks its first Read until open is closed, then ends: an
// import reading it holds the store's write lock until then. holding is
// closed once that Read began, which resolver.Store.Import does only
// while it holds the lock: the test waits on it, not on a time.
type writeHolder struct {
	open, holding chan struct{}
	began, opened sync.Once
}

func newWriteHolder() *writeHolder {
	return &writeHolder{open: make(chan struct{}), holding: make(chan struct{})}
}

func (g *writeHolder) Read([]byte) (int, error) {
	g.began.Do(func() { close(g.holding) })
	<-g.open
	return 0, io.ErrUnexpectedEOF
}

// release lets g's import end (closes open, once).
func (g *writeHolder) release() { g.opened.Do(func() { close(g.open) }) }

// holdStoreSeeingImports is holdStore whose agent sends on the channel
// returned the time each POST /v1/import reached it, before it is read.
func holdStoreSeeingImports(t *testing.T, db string) (*resolver.Store, <-chan time.Time) {
	t.Helper()
	s, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := admin.Listen(admin.SocketPath(db))
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	arrived := make(chan time.Time, 4)
	h := admin.NewHandler(s, nil)
	seeing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/import" {
			select {
			case arrived <- time.Now():
			default:
			}
		}
		h.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: seeing, ConnContext: admin.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, arrived
}

// TestImportThroughAnAgentPastItsTimeoutIsNotImported: 'ampbundle import
// --timeout' bounds an import from an OCI location (10 m by default). A
// store held by an agent is imported into through its admin socket, and
// importContext took the command's signals away from that import
// (CLI-22) and its deadline with them: an import queued there behind
// another write (any import, sync or trust change of the agent) ran on
// past --timeout for as long as the agent took, and then installed the
// bundle, exit 0. The deadline now reaches the agent, which ends the
// import at it: the command fails with the agent's store_io ("import
// canceled") and the store holds nothing new. Counted: the exit, the
// error name and the bundles installed.
func TestImportThroughAnAgentPastItsTimeoutIsNotImported(t *testing.T) {
	db := newStore(t)
	layout := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", translateVersion(t, 3), "oci-layout:"+layout+":v3")
	s, arrived := holdStoreSeeingImports(t, db)
	gate := newWriteHolder()
	t.Cleanup(gate.release) // before the store closes, on a failure too
	held := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), gate, resolver.ImportOptions{})
		held <- err
	}()
	select { // the other write holds the store
	case <-gate.holding:
	case err := <-held:
		t.Fatalf("the import holding the store ended before it read its stream: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the import holding the store has not read its stream within 20 s")
	}
	done := make(chan result, 1)
	go func() {
		done <- runCLI(t, nil, "import", "oci-layout:"+layout+":v3", "--db", db, "--timeout", "300ms", "--json")
	}()
	select {
	case <-arrived:
		// The agent's deadline is at most 300 ms after it reads the
		// request, which it does as soon as it arrived: past it.
		time.Sleep(2 * time.Second)
	case r := <-done:
		t.Fatalf("the import returned before it reached the agent: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("the import has not reached the agent within 20 s")
	}
	gate.release()
	<-held
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the import has not returned 20 s after the other write ended")
	}
	if r.code != 1 {
		t.Fatalf("import past its --timeout through the agent: exit %d; want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if got := errorCode(t, r); got != "store_io" {
		t.Fatalf("import past its --timeout: error %q; want store_io (the agent's: import canceled)\n%s", got, r.stdout)
	}
	if bs, err := s.Bundles(); err != nil || len(bs) != 0 {
		t.Fatalf("installed after an import past its --timeout: %+v, %v", bs, err)
	}
}

// TestImportThroughAnAgentWithAYearsTimeoutIsImported: the admin client
// told the agent the time left to --timeout as timeout_ms, and the agent
// refuses one beyond 30 days bad_request: 'import --timeout 8760h'
// through an agent failed, where it imported before timeout_ms existed
// (and still does without an agent). A deadline beyond what the agent
// takes is now not told (docs/SPEC-DECISIONS.md ADMIN-11). Counted: the
// exit and the bundles installed.
func TestImportThroughAnAgentWithAYearsTimeoutIsImported(t *testing.T) {
	db := newStore(t)
	layout := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", translateVersion(t, 3), "oci-layout:"+layout+":v3")
	s := holdStore(t, db, admin.SocketPath(db))
	r := runCLI(t, nil, "import", "oci-layout:"+layout+":v3", "--db", db, "--timeout", "8760h", "--json")
	if r.code != 0 {
		t.Fatalf("import --timeout 8760h through the agent: exit %d; want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if bs, err := s.Bundles(); err != nil || len(bs) != 1 {
		t.Fatalf("installed after import --timeout 8760h through the agent: %+v, %v; want the bundle", bs, err)
	}
}
