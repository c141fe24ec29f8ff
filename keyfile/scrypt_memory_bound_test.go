package keyfile

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestScryptParallelismCannotMultiplyMemoryBeyondTheBound: the attack:
// a key file (handed over with its passphrase, or one that only needs to be
// opened: the KDF runs before anything is authenticated, so a wrong
// passphrase costs the same) whose scrypt parameters keep 128·r·N within
// the memory bound but put r high and p at its maximum. scrypt.Key also
// allocates B = p·128·r bytes (and XY = 256·r). With the default limits
// (256 MiB, p ≤ 16), N = 2, r = 2^20, p = 16 would allocate about 2.5 GiB,
// ten times the documented bound. Shown at a scaled-down bound (1 MiB) so
// that it runs in milliseconds.
// Expected: the bound covers everything scrypt allocates,
// 128·r·(N + p + 2) ≤ limit, and the work 128·N·r·p too; beyond it,
// unsupported_key_encryption before any allocation (CLI-26).
func TestScryptParallelismCannotMultiplyMemoryBeyondTheBound(t *testing.T) {
	lim := kdfLimits{pbkdf2Iterations: 1000, scryptMemory: 1 << 20, scryptP: 16}
	const n, r, p = 2, 4096, 16 // 128·r·N = 1 MiB: exactly the bound
	params, err := asn1.Marshal(scryptParams{Salt: []byte("0123456789abcdef"), CostParameter: n, BlockSize: r, Parallelization: p})
	if err != nil {
		t.Fatal(err)
	}
	kdf := pkix.AlgorithmIdentifier{Algorithm: oidScrypt, Parameters: asn1.RawValue{FullBytes: params}}

	used := int64(testalloc.Least(func() { _, err = deriveKey(kdf, []byte("passphrase"), 32, lim) }))
	if err != nil {
		if errName(err) != ErrUnsupportedEncryption {
			t.Fatalf("refused as %q (%v), want %s", errName(err), err, ErrUnsupportedEncryption)
		}
		return
	}
	if used > 2*lim.scryptMemory {
		t.Fatalf("scrypt N=%d r=%d p=%d passed a %d-byte memory bound and allocated %d bytes (%.1f×); at the default bound the same shape allocates about 2.5 GiB",
			n, r, p, lim.scryptMemory, used, float64(used)/float64(lim.scryptMemory))
	}
}

// TestScryptBoundCoversAllocationAndWork: each shape at the edge of the
// bounds: what fits is derived, what asks for more memory (V, B or XY) or
// more work (N·r·p) than the bound is refused as unsupported_key_encryption.
func TestScryptBoundCoversAllocationAndWork(t *testing.T) {
	lim := kdfLimits{pbkdf2Iterations: 1000, scryptMemory: 1 << 20, scryptP: 16} // 8192 blocks of 128 bytes
	for _, tc := range []struct {
		name    string
		n, r, p int64
		ok      bool
	}{
		{"openssl default shape, scaled", 1 << 10, 4, 1, true},
		{"memory and work within the bound", 4096, 1, 2, true},
		{"V alone at the bound, B and XY beyond", 2048, 4, 1, false},
		{"B beyond the bound", 2, 512, 16, false},
		{"work beyond the bound at p 16", 1 << 8, 4, 16, false},
		{"work at the bound at p 16", 1 << 7, 4, 16, true},
		{"r alone beyond the bound", 2, 1 << 14, 1, false},
		{"huge n does not overflow", 1 << 62, 1 << 30, 16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lim.scryptWithin(tc.n, tc.r, tc.p); got != tc.ok {
				t.Fatalf("scryptWithin(N=%d, r=%d, p=%d) = %v, want %v", tc.n, tc.r, tc.p, got, tc.ok)
			}
		})
	}
}
