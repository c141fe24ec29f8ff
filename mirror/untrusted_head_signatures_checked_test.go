package mirror

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// alteredHeads serves bundle files whose answer starts at byte 0 with the
// first from in them replaced by to (same length): a signed manifest
// altered after it was signed, so that none of its signatures verifies.
type alteredHeads struct {
	h        http.Handler
	from, to []byte
}

func (a *alteredHeads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rg := r.Header.Get("Range")
	if !strings.HasPrefix(r.URL.Path, BundlesPrefix) || (rg != "" && !strings.HasPrefix(rg, "bytes=0-")) {
		a.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(bytes.Replace(rec.Body.Bytes(), a.from, a.to, 1))
}

// TestHeadsNoTrustedKeySignsHaveEverySignatureChecked: a mirror lists
// bundle files signed only by keys the store does not trust. Each head
// had every signature it carries checked (up to bundle.MaxSignatures
// Ed25519 checks over a signed manifest of up to 16 MiB) before the
// store's trust was asked whether any of them counts: CPU for nothing,
// for each of 10,000 heads a run. The trust is now asked first, and a
// head no trusted key signs is refused untrusted_key with none of its
// signatures checked: here a head whose signatures do not verify is
// refused untrusted_key, not bad_signature (which also ended the list).
func TestHeadsNoTrustedKeySignsHaveEverySignatureChecked(t *testing.T) {
	own := ownKey(126)
	var files [][]byte
	for i := range 2 {
		files = append(files, paddedBundle(t, fmt.Sprintf("org.example.own%d", i), own, 1<<10))
	}
	stamp := []byte("2026-11-01T00:00:00Z")
	if i := bytes.Index(files[0], stamp); i < 0 || i > bundleHeadBytes {
		t.Fatalf("the signed manifest's created_at is not in the head as text (at %d)", i)
	}
	m := stationOf(t, []ed25519.PrivateKey{own}, files...)
	s := agentStore(t)
	rep, err := syncOnce(t, s, urlOf(t, &alteredHeads{h: m, from: stamp, to: []byte("2026-11-01T00:00:01Z")}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Items) != len(files) {
		t.Fatalf("%+v; want %d bundle items", rep.Items, len(files))
	}
	for _, it := range rep.Items {
		if it.Error != string(bundle.ErrUntrustedKey) {
			t.Fatalf("%+v; want refused %s, its signatures unchecked (no trusted key signs it)", it, bundle.ErrUntrustedKey)
		}
	}
}
