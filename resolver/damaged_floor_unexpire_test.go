package resolver

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestDamagedFloorNeverUnexpiresABundle: judgedFloor reads the trust
// state to compute a bundle's floor. One meta value of the wrong size
// anywhere in it (here the key_floor of a did:key the store never
// trusted) makes that read store_io (TSTATE-6); were it read as "no
// floor", every bundle its keys' floor had expired would be served again
// with the local clock set back. It is judged expired (5002
// bundle_expired at use, Bundles().Expired), read-only or writable.
func TestDamagedFloorNeverUnexpiresABundle(t *testing.T) {
	clock := testNow
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return clock }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(24 * time.Hour)
	mustImport(t, s, variant(t, 2, func(d *bundle.Draft) { d.ExpiresAt = &exp }))
	ref := descriptorRef(t, s)
	clock = testNow.Add(48 * time.Hour)
	other := variant(t, 1, func(d *bundle.Draft) {
		d.BundleID, d.CreatedAt = "org.example.other", testNow.Add(47*time.Hour)
		d.Capabilities, d.Aliases = nil, nil
		for i := range d.Artifacts {
			if d.Artifacts[i].MediaType == bundle.MediaTypeDID {
				d.Artifacts = append(d.Artifacts[:i], d.Artifacts[i+1:]...)
				break
			}
		}
	})
	mustImport(t, s, other)
	clock = testNow // the local clock set back
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleExpired) // precondition: expired by its floor
	damaged := keyFloorKey("did:key:z6MkNeverTrusted")
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bMeta).Put(damaged, []byte{1, 2, 3}) }); err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	s.Close()
	for _, readOnly := range []bool{true, false} {
		r, err := Open(path, Options{Now: func() time.Time { return clock }, ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Resolve(ref)
		expect5002(t, err, ErrBundleExpired)
		bs, err := r.Bundles()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.BundleID == "org.example.translate" && !b.Expired {
				t.Errorf("read-only %v: Bundles lists the floor-expired bundle as live with a damaged key_floor", readOnly)
			}
		}
		r.Close()
	}
}
