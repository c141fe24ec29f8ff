package schemagraph

import (
	"slices"
	"testing"
)

// TestIndexCountsAnchorsInDataAsCompeting: a JSON pointer reference from
// any artifact the validator compiles with a document (one compat never
// reads) into a spot of the document that is not a schema position makes
// jsonschema v5.3.1 list what it finds there as the document's: an
// "$anchor" or "$dynamicAnchor" there competes in map order with the
// document's own of that name, and an "$id" there becomes a resource of
// the document. Index lists such a name in Duplicates when a schema
// position declares it too, and reports an "$id" in data (DataID);
// names declared only in schema positions, or only in data, are not
// duplicates.
func TestIndexCountsAnchorsInDataAsCompeting(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		dups      []string
		dataID    bool
	}{
		{"unknown keyword", `{"$defs":{"a":{"$anchor":"s"}},"x-decoy":{"d":{"$anchor":"s"}}}`, []string{"s"}, false},
		{"enum", `{"$defs":{"a":{"$anchor":"s"}},"enum":[{"$dynamicAnchor":"s"}]}`, []string{"s"}, false},
		{"allOf member not an object", `{"$defs":{"a":{"$anchor":"s"}},"allOf":[[{"$anchor":"s"}]]}`, []string{"s"}, false},
		{"properties member not an object", `{"$defs":{"a":{"$anchor":"s"}},"properties":{"p":[{"$anchor":"s"}]}}`, []string{"s"}, false},
		{"not holding an array", `{"$defs":{"a":{"$anchor":"s"}},"not":[{"$anchor":"s"}]}`, []string{"s"}, false},
		{"another name in data", `{"$defs":{"a":{"$anchor":"s"}},"x-decoy":{"$anchor":"t"}}`, nil, false},
		{"id in data", `{"$defs":{"a":{"$anchor":"s"}},"default":{"$id":"https://example.com/b.json"}}`, nil, true},
		{"fragment id in data is none", `{"examples":[{"$id":"#"}]}`, nil, false},
		{"schema positions only", `{"$defs":{"a":{"$anchor":"s"},"b":{"$anchor":"t"}}}`, nil, false},
	} {
		r := Index(mustParse(t, c.doc))
		if !slices.Equal(r.Duplicates, c.dups) || r.DataID != c.dataID {
			t.Errorf("%s: Duplicates %q, DataID %v; want %q, %v", c.name, r.Duplicates, r.DataID, c.dups, c.dataID)
		}
	}
}
