package compat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// wideMembersSchema is an object of props properties, each a "$ref" to
// one schema of k members the checker does not compare (unknown
// keywords, annotations to the validator) and a description desc: a
// check of two such documents differing in desc compares the wide
// schema at every property.
func wideMembersSchema(k, props int, desc string) []byte {
	ks := make([]string, k)
	for i := range ks {
		ks[i] = fmt.Sprintf(`"x%05d":0`, i)
	}
	pr := make([]string, props)
	for i := range pr {
		pr[i] = fmt.Sprintf(`"p%d":{"$ref":"#/$defs/w"}`, i)
	}
	return []byte(`{"type":"object","properties":{` + strings.Join(pr, ",") + `},"$defs":{"w":{"description":"` +
		desc + `",` + strings.Join(ks, ",") + `}}}`)
}

// TestSchemaOfManyMembersIsNotSortedAtEveryStep: keywords sorted every
// member of every acceptor part, at every step, to compare the few it
// knows, while flatten charged a unit of work per 64 members: an object
// of 60,000 unknown keywords behind a "$ref" met from 2,000 properties
// (717 KB, the offline compiler takes it) cost about 14 µs of CPU a unit
// of work here, 3 to 10 times any other kind, and a bundle's budget of
// such checks minutes. keywords now looks a part up for the keywords it
// compares (comparedKeywords), or sorts the members of a part that has
// fewer: a step visits a few dozen members a part, whatever the part
// holds. The verdicts are unchanged.
func TestSchemaOfManyMembersIsNotSortedAtEveryStep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		k, props int
		want     Verdict
	}{
		{"10 members met from 50 properties", 10, 50, Compatible},
		{"10,000 members met from 50 properties", 10000, 50, Compatible},
		{"60,000 members met from 2,000 properties, to the work bound", 60000, 2000, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := memLoader{files: map[string][]byte{
				"a.json": wideMembersSchema(tc.k, tc.props, "a"),
				"b.json": wideMembersSchema(tc.k, tc.props, "b"),
			}}
			if _, err := offlineschema.Compile(l, "a.json", offlineschema.Options{}); err != nil {
				t.Fatalf("the offline compiler refuses the schema: %v", err)
			}
			a, b := NewSource(l), NewSource(l)
			c := &checker{a: a.s, b: b.s, memo: map[string]int{}, assumed: maxInt}
			r := c.run("a.json", "b.json")
			if r.Verdict != tc.want {
				t.Fatalf("%s, want %s (%+v)", r.Verdict, tc.want, r.Findings[:min(2, len(r.Findings))])
			}
			if most := len(comparedKeywords) * c.flattened; c.keywordsVisited > most {
				t.Errorf("%d members visited by keywords for %d parts flattened (%d steps), want at most %d: every member of a part is sorted at every step",
					c.keywordsVisited, c.flattened, c.steps, most)
			}
		})
	}
}
