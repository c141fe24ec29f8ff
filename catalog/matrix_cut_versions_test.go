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

// hiddenBreakBundle signs a bundle org.hostile whose capability
// org.hostile.pay has version 1.0.0 (a.json: string properties), then
// newer versions 2.0.0 to 2.0.(newer-1), all of b.json (integer
// properties): every pair of the newer ones is fully compatible, and
// none of them with 1.0.0.
func hiddenBreakBundle(t testing.TB, newer int) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("a.json", bundle.MediaTypeSchema, propsSchema(2, "string")),
			bundle.BytesSource("b.json", bundle.MediaTypeSchema, propsSchema(2, "integer")),
		}}
	add := func(version, key string) {
		v, err := capability.ParseVersion(version)
		if err != nil {
			t.Fatal(err)
		}
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: "org.hostile.pay", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}})
	}
	add("1.0.0", "a.json")
	for i := range newer {
		add(fmt.Sprintf("2.0.%d", i), "b.json")
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestMatrixPageCannotHideTheVersionsItLeavesOut: the attack: the pages'
// matrices compare the newest DefaultMaxMatrixVersions (32) versions of
// a capability (COMPAT-24), and a publisher chooses its versions. With
// 1.0.0, the version callers use, and 32 newer patch releases of a
// breaking 2.0, the matrix held only the 2.0 releases and its page said
// "Every pair is fully compatible.", with nothing saying that 1.0.0 was
// left out; the page of 1.0.0 linked that matrix as its own. Expected:
// the matrix page says how many of how many versions it compares and
// qualifies its verdict; a version left out says so on its page. A
// capability whose versions all fit says neither.
func TestMatrixPageCannotHideTheVersionsItLeavesOut(t *testing.T) {
	h := newHandler(t, newStore(t, hiddenBreakBundle(t, DefaultMaxMatrixVersions)))
	const total = DefaultMaxMatrixVersions + 1
	cut := fmt.Sprintf("compares the newest %d of the %d versions", DefaultMaxMatrixVersions, total)
	res, body := get(t, h, http.MethodGet, "/ui/compat?name=org.hostile.pay")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("compat page: status %d", res.StatusCode)
	}
	if strings.Contains(body, ">1.0.0<") {
		t.Fatal("the matrix holds 1.0.0: the test no longer covers a cut")
	}
	if strings.Contains(body, "Every pair is fully compatible.") {
		t.Error("the matrix page says every pair is fully compatible, though 1.0.0 was not compared")
	}
	if !strings.Contains(body, cut) || !strings.Contains(body, "1 older version is not compared") {
		t.Errorf("the matrix page does not say which versions it leaves out (want %q)", cut)
	}

	for _, c := range []struct {
		version string
		left    bool
	}{{"1.0.0", true}, {"2.0.0", false}, {"2.0.31", false}} {
		res, body := get(t, h, http.MethodGet, "/ui/version?name=org.hostile.pay&v="+c.version)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("version %s: status %d", c.version, res.StatusCode)
		}
		said := strings.Contains(body, "This version is not in the compatibility matrix")
		if said != c.left {
			t.Errorf("version %s: the page says it is left out of the matrix: %v, want %v", c.version, said, c.left)
		}
		if linked := strings.Contains(body, `<a href="/ui/compat?name=org.hostile.pay">`); !linked {
			t.Errorf("version %s: the page does not link the matrix", c.version)
		}
	}

	// A guard: the versions of a capability that all fit in its matrix
	// are compared, and its page says nothing of a cut.
	h = newHandler(t, newStore(t, hiddenBreakBundle(t, 3)))
	_, body = get(t, h, http.MethodGet, "/ui/compat?name=org.hostile.pay")
	if !strings.Contains(body, ">1.0.0<") || strings.Contains(body, "not compared") {
		t.Error("a matrix of 4 versions left one out, or says it did")
	}
	_, body = get(t, h, http.MethodGet, "/ui/version?name=org.hostile.pay&v=1.0.0")
	if strings.Contains(body, "This version is not in the compatibility matrix") {
		t.Error("a version within the matrix says it is left out")
	}
}
