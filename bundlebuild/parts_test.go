package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// bigDraft is smallDraft plus n filler artifacts of size bytes each.
func bigDraft(t testing.TB, id string, n, size int) *bundle.Draft {
	d := smallDraft(t)
	d.BundleID = id
	for i := range n {
		b := bytes.Repeat([]byte{byte(i), byte(i >> 8), id[len(id)-1], 0xa5}, size/4)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource("blobs/"+bundle.PartName("f", i+1, n)+".bin", "application/octet-stream", b))
	}
	for i := range d.Capabilities {
		d.Capabilities[i].Name = id + ".echo"
	}
	d.Aliases = nil
	d.Publisher = ""
	var arts []bundle.Source
	for _, a := range d.Artifacts {
		if a.MediaType != bundle.MediaTypeDID {
			arts = append(arts, a)
		}
	}
	d.Artifacts = arts
	return d
}

// splitTo builds d, writes it to dir/name and splits it into parts of
// partSize in the folder parts.
func splitTo(t testing.TB, d *bundle.Draft, k ed25519.PrivateKey, dir, name string, partSize int64) (file []byte, index string, x *bundle.PartIndex) {
	t.Helper()
	file = build(t, d, k)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	parts := filepath.Join(dir, "parts")
	os.MkdirAll(parts, 0o755)
	index, x, err := SplitFile(path, parts, partSize, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	return file, index, x
}

func openIndex(t testing.TB, path string, p *bundle.Policy) *bundle.PartIndex {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x, _, err := bundle.ReadPartIndex(f, p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// readParts locates and streams the parts, verifying the bundle inside.
func readParts(x *bundle.PartIndex, p *bundle.Policy, paths ...string) error {
	found, err := LocateParts(x, paths)
	if err != nil {
		return err
	}
	pr := NewPartsReader(x, found)
	defer pr.Close()
	r, err := bundle.NewReader(pr, bundle.ReaderOptions{Policy: p, Now: func() time.Time { return testNow }, AllowDelta: true})
	if err == nil {
		err = r.VerifyRest()
	}
	return pr.Explain(err)
}

// TestSplitPartsInAnyOrderFromSeveralFolders: parts scattered over
// folders verify in index order; the concatenation is the file.
func TestSplitPartsInAnyOrderFromSeveralFolders(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	file, index, x := splitTo(t, bigDraft(t, "org.example.split", 6, 100<<10), k, dir, "s.ampb", bundle.MinPartSize)
	if len(x.Parts) < 5 {
		t.Fatalf("%d parts", len(x.Parts))
	}
	p := trust(k, "org.example")
	if got := openIndex(t, index, p); got.Size != uint64(len(file)) {
		t.Fatalf("index size %d, file %d", got.Size, len(file))
	}
	// Move the odd parts to another "mount".
	other := filepath.Join(dir, "mount2")
	os.MkdirAll(other, 0o755)
	var joined []byte
	for i, e := range x.Parts {
		src := filepath.Join(dir, "parts", e.Name)
		b, _ := os.ReadFile(src)
		joined = append(joined, b...)
		if i%2 == 1 {
			if err := os.Rename(src, filepath.Join(other, e.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !bytes.Equal(joined, file) {
		t.Fatal("the parts concatenated are not the file")
	}
	if err := readParts(x, p, other, filepath.Join(dir, "parts")); err != nil {
		t.Fatal(err)
	}
	// The index signed by an untrusted key is refused.
	f, _ := os.Open(index)
	defer f.Close()
	if _, _, err := bundle.ReadPartIndex(f, trust(testKey(2), "*")); !errors.Is(err, bundle.ErrUntrustedKey) {
		t.Fatalf("index under another key: %v", err)
	}
}

// TestPartSwappedBetweenBundles: a part of the same name and size from
// the split of another bundle is named as the bad part.
func TestPartSwappedBetweenBundles(t *testing.T) {
	k := testKey(1)
	a, b := t.TempDir(), t.TempDir()
	_, _, xa := splitTo(t, bigDraft(t, "org.example.aaaa", 6, 100<<10), k, a, "s.ampb", bundle.MinPartSize)
	_, _, xb := splitTo(t, bigDraft(t, "org.example.bbbb", 6, 100<<10), k, b, "s.ampb", bundle.MinPartSize)
	if len(xa.Parts) != len(xb.Parts) {
		t.Fatalf("the two splits differ in part count: %d, %d", len(xa.Parts), len(xb.Parts))
	}
	for _, i := range []int{0, 2, len(xa.Parts) - 1} {
		if xa.Parts[i].Size != xb.Parts[i].Size {
			continue
		}
		dir := t.TempDir()
		for j, e := range xa.Parts {
			src := filepath.Join(a, "parts", e.Name)
			if j == i {
				src = filepath.Join(b, "parts", e.Name)
			}
			data, _ := os.ReadFile(src)
			os.WriteFile(filepath.Join(dir, e.Name), data, 0o644)
		}
		err := readParts(xa, trust(k, "org.example"), dir)
		var e *amp.Error
		if !errors.As(err, &e) || e.Name != bundle.ErrPartMismatch || !bytes.Contains([]byte(e.Message), []byte(xa.Parts[i].Name)) {
			t.Fatalf("part %d swapped: %v", i+1, err)
		}
	}
}

// TestPartTruncated: a truncated part is named before anything is read;
// one truncated while being read is named too.
func TestPartTruncated(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	_, _, x := splitTo(t, bigDraft(t, "org.example.trunc", 6, 100<<10), k, dir, "s.ampb", bundle.MinPartSize)
	victim := filepath.Join(dir, "parts", x.Parts[2].Name)
	data, _ := os.ReadFile(victim)
	os.WriteFile(victim, data[:len(data)-1], 0o644)
	err := readParts(x, trust(k, "org.example"), filepath.Join(dir, "parts"))
	if !errors.Is(err, bundle.ErrPartMismatch) || !bytes.Contains([]byte(err.Error()), []byte(x.Parts[2].Name)) {
		t.Fatalf("truncated part: %v", err)
	}
	// Truncated after it was located (a medium pulled mid-read).
	os.WriteFile(victim, data, 0o644)
	found, err := LocateParts(x, []string{filepath.Join(dir, "parts")})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(victim, data[:10], 0o644)
	pr := NewPartsReader(x, found)
	defer pr.Close()
	if _, err := io.Copy(io.Discard, pr); !errors.Is(err, bundle.ErrPartMismatch) || !bytes.Contains([]byte(err.Error()), []byte("part 3")) {
		t.Fatalf("part truncated while read: %v", err)
	}
}

// TestPartMissingAndDuplicate: every missing part is named; two different
// files for one part are refused.
func TestPartMissingAndDuplicate(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	_, _, x := splitTo(t, bigDraft(t, "org.example.miss", 6, 100<<10), k, dir, "s.ampb", bundle.MinPartSize)
	parts := filepath.Join(dir, "parts")
	other := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(parts, x.Parts[1].Name))
	os.WriteFile(filepath.Join(other, x.Parts[1].Name), data, 0o644)
	if _, err := LocateParts(x, []string{parts, other}); !errors.Is(err, bundle.ErrPartDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	os.Remove(filepath.Join(parts, x.Parts[1].Name))
	os.Remove(filepath.Join(parts, x.Parts[3].Name))
	_, err := LocateParts(x, []string{parts})
	if !errors.Is(err, bundle.ErrPartMissing) || !bytes.Contains([]byte(err.Error()), []byte("2 ("+x.Parts[1].Name)) || !bytes.Contains([]byte(err.Error()), []byte("4 ("+x.Parts[3].Name)) {
		t.Fatalf("missing: %v", err)
	}
}
