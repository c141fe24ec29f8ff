package mirror

// The station every test of what a bundle file's head costs a sync syncs
// from (docs/SPEC-DECISIONS.md MIRROR-18, MIRROR-21..24): one helper, so
// that those tests differ only in what they list and how the mirror
// answers.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// ownKey is a TEST-ONLY signing key of a station's own (seed n), which
// agentStore does not trust.
func ownKey(n byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{n}, ed25519.SeedSize))
}

// stationOf is a station store trusting each of keys for org.example and
// holding files (each signed by one of them), served by a mirror whose
// bundle bytes are counted.
func stationOf(t *testing.T, keys []ed25519.PrivateKey, files ...[]byte) *countBundleBytes {
	t.Helper()
	p := filepath.Join(t.TempDir(), "station.db")
	st, err := resolver.Open(p, resolver.Options{Create: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, k := range keys {
		if err := st.TrustAdd(fmt.Sprintf("station%d", i), k.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if _, err := st.Import(context.Background(), bytes.NewReader(f), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	m, _ := startMirror(t, p, nil)
	return &countBundleBytes{h: m}
}

// urlOf serves h on 127.0.0.1 until the test ends and returns its URL.
func urlOf(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// countBundleBytes counts the body bytes h writes for bundle files.
type countBundleBytes struct {
	h http.Handler
	n atomic.Int64
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

func (w countingWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (c *countBundleBytes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, BundlesPrefix) {
		w = countingWriter{w, &c.n}
	}
	c.h.ServeHTTP(w, r)
}
