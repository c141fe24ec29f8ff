package mirror

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// indexOfEmptyCaps is an index whose capabilities array holds n empty
// objects: 3 bytes of JSON each, 176 bytes each as an IndexCap.
func indexOfEmptyCaps(n int) []byte {
	var b bytes.Buffer
	b.Grow(3*n + 100)
	b.WriteString(`{"format":"` + IndexFormat + `","generation":1,"bundles":[],"capabilities":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// indexOfBundles is an index listing n valid bundle entries.
func indexOfBundles(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"format":"` + IndexFormat + `","generation":1,"bundles":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		id := "org.example.b" + strconv.Itoa(i)
		b.WriteString(`{"bundle_id":"` + id + `","version":1,"size":1,"sha256":"` + strings.Repeat("ab", 32) + `","href":"` + BundlesPrefix + id + `"}`)
	}
	b.WriteString(`],"capabilities":[]}`)
	return b.Bytes()
}

// A hostile mirror serves an index of the largest size a sync accepts
// (16 MiB) made of empty capability entries, which sync never uses: each
// 3 bytes used to become a 176-byte IndexCap, 5.8 GiB allocated in all. The
// sync must refuse it (bad_index, more than MaxIndexCapabilities) having
// allocated no more than a few times the index itself (reading the body):
// at most 8x.
func TestSyncIndexOfEmptyCapabilityEntriesCannotAmplifyMemory(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	body := indexOfEmptyCaps((DefaultMaxIndexBytes - 200) / 3)
	if len(body) > DefaultMaxIndexBytes {
		t.Fatalf("index of %d bytes", len(body))
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != IndexPath {
			m.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer ts.Close()
	s := agentStore(t)
	before := state(t, s)
	var err error
	n := testalloc.Least(func() { _, err = syncOnce(t, s, ts.URL, nil) })
	t.Logf("index of %d bytes: sync allocated %d MiB (%.1fx), err %v", len(body), n>>20, float64(n)/float64(len(body)), err)
	if amp.NameOf(err) != ErrBadIndex || !strings.Contains(err.Error(), "capabilities") {
		t.Fatalf("an index of %d capabilities: %v, want %s", len(body)/3, err, ErrBadIndex)
	}
	// About 2x here (the body, read whole, and its buffer's growth); 4.3x
	// under the race detector. Without the streaming decode: 350x.
	if limit := 8 * uint64(len(body)); n > limit {
		t.Errorf("a %d MiB index made the sync allocate %d MiB, over %d MiB", len(body)>>20, n>>20, limit>>20)
	}
	if state(t, s) != before {
		t.Fatal("a refused index changed the store")
	}
}

// Up to its cap, the capabilities list costs the sync nothing (it is not
// held) and DecodeIndex exactly one IndexCap per entry (no growth copies);
// one entry more is refused before it is decoded.
func TestIndexCapabilitiesCostAtMostTheirCap(t *testing.T) {
	raw := indexOfEmptyCaps(MaxIndexCapabilities)
	const slack = 64 << 10
	var ix *Index
	var err error
	if n := testalloc.Least(func() { ix, err = decodeIndex(raw, false) }); err != nil || n > slack || ix.Capabilities != nil {
		t.Errorf("sync decode of %d capabilities (%d bytes): %d bytes allocated, %d held, err %v; want at most %d, none held",
			MaxIndexCapabilities, len(raw), n, len(ix.Capabilities), err, slack)
	}
	limit := uint64(MaxIndexCapabilities)*uint64(unsafe.Sizeof(IndexCap{})) + slack
	if n := testalloc.Least(func() { ix, err = DecodeIndex(raw) }); err != nil || n > limit || len(ix.Capabilities) != MaxIndexCapabilities {
		t.Errorf("DecodeIndex of %d capabilities (%d bytes): %d bytes allocated, err %v; want at most %d", MaxIndexCapabilities, len(raw), n, err, limit)
	}
	raw = indexOfEmptyCaps(MaxIndexCapabilities + 1)
	for _, keep := range []bool{false, true} {
		if n := testalloc.Least(func() { _, err = decodeIndex(raw, keep) }); amp.NameOf(err) != ErrBadIndex || n > slack {
			t.Errorf("keep %v: %d capabilities: %v after %d bytes allocated; want %s within %d", keep, MaxIndexCapabilities+1, err, n, ErrBadIndex, slack)
		}
	}
}

// The bundles an index lists are what one sync downloads: at most
// MaxIndexBundles, the list refused (bad_index) at the first entry past it.
func TestIndexListingMoreBundlesThanTheCapIsRefused(t *testing.T) {
	ix, err := DecodeIndex(indexOfBundles(MaxIndexBundles))
	if err != nil || len(ix.Bundles) != MaxIndexBundles {
		t.Fatalf("an index of %d bundles: %v", MaxIndexBundles, err)
	}
	_, err = DecodeIndex(indexOfBundles(MaxIndexBundles + 1))
	if amp.NameOf(err) != ErrBadIndex || !strings.Contains(err.Error(), "more than "+strconv.Itoa(MaxIndexBundles)+" bundles") {
		t.Fatalf("an index of %d bundles: %v, want %s", MaxIndexBundles+1, err, ErrBadIndex)
	}
}

// The caps are part of the format: docs/FORMAT.md §11.1 names each one, so
// that a second implementation refuses what this one refuses.
func TestDocsIndexNamesItsCaps(t *testing.T) {
	sec := strings.Join(strings.Fields(formatSection(t, "### 11.1 ")), " ")
	for what, n := range map[string]int{"bundles": MaxIndexBundles, "capabilities": MaxIndexCapabilities, "statements": MaxIndexStatements} {
		if want := "`" + what + "` (at most " + thousands(n); !strings.Contains(sec, want) {
			t.Errorf("docs/FORMAT.md §11.1 does not say %q", want)
		}
	}
}

// thousands writes n with commas: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The sync reads the index with the capabilities skipped; it must accept
// every index DecodeIndex accepts, with the same bundles and statements.
func TestSyncAndDecodeIndexCannotReadAnIndexDifferently(t *testing.T) {
	h := strings.Repeat("0f", 32)
	for _, raw := range [][]byte{
		indexOfBundles(3),
		[]byte(`{"format":"` + IndexFormat + `","generation":1,"bundles":null,"capabilities":[{"id":"a:1.0.0"}],"statements":[{"content_type":"application/ampbundle-trust+cbor","size":9,"sha256":"` + h + `","href":"/statements/` + h + `"}]}`),
	} {
		checkSyncDecodeAgrees(t, raw)
	}
}

func checkSyncDecodeAgrees(t *testing.T, raw []byte) {
	t.Helper()
	full, err := DecodeIndex(raw)
	if err != nil {
		return
	}
	got, err := decodeIndex(raw, false)
	if err != nil {
		t.Fatalf("DecodeIndex accepts %q, the sync refuses it: %v", raw, err)
	}
	full.Capabilities = nil
	if !reflect.DeepEqual(full, got) {
		t.Fatalf("DecodeIndex reads %+v, the sync %+v", full, got)
	}
}
