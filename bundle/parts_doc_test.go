package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestFormatDocPartIndexExample keeps docs/FORMAT.md §13.4 honest: the
// §9 example file cut into parts of 200 bytes has exactly the part index
// shown, and that index verifies and locates the parts.
func TestFormatDocPartIndexExample(t *testing.T) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	file := build(t, &Draft{BundleID: "org.example.min", Version: 1, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []Source{BytesSource("a.json", MediaTypeSchema, []byte("{}"))}}, k)
	const partSize = 200
	whole := sha256.Sum256(file)
	x := &PartIndex{Format: PartsFormat, BundleID: "org.example.min", Version: 1, Name: "min.ampb", Size: uint64(len(file)), SHA256: whole[:]}
	n := (len(file) + partSize - 1) / partSize
	var parts []io.Reader
	for i := 0; i < n; i++ {
		part := file[i*partSize : min((i+1)*partSize, len(file))]
		sum := sha256.Sum256(part)
		x.Parts = append(x.Parts, PartEntry{Name: PartName("min.ampb", i+1, n), Size: uint64(len(part)), SHA256: sum[:]})
		parts = append(parts, bytes.NewReader(part))
	}
	payload, err := x.Encode()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signCOSE(MediaTypePartIndex, payload, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("AMPBUNDLE_PRINT_DOC_EXAMPLES") != "" {
		t.Logf("index %d bytes, payload %d\n%x", len(signed), len(payload), signed)
	}
	want := docHex(t, "parts-example-hex")
	if !bytes.Equal(signed, want) {
		t.Fatalf("docs/FORMAT.md part index example differs:\n doc %x\nmade %x", want, signed)
	}
	doc, _ := os.ReadFile("../docs/FORMAT.md")
	if claim := "The index is " + strconv.Itoa(len(signed)) + " bytes"; !bytes.Contains(doc, []byte(claim)) {
		t.Errorf("docs/FORMAT.md §13.4 does not say %q", claim)
	}
	got, _, err := ReadPartIndex(bytes.NewReader(want), trust(k, "org.example"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Parts) != len(parts) {
		t.Fatalf("the index lists %d parts, the file was cut into %d", len(got.Parts), len(parts))
	}
	if _, err := NewReader(io.MultiReader(parts...), ReaderOptions{Policy: trust(k, "org.example"), Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
}
