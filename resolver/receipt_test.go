package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// exampleReceipt builds the receipt of docs/FORMAT.md §20: a new store
// (clock 2026-01-02T00:00:00Z, actor uid 1000 on host airgap-1) trusts
// the test-only key of seed 0x01 for org.example and imports the §9 example
// bundle; the site key (seed 0x02) signs a receipt of both entries.
func exampleReceipt(t *testing.T) []byte {
	t.Helper()
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return now }, Create: true,
		Actor: &Actor{UID: 1000, Host: "airgap-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pk := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	if err := s.TrustAdd("publisher", pub(pk), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	d := &bundle.Draft{BundleID: "org.example.min", Version: 1, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("a.json", bundle.MediaTypeSchema, []byte("{}"))}}
	var b bytes.Buffer
	if _, err := bundle.Write(&b, d, []ed25519.PrivateKey{pk}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(b.Bytes()), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	log, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	r, err := BuildReceipt(log, 1, 0, site, now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// docHexF is the receipt example of docs/FORMAT.md, for fuzz seeds.
func docHexF(f *testing.F) []byte {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		f.Fatal(err)
	}
	const begin, end = "<!-- receipt-example-hex:begin -->", "<!-- receipt-example-hex:end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		f.Fatal("no receipt example in docs/FORMAT.md")
	}
	out, err := hex.DecodeString(strings.Join(strings.Fields(strings.Trim(string(doc[a+len(begin):b]), "\n`")), ""))
	if err != nil {
		f.Fatal(err)
	}
	return out
}

// docHex returns the bytes of the hex block between two markers of a doc.
func docHex(t *testing.T, path, name string) []byte {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+name+"-hex:begin -->", "<!-- "+name+"-hex:end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatalf("%s has no %s hex block", path, name)
	}
	block := strings.Trim(string(doc[a+len(begin):b]), "\n`")
	out, err := hex.DecodeString(strings.Join(strings.Fields(block), ""))
	if err != nil || len(out) == 0 {
		t.Fatalf("%s hex does not decode: %v", name, err)
	}
	return out
}

// TestReceiptFormatDocExample keeps docs/FORMAT.md §20 honest: the
// annotated receipt is exactly what the store and BuildReceipt produce,
// and it verifies.
func TestReceiptFormatDocExample(t *testing.T) {
	want := docHex(t, "../docs/FORMAT.md", "receipt-example")
	got := exampleReceipt(t)
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/FORMAT.md receipt example differs from what the store signs:\n doc %x\n got %x", want, got)
	}
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	r, err := VerifyReceipt(want, pub(site))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 2 || r.Entries[1].Action != "import" || r.Entries[1].Verdict != "accepted" ||
		r.Entries[1].Actor == nil || r.Entries[1].Actor.Host != "airgap-1" || len(r.Entries[1].FileSHA256) != 32 {
		t.Fatalf("entries %+v", r.Entries)
	}
}

// TestReceiptTampering: any change to a receipt, a re-signature by another
// key, a gap, a reorder or a forged head is refused.
func TestReceiptTampering(t *testing.T) {
	good := exampleReceipt(t)
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	obj, err := bundle.DecodeObject(good, bundle.MediaTypeReceipt)
	if err != nil {
		t.Fatal(err)
	}
	var p receiptPayload
	if err := decode(obj.Payload, &p); err != nil {
		t.Fatal(err)
	}
	resign := func(edit func(p *receiptPayload), key ed25519.PrivateKey) []byte {
		q := p
		q.Entries = append([][]byte(nil), p.Entries...)
		edit(&q)
		out, err := bundle.SignObject(bundle.MediaTypeReceipt, encode(q), []ed25519.PrivateKey{key})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	tests := []struct {
		name string
		data []byte
	}{
		{"one bit flipped", flipped},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"re-signed by another key", resign(func(q *receiptPayload) { q.Site = didOf(other) }, other)},
		{"entry dropped", resign(func(q *receiptPayload) { q.Entries = q.Entries[1:] }, site)},
		{"entries reordered", resign(func(q *receiptPayload) { q.Entries[0], q.Entries[1] = q.Entries[1], q.Entries[0] }, site)},
		{"forged head", resign(func(q *receiptPayload) { q.Head = bytes.Repeat([]byte{7}, 32) }, site)},
		{"entry edited", resign(func(q *receiptPayload) {
			q.Entries[1] = bytes.Replace(q.Entries[1], []byte("accepted"), []byte("rejected"), 1)
		}, site)},
		{"site names another key", resign(func(q *receiptPayload) { q.Site = didOf(other) }, site)},
	}
	for _, tt := range tests {
		if _, err := VerifyReceipt(tt.data, pub(site)); err == nil {
			t.Errorf("%s: verified", tt.name)
		}
	}
	// Without an expected site key, a receipt re-signed by another key
	// is well formed as that key's receipt, and is never reported as
	// verified: site_key_required.
	r, err := checkReceipt(tests[2].data, nil)
	if err != nil || r.Site == didOf(site) {
		t.Fatalf("%v %v", r, err)
	}
	_, err = VerifyReceipt(tests[2].data, nil)
	expectName(t, err, ErrSiteKeyRequired)
}

func didOf(k ed25519.PrivateKey) string { return string(bundle.KeyID(pub(k))) }
