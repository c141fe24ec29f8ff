package offlineschema

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestPreparedConcurrentlyIsAddedAlike: a builder that parses schemas on
// several goroutines (Prepare) and adds them in key order (Commit) gets
// exactly what Add gives — the same $ids and errors, the same verdicts
// and the same reasons to compile — so a parallel build can neither
// vouch for a schema a sequential one compiles nor report another error.
// Cases: every quickCase, plus two documents with one $id, a document
// over a compile limit, one that is not an object, one whose $id is not
// a string, and an invalid key.
func TestPreparedConcurrentlyIsAddedAlike(t *testing.T) {
	cases := quickCases()
	dupID := `{"$id": "https://schemas.example.org/same.json", "type": "string"}`
	cases = append(cases,
		quickCase{name: "one $id twice", files: quickFiles(`{"$ref": "https://schemas.example.org/same.json"}`, "schemas/a.json", dupID, "schemas/b.json", dupID)},
		quickCase{name: "over a limit", files: quickFiles(`{"properties": {` + strings.Repeat(`"a": {}, `, 10001) + `"b": {}}}`)},
		quickCase{name: "not an object", files: quickFiles(`[1, 2]`, "schemas/x.json", `true`)},
		quickCase{name: "$id not a string", files: quickFiles(`{"$id": 5}`)},
		quickCase{name: "invalid key", files: quickFiles(`{}`, "schemas/../x.json", `{}`)},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := slices.Sorted(maps.Keys(c.files))
			l := newLoader(c.files)
			seq, par := NewQuickCheck(), NewQuickCheck()
			prepared := make([]*Prepared, len(keys))
			var wg sync.WaitGroup
			for i, k := range keys {
				wg.Go(func() { prepared[i] = Prepare(k, []byte(c.files[k])) })
			}
			wg.Wait()
			for i, k := range keys {
				id1, err1 := seq.Add(k, []byte(c.files[k]))
				id2, err2 := par.Commit(prepared[i])
				if id1 != id2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
					t.Fatalf("%s: Add gives %q, %v; Commit gives %q, %v", k, id1, err1, id2, err2)
				}
			}
			// The key added twice is refused both ways.
			_, err1 := seq.Add(keys[0], []byte(c.files[keys[0]]))
			_, err2 := par.Commit(Prepare(keys[0], []byte(c.files[keys[0]])))
			if err1 == nil || fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("a key added twice: Add %v, Commit %v", err1, err2)
			}
			par.Resolve(l)
			for _, k := range keys {
				e1, e2 := seq.Check(l, k, Options{}), par.Check(l, k, Options{})
				if fmt.Sprint(e1) != fmt.Sprint(e2) || seq.NeedsCompile(k) != par.NeedsCompile(k) {
					t.Fatalf("%s: Add then Check: %v (%q); Prepare, Commit, Check: %v (%q)",
						k, e1, seq.NeedsCompile(k), e2, par.NeedsCompile(k))
				}
			}
		})
	}
}
