package schemagraph_test

import (
	"fmt"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// Parse a schema once, index its anchors and resolve a reference.
func Example() {
	root, err := schemagraph.Parse([]byte(`{"$defs": {"lang": {"$anchor": "lang", "type": "string"}}}`), schemagraph.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	u, frag, _ := schemagraph.Resolve(schemagraph.ArtifactURL("caps/x/in.json"), "../common.json#lang")
	ptr := schemagraph.Index(root).Anchors[frag]
	v, _ := schemagraph.Pointer(root, ptr)
	fmt.Println(u, ptr, v.(map[string]any)["type"])
	// Output: ampbundle:///caps/common.json /$defs/lang string
}
