package offlineschema

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestPropertyNamesFormatRegexParseIsCharged: a peer's string
// checked against "format": "regex" is parsed (isBoundedRegex), and
// checkCost charges that parse by its ranges (regexRanges) because a few
// bytes can cost hundreds of thousands of ranges ("(?i)[\x{41}-\x{1e942}]"
// is 22 bytes, 125,000 ranges, about 20 ms to parse). But regexRanges walks
// only the string VALUES of the instance, and the regex measure
// (costEval.self, measureRegex) counts only scalar nodes, never the member
// NAMES that "propertyNames" checks. With
// {"propertyNames":{"format":"regex"}} every key of a peer's object is
// parsed as a regular expression and charged by its bytes only
// (formatRegexInsts): before review 41, 3,000 keys "\pL\pL<i>" (3,000 ranges each, 9
// million in all) pass checkCost and are all parsed, where the same strings
// as array items are refused as validation_too_costly; 60 keys
// "(?i)[\x{NN}-\x{1e942}]" (1.5 KB) take about 0.2 s to parse, a 1 MiB
// object of 40,000 such keys minutes of CPU. Now member names are charged
// their parse ranges as strings are (regexRanges over names, and the names
// edge in the regex measure): the object is refused as
// validation_too_costly before the library parses any key.
func TestPropertyNamesFormatRegexParseIsCharged(t *testing.T) {
	objSch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"object","propertyNames":{"format":"regex"}}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	arrSch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"array","items":{"type":"string","format":"regex"}}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	const n = 3000
	obj := make(map[string]any, n)
	arr := make([]any, 0, n)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf(`\pL\pL%d`, i)
		obj[k] = true
		arr = append(arr, k)
	}
	var e *amp.Error
	if err := arrSch.Validate(arr); !errors.As(err, &e) || e.Name != ErrValidationTooCostly {
		t.Fatalf("control: %d strings of two Unicode classes as array items: %v, want validation_too_costly", n, err)
	}
	start := time.Now()
	err = objSch.Validate(obj)
	took := time.Since(start)
	if !errors.As(err, &e) || e.Name != ErrValidationTooCostly {
		t.Errorf("%d member names of two Unicode classes against propertyNames format regex: %v after %v (every key parsed, charged by its bytes only), want validation_too_costly before any parse", n, err, took)
	}

	// The amplification, bounded: 60 case-folded keys of 125,000 ranges
	// each (7.5 million ranges, about 1.5 KB).
	fold := make(map[string]any, 60)
	for i := 0; i < 60; i++ {
		fold[fmt.Sprintf(`(?i)[\x{%x}-\x{1e942}]`, 0x41+i)] = true
	}
	start = time.Now()
	err = objSch.Validate(fold)
	took = time.Since(start)
	if !errors.As(err, &e) || e.Name != ErrValidationTooCostly {
		t.Errorf("60 case-folded keys of 125,000 parse ranges each: %v after %v, want validation_too_costly before any parse", err, took)
	}
}
