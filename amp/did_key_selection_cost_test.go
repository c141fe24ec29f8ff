package amp

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestKeySelectionOfManyAbsentReferencesAllocatesNothingForThem covers
// the work the DID document of a message's sender makes key selection
// do, before the message's signature is checked (docs/SPEC-DECISIONS.md
// AMP-34).
//
// Attack: the publisher of a DID document lists, beside its methods,
// up to 1,024 references to methods that do not exist, under a DID of
// up to 2,048 bytes (each relative reference, "#x1", is made absolute
// at parse). Anyone may then send messages claiming that DID: step 6
// of Receive selects the sender's keys (SigningKey, and AgreementKeys
// when the message is encrypted) before step 8 checks the signature.
// Selection looked each reference up in the method list one method at
// a time, and kept a set of every reference seen: references times
// methods times the DID's bytes compared, and the set allocated, on
// every message. On a document of a 1,908-byte DID, 100 methods and
// 924 absent references (212 KB): 4.7 ms and 148 KB a SigningKey
// (BenchmarkSigningKeyOfManyAbsentReferences).
//
// Should: the methods are indexed once a call and a reference costs
// one lookup, so what a call allocates follows the methods, not the
// references: below 1,000 absent references beside 2 methods, wherever
// they are listed, cost no allocation of their own (at most 2 KiB a
// call; before, 27 to 109 KB wherever the call read them). The time is
// the benchmark's to show (tests here never assert on it).
func TestKeySelectionOfManyAbsentReferencesAllocatesNothingForThem(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	const did = "did:web:a.example"
	ed := EncodeMultikey(KeyEd25519, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32)).Public().(ed25519.PublicKey))
	x, err := NewAgreementKey([32]byte{3})
	if err != nil {
		t.Fatal(err)
	}
	edMethod := `{"id":"#k","type":"Multikey","controller":"` + did + `","publicKeyMultibase":"` + ed + `"}`
	xMethod := `{"id":"#x","type":"Multikey","controller":"` + did + `","publicKeyMultibase":"` + EncodeMultikey(KeyX25519, x.Public[:]) + `"}`
	absent := func(n int) string {
		refs := make([]string, n)
		for i := range refs {
			refs[i] = fmt.Sprintf(`"#a%d"`, i)
		}
		return strings.Join(refs, ",")
	}
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name, lists string
	}{
		{"in assertionMethod", `"assertionMethod":[` + absent(1000) + `],"authentication":[` + edMethod + `],"keyAgreement":[` + xMethod + `]`},
		{"in authentication", `"authentication":[` + absent(1000) + `,` + edMethod + `],"keyAgreement":[` + xMethod + `]`},
		{"in keyAgreement", `"authentication":[` + edMethod + `],"keyAgreement":[` + absent(1000) + `,` + xMethod + `]`},
		{"in all three", `"assertionMethod":[` + absent(340) + `],"authentication":[` + absent(340) + `,` + edMethod + `],"keyAgreement":[` + absent(340) + `,` + xMethod + `]`},
	} {
		doc, err := ParseDIDDocument([]byte(`{"id":"` + did + `",` + c.lists + `}`))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, call := range []struct {
			name string
			f    func() error
		}{
			{"SigningKey of the DID", func() error { _, err := doc.SigningKey(did, now); return err }},
			{"SigningKey of its key", func() error { _, err := doc.SigningKey(did+"#k", now); return err }},
			{"AgreementKeys", func() error { _, err := doc.AgreementKeys(now); return err }},
		} {
			t.Run(c.name+"/"+call.name, func(t *testing.T) {
				var err error
				bytes := testalloc.Least(func() { err = call.f() })
				if err != nil {
					t.Fatalf("got %v, want the document's key", err)
				}
				if bytes > 2<<10 {
					t.Fatalf("one call allocated %d bytes for 2 methods and 1,000 absent references, want at most %d", bytes, 2<<10)
				}
			})
		}
	}
}

// absentReferencesDocument returns a DID document whose DID is didLen
// bytes long, with methods Ed25519 methods ("#k0000"...) that
// authentication references, and refs references in assertionMethod
// ("#x0000"...) to methods that do not exist, of the same length as the
// ids of those that do: each reference compared with a method id runs
// through the whole DID before it differs. With foreign, every method
// but #k0000 is controlled by another DID (kept, never selected). It is
// what ParseDIDDocument made of such a document with the methods
// embedded in authentication before AMP-35 (which refuses it now: its
// ids made absolute are over 256 KiB); a DIDResolver other than the
// store's may still build one.
func absentReferencesDocument(didLen, methods, refs int, foreign bool) *DIDDocument {
	did := "did:web:" + strings.Repeat("a", didLen-len("did:web:"))
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32)).Public().(ed25519.PublicKey)
	doc := &DIDDocument{ID: did}
	for i := range refs {
		doc.AssertionMethod = append(doc.AssertionMethod, fmt.Sprintf("%s#x%04d", did, i))
	}
	for i := range methods {
		controller := did
		if foreign && i < methods-1 {
			controller = "did:web:b.example"
		}
		id := fmt.Sprintf("%s#k%04d", did, methods-1-i)
		doc.Methods = append(doc.Methods, VerificationMethod{ID: id, Type: "Multikey", Controller: controller, KeyType: KeyEd25519, PublicKey: pub})
		doc.Authentication = append(doc.Authentication, id)
	}
	return doc
}

// BenchmarkSigningKeyOfManyAbsentReferences measures one key selection
// (docs/SPEC-DECISIONS.md AMP-34) on the document of the finding: a
// 1,908-byte DID, 100 methods, 924 references to methods that do not
// exist (a 213 KB document, which ParseDIDDocument refuses since
// AMP-35), and on the most such a document holds within the caps: a
// 248-byte DID, 256 methods (255 of another controller) and 768
// references, 260,096 bytes of ids.
func BenchmarkSigningKeyOfManyAbsentReferences(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name                  string
		didLen, methods, refs int
		foreign               bool
	}{
		{"finding", 1908, 100, 924, false},
		{"caps", 248, 256, 768, true},
	} {
		doc := absentReferencesDocument(c.didLen, c.methods, c.refs, c.foreign)
		for _, k := range []struct{ name, id string }{
			{"bare", doc.ID},
			{"fragment", doc.ID + "#k0000"},
		} {
			b.Run(c.name+"/"+k.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := doc.SigningKey(k.id, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
