//go:build unix

package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/resolver"
)

// writeHolder blocks its first Read until open is closed, then ends: an
// import reading it holds the store's write lock until then.
type writeHolder struct{ open chan struct{} }

func (g *writeHolder) Read([]byte) (int, error) {
	<-g.open
	return 0, io.ErrUnexpectedEOF
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
	s := holdStore(t, db, admin.SocketPath(db))
	gate := &writeHolder{open: make(chan struct{})}
	held := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), gate, resolver.ImportOptions{})
		held <- err
	}()
	time.Sleep(200 * time.Millisecond) // the other write holds the store
	done := make(chan result, 1)
	go func() {
		done <- runCLI(t, nil, "import", "oci-layout:"+layout+":v3", "--db", db, "--timeout", "300ms", "--json")
	}()
	time.Sleep(2 * time.Second) // past --timeout
	close(gate.open)
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
