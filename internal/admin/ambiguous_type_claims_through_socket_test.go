//go:build unix

package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// claimBundle is a bundle of one capability, name:1.0.0, signed by key,
// claiming the legacy type typ for it.
func claimBundle(t *testing.T, key ed25519.PrivateKey, bundleID, name, typ string) []byte {
	t.Helper()
	const schema = `{"type":"object"}`
	dir := "capabilities/" + name + "/1.0.0/"
	d := &bundle.Draft{BundleID: bundleID, Version: 1, CreatedAt: time.Now().Add(-time.Hour), Aliases: map[string]string{typ: name},
		Artifacts: []bundle.Source{
			bundle.BytesSource(dir+"input.schema.json", bundle.MediaTypeSchema, []byte(schema)),
			bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, []byte(schema))},
		Capabilities: []capability.Descriptor{{Name: name, Version: mustVersion(t, "1.0.0"),
			InputSchema:  capability.SchemaRef{ArtifactKey: dir + "input.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// installTwoClaimsOfLint trusts two publishers for different namespaces
// and installs a bundle of each claiming the legacy type "lint": the store
// keeps both claims (docs/SPEC-DECISIONS.md BUNDLE-9).
func installTwoClaimsOfLint(t *testing.T, s *resolver.Store) {
	t.Helper()
	acme, example := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{41}, 32)), ed25519.NewKeyFromSeed(bytes.Repeat([]byte{42}, 32))
	if err := s.TrustAdd("acme", acme.Public().(ed25519.PublicKey), []string{"com.acme"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", example.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{
		claimBundle(t, acme, "com.acme.tools", "com.acme.tools.check", "lint"),
		claimBundle(t, example, "org.example.tools", "org.example.tools.check", "lint"),
	} {
		if _, err := s.Import(context.Background(), bytes.NewReader(b), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAmbiguousLegacyTypeKeepsEveryClaimThroughTheSocket: the catalog
// document carried only Aliases, where a type two authorities claim is
// resolver.AmbiguousAlias, so a catalog read through the socket could
// only answer it 4002: its reader (an agent fed remotely) answered
// otherwise than one reading the store. The document now carries every
// type's claims beside Aliases (kept for older readers), and the catalog
// decoded from it resolves the type as the store's does: 4001
// ambiguous_type naming both claims. A document of an older agent, without
// the claims, still names no capability for the type (4002), never one
// claim of it.
func TestAmbiguousLegacyTypeKeepsEveryClaimThroughTheSocket(t *testing.T) {
	s, _, c := serve(t)
	installTwoClaimsOfLint(t, s)
	want := []string{"com.acme.tools.check", "org.example.tools.check"}

	local, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	remote, err := c.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for what, cat := range map[string]*resolver.Catalog{"store": local, "socket": remote} {
		if got := cat.TypeClaims("lint"); !slices.Equal(got, want) {
			t.Errorf("%s: claims of lint %v, want %v", what, got, want)
		}
		if cat.Aliases["lint"] != resolver.AmbiguousAlias {
			t.Errorf("%s: Aliases maps lint to %q, want %q for older readers", what, cat.Aliases["lint"], resolver.AmbiguousAlias)
		}
		_, err := cat.ResolveType("lint")
		var ae *amp.Error
		if amp.NameOf(err) != capability.ErrAmbiguousType || !errors.As(err, &ae) {
			t.Errorf("%s: lint resolves with %v, want %s", what, err, capability.ErrAmbiguousType)
			continue
		}
		if got := candidates(t, ae); !slices.Equal(got, want) {
			t.Errorf("%s: candidates %v, want %v", what, got, want)
		}
	}

	// The document names the claims of the ambiguous type only: every
	// other type's one claim is its aliases entry.
	doc, err := Call(c, opCatalog(), none{})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.TypeClaims) != 1 || !slices.Equal(doc.TypeClaims["lint"], want) {
		t.Fatalf("type_claims %v, want lint: %v alone", doc.TypeClaims, want)
	}

	// An older agent's document: no type_claims.
	sock := filepath.Join(t.TempDir(), "old.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(s, nil)
	srv := &http.Server{ConnContext: ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Error(err)
			return
		}
		delete(doc, "type_claims")
		b, _ := json.Marshal(doc)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(rec.Code)
		w.Write(b)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	old, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	cat, err := old.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.ResolveType("lint"); amp.CodeOf(err) != amp.CodeCapabilityNotFound {
		t.Fatalf("lint, from an older agent's document: %v; want 4002", err)
	}
}

func mustVersion(t *testing.T, s string) capability.Version {
	t.Helper()
	v, err := capability.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// candidates decodes the "candidates" of an ambiguous_type error.
func candidates(t *testing.T, e *amp.Error) []string {
	t.Helper()
	b, err := json.Marshal(e.Details)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Candidates []string `json:"candidates"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d.Candidates
}
