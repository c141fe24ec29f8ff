package mirror

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"testing"
)

// TestJunkForEveryListedFileCostsOneDownloadARun: a hostile mirror
// (no key of its own needed) lists MaxIndexBundles bundles, each of the
// largest size a sync accepts (MaxBundleBytes, 1 GiB by default), and
// MaxIndexStatements statements, and serves for each file bytes that are
// not what it listed: other bytes than the listed SHA-256, or the listed
// bytes but no bundle at all, or a genuine bundle of another line. Each is
// downloaded in full, discarded (index_mismatch or the bundle's own
// error), and the next one is downloaded: index_mismatch is not a mirror
// failure, so "one stall a list" does not apply, and one run downloads up
// to 10,000 x 1 GiB (plus 10,000 x 1 MiB of statements) while installing
// nothing, at full speed or at MinDataRate (then for years), on every
// run. Should: a mirror that served a file other than the one it listed
// has failed that list: the rest of it is not tried in this run
// (mirror_unreachable, as after a stall), and the next run tries the
// failed file last (as lastFailedLast does): MIRROR-15.
func TestJunkForEveryListedFileCostsOneDownloadARun(t *testing.T) {
	const n = 5
	for _, tc := range []struct {
		name string
		list func(t *testing.T, hm *repeatMirror, i int)
	}{
		{"bundle bytes other than the listed sha-256", func(t *testing.T, hm *repeatMirror, i int) {
			hm.bundle(t, signedBundle(t, fmt.Sprintf("org.example.j%d", i), testKey))
			e := &hm.ix.Bundles[len(hm.ix.Bundles)-1]
			hm.files[e.Href] = bytes.Repeat([]byte{byte(i)}, int(e.Size))
		}},
		{"listed bytes that are no bundle", func(t *testing.T, hm *repeatMirror, i int) {
			junk := bytes.Repeat([]byte{byte(i + 1)}, 4096)
			id := fmt.Sprintf("org.example.j%d", i)
			hm.ix.Bundles = append(hm.ix.Bundles, IndexEntry{BundleID: id, Version: 1, Size: int64(len(junk)), SHA256: sum(junk), Href: BundlesPrefix + id})
			hm.files[BundlesPrefix+id] = junk
		}},
		{"a genuine bundle of another line", func(t *testing.T, hm *repeatMirror, i int) {
			other := signedBundle(t, fmt.Sprintf("org.example.other%d", i), testKey)
			id := fmt.Sprintf("org.example.j%d", i)
			hm.ix.Bundles = append(hm.ix.Bundles, IndexEntry{BundleID: id, Version: 1, Size: int64(len(other)), SHA256: sum(other), Href: BundlesPrefix + id})
			hm.files[BundlesPrefix+id] = other
		}},
		{"statement bytes other than the listed sha-256", func(t *testing.T, hm *repeatMirror, i int) {
			st := strangerRevocation(t, byte(i+1))
			hm.statement(st)
			e := hm.ix.Statements[len(hm.ix.Statements)-1]
			hm.files[e.Href] = bytes.Repeat([]byte{byte(i)}, int(e.Size))
		}},
		{"heartbeat of another version than listed", func(t *testing.T, hm *repeatMirror, i int) {
			hb := signedHeartbeat(t, uint64(2+i), "2026-11-20T11:00:00Z", testKey)
			hm.heartbeat(t, hb)
			e := &hm.ix.Heartbeats[len(hm.ix.Heartbeats)-1]
			e.BundleID = fmt.Sprintf("org.example.echo%d", i) // another line, all installed
			hm.files[e.Href] = hb
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hm := newRepeatMirror(t)
			var installed [][]byte
			for i := range n {
				tc.list(t, hm, i)
				installed = append(installed, signedBundle(t, fmt.Sprintf("org.example.echo%d", i), testKey))
			}
			ts := httptest.NewServer(hm)
			defer ts.Close()
			s := agentStore(t, installed...)
			rep, err := syncOnce(t, s, ts.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := hm.fetches.Load(); got != 1 {
				t.Fatalf("one run downloaded %d of %d listed files after the first was not what the index listed, want 1 (the rest not tried: %s); report %+v %+v %+v",
					got, n, ErrMirrorUnreachable, rep.Items, rep.Statements, rep.Heartbeats)
			}
		})
	}
}
