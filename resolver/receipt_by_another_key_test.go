package resolver

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestAReceiptByAnotherKeyIsRefusedBeforeItsPayloadIsRead: anyone can sign
// a well-formed receipt with a key of their own and hand it to an auditor.
// The verifier checked that signature, decoded the whole payload (every
// entry copied) and re-encoded it before comparing the signer with the
// site key it expects: a 4 MiB receipt by another key cost about three
// times its payload again before the refusal, and a payload that does not
// decode was refused as "not in its one allowed form" rather than as
// another key's. The signer is now judged first: the refusal costs what
// decoding the COSE structure costs, and names the signer's key.
func TestAReceiptByAnotherKeyIsRefusedBeforeItsPayloadIsRead(t *testing.T) {
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	entries := make([][]byte, 4096)
	for i := range entries {
		entries[i] = bytes.Repeat([]byte{byte(i)}, 1024)
	}
	big := encode(receiptPayload{Format: ReceiptFormat, Site: didOf(other), IssuedAt: "2026-01-02T00:00:00Z", FirstSeq: 1,
		Prev: make([]byte, 32), Head: make([]byte, 32), Entries: entries})
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"4 MiB of entries", big},
		{"a payload that does not decode", []byte{0xff, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := bundle.SignObject(bundle.MediaTypeReceipt, tc.payload, []ed25519.PrivateKey{other})
			if err != nil {
				t.Fatal(err)
			}
			_, err = VerifyReceipt(data, pub(site))
			expectName(t, err, ErrInvalidReceipt)
			if !strings.Contains(err.Error(), "signed by "+didOf(other)+", not by the expected site key") {
				t.Fatalf("the refusal does not name the signer as another key than the site's: %v", err)
			}
			if testalloc.Race || len(tc.payload) < 1<<20 {
				return
			}
			structure := testalloc.Least(func() {
				if _, err := bundle.DecodeObject(data, bundle.MediaTypeReceipt); err != nil {
					t.Fatal(err)
				}
			})
			refusal := testalloc.Least(func() { _, _ = VerifyReceipt(data, pub(site)) })
			if bound := structure + uint64(len(tc.payload))/8; refusal > bound {
				t.Fatalf("refusing a receipt of %d bytes by another key allocated %d bytes, %d beyond its COSE structure (%d): its payload was read",
					len(data), refusal, refusal-structure, structure)
			}
		})
	}
}
