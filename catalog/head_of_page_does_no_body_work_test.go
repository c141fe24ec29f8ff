package catalog

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// headFrom is a HEAD of target from the address remote: its status and
// body's length.
func headFrom(h http.Handler, remote, target string) (int, int) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodHead, target, nil)
	r.RemoteAddr = remote
	h.ServeHTTP(rec, r)
	return rec.Code, rec.Body.Len()
}

// admitted is how many peers a share has admitted a computation for
// (their buckets), 0 when none ever was.
func admitted(c *computeShare) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.peers)
}

// keptMatrices is how many matrices the model's memo holds.
func keptMatrices(m *Model) int {
	m.memo.mu.Lock()
	defer m.memo.mu.Unlock()
	return len(m.memo.kept)
}

// TestHeadOfACompatPageCannotComputeItsMatrix: a HEAD of /ui/compat
// computed the whole matrix (a 32-version hostile one measured 2.1 s)
// and, once kept, built every cell's findings (12 ms a request), all
// for an answer with no body, taken from the comparisons' and the
// renderings' budgets that the readers' pages need. A HEAD now answers
// from the model whether the name has a matrix: nothing computed, built
// or admitted to either budget (CATALOG-39).
func TestHeadOfACompatPageCannotComputeItsMatrix(t *testing.T) {
	const caps = 400
	clock := &stepClock{t: testNow} // nothing refills
	h, err := NewHandler(Options{Open: opener(newStore(t, flippingMatrixBundle(t, 4, 200), manyBundle(t, caps))), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const peer = "192.0.2.1:4000"
	for _, tc := range []struct {
		name, target string
		keep         bool // the matrix is computed first (kept)
		want, kept   int
	}{
		{"a matrix not computed yet", "/ui/compat?name=org.hostile.matrix", false, http.StatusOK, 0},
		{"an unknown name", "/ui/compat?name=org.nothing", false, http.StatusNotFound, 0},
		{"no name", "/ui/compat", false, http.StatusNotFound, 0},
		{"a kept matrix", "/ui/compat?name=org.hostile.matrix", true, http.StatusOK, 1},
	} {
		if tc.keep {
			if _, ok := h.Model().Matrix("org.hostile.matrix"); !ok {
				t.Fatal("no hostile matrix")
			}
		}
		code, body := headFrom(h, peer, tc.target)
		if code != tc.want || body != 0 {
			t.Errorf("%s: HEAD is %d with %d bytes, want %d and none", tc.name, code, body, tc.want)
		}
		if n := keptMatrices(h.Model()); n != tc.kept {
			t.Errorf("%s: %d matrices kept after the HEAD, want %d: the HEAD computed one", tc.name, n, tc.kept)
		}
		if a, s := admitted(h.share), admitted(h.shown); a != 0 || s != 0 {
			t.Errorf("%s: the HEAD was admitted to the comparisons (%d) or the renderings (%d)", tc.name, a, s)
		}
	}
	// A flood of HEADs of every capability at one instant: each would
	// have computed a matrix, until the peer's share was spent.
	for i := range caps {
		if code, _ := headFrom(h, peer, "/ui/compat?name="+manyName(i)); code != http.StatusOK {
			t.Fatalf("HEAD %d of a compare page: %d, want 200", i, code)
		}
	}
	if n := keptMatrices(h.Model()); n != 1 {
		t.Errorf("%d HEADs left %d matrices kept, want only the one computed first", caps, n)
	}
	if res, _ := getFrom(t, h, peer, "/ui/compat?name="+manyName(0)); res.StatusCode != http.StatusOK {
		t.Errorf("the peer's first GET after its HEADs: %d, want 200", res.StatusCode)
	}
}

// TestHeadOfASearchCannotScanTheCatalog: a HEAD of /ui/search matched
// every capability's name and kept the matches (10 ms and a slice of
// every capability of a 10,000-capability store) for an answer whose
// status depends on the query's length alone: every other page's HEAD
// took microseconds. A HEAD of a search now looks at no capability
// (CATALOG-39); a query too long is still 400.
func TestHeadOfASearchCannotScanTheCatalog(t *testing.T) {
	const caps = 4000
	h := newHandler(t, newStore(t, manyBundle(t, caps)))
	const peer = "192.0.2.1:4000"
	const bound = 64 << 10 // a scan keeps at least caps × 40 bytes: 160,000
	for _, tc := range []struct {
		name, target string
		want         int
	}{
		{"a query matching every capability", "/ui/search?q=org.many", http.StatusOK},
		{"a query matching one", "/ui/search?q=cap0001", http.StatusOK},
		{"a query too long", "/ui/search?q=" + strings.Repeat("o", MaxQuery+1), http.StatusBadRequest},
	} {
		code := 0
		per := testalloc.LeastPerRun(20, func() { code, _ = headFrom(h, peer, tc.target) })
		if code != tc.want {
			t.Errorf("%s: HEAD is %d, want %d", tc.name, code, tc.want)
		}
		t.Logf("%s: %d bytes a HEAD", tc.name, per)
		if per > bound {
			t.Errorf("%s: a HEAD allocated %d bytes, over %d: it scanned the %d capabilities", tc.name, per, bound, caps)
		}
	}
	if res, body := getFrom(t, h, peer, "/ui/search?q=org.many"); res.StatusCode != http.StatusOK || !strings.Contains(body, strconv.Itoa(caps)+" capabilities match") {
		t.Errorf("the GET of the same search: %d, not every capability matched", res.StatusCode)
	}
}
