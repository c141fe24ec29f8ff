package conformance

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// docHex returns the bytes of the hex block between the markers NAME:begin
// and NAME:end of docs/FORMAT.md.
func docHex(t *testing.T, doc, name string) []byte {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- "+name+":begin -->")
	block, _, ok2 := strings.Cut(rest, "<!-- "+name+":end -->")
	if !ok || !ok2 {
		t.Fatalf("docs/FORMAT.md has no %s block", name)
	}
	block = strings.NewReplacer("```", "", "\n", "", " ", "").Replace(block)
	b, err := hex.DecodeString(block)
	if err != nil || len(b) == 0 {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// TestFormatDocExamplesVerifyIndependently verifies the annotated examples of
// docs/FORMAT.md (§9 bundle, §12.5 delta header, §13.4 part index, §20.3
// receipt) with this package's verifier and checks the facts the prose states
// about them: sizes, the did:key of the test-only seeds, and the hashes that
// bind one example to another.
func TestFormatDocExamplesVerifyIndependently(t *testing.T) {
	raw, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	seed := func(b byte) string {
		return pubToDidKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)).Public().(ed25519.PublicKey))
	}
	pub1, site := seed(0x01), seed(0x02)
	if pub1 != "did:key:z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX" || site != "did:key:z6Mko9hTggMwjSTEaJaPUfE6tqcy2xvU6BnNq3e3o8qVBiyH" {
		t.Fatalf("the did:keys of seeds 0x01 and 0x02 are %s and %s, not those §9 and §20.3 state", pub1, site)
	}

	min := docHex(t, doc, "format-example-hex")
	vb, err := verifyBundle(min)
	if err != nil {
		t.Fatalf("§9: %v", err)
	}
	if len(min) != 473 || len(vb.item0) != 470 || len(vb.cose.kids) != 1 || vb.cose.kids[0] != pub1 || vb.manifest["bundle_id"] != "org.example.min" {
		t.Fatalf("§9: %d bytes, item 0 %d bytes, kids %v", len(min), len(vb.item0), vb.cose.kids)
	}

	// §12.5 shows the header item only: check it as item 0 of a delta.
	dh := docHex(t, doc, "delta-example-hex")
	cs, err := checkCOSESign(dh, "application/ampbundle-delta+cbor")
	if err != nil {
		t.Fatalf("§12.5: %v", err)
	}
	h, err := payloadMap(cs.payload, []string{"format", "bundle_id", "version", "manifest_sha256", "base", "omitted"}, nil)
	if err != nil {
		t.Fatalf("§12.5 header: %v", err)
	}
	base, _ := h["base"].(map[any]any)
	if len(dh) != 395 || cs.kids[0] != pub1 || h["version"] != uint64(2) || !bytes.Equal(bs(base["manifest_sha256"]), sha256Of(vb.item0)) {
		t.Fatalf("§12.5: %d bytes, header %v", len(dh), h)
	}

	pi := docHex(t, doc, "parts-example-hex")
	m, err := verifyPartIndex(pi, [][]byte{min[:200], min[200:400], min[400:]})
	if err != nil {
		t.Fatalf("§13.4: %v", err)
	}
	if len(pi) != 522 || m["name"] != "min.ampb" {
		t.Fatalf("§13.4: %d bytes, %v", len(pi), m)
	}

	rc := docHex(t, doc, "receipt-example-hex")
	ents, err := verifyReceipt(rc, site)
	if err != nil {
		t.Fatalf("§20.3: %v", err)
	}
	if len(rc) != 917 || len(ents) != 2 || ents[1]["action"] != "import" ||
		!bytes.Equal(bs(ents[1]["file_sha256"]), sha256Of(min)) || !bytes.Equal(bs(ents[1]["manifest_sha256"]), sha256Of(vb.item0)) {
		t.Fatalf("§20.3: %d bytes, entries %v", len(rc), ents)
	}

	for name, f := range map[string]func([]byte) error{
		"§9 bundle":     func(b []byte) error { _, err := verifyBundle(b); return err },
		"§20.3 receipt": func(b []byte) error { _, err := verifyReceipt(b, site); return err },
		"§13.4 index": func(b []byte) error {
			_, err := verifyPartIndex(b, [][]byte{min[:200], min[200:400], min[400:]})
			return err
		},
	} {
		var file []byte
		switch name {
		case "§9 bundle":
			file = min
		case "§20.3 receipt":
			file = rc
		default:
			file = pi
		}
		refusesEveryFlip(t, name, file, f)
	}
}
