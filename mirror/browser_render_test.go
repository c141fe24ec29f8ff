package mirror

// Threat: a browser renders something the mirror serves as a page on the
// mirror's origin, which also serves the catalog at /ui/ (CATALOG-1): a
// hostile publisher's signed bundle (a schema labelled text/html), or any
// answer a browser may sniff, runs a script in the operator's browser.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// scriptSchema is a valid JSON Schema that a browser taking it as HTML
// runs a script from.
const scriptSchema = `{"type":"object","title":"<script>document.title='pwned'</script><img src=x onerror=alert(1)>"}`

// labelledSchemaBundle signs org.example.html whose capability's schemas
// are an artifact the publisher labelled mediaType.
func labelledSchemaBundle(t testing.TB, mediaType string) []byte {
	t.Helper()
	v, err := capability.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.html", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("page.json", mediaType, []byte(scriptSchema))},
		Capabilities: []capability.Descriptor{{Name: "org.example.html", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "page.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "page.json"}}},
	}, []ed25519.PrivateKey{testKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestPublisherCannotChooseTheContentTypeOfAServedSchema: the mirror once
// served a capability's schema with the media type of the descriptor's
// schema reference, which the publisher sets (any type with a "/"). A
// signed bundle whose schema artifact is labelled text/html made the
// mirror serve its JSON as an HTML page on the origin that also serves
// the catalog: a script in a "title" ran in the operator's browser. The
// schema routes serve application/schema+json whatever the label
// (MIRROR-6).
func TestPublisherCannotChooseTheContentTypeOfAServedSchema(t *testing.T) {
	for _, mt := range []string{"text/html", "image/svg+xml", "text/xml"} {
		t.Run(strings.ReplaceAll(mt, "/", "_"), func(t *testing.T) {
			file := labelledSchemaBundle(t, mt)
			p := newStore(t)
			s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Import(context.Background(), bytes.NewReader(file), resolver.ImportOptions{}); err != nil {
				s.Close()
				t.Skipf("the store refuses a schema labelled %s (held): %v", mt, err)
			}
			s.Close()
			_, ts := startMirror(t, p, nil)
			v, _ := capability.ParseVersion("1.0.0")
			id := capability.ID{Name: "org.example.html", Version: v}
			for _, f := range []string{FileInputSchema, FileOutputSchema} {
				resp, body := get(t, http.MethodGet, ts.URL+CapabilityPath(id, f), nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d: a sound capability is not served", f, resp.StatusCode)
				}
				ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				if ct != bundle.MediaTypeSchema || !bytes.Equal(body, []byte(scriptSchema)) {
					t.Errorf("%s is served as %q: the publisher's label %s chooses how a browser renders %d bytes of JSON with a <script> on the mirror's origin",
						f, resp.Header.Get("Content-Type"), mt, len(body))
				}
			}
		})
	}
}

// forbidsSniffingAndScript reports what of nosniff and a CSP that runs
// nothing h lacks.
func forbidsSniffingAndScript(h http.Header) []string {
	var missing []string
	if h.Get("X-Content-Type-Options") != "nosniff" {
		missing = append(missing, "X-Content-Type-Options: nosniff")
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		missing = append(missing, "Content-Security-Policy: default-src 'none'")
	}
	return missing
}

// TestEveryMirrorAnswerForbidsSniffingAndScript: the mirror's origin also
// serves the catalog (CATALOG-1), so an answer a browser may render there
// must say what it is. Every answer, whatever its route and status,
// including liveness, readiness and the ACDP document, carries
// X-Content-Type-Options: nosniff and a Content-Security-Policy that runs
// nothing (default-src 'none'), set by the router before any route runs.
func TestEveryMirrorAnswerForbidsSniffingAndScript(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	_, ts := startMirror(t, p, nil)
	v, _ := capability.ParseVersion("1.1.0")
	id := capability.ID{Name: "org.example.echo", Version: v}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, IndexPath}, {http.MethodGet, WellKnownPath}, {http.MethodGet, BundlesPrefix + "org.example.echo"},
		{http.MethodGet, CapabilityPath(id, FileInputSchema)}, {http.MethodGet, CapabilityPath(id, FileDescriptorJSON)},
		{http.MethodGet, HealthPath}, {http.MethodGet, ReadyPath}, {http.MethodGet, ACDPWellKnownPath},
		{http.MethodGet, "/nothing/here"}, {http.MethodPost, IndexPath}, {http.MethodPost, HealthPath},
	} {
		resp, _ := get(t, tc.method, ts.URL+tc.path, nil)
		if missing := forbidsSniffingAndScript(resp.Header); len(missing) > 0 {
			t.Errorf("%s %s (%d, %s) lacks %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), strings.Join(missing, ", "))
		}
	}
}

// TestMirrorHandlersServedByAnotherRouterForbidSniffingAndScript: the
// well-known, ACDP and readiness answers are also served by the agent's
// router (ampagent serve): they carry the same headers there.
func TestMirrorHandlersServedByAnotherRouterForbidSniffingAndScript(t *testing.T) {
	wk, err := WellKnownHandler(AgentCapabilities("/amp/v1/messages", "/healthz", 1<<20, 16, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	acdp, err := ACDPHandler(AgentACDPCapabilities("did:web:agent.example", 1<<20, false))
	if err != nil {
		t.Fatal(err)
	}
	ready := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ServeReady(w, ReadyReport{Status: "not_ready", Problems: []ReadyProblem{{Check: "integrity", Code: "store_damaged", Message: "m"}}})
	})
	for _, tc := range []struct {
		name   string
		h      http.Handler
		method string
		path   string
	}{
		{"well-known", wk, http.MethodGet, WellKnownPath}, {"well-known 405", wk, http.MethodPost, WellKnownPath},
		{"acdp", acdp, http.MethodGet, ACDPWellKnownPath}, {"acdp 501", acdp, http.MethodPost, ACDPWellKnownPath},
		{"readyz 503", ready, http.MethodGet, ReadyPath},
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if missing := forbidsSniffingAndScript(rec.Header()); len(missing) > 0 {
			t.Errorf("%s (%d) lacks %s", tc.name, rec.Code, strings.Join(missing, ", "))
		}
	}
}
