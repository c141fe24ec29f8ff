package catalog

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkIndexPage1000Capabilities: GET /ui/ over loopback against a
// store holding 1,000 capabilities (docs/PERFORMANCE.md, target p50 at
// most 50 ms). The store and the model are built once, outside the timer.
func BenchmarkIndexPage1000Capabilities(b *testing.B) {
	h := newHandler(b, newStore(b, manyBundle(b, 1000)))
	if n := len(h.Model().Capabilities); n != 1001 {
		b.Fatalf("%d capabilities", n)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := client.Get(srv.URL + Prefix)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("status %d, %d bytes", res.StatusCode, n)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	p50 := took[len(took)/2]
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p50)/float64(50*time.Millisecond), "p50/target")
}

// BenchmarkDeepSchemaPageRatio: GET of the schema page of the 27 KB
// schema of TestDeepSchemaPageIsLinearInSchemaSize (20 levels of 500-byte
// keys, then 2,000 members); reports the page's bytes per schema byte
// (was 1500 before the anchors were hashed; the tests bound it at 64).
func BenchmarkDeepSchemaPageRatio(b *testing.B) {
	schema := longKeySchema()
	h := newHandler(b, newStore(b, deepBundle(b, schema)))
	rec := 0
	for b.Loop() {
		res, body := getB(h, "/ui/schema?b=org.hostile&k=deep.json")
		if res != http.StatusOK {
			b.Fatalf("status %d", res)
		}
		rec = len(body)
	}
	b.ReportMetric(float64(rec)/float64(len(schema)), "page-bytes/schema-byte")
}

// getB GETs target from h.
func getB(h http.Handler, target string) (int, []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.Bytes()
}
