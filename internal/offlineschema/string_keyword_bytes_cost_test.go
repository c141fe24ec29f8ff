package offlineschema

import (
	"fmt"
	"strings"
	"testing"
)

// refFanOut returns a schema whose root reaches leaf 16^levels times at
// one instance node ("allOf" of 16 "$ref"s to the level below), with
// the members head written first.
func refFanOut(head string, levels int, leaf string) string {
	defs := []string{`"a0": ` + leaf}
	for l := 1; l <= levels; l++ {
		ref := fmt.Sprintf(`{"$ref": "#/$defs/a%d"}`, l-1)
		defs = append(defs, fmt.Sprintf(`"a%d": {"allOf": [%s]}`, l, strings.TrimSuffix(strings.Repeat(ref+",", 16), ",")))
	}
	return fmt.Sprintf(`{%s"$ref": "#/$defs/a%d", "$defs": {%s}}`, head, levels, strings.Join(defs, ","))
}

// TestStringLengthAndContentKeywordsAreChargedByBytes: the cost bound
// charged a string's bytes only to "pattern" and "format", but at every
// evaluation the library also copies the string and counts its runes
// for "minLength" and "maxLength", and, in a draft-07 schema, decodes it
// for "contentEncoding": "base64" and parses it with encoding/json into
// Go values for "contentMediaType": "application/json" (up to 65 ns and
// 48 bytes allocated a byte). Measured on a loaded 2-core machine, one
// 1 MiB string against a 3 KB schema reaching the keyword 4,096 times
// took 3 s ("maxLength"), 5 s ("base64") and 6 minutes
// ("application/json"), each within the budget; the 16 MiB a message
// may carry, and 16 times the fan-out, make hours. Expected: each
// string is charged its bytes per evaluation, so these values are
// refused validation_too_costly without running the library, while
// ordinary strings, and 2020-12 content keywords (annotations there),
// still pass the bound.
func TestStringLengthAndContentKeywordsAreChargedByBytes(t *testing.T) {
	const draft7 = `"$schema": "http://json-schema.org/draft-07/schema#", `
	mib := strings.Repeat("QUFB", 1<<18)
	jsonMiB := "[" + strings.Repeat("1,", 1<<19-1) + "1]"
	for _, tc := range []struct {
		name, schema string
		value        any
	}{
		{"maxLength reached 4,096 times", refFanOut("", 3, `{"maxLength": 5}`), mib},
		{"minLength in 15 branches", anyOfBranches(15, `{"minLength": 1}`), repeated(64, func() any { return mib })},
		{"draft-07 base64 reached 4,096 times", refFanOut(draft7, 3, `{"contentEncoding": "base64"}`), mib},
		{"draft-07 json media type", `{` + draft7 + `"items": {"contentMediaType": "application/json"}}`,
			repeated(8, func() any { return jsonMiB })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := compileCounting(t, tc.schema)
			ampErr(t, s.checkCost(tc.value), ErrValidationTooCostly, 1001)
			if *runs != 0 {
				t.Fatal("the library ran")
			}
		})
	}
	word := strings.Repeat("x", 64)
	for _, tc := range []struct {
		name, schema string
		value        any
	}{
		{"maxLength", `{"items": {"type": "string", "minLength": 1, "maxLength": 64}}`, repeated(100000, func() any { return word })},
		{"one long string", `{"maxLength": 16777216}`, strings.Repeat(mib, 16)},
		{"draft-07 json media type", `{` + draft7 + `"items": {"contentEncoding": "base64", "contentMediaType": "application/json"}}`,
			repeated(1000, func() any { return strings.Repeat("e30=", 256) })},
		{"2020-12 content annotations", `{"contentEncoding": "base64", "contentMediaType": "application/json"}`, strings.Repeat(jsonMiB, 16)},
	} {
		t.Run("ordinary "+tc.name, func(t *testing.T) {
			s, _ := compileCounting(t, tc.schema)
			if err := s.checkCost(tc.value); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
