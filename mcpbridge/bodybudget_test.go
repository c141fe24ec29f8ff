package mcpbridge

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// counted runs the body counter on doc with budgets that never end; it
// returns the values charged to the arguments and to the envelope.
func counted(doc string) (args, other int, err error) {
	const lots = 1 << 30
	c := &bodyCounter{s: []byte(doc), args: lots, other: lots, maxDepth: MaxBodyDepth}
	if e := c.text(roleRoot); e != nil {
		return 0, 0, e
	}
	return lots - c.args, lots - c.other, nil
}

// TestBodyCounterChargesOnlyArgumentsToTheItemBudget: values under a
// tools/call's params.arguments (a lone message or a batch's, its members
// in any order) go to the item budget, every other value to the
// envelope's; a member name or method spelled another way than the SDK's
// field, and another method's arguments (which the SDK decodes into
// maps), are charged to the envelope (threat: a body that dodges the
// smaller budget by a spelling or a method the SDK still reads).
func TestBodyCounterChargesOnlyArgumentsToTheItemBudget(t *testing.T) {
	for _, c := range []struct {
		doc         string
		args, other int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,2,"x"],"b":null}}}`, 6, 6},
		{`[{"method":"tools/call","params":{"arguments":[true,false]}},{"params":{"arguments":{}},"method":"tools/call"}]`, 4, 7},
		{`[{"params":{"arguments":[true,false]}},{"params":{"arguments":{}}}]`, 0, 9},
		{`{"params":{"arguments":[1,2]},"method":"prompts/get"}`, 0, 6},
		{`{"method":"tools\/call","params":{"arguments":[1]}}`, 0, 5},
		{`{"params":{"\u0061rguments":[1,2]}}`, 0, 5},
		{`{"params":{"Arguments":[1,2]}}`, 0, 5},
		{`{"x":{"params":{"arguments":[1]}}}`, 0, 5},
		{`{"params":[{"arguments":[1]}]}`, 0, 5},
		{` {"a" : [ -0.5e+3 , 10 , "\"}\\" ] } `, 0, 5},
	} {
		args, other, err := counted(c.doc)
		if err != nil || args != c.args || other != c.other {
			t.Errorf("%s: args %d other %d (%v), want %d %d", c.doc, args, other, err, c.args, c.other)
		}
	}
}

// TestBodyCounterRefusesPastItsBounds: one value more than a budget, one
// level deeper than MaxBodyDepth, or a text that is not JSON is refused
// with its name.
func TestBodyCounterRefusesPastItsBounds(t *testing.T) {
	args := func(n int) string {
		return `{"method":"tools/call","params":{"arguments":[` + strings.TrimSuffix(strings.Repeat("0,", n-1), ",") + `]}}`
	}
	meta := func(n int) string {
		return `{"params":{"_meta":[` + strings.TrimSuffix(strings.Repeat("0,", n-3), ",") + `]}}`
	}
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		doc      string
		maxArgs  int
		wantName string
	}{
		{args(10), 10, ""},
		{args(11), 10, ErrTooManyValues},
		{meta(MaxEnvelopeValues), 10, ""},
		{meta(MaxEnvelopeValues + 1), 10, ErrTooManyValues},
		{`{"params":{"arguments":[0,0,0,0,0,0,0,0,0]},"method":"prompts/get"}`, 10, ""},
		{`{"params":{"arguments":[` + strings.Repeat("0,", MaxEnvelopeValues) + `0]},"method":"prompts/get"}`, 1 << 20, ErrTooManyValues},
		{"[" + strings.Repeat(`{"method":"ping"},`, MaxBatch-1) + `{"method":"ping"}]`, 10, ""},
		{"[" + strings.Repeat(`{"method":"ping"},`, MaxBatch) + `{"method":"ping"}]`, 10, ErrBatchTooLarge},
		{nest(MaxBodyDepth), 10, ""},
		{nest(MaxBodyDepth + 1), 10, ErrTooDeep},
		{`{"a":1,}`, 10, ErrMalformedBody},
		{`{"a":01}`, 10, ErrMalformedBody},
		{`"\x"`, 10, ErrMalformedBody},
		{`[1] [2]`, 10, ErrMalformedBody},
		{``, 10, ErrMalformedBody},
	} {
		err := checkBody([]byte(c.doc), c.maxArgs)
		if got := string(amp.NameOf(err)); (err == nil) != (c.wantName == "") || (err != nil && got != c.wantName) {
			t.Errorf("%.40q (max args %d): %v, want %q", c.doc, c.maxArgs, err, c.wantName)
		}
	}
}

// refValues counts the values of a valid JSON text with encoding/json
// (numbers as json.Number: a valid number beyond float64's range, 1e400,
// is still one value, not an error that ends the count).
func refValues(doc []byte) int {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	n, inObject, wantKey := 0, []bool{}, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		if _, isStr := tok.(string); isStr && wantKey {
			wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			n++
			inObject = append(inObject, true)
		case json.Delim('['):
			n++
			inObject = append(inObject, false)
		case json.Delim('}'), json.Delim(']'):
			inObject = inObject[:len(inObject)-1]
		default:
			n++
		}
		wantKey = len(inObject) > 0 && inObject[len(inObject)-1] && dec.More()
	}
}

// FuzzBodyCounter: the body counter never panics, refuses as malformed
// exactly what encoding/json finds invalid (within the depth bound, and
// but for a known _meta key named twice, ErrDuplicateMetaKey), and
// counts the values encoding/json reads.
func FuzzBodyCounter(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[{"params":{"arguments":[1,"a",{"b":null}]}}]`,
		`{"a":"\u00e9\n","b":-1.5E-7}`, `{"a":}`, `[`, `"`, `tru`, `1.`, `{"a" 1}`,
		`{"params":{"_meta":{"io.github.ampbundle/timeout_ms":1,"io.github.ampbundle/idempotency_key":"a"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		args, other, err := counted(string(doc))
		valid := json.Valid(doc)
		switch name := amp.NameOf(err); {
		case name == ErrTooDeep || (valid && name == ErrDuplicateMetaKey):
			return
		case valid != (err == nil):
			t.Fatalf("%q: json.Valid %v, counter %v", doc, valid, err)
		case valid && args+other != refValues(doc):
			t.Fatalf("%q: counted %d+%d values, encoding/json reads %d", doc, args, other, refValues(doc))
		}
	})
}
