package mirror

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestPartialLeftByAnotherMirrorDoesNotSpoilAnHonestOnesFile: a
// host syncs from two mirrors into one store (supported: each keeps its
// own record of failed files), the spool folder shared. Mirror A is
// hostile: it lists the same bundle files as the honest mirror B (same
// bundle_id, size and SHA-256: B's index is public) and serves each cut
// off after a prefix of junk. The spool keeps that prefix, named by
// bundle_id and SHA-256 only, and the next sync from B resumes it with a
// Range request: B's genuine rest spliced after A's junk fails the hash
// check, the file is discarded and refused index_mismatch, and, since a
// file other than the one listed fails the list, B's other bundles are
// not tried either. A, run between B's runs, does it again each time: B
// never delivers. Should: a resumed file whose hash differs is
// downloaded once more whole before it is refused (the kept prefix may be
// what differs), so B's sync imports every bundle (MIRROR-15).
func TestPartialLeftByAnotherMirrorDoesNotSpoilAnHonestOnesFile(t *testing.T) {
	x, y := signedBundle(t, "org.example.x", testKey), signedBundle(t, "org.example.y", testKey)
	_, b := startMirror(t, newStore(t, x, y), nil)
	hm := newRepeatMirror(t)
	hm.bundle(t, x)
	hm.bundle(t, y)
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, BundlesPrefix) {
			data := hm.files[r.URL.Path]
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(bytes.Repeat([]byte{0x5a}, len(data)/2)) // then cut off
			return
		}
		hm.ServeHTTP(w, r)
	}))
	defer a.Close()
	s := agentStore(t)
	if _, err := syncOnce(t, s, a.URL, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, b.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Count(OutcomeImported); n != 2 {
		t.Fatalf("sync from the honest mirror after the hostile one: %d of 2 bundles imported: %+v", n, rep.Items)
	}
}
