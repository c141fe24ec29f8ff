package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docHex returns the bytes of the hex block between the two markers of
// docs/FORMAT.md.
func docHex(t *testing.T, name string) []byte {
	t.Helper()
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatalf("docs/FORMAT.md has no %s block", name)
	}
	block := strings.Trim(string(doc[a+len(begin):b]), "\n`")
	want, err := hex.DecodeString(strings.Join(strings.Fields(block), ""))
	if err != nil || len(want) == 0 {
		t.Fatalf("%s hex does not decode: %v", name, err)
	}
	return want
}

// docDeltaExample builds the delta of FORMAT.md §12.5: the §9 example as
// the base, version 2 adding b.json.
func docDeltaExample(t *testing.T) (base, delta []byte, k ed25519.PrivateKey) {
	k = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d1 := &Draft{BundleID: "org.example.min", Version: 1, CreatedAt: created,
		Artifacts: []Source{BytesSource("a.json", MediaTypeSchema, []byte("{}"))}}
	base = build(t, d1, k)
	d2 := &Draft{BundleID: "org.example.min", Version: 2, CreatedAt: created.Add(24 * time.Hour),
		Artifacts: []Source{BytesSource("a.json", MediaTypeSchema, []byte("{}")), BytesSource("b.json", MediaTypeSchema, []byte(`{"type":"string"}`))}}
	var buf bytes.Buffer
	if _, _, err := WriteDelta(&buf, d2, []ed25519.PrivateKey{k}, items(t, base)[0], WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return base, buf.Bytes(), k
}

// TestFormatDocDeltaExample keeps docs/FORMAT.md §12.5 honest: the
// example delta header is exactly what WriteDelta writes, and the delta
// verifies against its base.
func TestFormatDocDeltaExample(t *testing.T) {
	base, delta, k := docDeltaExample(t)
	if os.Getenv("AMPBUNDLE_PRINT_DOC_EXAMPLES") != "" {
		t.Logf("delta %d bytes\n%x", len(delta), delta)
	}
	want := docHex(t, "delta-example-hex")
	if got := items(t, delta)[0]; !bytes.Equal(got, want) {
		t.Fatalf("docs/FORMAT.md delta header differs from what WriteDelta writes:\n doc %x\nwrite %x", want, got)
	}
	doc, _ := os.ReadFile("../docs/FORMAT.md")
	it := items(t, delta)
	for _, claim := range []struct {
		text string
		n    int
	}{{"The delta is 992 bytes", len(delta)}, {"the 395-byte signed header", len(it[0])}, {"signed manifest (579 bytes", len(it[1])}, {"its first 470 bytes", len(items(t, base)[0])}} {
		if !bytes.Contains(doc, []byte(claim.text)) || !strings.Contains(claim.text, strconv.Itoa(claim.n)) {
			t.Errorf("docs/FORMAT.md §12.5 says %q; the example has %d", claim.text, claim.n)
		}
	}
	r, arts, err := readDelta(delta, trust(k, "org.example"))
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 2 || !arts[0].FromBase || arts[1].FromBase || r.CheckBase(items(t, base)[0]) != nil {
		t.Fatal("the example delta does not take a.json from its base and carry b.json")
	}
}
