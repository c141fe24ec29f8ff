package testkeys

import (
	"crypto/ed25519"
	_ "embed"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// smallOrderEd25519 is small-order-ed25519.txt: one key a line, hex, a
// space, its name; lines starting with # are comments.
//
//go:embed small-order-ed25519.txt
var smallOrderEd25519 string

// SmallOrderEd25519Count is the number of keys SmallOrderEd25519 returns:
// the 14 encodings of the Ed25519 points of order dividing 8 and one
// non-canonical encoding of another point.
const SmallOrderEd25519Count = 15

// SmallOrderEd25519 returns, by name, the Ed25519 public keys of
// small-order-ed25519.txt: the 14 encodings of the points of order
// dividing 8 (either sign of x) and a non-canonical one (y = p + 2), keys
// no one holds. It fails t unless every one is a 32-byte key that
// amp.CheckEd25519PublicKey refuses and there are SmallOrderEd25519Count
// of them. Each call returns fresh slices.
func SmallOrderEd25519(t testing.TB) map[string]ed25519.PublicKey {
	t.Helper()
	out := map[string]ed25519.PublicKey{}
	for _, line := range strings.Split(smallOrderEd25519, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		h, name, _ := strings.Cut(line, " ")
		k, err := hex.DecodeString(h)
		if err != nil || len(k) != ed25519.PublicKeySize || amp.CheckEd25519PublicKey(k) == nil {
			t.Fatalf("testkeys: %q is not a 32-byte key amp.CheckEd25519PublicKey refuses", name)
		}
		if _, dup := out[name]; dup {
			t.Fatalf("testkeys: two keys named %q", name)
		}
		out[name] = k
	}
	if len(out) != SmallOrderEd25519Count {
		t.Fatalf("testkeys: %d keys, want %d", len(out), SmallOrderEd25519Count)
	}
	return out
}
