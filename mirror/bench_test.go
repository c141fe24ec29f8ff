package mirror

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The mirror load benchmark (docs/PERFORMANCE.md): 64 concurrent clients
// GET one descriptor over loopback keep-alive connections, against the
// mirror and against the baseline primitive, a minimal net/http file
// server serving the same bytes from a file, in the same run.

const benchClients = 64

func benchGET(b *testing.B, url string) {
	tr := &http.Transport{MaxIdleConns: benchClients, MaxIdleConnsPerHost: benchClients, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	par := benchClients / max(1, testingProcs())
	b.SetParallelism(max(1, par))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

func BenchmarkMirrorDescriptorGET64(b *testing.B) {
	_, ts := startMirror(b, newStore(b, testBundle(b, 1)), func(o *Options) { o.MaxInFlight = 4096 })
	benchGET(b, ts.URL+"/cap-registry/org.example.echo/1.1.0/descriptor.cbor")
}

func BenchmarkBaselineFileServerGET64(b *testing.B) {
	// The same descriptor bytes, served by http.FileServer.
	m, _ := startMirror(b, newStore(b, testBundle(b, 1)), nil)
	f := m.cur.Load().files["/cap-registry/org.example.echo/1.1.0/descriptor.cbor"]
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "descriptor.cbor"), f.body, 0o644); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer ts.Close()
	benchGET(b, ts.URL+"/descriptor.cbor")
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
