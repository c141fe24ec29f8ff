package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"
)

// TestFormatDocExample keeps docs/FORMAT.md §9 honest: the annotated
// example is exactly what Write produces for it, and it verifies.
func TestFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- format-example-hex:begin -->", "<!-- format-example-hex:end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatal("docs/FORMAT.md has no example hex block")
	}
	block := strings.Trim(string(doc[a+len(begin):b]), "\n`")
	want, err := hex.DecodeString(strings.Join(strings.Fields(block), ""))
	if err != nil || len(want) == 0 {
		t.Fatalf("example hex does not decode: %v", err)
	}
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	d := &Draft{BundleID: "org.example.min", Version: 1, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []Source{BytesSource("a.json", MediaTypeSchema, []byte("{}"))}}
	var got bytes.Buffer
	if _, err := Write(&got, d, []ed25519.PrivateKey{k}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("docs/FORMAT.md example differs from what Write produces:\n doc %x\nwrite %x", want, got.Bytes())
	}
	if !bytes.Contains(doc, []byte("473 bytes")) || len(want) != 473 {
		t.Fatalf("the document states 473 bytes; the example has %d", len(want))
	}
	if _, _, err := readAll(want, trust(k, "org.example"), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("the example does not verify: %v", err)
	}
}
