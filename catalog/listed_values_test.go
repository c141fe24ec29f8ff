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

// listedBundle signs org.hostile with versions 1.0.0 and 2.0.0 of
// org.hostile.listed whose schemas list the same n numbers 0e400, 1e400
// ... (the largest exponent a bundle's schema may hold), the second in
// reverse order: 9 bytes a value.
func listedBundle(t testing.TB, n int) []byte {
	t.Helper()
	up, down := make([]string, n), make([]string, n)
	for i := range n {
		up[i] = fmt.Sprintf("%de400", i)
		down[n-1-i] = up[i]
	}
	d := &bundle.Draft{BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("up.json", bundle.MediaTypeSchema, []byte(`{"enum":[`+strings.Join(up, ",")+`]}`)),
			bundle.BytesSource("down.json", bundle.MediaTypeSchema, []byte(`{"enum":[`+strings.Join(down, ",")+`]}`)),
		}}
	for i, key := range []string{"up.json", "down.json"} {
		v, err := capability.ParseVersion(fmt.Sprintf("%d.0.0", i+1))
		if err != nil {
			t.Fatal(err)
		}
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: "org.hostile.listed", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestHostileListedValuesCannotMakeAComparePageOutlastItsBudget: the
// compare page's matrix is held to DefaultMaxMatrixSteps comparisons,
// but the checker counts a step per subset call, and one call compares
// every listed value of one schema with every one of the other, each
// number parsed with big.Rat (1e400 expanded) per comparison. Two 3.6
// KB schemas of 400 such values cost seconds of CPU a request, within a
// handful of steps; by n², the 256 KiB a kept schema may have, ~45 min a
// check. Any anonymous peer asks for it. The checker now compares listed
// values by canonical forms read once (compat's listedOf) and charges
// its passes over lists to the budget: the page costs a fraction of a
// second.
func TestHostileListedValuesCannotMakeAComparePageOutlastItsBudget(t *testing.T) {
	h := newHandler(t, newStore(t, listedBundle(t, 400)))
	start := time.Now()
	res, _ := get(t, h, http.MethodGet, "/ui/compat?name=org.hostile.listed")
	took := time.Since(start)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if took > time.Second {
		t.Errorf("/ui/compat of two versions whose 3.6 KB schemas list 400 numbers took %v of CPU for an anonymous GET", took)
	}
}
