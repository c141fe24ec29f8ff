package mirror

// Threat (MIRROR-10): a store that took the mirror past one of the index
// caps gets no new snapshot (MIRROR-8), and the previous one stays served.
// Any key the station trusts, for a scope of its own, can take the applied
// statements past the cap (revocations of keys nobody uses, each a
// distinct statement kept for good; checked by hand: a real store applied
// 10,001 such revocations signed by a second publisher's key for its own
// scope; too slow for a test, so these tests take the count from
// manyStatements). The previous snapshot then went on listing and serving
// a bundle the store had since revoked, removed or replaced, for good: the
// one who floods keeps a revoked (compromised) bundle distributed. Now a
// refresh that fails after reading the store's bundles leaves out of the
// served snapshot every bundle the store no longer uses as served.

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// overCapMirror serves the store at p (org.example.echo 1 installed)
// with its applied statements at MaxIndexStatements, and returns the
// counter that sets them.
func overCapMirror(t *testing.T, p string) (*Server, string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	n.Store(MaxIndexStatements)
	m, ts := startMirror(t, p, func(o *Options) {
		o.Open = manyStatementsOpener(p, revocationsFor(MaxIndexStatements+1), &n)
	})
	if ids, code, _ := servedBundles(t, ts.URL); code != http.StatusOK || len(ids) != 1 {
		t.Fatalf("before the flood: bundles %v, bundle status %d", ids, code)
	}
	return m, ts.URL, &n
}

// TestRevokedBundleIsNotServedOnceTheStatementsPassTheCap: the station's
// store revokes org.example.echo 1 (it fails closed there, 5002
// bundle_revoked) after, or while, another key's flood takes the applied
// statements past the cap: the refresh fails and the previous snapshot,
// which listed and served the revoked bundle, stayed served to every
// syncing site.
func TestRevokedBundleIsNotServedOnceTheStatementsPassTheCap(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	m, url, n := overCapMirror(t, p)
	n.Store(MaxIndexStatements + 1) // the flood (without it, the bundle is dropped: checked)
	applyStatements(t, p, revokedEcho1(t, testKey))
	s, err := resolver.Open(p, resolver.Options{ReadOnly: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	revoked := echoRevoked(t, s)
	s.Close()
	if !revoked {
		t.Fatal("the store does not refuse org.example.echo 1 as revoked")
	}
	if err := m.Refresh(); amp.NameOf(err) != ErrMisconfigured {
		t.Fatalf("refresh over the cap: %v, want misconfigured", err)
	}
	ids, bundleStatus, schemaStatus := servedBundles(t, url)
	if bundleStatus == http.StatusOK || schemaStatus == http.StatusOK || len(ids) != 0 {
		t.Errorf("after the store revoked org.example.echo 1 and another key took the statements past the cap, the mirror "+
			"still lists %v and serves the bundle (%d) and its schema (%d)", ids, bundleStatus, schemaStatus)
	}
}

// TestBundleTheStoreNoLongerHoldsIsNotServedWhileOverTheCap: past the cap,
// a bundle the store removed, or replaced by a newer version (a
// revocation may name the old version, which the store's verdict on the
// installed one does not show), is no longer served either; its spool
// file is removed, and /readyz stays 503 refresh/index_over_limit.
func TestBundleTheStoreNoLongerHoldsIsNotServedWhileOverTheCap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, s *resolver.Store)
	}{
		{"removed", func(t *testing.T, s *resolver.Store) {
			if _, err := s.Remove("org.example.echo"); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", func(t *testing.T, s *resolver.Store) {
			if _, err := s.Import(context.Background(), bytes.NewReader(testBundle(t, 2)), resolver.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newStore(t, testBundle(t, 1))
			m, url, n := overCapMirror(t, p)
			n.Store(MaxIndexStatements + 1)
			s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, s)
			s.Close()
			if err := m.Refresh(); amp.NameOf(err) != ErrMisconfigured {
				t.Fatalf("refresh over the cap: %v, want misconfigured", err)
			}
			if ids, bundleStatus, schemaStatus := servedBundles(t, url); bundleStatus == http.StatusOK || schemaStatus == http.StatusOK || len(ids) != 0 {
				t.Errorf("org.example.echo 1, %s in the store while it is over the cap, is still listed %v and served (%d, schema %d)",
					tc.name, ids, bundleStatus, schemaStatus)
			}
			if left := globSpool(t, m); len(left) != 0 {
				t.Errorf("the spool still holds %v", left)
			}
			if code, rep := readyOf(t, url); code != http.StatusServiceUnavailable || !hasProblem(rep, "refresh", "index_over_limit") {
				t.Errorf("/readyz: %d %+v, want 503 refresh/index_over_limit", code, rep)
			}
		})
	}
}

// TestUnchangedBundleStaysServedWhileOverTheCap: a bundle the store still
// uses, unchanged, stays served from the previous snapshot past the cap
// (only what the store no longer uses is left out).
func TestUnchangedBundleStaysServedWhileOverTheCap(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	m, url, n := overCapMirror(t, p)
	n.Store(MaxIndexStatements + 1)
	if err := m.Refresh(); amp.NameOf(err) != ErrMisconfigured {
		t.Fatalf("refresh over the cap: %v, want misconfigured", err)
	}
	if ids, bundleStatus, schemaStatus := servedBundles(t, url); bundleStatus != http.StatusOK || schemaStatus != http.StatusOK || len(ids) != 1 {
		t.Errorf("an unchanged bundle past the cap: listed %v, served %d, schema %d; want it served", ids, bundleStatus, schemaStatus)
	}
}
