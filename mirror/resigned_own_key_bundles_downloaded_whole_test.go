package mirror

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// paddedBundle signs bundle id (version 1) with key, its schema padded to
// about pad bytes.
func paddedBundle(t testing.TB, id string, key ed25519.PrivateKey, pad int) []byte {
	t.Helper()
	version, err := capability.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	schema := []byte(`{"type":"object","description":"` + strings.Repeat("x", pad) + `"}`)
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: id, Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: id, Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}},
	}, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// ownKeyBundles are n bundles of the lines org.example.bNNN, each padded
// by pad bytes and signed by own, a key of the station's own.
func ownKeyBundles(t *testing.T, own ed25519.PrivateKey, n, pad int) [][]byte {
	t.Helper()
	var files [][]byte
	for i := range n {
		files = append(files, paddedBundle(t, fmt.Sprintf("org.example.b%03d", i), own, pad))
	}
	return files
}

// TestResignedOwnKeyBundlesDownloadedWholeEveryRun: a mirror with
// a signing key of its own (trusted on its station, not by the host) lists
// bundles of lines the host does not have, signed by that key, and signs
// them again for every run (same content, a new signature: fresh SHA-256s,
// so neither the store's record of refusals nor the sync's local ones
// match). Sync compares only bundle_id and version with what is installed
// (not installed: download) and the listed SHA-256 with those refusal
// records; the signatures are checked after the download, so every run
// downloads every such file in full, MaxIndexBundles of up to
// MaxBundleBytes each, though past MaxStoreRefusals none of them is even
// offered (too_many_refusals); before MIRROR-18 they were. Measured: bytes of bundle files served in
// one run listing MaxStoreRefusals+8 of them. Should: past the cap, a
// bundle file's signed manifest (its head, a ranged read) is checked
// against the store's trust before the rest is downloaded, and one not
// signed as the store requires is refused after its head only.
func TestResignedOwnKeyBundlesDownloadedWholeEveryRun(t *testing.T) {
	const extra, pad = 8, 128 << 10
	own := ownKey(9)
	files := ownKeyBundles(t, own, MaxStoreRefusals+extra, pad)
	size := int64(len(files[0]))
	cb := stationOf(t, []ed25519.PrivateKey{own}, files...)
	s := agentStore(t) // trusts testKey only
	rep, err := syncOnce(t, s, urlOf(t, cb), func(o *SyncOptions) { o.Now = func() time.Time { return testNow } })
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Count(OutcomeRefused); n != MaxStoreRefusals+extra {
		t.Fatalf("%d refused, want %d: %+v", n, MaxStoreRefusals+extra, rep.Items)
	}
	// The files offered (MaxStoreRefusals) whole; the others a head of at
	// most 64 KiB each (their signed manifests are a few hundred bytes).
	if got, most := cb.n.Load(), MaxStoreRefusals*size+extra*(64<<10); got > most {
		t.Errorf("one run downloaded %d bytes of bundle files, over %d: the %d files past the cap, not signed as the store requires, were downloaded whole (%d bytes each) only to be refused", got, most, extra, size)
	}
}
