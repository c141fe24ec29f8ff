package amp

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// heldIDBytes returns the bytes of the ids d holds: its methods' and its
// relationship entries'.
func heldIDBytes(d *DIDDocument) int {
	n := 0
	for _, m := range d.Methods {
		n += len(m.ID)
	}
	for _, rel := range [][]string{d.Authentication, d.AssertionMethod, d.KeyAgreement} {
		for _, id := range rel {
			n += len(id)
		}
	}
	return n
}

// TestDIDDocumentWhoseIDsMadeAbsoluteOutgrowItIsRefused covers the memory
// a parsed DID document holds (docs/SPEC-DECISIONS.md AMP-35).
//
// Attack: the publisher of a DID document (a DID artifact of a bundle;
// a file given to ampagent) gives it a DID of 2,040 bytes (ValidDID
// allows 2,048 with the fragment) and lists relative references ("#1",
// "#2", ...) or relative method ids, up to the 1,024 entries AMP-29
// allows. ParseDIDDocument makes each absolute, a copy of the DID: a
// 9,142-byte document parsed into 2.35 MB allocated, 2.1 MB of ids held
// for as long as the document is (the store's cache keeps up to 4,097
// parsed documents, resolver/lookup.go), and every key selection of a
// message claiming that DID walks those bytes (AMP-34). Anyone may
// send such messages: the DID is resolved before the signature is
// checked.
//
// Before: every document below parsed. Should: 3001
// invalid_did_document once the ids made absolute pass 256 KiB
// (maxDIDIDBytes), allocating at most twice that and four times the
// document (AMP-29's bound); a document whose ids stay under parses,
// and holds at most 256 KiB of ids.
func TestDIDDocumentWhoseIDsMadeAbsoluteOutgrowItIsRefused(t *testing.T) {
	did := "did:web:" + strings.Repeat("a", 2040-len("did:web:"))
	mk := EncodeMultikey(KeyEd25519, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32)).Public().(ed25519.PublicKey))
	method := func(id string) string {
		return `{"id":"` + id + `","type":"Multikey","controller":"did:web:b.example","publicKeyMultibase":"` + mk + `"}`
	}
	list := func(n int, entry func(i int) string) string {
		out := make([]string, n)
		for i := range out {
			out[i] = entry(i)
		}
		return strings.Join(out, ",")
	}
	ref := func(i int) string { return fmt.Sprintf(`"#%d"`, i) }
	doc := func(lists string) []byte { return []byte(`{"id":"` + did + `",` + lists + `}`) }
	for _, c := range []struct {
		name string
		doc  []byte
	}{
		{"1,023 relative references", doc(`"verificationMethod":[` + method("#k") + `],"authentication":[` + list(1023, ref) + `]`)},
		{"one relative reference 1,023 times", doc(`"verificationMethod":[` + method("#k") + `],"authentication":[` + list(1023, func(int) string { return `"#k"` }) + `]`)},
		{"references in the three relationships", doc(`"assertionMethod":[` + list(341, ref) + `],"authentication":[` + list(341, ref) + `],"keyAgreement":[` + list(341, ref) + `]`)},
		{"256 relative method ids", doc(`"verificationMethod":[` + list(256, func(i int) string { return method(fmt.Sprintf("#k%d", i)) }) + `]`)},
		{"relative method ids embedded", doc(`"keyAgreement":[` + list(256, func(i int) string { return method(fmt.Sprintf("#k%d", i)) }) + `]`)},
		{"one reference past the cap", doc(`"verificationMethod":[` + method("#k") + `],"authentication":[` + list(maxDIDIDBytes/(len(did)+4), ref) + `]`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			bytes := testalloc.Least(func() { _, err = ParseDIDDocument(c.doc) })
			if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
				t.Fatalf("a %d-byte document: got %v, want 3001 invalid_did_document", len(c.doc), err)
			}
			if bound := uint64(2*maxDIDIDBytes + 4*len(c.doc)); !testalloc.Race && bytes > bound {
				t.Fatalf("refusing a %d-byte document allocated %d bytes, want at most %d", len(c.doc), bytes, bound)
			}
		})
	}
	// Under the cap, documents parse: a long DID and few references, a
	// short DID and the 1,024 entries AMP-29 allows, ids written absolute.
	for _, ok := range [][]byte{
		doc(`"verificationMethod":[` + method("#k") + `],"authentication":[` + list(maxDIDIDBytes/(len(did)+4)-1, ref) + `]`),
		[]byte(`{"id":"did:web:a.example","verificationMethod":[` + method("#k") + `],"authentication":[` + list(1023, ref) + `]}`),
		doc(`"verificationMethod":[` + method(did+"#k") + `],"authentication":[` + list(100, func(int) string { return `"` + did + `#k"` }) + `]`),
	} {
		d, err := ParseDIDDocument(ok)
		if err != nil {
			t.Errorf("a %d-byte document under the cap: %v", len(ok), err)
			continue
		}
		if n := heldIDBytes(d); n > maxDIDIDBytes {
			t.Errorf("a parsed document holds %d bytes of ids, over %d", n, maxDIDIDBytes)
		}
	}
}
