//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
)

// holdStoreAsAgent opens db and serves its admin socket exactly as
// 'ampagent serve' does (admin.Serve at the default path).
func holdStoreAsAgent(t *testing.T, db string) *resolver.Store {
	t.Helper()
	s, err := resolver.Open(db, resolver.Options{Now: func() time.Time { return cliNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.Serve(s, "", nil)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s
}

// servedIndexOf fetches and decodes the mirror's index.
func servedIndexOf(t *testing.T, url string) mirror.Index {
	t.Helper()
	var ix mirror.Index
	if err := json.Unmarshal(fetch(t, url+mirror.IndexPath), &ix); err != nil {
		t.Fatal(err)
	}
	return ix
}

// awaitIndex fetches the mirror's index until ok says yes. The bound is
// a liveness guard, not a latency claim: the mirror package's tests show
// that one refresh is enough.
func awaitIndex(t *testing.T, url string, ok func(mirror.Index) bool) mirror.Index {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ix := servedIndexOf(t, url)
		if ok(ix) {
			return ix
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror still serves generation %d: %+v", ix.Generation, ix.Bundles)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func translateIn(ix mirror.Index) uint64 {
	for _, b := range ix.Bundles {
		if b.BundleID == translateID {
			return b.Version
		}
	}
	return 0
}

// TestMirrorOverAgentHeldStoreServesAgentImportWithinOneRefresh: with an
// agent holding the store, 'ampbundle serve' reads it through the agent's
// admin socket, and printed generation 0, served the store as it was at
// its start for ever (no refresh saw a change) and labelled the index
// generation 0, which every sync then repeated. Now the mirror starts at
// the store's true generation, serves a bundle imported through the agent
// at its next refreshes, logs the new snapshot, and a sync from it gets the
// bundle: no restart anywhere.
func TestMirrorOverAgentHeldStoreServesAgentImportWithinOneRefresh(t *testing.T) {
	station := storeWithSamples(t)
	s := holdStoreAsAgent(t, station)
	v2 := translateVersion(t, 2)
	start := startMirrorCLIDoc(t, station, "--refresh", "50ms")
	if start.Generation != s.Generation() || start.Generation == 0 {
		t.Fatalf("serve started at generation %d, the agent's store is at %d", start.Generation, s.Generation())
	}
	if ix := servedIndexOf(t, start.Listening); ix.Generation != s.Generation() || translateIn(ix) != 1 {
		t.Fatalf("index at start: generation %d (store %d), translate version %d", ix.Generation, s.Generation(), translateIn(ix))
	}

	if r := viaAgentRun(t, "import", v2, "--db", station); r.code != 0 {
		t.Fatalf("import through the agent: exit %d: %s", r.code, r.stderr)
	}
	gen := s.Generation()
	ix := awaitIndex(t, start.Listening, func(ix mirror.Index) bool { return translateIn(ix) == 2 })
	if ix.Generation != gen {
		t.Fatalf("the index serves version 2 at generation %d, the agent's store is at %d", ix.Generation, gen)
	}
	// The snapshot is logged just after it is served (and its spool
	// pruned): wait for the line, bounded as awaitIndex is.
	want := fmt.Sprintf(`msg="mirror snapshot" generation=%d`, gen)
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(start.log.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at generation %d logged:\n%s", gen, start.log.String())
		}
	}

	db := storeWithSamples(t)
	r := runCLI(t, nil, "sync", start.Listening, "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "imported "+translateID+" version 2 (was 1)") ||
		!strings.Contains(r.stdout, fmt.Sprintf("(mirror generation %d)", gen)) {
		t.Fatalf("sync from the mirror: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code, rep := syncJSON(t, start.Listening, db); code != 0 || rep.Count(mirror.OutcomeCurrent) != 2 || rep.Generation != gen {
		t.Fatalf("second sync: exit %d, generation %d, %+v", code, rep.Generation, rep.Items)
	}
}
