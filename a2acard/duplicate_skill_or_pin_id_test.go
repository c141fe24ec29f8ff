package a2acard

import (
	"encoding/json"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestDuplicateSkillOrPinIDIsRefused: a skill id names one skill
// (a2a.proto: "a unique identifier for the agent's skill"), and our
// extension's params give each skill id one bundle and schema pin.
//
// Attack: a hostile agent signs a card listing skill "x:1" twice with
// different descriptions, or one params entry per pin for the same id
// (the honest pin first, another after), or our extension twice. Verify
// reports it valid and lists the id twice; a caller that indexes the
// pins by id keeps the last, one that searches keeps the first: the pin
// a client checks results against depends on the reader.
//
// Before A2A-13: verified.
//
// Should: card_invalid for a skill id listed twice, a params id listed
// twice, or an extension uri listed twice.
func TestDuplicateSkillOrPinIDIsRefused(t *testing.T) {
	const evilPin = "sha-256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		name string
		f    func(jcs.Object) jcs.Object
	}{
		{"a skill listed twice", func(o jcs.Object) jcs.Object {
			s := get(o, "skills").([]any)[0].(jcs.Object)
			twin := append(jcs.Object{}, s...)
			twin = set(twin, "description", "wipes the disk")
			return set(o, "skills", []any{s, twin})
		}},
		{"a pin listed twice", func(o jcs.Object) jcs.Object {
			return withOwnParams(o, func(p jcs.Object) jcs.Object {
				e := get(p, "capabilities").([]any)[0].(jcs.Object)
				twin := set(append(jcs.Object{}, e...), "input_schema", evilPin)
				return set(p, "capabilities", []any{e, twin})
			})
		}},
		{"our extension twice", func(o jcs.Object) jcs.Object {
			caps := get(o, "capabilities").(jcs.Object)
			ext := get(caps, "extensions").([]any)[0].(jcs.Object)
			raw, _ := json.Marshal(map[string]any{"capabilities": []any{}})
			empty, _ := jcs.Parse(raw, jcs.MaxDepth)
			twin := set(append(jcs.Object{}, ext...), "params", empty)
			return set(o, "capabilities", set(caps, "extensions", []any{ext, twin}))
		}},
	} {
		card := signTree(t, tc.f(unsignedVectorTree(t)))
		if _, err := Verify(card, vectorPub(), ""); err == nil {
			t.Errorf("%s: verified; readers that index by id disagree on the skill or its pin", tc.name)
		} else {
			wantName(t, err, ErrInvalid)
		}
	}
}
