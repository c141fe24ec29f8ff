package resolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"math"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestAReceiptWhoseSequenceWrapsIsRefused: a receipt's entries are
// numbered first_seq + i, and the sum was taken modulo 2^64: a receipt
// (signed by the site key) starting at the largest sequence number
// verified with its second entry numbered 0 and a third numbered 1, where
// docs/FORMAT.md §20.1 numbers entries 1, 2, 3, … and an auditor reading
// the numbers sees the log start over. It is invalid_receipt; a receipt
// ending exactly at the largest number still verifies.
func TestAReceiptWhoseSequenceWrapsIsRefused(t *testing.T) {
	site := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	receipt := func(first uint64, n int) []byte {
		p := receiptPayload{Format: ReceiptFormat, Site: didOf(site), IssuedAt: formatTime(now), FirstSeq: first,
			Prev: bytes.Repeat([]byte{5}, sha256.Size)}
		prev := p.Prev
		for i := range n {
			e := AuditEntry{Seq: first + uint64(i), At: formatTime(now), Action: "remove", Verdict: verdictAccepted, BundleID: "org.example.min", Version: 1, Prev: prev}
			enc := encode(e)
			p.Entries = append(p.Entries, enc)
			prev = sha256sum(enc)
		}
		p.Head = prev
		out, err := bundle.SignObject(bundle.MediaTypeReceipt, encode(p), []ed25519.PrivateKey{site})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		first uint64
		n     int
		ok    bool
	}{
		{"ends at the largest number", math.MaxUint64 - 1, 2, true},
		{"one past the largest", math.MaxUint64, 2, false},
		{"wraps to 1", math.MaxUint64 - 1, 4, false},
	} {
		r, err := VerifyReceipt(receipt(tc.first, tc.n), pub(site))
		if tc.ok {
			if err != nil || len(r.Entries) != tc.n {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: verified, entries numbered %d..%d", tc.name, r.Entries[0].Seq, r.Entries[len(r.Entries)-1].Seq)
			continue
		}
		expectName(t, err, ErrInvalidReceipt)
	}
}
