package compat

import (
	"fmt"
	"strings"
	"testing"
)

// idPartsSchema is an object of props properties, each a "$ref" to one
// allOf of n parts, each part an embedded schema resource ("$id" of
// idLen bytes and its index): every comparison of a property flattens
// the n parts, and node.child meets each part's "$id".
func idPartsSchema(n, props, idLen int, desc string) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf(`{"$id":"%s%d/","type":"object"}`, strings.Repeat("a", idLen), i)
	}
	pr := make([]string, props)
	for i := range pr {
		pr[i] = fmt.Sprintf(`"p%d":{"$ref":"#/$defs/b"}`, i)
	}
	return `{"type":"object","description":"` + desc + `","properties":{` + strings.Join(pr, ",") +
		`},"$defs":{"b":{"allOf":[` + strings.Join(ps, ",") + `]}}}`
}

// TestSubschemaIDsMetAtEveryStepAreResolvedOncePerDocument: node.child
// resolved the "$id" of a subschema (up to 1,024 bytes, against a base
// of up to 2,048) each time it reached it, in every flatten of every
// comparison, and nothing of it was charged: an allOf of 1,000 parts
// with 1,000-byte "$id"s behind a "$ref" met from 200 properties (1 MB,
// the offline compiler takes it; one check to the work bound) resolved
// 100,000 "$id"s a side, 35 µs of a unit of work where a flatten costs
// about 2 (7 s for one check; a bundle's budget of such checks, hours).
// Each is now resolved once per document (idCache): at most one
// resolution a part, whatever the steps, and the verdict is unchanged.
func TestSubschemaIDsMetAtEveryStepAreResolvedOncePerDocument(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, props  int
		idLen     int
		want      Verdict
		wantRules string
	}{
		{"300 parts met from 40 properties", 300, 40, 1, Compatible, ""},
		{"1,000 parts met from 200 properties, to the work bound", 1000, 200, 1, Unknown, "too_complex"},
		{"100 parts of 1,000-byte $ids met from 40 properties", 100, 40, 1000, Compatible, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := memLoader{files: map[string][]byte{
				"a.json": []byte(idPartsSchema(tc.n, tc.props, tc.idLen, "a")),
				"b.json": []byte(idPartsSchema(tc.n, tc.props, tc.idLen, "b")),
			}}
			a, b := NewSource(l), NewSource(l)
			c := &checker{a: a.s, b: b.s, memo: map[string]int{}, assumed: maxInt}
			r := c.run("a.json", "b.json")
			if r.Verdict != tc.want || (tc.wantRules != "" && !hasRule(r, tc.wantRules)) {
				t.Fatalf("%s, want %s %s (%+v)", r.Verdict, tc.want, tc.wantRules, r.Findings[:min(2, len(r.Findings))])
			}
			for key, s := range map[string]*side{"a.json": a.s, "b.json": b.s} {
				d, e := s.load(key)
				if e != "" {
					t.Fatal(e)
				}
				if d.idResolved > tc.n {
					t.Errorf("%s: %d $id resolutions for %d subschemas with an $id (%d steps, %d units of work): resolved again at each step",
						key, d.idResolved, tc.n, c.steps, c.work)
				}
			}
		})
	}
}
