package mirror

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// exportCounting is manyStatements counting the bundle files exported
// from it.
type exportCounting struct {
	manyStatements
	exports *atomic.Int64
}

func (e exportCounting) Export(id string, w io.Writer) error {
	e.exports.Add(1)
	return e.manyStatements.Export(id, w)
}

// TestStoreOverTheCapIsExportedAgainAtEveryRefresh: a store past an
// index cap (MIRROR-8; here the statements, as a key of the station may
// take them) gets no new snapshot, and every refresh (every 5 s by
// default) failed the same way, at the same store generation, after
// doing the whole snapshot's work again: every bundle new since the
// served snapshot exported again into the spool (each up to 1 GiB,
// read, hashed and written), the catalog and both schemas of every
// capability read again, all while the store file is held open for
// reading, which keeps its writers (an import, the operator's rm of the
// bundle at fault) waiting. Should: a refresh at the generation and with
// the bundles a snapshot failed a cap at fails at once, exporting
// nothing, and still leaves out what the store no longer uses
// (MIRROR-10); one at another generation builds again.
func TestStoreOverTheCapIsExportedAgainAtEveryRefresh(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	sts := revocationsFor(MaxIndexStatements + 1)
	var n, exports atomic.Int64
	n.Store(MaxIndexStatements)
	open := manyStatementsOpener(p, sts, &n)
	m, ts := startMirror(t, p, func(o *Options) {
		o.Open = func() (Source, error) {
			src, err := open()
			if err != nil {
				return nil, err
			}
			return exportCounting{manyStatements: src.(manyStatements), exports: &exports}, nil
		}
	})
	n.Store(MaxIndexStatements + 1) // the flood
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	// A new release the store took meanwhile: not in the served snapshot.
	if _, err := s.Import(context.Background(), bytes.NewReader(testBundle(t, 2)), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	exports.Store(0)
	const refreshes = 4
	for range refreshes {
		if err := m.Refresh(); amp.NameOf(err) != ErrMisconfigured {
			t.Fatalf("a refresh over the cap: %v, want misconfigured", err)
		}
	}
	if got := exports.Load(); got > 1 {
		t.Fatalf("%d refreshes at one generation over the cap exported %d bundle files, want at most 1: each failing refresh redoes the whole snapshot", refreshes, got)
	}
	if ids, _, _ := servedBundles(t, ts.URL); len(ids) != 0 {
		t.Fatalf("the replaced version is still served over the cap: %v (MIRROR-10)", ids)
	}
	// Back under the cap (a generation of its own): a snapshot again.
	n.Store(MaxIndexStatements)
	if err := m.Refresh(); err != nil {
		t.Fatalf("a refresh back under the cap: %v", err)
	}
}
