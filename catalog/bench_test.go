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
