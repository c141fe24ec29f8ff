package agh

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// storeCatalog is n capabilities as FromCatalog projects a store's: an
// id, a version, a summary, an outcome and three ampbundle.* members.
func storeCatalog(n int) []Capability {
	out := make([]Capability, 0, n)
	h := json.RawMessage(`"sha-256:` + strings.Repeat("ab", 32) + `"`)
	for i := range n {
		id := fmt.Sprintf("org.example.c%05d:1.0.0", i)
		out = append(out, Capability{ID: id, Version: "1.0.0", Summary: fmt.Sprintf("org.example.c%05d version 1.0.0", i),
			Outcome: "A result valid against the output schema of " + id + ", verified offline.",
			Extra:   map[string]json.RawMessage{KeyBundleID: json.RawMessage(`"org.example"`), KeyInputSchema: h, KeyOutputSchema: h}})
	}
	return out
}

// bodyWriter is a ResponseWriter that keeps the status, counts the body
// and copies it only when asked to (so that measuring a request does not
// count the test's own buffer).
type bodyWriter struct {
	h      http.Header
	status int
	n      int
	keep   *bytes.Buffer
}

func (w *bodyWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}
func (w *bodyWriter) WriteHeader(s int) { w.status = s }
func (w *bodyWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	if w.keep != nil {
		w.keep.Write(b)
	}
	return len(b), nil
}

// TestRepeatedRequestsOfAnUnchangedCatalogDoNotRebuildTheAnswer: attack:
// the peer card and the catalog were built and encoded whole at every
// request. For a catalog of 2,000 capabilities (an answer of about 1 MiB,
// under MaxBytes, so AGH-16 lets it be built) one anonymous GET of the
// catalog cost 26 MiB and 200,000 allocations (the digest of every
// capability, and the answer encoded twice), the peer card 1.8 MiB, and
// the routes take as many requests at once as the listener lets in. The
// handler now keeps both answers for the catalog it built them of and
// builds them again only when Catalog returns another (AGH-19): a request
// of an unchanged catalog costs its headers, and the answer follows a
// changed catalog.
func TestRepeatedRequestsOfAnUnchangedCatalogDoNotRebuildTheAnswer(t *testing.T) {
	cat := storeCatalog(2000)
	var mu sync.Mutex
	current := func() ([]Capability, error) { mu.Lock(); defer mu.Unlock(); return cat, nil }
	h := NewHandler(HandlerOptions{Catalog: current, Signer: &Signer{Key: testKey(1)}, Now: clock})
	get := func(target string, keep bool) *bodyWriter {
		w := &bodyWriter{}
		if keep {
			w.keep = &bytes.Buffer{}
		}
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		return w
	}
	for _, target := range []string{PeerCardPath, CatalogPath} {
		first := get(target, true)
		if first.status != http.StatusOK || first.n < 200_000 {
			t.Fatalf("%s: %d, %d bytes", target, first.status, first.n)
		}
		// The answer is kept since the first request: every request
		// after it is the same work.
		const requests = 8
		per := testalloc.LeastPerRun(requests, func() {
			if w := get(target, false); w.status != http.StatusOK || w.n != first.n {
				t.Fatalf("%s: %d, %d bytes, want the first answer's %d", target, w.status, w.n, first.n)
			}
		})
		// Budget: the request and its headers, never the answer again
		// (before: 1.8 MiB for the card, 26 MiB for the catalog).
		if budget := uint64(64 << 10); per > budget {
			t.Errorf("%s of an unchanged catalog allocated %d KiB a request (budget %d KiB)", target, per>>10, budget>>10)
		}
		if again := get(target, true); !bytes.Equal(again.keep.Bytes(), first.keep.Bytes()) {
			t.Errorf("%s: the kept answer differs from the first", target)
		}
	}
	// A changed catalog (a new slice) is answered anew.
	mu.Lock()
	cat = append(cat[:len(cat):len(cat)], Capability{ID: "org.example.new:1.0.0", Summary: "New.", Outcome: "o"})
	mu.Unlock()
	for _, target := range []string{PeerCardPath, CatalogPath} {
		if w := get(target, true); w.status != http.StatusOK || !strings.Contains(w.keep.String(), "org.example.new:1.0.0") {
			t.Errorf("%s after the catalog changed: %d, the new capability missing", target, w.status)
		}
	}
}

// blockingRand is a random source whose first hold reads tell entered
// and wait for release; later reads return at once.
type blockingRand struct {
	hold    atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (b *blockingRand) Read(p []byte) (int, error) {
	if b.hold.Add(-1) >= 0 {
		b.entered <- struct{}{}
		<-b.release
	}
	for i := range p {
		p[i] = 7
	}
	return len(p), nil
}

// TestAnswersBuiltAtOnceAreBounded: attack: a narrowed catalog or a
// transfer is built for its request (up to some 25 times an answer of
// MaxBytes each: a catalog of 1 MiB cost 26 MiB), and the handler built
// as many at once as requests arrived, so many connections each asking
// cost that many times over. At most MaxBuilding are now built at once;
// a request that finds them all taken is refused at once, 503 overloaded
// with Retry-After: 1, and a kept answer is still served (AGH-19).
func TestAnswersBuiltAtOnceAreBounded(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	cat := storeCatalog(20)
	rnd := &blockingRand{entered: make(chan struct{}), release: make(chan struct{})}
	rnd.hold.Store(2)
	h := NewHandler(HandlerOptions{Catalog: func() ([]Capability, error) { return cat, nil }, Signer: &Signer{Key: key},
		Now: func() time.Time { return envNow }, Rand: rnd, MaxBuilding: 2})
	serve := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec
	}
	if rec := serve(PeerCardPath); rec.Code != http.StatusOK { // kept before the builds are taken
		t.Fatalf("peer card: %d", rec.Code)
	}
	var wg sync.WaitGroup
	held := make([]*httptest.ResponseRecorder, 2)
	for i := range held {
		wg.Add(1)
		go func() { defer wg.Done(); held[i] = serve(CapabilityPrefix + cat[i].ID) }()
		<-rnd.entered // this transfer's build is under way, and waits
	}
	for _, tc := range []struct {
		target string
		want   int
		code   string
	}{
		{CapabilityPrefix + cat[3].ID, http.StatusServiceUnavailable, "overloaded"},
		{CatalogPath + "?id=" + cat[4].ID, http.StatusServiceUnavailable, "overloaded"},
		{PeerCardPath, http.StatusOK, ""},
		{CatalogPath, http.StatusOK, ""},
		{CapabilityPrefix + "org.example.none:1.0.0", http.StatusServiceUnavailable, "overloaded"},
		{"/agh/v0/other", http.StatusNotFound, "not_found"},
	} {
		rec := serve(tc.target)
		if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.code) {
			t.Errorf("%s with every build taken: %d %.80s, want %d %s", tc.target, rec.Code, rec.Body, tc.want, tc.code)
		}
		if tc.code == "overloaded" && rec.Header().Get("Retry-After") != "1" {
			t.Errorf("%s: overloaded without Retry-After: 1", tc.target)
		}
	}
	close(rnd.release)
	wg.Wait()
	for i, rec := range held {
		if rec.Code != http.StatusOK {
			t.Errorf("held transfer %d: %d %.80s", i, rec.Code, rec.Body)
		}
	}
	if rec := serve(CapabilityPrefix + cat[3].ID); rec.Code != http.StatusOK {
		t.Errorf("a transfer once the builds are free: %d %.80s", rec.Code, rec.Body)
	}
}
