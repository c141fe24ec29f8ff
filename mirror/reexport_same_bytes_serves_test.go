package mirror

import (
	"io"
	"net/http"
	"testing"
)

// TestReexportOfTheSameBytesKeepsTheBundleServed: MIRROR-25 serves a
// bundle only from the very file export wrote. A refresh that exports the
// same bytes again (a bundle whose key changed but not its bytes; every
// bundle, when the store's listing has no manifest hash, as an older
// agent's admin socket answers) renamed a new file over the served one,
// and until the new snapshot was stored (for ever, if that refresh then
// failed) every request for the bundle was answered 500. The file still
// at the name, the one the snapshot serves, is kept.
func TestReexportOfTheSameBytesKeepsTheBundleServed(t *testing.T) {
	v1 := testBundle(t, 1)
	m, ts := startMirror(t, newStore(t, v1), nil)
	get := func() int {
		resp, err := http.Get(ts.URL + BundlesPrefix + "org.example.echo")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get(); s != http.StatusOK {
		t.Fatalf("before: %d", s)
	}
	src, err := m.opts.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap := m.current()
	b := snap.bundles["org.example.echo"]
	if _, err := m.export(src, "org.example.echo", b.key+"x", snap); err != nil {
		t.Fatal(err)
	}
	if s := get(); s != http.StatusOK {
		t.Errorf("the served snapshot's bundle answers %d after an export of the same bytes", s)
	}
}
