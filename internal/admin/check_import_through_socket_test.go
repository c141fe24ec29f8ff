//go:build unix

package admin

import (
	"bytes"
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestCheckImportThroughTheSocketIsTheStoresVerdictAndWritesNothing: a
// sync through an agent judges a cut candidate by POST /v1/import/check
// (docs/SPEC-DECISIONS.md OCI-9, amended in review 45). Were it only the
// signatures, a version the store refuses would pass; were it an import,
// a judgement would install, stage or audit. The answer is the store's own
// verdict, by the same name, and the store is unchanged: no bundle, no
// audit entry, the same generation.
func TestCheckImportThroughTheSocketIsTheStoresVerdictAndWritesNothing(t *testing.T) {
	s, _, c := serve(t)
	file := sample(t, "translate.ampb")
	if _, err := c.CheckImport(context.Background(), bytes.NewReader(file)); amp.NameOf(err) != bundle.ErrUntrustedKey {
		t.Fatalf("a bundle signed by no trusted key, judged through the socket: %v; want %s", err, bundle.ErrUntrustedKey)
	}
	if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	gen := s.Generation()
	audit, _ := s.Audit()
	res, err := c.CheckImport(context.Background(), bytes.NewReader(file))
	if err != nil || res.BundleID != "org.example.translate" || res.Version != 1 || res.Unchanged {
		t.Fatalf("a bundle the store takes, judged through the socket: %+v %v", res, err)
	}
	after, _ := s.Audit()
	if bs, _ := s.Bundles(); len(bs) != 0 || s.Generation() != gen || len(after) != len(audit) {
		t.Fatalf("a judgement changed the store: bundles %+v, generation %d (was %d), audit %d entries (was %d)", bs, s.Generation(), gen, len(after), len(audit))
	}
	if _, err := c.Import(context.Background(), bytes.NewReader(file), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CheckImport(context.Background(), bytes.NewReader(file)); err != nil || !res.Unchanged {
		t.Fatalf("the installed bundle, judged through the socket: %+v %v; want unchanged", res, err)
	}
}
