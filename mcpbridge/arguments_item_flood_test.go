package mcpbridge

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// checkArgs is checkBody's count of a body's params.arguments, run over
// arguments alone: at most maxArgs values and MaxBodyDepth of nesting.
// The bridge parses a call's arguments with
// offlineschema.ValueFromJSONBudget, whose count the tests hold to this
// one (TestArgumentsCountOfTheBodyIsTheParses).
func checkArgs(data []byte, maxArgs int) error {
	c := &bodyCounter{s: data, args: maxArgs, maxDepth: MaxBodyDepth}
	return c.text(roleArgs)
}

// exactString is the JSON-1 check of a string id's body as written
// between its quotes (validRequestID): jcs.ExactStrings of the string.
func exactString(body []byte) bool {
	return jcs.ExactStrings(append(append([]byte{'"'}, body...), '"'))
}

// TestArgumentsCountOfTheBodyIsTheParses: the count that refuses a body
// before the SDK decodes it (params.arguments, checkBody) and the count
// that refuses a call's arguments before they are parsed
// (offlineschema.ValueFromJSONBudget) are one count (threat: a body the
// endpoint admits whose arguments the parse refuses, or the other way
// round, where the two bounds drift apart).
func TestArgumentsCountOfTheBodyIsTheParses(t *testing.T) {
	for _, s := range jsonValuesSeeds {
		doc := []byte(s)
		c := &bodyCounter{s: doc, args: math.MaxInt, maxDepth: MaxBodyDepth}
		if err := c.text(roleArgs); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		n := math.MaxInt - c.args
		if _, err := offlineschema.ValueFromJSONBudget(doc, n); err != nil {
			t.Errorf("%s: %d values counted, refused by a budget of %d: %v", s, n, n, err)
		}
		if _, err := offlineschema.ValueFromJSONBudget(doc, n-1); n > 1 && amp.NameOf(err) != offlineschema.ErrLimitExceeded {
			t.Errorf("%s: %d values counted, a budget of %d: %v, want limit_exceeded", s, n, n-1, err)
		}
	}
}

// TestArgumentsOverTheBudgetBuildNoTree: a call's 16 MiB of `[0,0,...]`
// (8 million values; stdio bounds a message by the SDK's reader only)
// is refused with 1001 limit_exceeded from a count of its bytes, under
// 4 KiB allocated; arguments nested past 64 get the same error, its text
// quoting none of their member names.
func TestArgumentsOverTheBudgetBuildNoTree(t *testing.T) {
	b := &Bridge{opts: Options{MaxParamItems: offlineschema.DefaultMaxItems}}
	zeros := append([]byte{'['}, bytes.Repeat([]byte("0,"), (offlineschema.MaxJSONSize-1)/2)...)
	zeros[len(zeros)-1] = ']'
	var err error
	if least := testalloc.Least(func() { _, err = b.callParams(zeros) }); least > 4<<10 {
		t.Errorf("refusing 16 MiB of [0,0,...] allocated %d bytes", least)
	}
	want := &amp.Error{Code: amp.CodeInvalidMessage, Name: offlineschema.ErrLimitExceeded}
	if !errors.Is(err, want) {
		t.Fatalf("16 MiB of [0,0,...]: %v, want 1001 limit_exceeded", err)
	}
	deep := []byte(`{"secret-name":` + string(bytes.Repeat([]byte("["), 64)) + string(bytes.Repeat([]byte("]"), 64)) + `}`)
	_, err = b.callParams(deep)
	if !errors.Is(err, want) || bytes.Contains([]byte(err.Error()), []byte("secret")) {
		t.Fatalf("arguments nested 65 deep: %v, want 1001 limit_exceeded quoting nothing", err)
	}
	if _, err := b.callParams(deep[len(`{"secret-name":`) : len(deep)-1]); err != nil {
		t.Fatalf("arguments nested 64 deep: %v", err)
	}
}

// TestRequestIDEscapesSplitOrDisguisedReadOneWay: a string id is checked
// by the module's JSON-1 check (jcs.ExactStrings), against surrogate
// escapes split by text (whitespace inside a string is text: two lone
// halves), a high half before a non-surrogate escape, hex in either case,
// and an escaped backslash before `u`, which is text and no escape.
func TestRequestIDEscapesSplitOrDisguisedReadOneWay(t *testing.T) {
	for id, ok := range map[string]bool{
		`"\ud800 \udc00"`:      false,
		`"\ud800\u0020\udc00"`: false,
		`"\uD800\u0041"`:       false,
		`"\ud800\\udc00"`:      false,
		`"\udc00\ud800"`:       false,
		`"\uD83D\uDE00"`:       true,
		`"\ud83d\uDE00"`:       true,
		`"\\ud800"`:            true,
		`"\\\\ud800"`:          true,
	} {
		if got := validRequestID([]byte(id)); got != ok {
			t.Errorf("validRequestID(%s) = %v, want %v", id, got, ok)
		}
		err := checkBody([]byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`), 10)
		if (err == nil) != ok {
			t.Errorf("a ping with the id %s: %v", id, err)
		}
	}
}
