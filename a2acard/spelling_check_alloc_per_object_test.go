package a2acard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestSpellingCheckAllocatesNothingPerObject: the A2A-10/A2A-12 check
// walks every object of the Card structs a hostile card holds, and the
// walk gave each object its own key buffer.
//
// Attack: a card of 1 MiB whose skills are 20,000 objects {"q":0} (65,536
// values is the bound, A2A-9): the check made one heap allocation (or
// more, as the key grows) per object, on top of the parse, for every card
// a verifier is handed, before the signature is checked.
//
// Before: one allocation per object (20,000 here).
//
// Should: no allocation per object (a key buffer on the stack; the keys
// compared without converting the buffer).
func TestSpellingCheckAllocatesNothingPerObject(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"name":"a","skills":[`)
	const n = 20000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"q%d":0}`, i%10)
	}
	b.WriteString(`]}`)
	tree, err := jcs.Parse([]byte(b.String()), jcs.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	if cardNames().caseVariant(tree) {
		t.Fatal("a card without variants holds one")
	}
	if a := testing.AllocsPerRun(3, func() { cardNames().caseVariant(tree) }); a > 16 {
		t.Errorf("the spelling check of %d skill objects allocates %.0f times", n, a)
	}
}
