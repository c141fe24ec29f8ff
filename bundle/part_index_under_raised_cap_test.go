package bundle_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// TestPartIndexOfAnotherBundleIsNotPassedUnderARaisedCap: the attack.
// A key trusted for org.other signs a part index naming
// org.other.bbbb version 77 over the parts of org.example.demo's 18 MiB
// bundle (its signed manifest 18,876,296 bytes). The parts reader's check
// that the index names the bundle its parts carry (CheckCarries,
// docs/SPEC-DECISIONS.md BUNDLE-14) reads the head through
// bundle.Identify, at most 16 MiB, and passes a head it cannot read on
// to the bundle reader; a reader whose cap was raised to 32 MiB then
// verified org.example.demo under an index of another bundle, and its
// caller reported the split as signed by "other". Expected: the raised
// cap is refused, limit_exceeded, before the parts are read further
// (BUNDLE-33); the default cap refuses the bundle, limit_exceeded, as
// before.
func TestPartIndexOfAnotherBundleIsNotPassedUnderARaisedCap(t *testing.T) {
	file := bundle.OverStoreCapFileForTest(t)
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	p := &bundle.Policy{Keys: []bundle.TrustedKey{
		{Name: "k", Key: k.Public().(ed25519.PublicKey), Scopes: []string{"org.example"}},
		{Name: "other", Key: other.Public().(ed25519.PublicKey), Scopes: []string{"org.other"}},
	}}
	dir := t.TempDir()
	sum := sha256.Sum256(file)
	x := &bundle.PartIndex{Format: bundle.PartsFormat, BundleID: "org.other.bbbb", Version: 77, Name: "s.ampb", Size: uint64(len(file)), SHA256: sum[:]}
	const partSize = 8 << 20
	n := (len(file) + partSize - 1) / partSize
	var paths []string
	for i := range n {
		part := file[i*partSize : min(len(file), (i+1)*partSize)]
		h := sha256.Sum256(part)
		name := bundle.PartName(x.Name, i+1, n)
		x.Parts = append(x.Parts, bundle.PartEntry{Name: name, Size: uint64(len(part)), SHA256: h[:]})
		paths = append(paths, filepath.Join(dir, name))
		if err := os.WriteFile(paths[i], part, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	signed, err := bundle.SignPartIndex(x, []ed25519.PrivateKey{other})
	if err != nil {
		t.Fatal(err)
	}
	x, signers, err := bundle.ReadPartIndex(bytes.NewReader(signed), p)
	if err != nil || len(signers) != 1 || signers[0] != "other" {
		t.Fatalf("the index of another bundle: %v %v", signers, err)
	}
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	for _, cap := range []int64{32 << 20, 0} {
		located, err := bundlebuild.LocateParts(x, paths)
		if err != nil {
			t.Fatal(err)
		}
		pr := bundlebuild.NewPartsReader(x, located)
		r, err := bundle.NewReader(pr, bundle.ReaderOptions{Policy: p, Now: now, MaxManifestSize: cap})
		if err == nil {
			err = r.VerifyRest()
		}
		if err == nil {
			t.Fatalf("cap %d: %s version %d verified through parts whose index, signed by %v, names %s version %d",
				cap, r.Manifest().BundleID, r.Manifest().Version, signers, x.BundleID, x.Version)
		}
		if e, ok := err.(*amp.Error); !ok || e.Name != bundle.ErrTooLarge {
			t.Fatalf("cap %d: %v, want %s", cap, err, bundle.ErrTooLarge)
		}
	}
}
