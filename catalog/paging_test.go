package catalog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// manyArtifactsBundle signs org.hostile with n small schema
// artifacts and one capability.
func manyArtifactsBundle(t testing.TB, n int) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	d := &bundle.Draft{BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for i := range n {
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(fmt.Sprintf("a%05d.json", i), bundle.MediaTypeSchema,
			[]byte(fmt.Sprintf(`{"title":"%d"}`, i))))
	}
	d.Capabilities = []capability.Descriptor{{Name: "org.hostile.many", Version: v,
		InputSchema: capability.SchemaRef{ArtifactKey: "a00000.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "a00000.json"}}}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// manyVersionsBundle signs org.hostile with n versions of one
// capability org.hostile.v.
func manyVersionsBundle(t testing.TB, n int) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}}
	for i := range n {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: "org.hostile.v", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestHostileVersionCountCannotMakeCapabilityPagesUnbounded: one signed
// bundle may hold 10,000 versions of one capability, and the capability
// page, and its row in the index and search tables, linked every one of
// them. The capability page pages them at PageSize; a row links the
// first RowVersions and says how many more.
func TestHostileVersionCountCannotMakeCapabilityPagesUnbounded(t *testing.T) {
	h := newHandler(t, newStore(t, manyVersionsBundle(t, 3*PageSize)))
	for _, p := range []string{"/ui/cap?name=org.hostile.v", "/ui/", "/ui/search?q=org.hostile.v"} {
		res, body := get(t, h, http.MethodGet, p)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", p, res.StatusCode)
		}
		if n := strings.Count(body, `href="/ui/version?name=org.hostile.v&amp;v=`); n > PageSize {
			t.Errorf("%s links %d versions of one hostile capability in one %d-byte answer, over the %d rows of a page: "+
				"at %d versions a publisher makes it ~%d KiB per request",
				p, n, len(body), PageSize, bundle.MaxCapabilities, len(body)/n*bundle.MaxCapabilities>>10)
		}
	}
}

// TestHostileManifestListsCannotMakeTheBundlePageUnbounded: a bundle may
// carry 100,000 artifacts and 10,000 capabilities (bundle.MaxArtifacts,
// MaxCapabilities), and the bundle page listed them all at once: a
// ~19 MiB page built on every request by anyone, 16 at once. Each list of
// the page is paged at PageSize (CATALOG-4), by its own parameter.
func TestHostileManifestListsCannotMakeTheBundlePageUnbounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		file func(testing.TB) []byte
		id   string
		rows func(string) int
		max  int
	}{
		{"artifacts", func(t testing.TB) []byte { return manyArtifactsBundle(t, 3*PageSize) }, "org.hostile",
			func(body string) int { return strings.Count(body, `<tr><th scope="row">a`) }, bundle.MaxArtifacts},
		{"capabilities", func(t testing.TB) []byte { return manyBundle(t, 3*PageSize) }, "org.many",
			func(body string) int { return strings.Count(body, `<li>org.many.cap`) }, bundle.MaxCapabilities},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler(t, newStore(t, tc.file(t)))
			res, body := get(t, h, http.MethodGet, "/ui/bundle?id="+tc.id)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			if n := tc.rows(body); n > PageSize {
				t.Errorf("the bundle page lists %d %s of a hostile manifest in one %d-byte answer, over the %d rows of a page: "+
					"at the manifest's bound (%d) a publisher makes every view of its bundle page ~%d KiB",
					n, tc.name, len(body), PageSize, tc.max, len(body)/n*tc.max>>10)
			}
		})
	}
}

// TestHostileListOnOneLineIsCut: a descriptor may carry any number of
// supported ranges (the manifest's size bounds them), each shown joined
// on one line of the bundle and version pages: join shows MaxJoined and
// counts the others.
func TestHostileListOnOneLineIsCut(t *testing.T) {
	ranges := make([]string, 5000)
	for i := range ranges {
		ranges[i] = fmt.Sprintf(">=1.%d.0", i)
	}
	got := join(ranges)
	if n := strings.Count(got, ">="); n != MaxJoined || !strings.HasSuffix(got, fmt.Sprintf(", and %d more", len(ranges)-MaxJoined)) {
		t.Errorf("join of %d items shows %d of them (%d bytes), want %d and the count of the others", len(ranges), n, len(got), MaxJoined)
	}
	if got := join([]string{"a", "b"}); got != "a, b" {
		t.Errorf("join of two items: %q", got)
	}
}

// TestPagerLinksDoNotEchoAnotherListsRawParameter: the links of one list
// of the bundle page keep the other lists' page parameters as the peer
// sent them (listsOf keep: q.Get(p) copied), not as the page numbers
// paged parsed: /ui/bundle?...&capabilities_page=<any 1 KB text> puts that
// text into every Prev/Next link of the artifacts list, which the page
// then offered as its own link (rule: never echo raw input). The links
// now keep the page number each list shows (pageNumber), and nothing for
// a first page.
func TestPagerLinksDoNotEchoAnotherListsRawParameter(t *testing.T) {
	h := newHandler(t, newStore(t, manyArtifactsBundle(t, 2*PageSize+10)))
	const marker = "PeerChosenTextEchoedIntoLinks"
	res, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile&capabilities_page="+marker)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if !strings.Contains(body, "artifacts_page=2") {
		t.Fatalf("the artifacts list has no link to its page 2:\n%.2000s", body)
	}
	if strings.Contains(body, marker) {
		t.Errorf("the page echoes a peer's raw capabilities_page value into its links (%d times)", strings.Count(body, marker))
	}
	// A page number out of range, or not written as shown, is not echoed.
	for _, q := range []string{"artifacts_page=000000099", "artifacts_page=2&capabilities_page=000000099&aliases_page=000000099"} {
		_, body = get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile&"+q)
		if strings.Contains(body, "000000099") {
			t.Errorf("?%s: a page parameter is echoed as sent:\n%.2000s", q, body)
		}
	}
}
