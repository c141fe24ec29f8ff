package keyfile

import (
	"crypto/pbkdf2"
	"encoding/asn1"
	"hash"
	"os"
	"strconv"
	"strings"
	"testing"
)

// sumCounter is a hash whose finalisations (Sum) are counted: one run of
// the hash over its input, the unit of PBKDF2's work.
type sumCounter struct {
	hash.Hash
	sums *int
}

func (c sumCounter) Sum(b []byte) []byte { *c.sums++; return c.Hash.Sum(b) }

// TestPBKDF2WorkAKeyFileMayAskIsTheDocumentedOne: an encrypted key file
// names its own PBKDF2 iteration count, run before anything is
// authenticated, and the documented bound (10,000,000 iterations, "about
// 10 s of CPU") counted one unit of work per iteration. RFC 8018 §5.2
// derives the key in hLen-byte blocks, each its own chain of iterations:
// HMAC-SHA-1 (20 bytes) with an AES-256 key, what older OpenSSL writes
// with -v2 aes-256-cbc, runs every iteration twice, so a hostile file
// asked for twice the work the bound was said to allow. The work is now
// stated as it is: iterations times blocks (pbkdf2Blocks, at most
// maxPBKDF2Blocks) HMACs, each two runs of the hash, measured here on the
// real derivation for every PRF and AES key length this package reads, and
// docs/FORMAT.md states the resulting bound, 20,000,000 HMACs
// (docs/SPEC-DECISIONS.md, CLI-46).
func TestPBKDF2WorkAKeyFileMayAskIsTheDocumentedOne(t *testing.T) {
	const iterations = 50
	prfs := map[string]asn1.ObjectIdentifier{"default (sha-1)": nil, "sha-1": oidHMACSHA1, "sha-224": oidHMACSHA224,
		"sha-256": oidHMACSHA256, "sha-384": oidHMACSHA384, "sha-512": oidHMACSHA512}
	most := 0
	for name, oid := range prfs {
		h := prfHash(oid)
		if h == nil {
			t.Fatalf("%s: not supported", name)
		}
		for _, keyLen := range []int{16, 24, 32} {
			sums := 0
			counted := func() hash.Hash { return sumCounter{h(), &sums} }
			if _, err := pbkdf2.Key(counted, "correct horse", []byte("salt"), iterations, keyLen); err != nil {
				t.Fatal(err)
			}
			blocks := pbkdf2Blocks(h, keyLen)
			if want := 2 * iterations * blocks; sums != want {
				t.Errorf("%s, %d-byte key: %d iterations ran the hash %d times; pbkdf2Blocks says %d blocks, %d runs", name, keyLen, iterations, sums, blocks, want)
			}
			most = max(most, blocks)
		}
	}
	if most != maxPBKDF2Blocks {
		t.Errorf("the costliest PRF and key length derive %d blocks; maxPBKDF2Blocks is %d", most, maxPBKDF2Blocks)
	}
	format, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(format), "- **Encrypted private keys**")
	section, _, _ = strings.Cut(section, "- **Public keys**")
	work := defaultLimits().pbkdf2Iterations * maxPBKDF2Blocks
	if want := "at most " + thousands(work) + " HMACs"; !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
		t.Errorf("docs/FORMAT.md's encrypted private keys do not state the PBKDF2 work bound %q", want)
	}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	d := strconv.Itoa(n)
	var b strings.Builder
	for i := range len(d) {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(d[i])
	}
	return b.String()
}
