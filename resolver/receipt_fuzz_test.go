package resolver

import (
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzVerifyReceipt feeds arbitrary bytes to the receipt verifier: no
// panic, every refusal is a named *amp.Error, and an accepted receipt's
// entries chain to its head.
func FuzzVerifyReceipt(f *testing.F) {
	f.Add(docHexF(f))
	f.Add([]byte{0xd8, 0x62, 0x84, 0x40, 0xa0, 0x40, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := checkReceipt(data, nil)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" {
				t.Fatalf("error without a name: %#v", err)
			}
			return
		}
		if len(r.Entries) == 0 || string(AuditEntryHash(r.Entries[len(r.Entries)-1])) != string(r.Head) {
			t.Fatal("an accepted receipt does not end at its head")
		}
	})
}
