package offlineschema

import (
	"strings"
	"testing"
)

// A "$dynamicAnchor" member name spelled with a JSON escape
// ("\u0024dynamicAnchor") is the same keyword to the library: the
// schema it marks is still a target of "$dynamicRef" that no applicator
// leads to. A search for the plain spelling missed it, and the bound on
// validation left out what that target costs.
func TestEscapedDynamicAnchorIsStillATarget(t *testing.T) {
	const doc = `{"$id": "https://example.com/root", "$dynamicAnchor": "n", "items": {"$dynamicRef": "#n"},
		"$defs": {"big": {"$id": "https://example.com/big", "$dynamicAnchor": "n",
			"anyOf": [{"items": {"$dynamicRef": "#n"}}, {"items": {"$dynamicRef": "#n"}}, {"items": {"$dynamicRef": "#n"}}]}}}`
	plain, _ := compileCounting(t, doc)
	escaped, _ := compileCounting(t, strings.ReplaceAll(doc, `"$dynamicAnchor"`, `"\u0024dynamicAnchor"`))
	if plain.cost.perDepth != escaped.cost.perDepth {
		t.Fatalf("the escaped spelling changed the bound: %v, want %v", escaped.cost.perDepth[:4], plain.cost.perDepth[:4])
	}
}
