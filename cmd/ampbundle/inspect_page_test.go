package main

import (
	"bytes"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestCatalogPageAndInspectCannotDisagreeAboutABundle: an operator who
// reads a bundle on the catalog page and one who runs 'ampbundle inspect
// --json' on its file see the same manifest: the same artifacts (keys,
// media types, sizes, hashes), capabilities and ranges, aliases,
// publisher's claim, signers' key ids, created and expiry; both for a
// full bundle and for a delta imported over its base. The page's model
// also says which trusted key made each signature, and the page shows
// each of those values.
func TestCatalogPageAndInspectCannotDisagreeAboutABundle(t *testing.T) {
	db := storeWithSamples(t)
	src := translateV2Source(t)
	delta := filepath.Join(t.TempDir(), "delta.ampb")
	mustRun(t, "build", src, "-o", delta, "--key", sampleKey(t, "example-publisher"),
		"--created", "2026-11-10T00:00:00Z", "--base", sampleFile("translate"))
	for _, tc := range []struct {
		name, file, id, trustedAs string
		imports                   bool
	}{
		{"full sample", sampleFile("geo"), geoID, "acme", false},
		{"delta over its base", delta, translateID, "example", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.imports {
				mustRun(t, "import", tc.file, "--db", db)
			}
			var cli summary
			mustJSON(t, &cli, "inspect", tc.file)
			if tc.imports && cli.Delta == nil {
				t.Fatal("inspect does not name the delta")
			}
			page := pageManifest(t, db, tc.id)
			if !page.SignatureChecked || len(page.Signatures) == 0 {
				t.Fatalf("page: signatures not checked: %+v", page.Signatures)
			}
			for _, sig := range page.Signatures {
				if !sig.Verified || sig.TrustedAs != tc.trustedAs {
					t.Errorf("page: signature %s not verified as %q: %+v", sig.KID, tc.trustedAs, sig)
				}
			}
			if got, want := manifestJSON(t, page), manifestJSON(t, cli); got != want {
				t.Errorf("the page and inspect disagree:\npage:\n%s\ninspect:\n%s", got, want)
			}
			body := bundlePage(t, db, tc.id)
			for _, want := range pageValues(cli) {
				if !strings.Contains(body, escapeHTML(t, want)) {
					t.Errorf("the bundle page does not show %q", want)
				}
			}
		})
	}
}

// pageManifest is the manifest view of bundle id in the catalog model of
// the store db, as the pages read it.
func pageManifest(t *testing.T, db, id string) summary {
	t.Helper()
	s, err := resolver.Open(db, resolver.Options{ReadOnly: true, Now: func() time.Time { return cliNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := catalog.Read(s, catalog.ReadOptions{Now: func() time.Time { return cliNow }, Parts: catalog.AllParts})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := m.Bundle(id)
	if !ok || b.Manifest == nil {
		t.Fatalf("the model has no manifest of %s", id)
	}
	return *b.Manifest
}

// bundlePage is the catalog's bundle page of id over the store db.
func bundlePage(t *testing.T, db, id string) string {
	t.Helper()
	h, err := catalog.NewHandler(catalog.Options{Now: func() time.Time { return cliNow }, Open: func() (catalog.Source, error) {
		return resolver.Open(db, resolver.Options{ReadOnly: true, Now: func() time.Time { return cliNow }})
	}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, catalog.Prefix+"bundle?id="+url.QueryEscape(id), nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("bundle page: %d", rec.Code)
	}
	return rec.Body.String()
}

// manifestJSON is v as JSON without what only one side can know: the
// file it was read from, the delta's base, and the trust verdicts
// (inspect checks no signature; the store checked them at import).
func manifestJSON(t *testing.T, v summary) string {
	t.Helper()
	v.File, v.Delta, v.SignatureChecked = "", nil, false
	sigs := make([]catalog.ManifestSignature, len(v.Signatures))
	for i, s := range v.Signatures {
		sigs[i] = catalog.ManifestSignature{KID: s.KID}
	}
	v.Signatures = sigs
	var b bytes.Buffer
	if err := cliutil.PrintJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pageValues are the values of v the bundle page shows.
func pageValues(v summary) []string {
	out := []string{v.BundleID, v.CreatedAt, v.ExpiresAt}
	for _, s := range v.Signatures {
		out = append(out, s.KID)
	}
	for _, a := range v.Artifacts {
		out = append(out, a.Key, a.MediaType, a.Hash)
	}
	for _, c := range v.Capabilities {
		out = append(out, c.ID)
		out = append(out, c.SupportedRanges...)
		out = append(out, c.DeprecatedRanges...)
	}
	for typ, name := range v.Aliases {
		out = append(out, typ, name)
	}
	return out
}

// escapeHTML is s as html/template writes it in a page's text.
func escapeHTML(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	if err := template.Must(template.New("").Parse("{{.}}")).Execute(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
