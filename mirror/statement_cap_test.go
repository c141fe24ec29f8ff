package mirror

// Threat: a store that applied more statements than one index may list
// (anyone whose statements the station applies can fill the list: a
// publisher revoking its own old versions, a key rotating often, an
// upstream mirror) made the mirror silently leave the newest out of every
// index, so the latest revocation never reached a syncing site while the
// refresh reported success.

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// manyStatements is a store whose applied statements are the first n of
// sts, revocations, the newest last.
type manyStatements struct {
	*resolver.Store
	sts []resolver.Statement
	n   *atomic.Int64
}

func (r manyStatements) Statements() ([]resolver.Statement, error) { return r.sts[:r.n.Load()], nil }

// Generation changes with each statement applied, as a store's does.
func (r manyStatements) Generation() uint64 { return r.Store.Generation() + uint64(r.n.Load()) }

// revocationsFor returns n distinct revocation statements.
func revocationsFor(n int) []resolver.Statement {
	sts := make([]resolver.Statement, 0, n)
	for i := range n {
		data := []byte(fmt.Sprintf("revocation %d", i))
		sum := sha256.Sum256(data)
		sts = append(sts, resolver.Statement{Seq: uint64(i + 1), ContentType: bundle.MediaTypeRevocation, SHA256: sum[:], Data: data})
	}
	return sts
}

// manyStatementsOpener opens the store at p as one whose applied
// statements are the first n.Load() of sts.
func manyStatementsOpener(p string, sts []resolver.Statement, n *atomic.Int64) func() (Source, error) {
	return func() (Source, error) {
		s, err := resolver.Open(p, resolver.Options{ReadOnly: true, Now: func() time.Time { return testNow }})
		if err != nil {
			return nil, err
		}
		return manyStatements{Store: s, sts: sts, n: n}, nil
	}
}

// TestNewestRevocationIsNotDroppedFromAFullIndex: past MaxIndexStatements
// applied statements, the index listed the first 10,000 and dropped the
// newest. No statement may be dropped (the newest is the latest
// revocation; the oldest, a new site's first ones): the mirror refuses to
// take a snapshot of such a store, naming the cap (misconfigured), as it
// does for a store over the bundle cap (MIRROR-8).
func TestNewestRevocationIsNotDroppedFromAFullIndex(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	var n atomic.Int64
	n.Store(MaxIndexStatements + 1)
	_, err := New(Options{SpoolDir: filepath.Join(t.TempDir(), "spool"), Open: manyStatementsOpener(p, revocationsFor(MaxIndexStatements+1), &n)})
	if amp.NameOf(err) != ErrMisconfigured {
		t.Fatalf("a store that applied %d statements: %v, want the snapshot refused (misconfigured): "+
			"an index leaving one out keeps a revocation from every syncing site", n.Load(), err)
	}
}

// TestStoreGrownOverTheStatementCapMakesTheMirrorNotReady: a running
// mirror whose store goes past the cap keeps serving its previous
// snapshot, and says so: the refresh fails, /readyz is 503 with
// refresh/index_over_limit, so the operator sees revocations have stopped
// flowing.
func TestStoreGrownOverTheStatementCapMakesTheMirrorNotReady(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	sts := revocationsFor(MaxIndexStatements + 1)
	var n atomic.Int64
	n.Store(MaxIndexStatements)
	m, ts := startMirror(t, p, func(o *Options) { o.Open = manyStatementsOpener(p, sts, &n) })
	if code, rep := readyOf(t, ts.URL); code != http.StatusOK {
		t.Fatalf("at the cap: %d %+v", code, rep)
	}
	gen := m.Generation()
	n.Store(MaxIndexStatements + 1)
	if err := m.Refresh(); amp.NameOf(err) != ErrMisconfigured {
		t.Fatalf("a refresh over the cap: %v, want misconfigured", err)
	}
	code, rep := readyOf(t, ts.URL)
	if code != http.StatusServiceUnavailable || !hasProblem(rep, "refresh", "index_over_limit") {
		t.Fatalf("/readyz over the cap: %d %+v, want 503 refresh/index_over_limit", code, rep)
	}
	if m.Generation() != gen {
		t.Fatalf("served generation %d, want the previous snapshot's %d", m.Generation(), gen)
	}
}
