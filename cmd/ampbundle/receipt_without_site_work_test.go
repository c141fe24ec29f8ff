package main

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/resolver"
)

// bigReceipt writes a receipt signed by key over a chained log of n
// entries of about 1 KiB each, and returns its path and size.
func bigReceipt(t *testing.T, key ed25519.PrivateKey, n int) (string, int) {
	t.Helper()
	log := make([]resolver.AuditEntry, n)
	prev := make([]byte, 32)
	for i := range log {
		log[i] = resolver.AuditEntry{Seq: uint64(i + 1), At: "2026-01-02T00:00:00Z", Action: "trust_add", Prev: prev,
			TrustName: strings.Repeat("n", 1000)}
		prev = resolver.AuditEntryHash(log[i])
	}
	data, err := resolver.BuildReceipt(log, 1, 0, key, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.receipt")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, len(data)
}

// TestAReceiptVerifiedWithoutSiteIsRefusedBeforeItsPayloadIsRead:
// without --site the verdict is site_key_required whatever the receipt
// holds, but 'receipt verify' checked the whole receipt first
// (resolver.VerifyReceipt without a key): a signature over the payload,
// the payload decoded and encoded again, every entry decoded, encoded
// again and hashed: 32.1 MB allocated beyond reading a 4.5 MB receipt
// and decoding its COSE structure (33.0 MB), seven times the receipt
// again, for a refusal that does not depend on any of it (a hostile
// receipt of 64 MiB: some 450 MB more), and a payload that does not
// decode was refused invalid_receipt instead of asking for the site's
// key. The cheap check comes first: the command costs reading the file
// and decoding its COSE structure, and names the key the receipt claims.
// Counted: the bytes allocated (internal/testalloc, the least of three
// runs) against reading the file and decoding that structure.
func TestAReceiptVerifiedWithoutSiteIsRefusedBeforeItsPayloadIsRead(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	did := amp.DIDKey(key.Public().(ed25519.PublicKey))
	big, size := bigReceipt(t, key, 4096)
	undecodable, err := bundle.SignObject(bundle.MediaTypeReceipt, []byte{0xff, 0x00}, []ed25519.PrivateKey{key})
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.receipt")
	if err := os.WriteFile(bad, undecodable, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		size       int
	}{
		{"4 MiB of chained entries", big, size},
		{"a payload that does not decode", bad, len(undecodable)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := failsWith(t, "site_key_required", "receipt", "verify", tc.path)
			defer func() {
				if !strings.Contains(r.stdout, "claims to be signed by "+did) {
					t.Errorf("the refusal does not name the key the receipt claims (%s):\n%s", did, r.stdout)
				}
			}()
			if testalloc.Race || tc.size < 1<<20 {
				return
			}
			structure := testalloc.Least(func() {
				data, err := cliutil.ReadFile(tc.path, resolver.MaxReceiptSize, "receipt")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := bundle.DecodeObject(data, bundle.MediaTypeReceipt); err != nil {
					t.Fatal(err)
				}
			})
			refusal := testalloc.Least(func() { runCLI(t, nil, "receipt", "verify", tc.path, "--json") })
			if bound := structure + uint64(tc.size)/8; refusal > bound {
				t.Fatalf("refusing a receipt of %d bytes without --site allocated %d bytes, %d beyond reading it and decoding its COSE structure (%d): its payload was read",
					tc.size, refusal, refusal-structure, structure)
			}
		})
	}
	// With the site's key the same receipt verifies: nothing was left out
	// of a verification.
	mustRun(t, "receipt", "verify", big, "--site", did)
}
