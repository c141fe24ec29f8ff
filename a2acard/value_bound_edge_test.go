package a2acard

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// countValues counts the JSON values of a tree as jcs.ParseLimited does:
// every scalar, array and object one, member names none.
func countValues(v any) int {
	n := 1
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			n += countValues(x)
		}
	case jcs.Object:
		for _, m := range t {
			n += countValues(m.Value)
		}
	}
	return n
}

// TestCardAtTheValueBoundVerifiesOneOverIsTooLarge: a signed card of
// exactly MaxCardValues JSON values (A2A-9) signs and verifies, the same
// card with one value more is card_too_large: the bound is counted as
// documented, not one short (a card just under the bound refused) nor
// one long.
func TestCardAtTheValueBoundVerifiesOneOverIsTooLarge(t *testing.T) {
	key := vectorKey()
	pub, kid := key.Public().(ed25519.PublicKey), DIDKeyID(key.Public().(ed25519.PublicKey))
	base, err := Sign(vectorCard(t), key, kid)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := jcs.Parse(base, jcs.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	have := countValues(tree)
	for _, extra := range []int{0, 1} {
		c := vectorCard(t)
		for range MaxCardValues - have + extra {
			c.Skills[0].Tags = append(c.Skills[0].Tags, "t")
		}
		signed, err := Sign(c, key, kid)
		if extra == 0 {
			if err != nil {
				t.Fatalf("a card of exactly %d values does not sign: %v", MaxCardValues, err)
			}
			if _, err := Verify(signed, pub, kid); err != nil {
				t.Fatalf("a card of exactly %d values is refused: %v", MaxCardValues, err)
			}
			if got, err := jcs.Parse(signed, jcs.MaxDepth); err != nil || countValues(got) != MaxCardValues {
				t.Fatalf("built a card of %d values, not %d (%v)", countValues(got), MaxCardValues, err)
			}
			continue
		}
		wantName(t, err, ErrTooLarge)
	}
}
