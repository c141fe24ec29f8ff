package a2acard

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestWorstCardsVerifyInLinearMemory: every worst card at the size bound
// (full of escapes, of non-ASCII, of small or long numbers, one wide
// object, nesting to jcs.MaxDepth, MaxSignatures signatures) verifies
// allocating at most 12 times its size in all (not judged under the race
// detector, whose instrumentation allocates).
func TestWorstCardsVerifyInLinearMemory(t *testing.T) {
	cases := map[string][]byte{}
	for _, f := range worstFills {
		cases["CardFullOf"+f.name] = worstCard(t, f, 1)
	}
	cases["CardWithManySignatures"] = worstCard(t, worstFills[2], MaxSignatures)
	for name, card := range cases {
		t.Run(name, func(t *testing.T) {
			got := testalloc.Least(verifyCard(t, card, vectorPub()))
			if limit := 12 * uint64(len(card)); got > limit && !testalloc.Race {
				t.Errorf("Verify of %d bytes allocated %d, over %d", len(card), got, limit)
			}
		})
	}
}

// TestCardOverTheValueBoundIsRefusedByName: a card of more than
// MaxCardValues JSON values is card_too_large before its tree grows.
func TestCardOverTheValueBoundIsRefusedByName(t *testing.T) {
	card := []byte(`{"x":[` + strings.Repeat("0,", MaxCardValues) + `0]}`)
	_, err := Verify(card, vectorPub(), "")
	var ae *amp.Error
	if !errors.As(err, &ae) || ae.Name != ErrTooLarge {
		t.Fatalf("got %v, want %s", err, ErrTooLarge)
	}
}
