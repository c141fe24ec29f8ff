package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"
)

// bigDraft is smallDraft plus n filler artifacts of size bytes each.
func bigDraft(t testing.TB, id string, n, size int) *Draft {
	d := smallDraft(t)
	d.BundleID = id
	for i := range n {
		b := bytes.Repeat([]byte{byte(i), byte(i >> 8), id[len(id)-1], 0xa5}, size/4)
		d.Artifacts = append(d.Artifacts, BytesSource("blobs/"+PartName("f", i+1, n)+".bin", "application/octet-stream", b))
	}
	for i := range d.Capabilities {
		d.Capabilities[i].Name = id + ".echo"
	}
	d.Aliases = nil
	d.Publisher = ""
	var arts []Source
	for _, a := range d.Artifacts {
		if a.MediaType != MediaTypeDID {
			arts = append(arts, a)
		}
	}
	d.Artifacts = arts
	return d
}

// splitBytes cuts file (the bundle file name) into parts of partSize in
// memory and returns its part index signed by k, the index, and the parts.
func splitBytes(t testing.TB, file []byte, name string, partSize int, k ed25519.PrivateKey) ([]byte, *PartIndex, [][]byte) {
	t.Helper()
	whole := sha256.Sum256(file)
	id, version, err := Identify(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	x := &PartIndex{Format: PartsFormat, BundleID: id, Version: version, Name: name, Size: uint64(len(file)), SHA256: whole[:]}
	n := (len(file) + partSize - 1) / partSize
	var parts [][]byte
	for i := 0; i < n; i++ {
		part := file[i*partSize : min((i+1)*partSize, len(file))]
		sum := sha256.Sum256(part)
		x.Parts = append(x.Parts, PartEntry{Name: PartName(name, i+1, n), Size: uint64(len(part)), SHA256: sum[:]})
		parts = append(parts, part)
	}
	signed, err := SignPartIndex(x, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	return signed, x, parts
}

// TestSignPartIndexRefusesAnInvalidIndex: an index that breaks a rule of
// FORMAT.md §13.2 is never signed.
func TestSignPartIndexRefusesAnInvalidIndex(t *testing.T) {
	k := testKey(1)
	signed, x, _ := splitBytes(t, build(t, smallDraft(t), k), "s.ampb", 200, k)
	if got, _, err := ReadPartIndex(bytes.NewReader(signed), trust(k, "org.example")); err != nil || got.Size != x.Size {
		t.Fatalf("signed index does not read back: %v", err)
	}
	x.Parts[0].Name = "other.part001"
	if _, err := SignPartIndex(x, []ed25519.PrivateKey{k}); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("a misnamed part was signed: %v", err)
	}
}
