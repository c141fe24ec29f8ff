package offlineschema

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// itemsOf counts the values of a parsed JSON-model tree as the item
// budget does: every scalar, array and object one.
func itemsOf(v any) int {
	n := 1
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n += itemsOf(e)
		}
	case map[string]any:
		for _, e := range x {
			n += itemsOf(e)
		}
	}
	return n
}

// zerosArray is `[0,0,...,0]` of at most size bytes.
func zerosArray(size int) []byte {
	b := append([]byte{'['}, bytes.Repeat([]byte("0,"), (size-1)/2)...)
	b[len(b)-1] = ']'
	return b
}

// budgetRefusal asserts err is the item budget's refusal, the error
// ValueFromCBORBudget gives: 1001 limit_exceeded.
func budgetRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, &amp.Error{Code: amp.CodeInvalidMessage, Name: ErrLimitExceeded}) {
		t.Fatalf("%s: %v, want 1001 %s", what, err, ErrLimitExceeded)
	}
}

// TestJSONTextOverTheItemBudgetBuildsNoTree: 16 MiB of `[0,0,...]` (8
// million values, two bytes each) against the default item budget
// (262,144). ValueFromJSON builds every value (about 240 bytes each, some
// 2 GB); ValueFromJSONBudget must refuse it from a count of the bytes,
// allocating nothing per value: under 4 KiB in all (the error), whatever
// the text's size. The CBOR budget refuses the same value with the same
// error.
func TestJSONTextOverTheItemBudgetBuildsNoTree(t *testing.T) {
	text := zerosArray(MaxJSONSize)
	var err error
	if n := testalloc.Least(func() { _, err = ValueFromJSONBudget(text, 0) }); n > 4<<10 {
		t.Errorf("refusing 16 MiB of [0,0,...] allocated %d bytes, want under 4 KiB", n)
	}
	budgetRefusal(t, "16 MiB of [0,0,...]", err)
	if n := testing.AllocsPerRun(3, func() { _, _ = ValueFromJSONBudget(text, 1000) }); n > 16 {
		t.Errorf("refusing 16 MiB of [0,0,...] costs %v allocations, want the error's only", n)
	}
	// The same value as CBOR params gets the same refusal.
	enc, cerr := ToCBOR(make([]any, DefaultMaxItems))
	if cerr != nil {
		t.Fatal(cerr)
	}
	_, err = ValueFromCBORBudget(enc, 0)
	budgetRefusal(t, "the CBOR array of 262,144 nulls", err)
}

// TestJSONTextWithinTheItemBudgetIsTheParse: a text within the budget
// reads as ValueFromJSON reads it, and a budget of exactly its items
// takes it.
func TestJSONTextWithinTheItemBudgetIsTheParse(t *testing.T) {
	text := zerosArray(1 << 10)
	want, err := ValueFromJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ValueFromJSONBudget(text, itemsOf(want))
	if err != nil || len(got.([]any)) != len(want.([]any)) {
		t.Fatalf("a text of exactly the budget: %v", err)
	}
	if _, err := ValueFromJSONBudget(text, itemsOf(want)-1); err == nil {
		t.Fatal("a text one item over the budget is taken")
	}
}

// itemCountSeeds are texts whose counts the budget must get exactly:
// member names in every spelling, strings holding what ends or starts
// other tokens, whitespace everywhere JSON allows it, numbers and
// literals next to delimiters.
var itemCountSeeds = []string{
	`{}`, `[]`, `0`, `-1.5e+10`, `"a"`, `true`, `false`, `null`, `""`,
	`{"text":"hi","lang":"de"}`,
	`{"a:b":"c:d","e":[1,-2,3.0e-1,true,false,null,"x\"y:",{}],"f":{"g":{"h":[]}}}`,
	` { "k" : [ 1 , 2 ] , "n" : null } `,
	"{\"a\"\t\n\r :\"b\"}",
	`{"\\":"\\\\","\"":"\u0022:"}`,
	`[[[[[1e5]]]],"tfn",-0]`,
	`["\\", ":", "\":", "{", "["]`,
	`{"":{"":{"":""}}}`,
	`[{"a":[]},{"b":{}},[[],[{}]]]`,
	`"a,b:c[{"`, `"\\"`, `"\",:,:"`, `[[],[],[]]`, `[[0,0],[0,0]]`,
	`{"a,":"x:y","b":{"c":[{"d":null}]}}`, `[{"a":"x,y"},{"b":1},"\"],["]`,
	`[1.5e3,-2,true,false,null,"é"]`,
}

// checkItemCount: for a text ValueFromJSON takes, the budget counts
// exactly its tree's items, and ValueFromJSONBudget and
// ValueFromCBORBudget take it at that many and refuse it at one fewer.
func checkItemCount(t *testing.T, doc []byte) {
	v, err := ValueFromJSON(doc)
	if err != nil {
		return
	}
	n := itemsOf(v)
	if got := jsonItems(doc); got != n {
		t.Fatalf("%.60q: counted %d items, the tree has %d", doc, got, n)
	}
	if _, err := ValueFromJSONBudget(doc, n); err != nil {
		t.Fatalf("%.60q: %d items refused by a budget of %d: %v", doc, n, n, err)
	}
	if n == 1 {
		return // a budget of 0 is the default
	}
	_, err = ValueFromJSONBudget(doc, n-1)
	budgetRefusal(t, "a JSON text one item over", err)
	enc, err := ToCBOR(v)
	if err != nil {
		return
	}
	_, err = ValueFromCBORBudget(enc, n-1)
	budgetRefusal(t, "its CBOR one item over", err)
}

// TestJSONItemCountIsTheCBORBudgets: the count that refuses a JSON text
// before it is parsed is the agent's own item count (threat: a text the
// CBOR budget would take refused, or one it would refuse parsed).
func TestJSONItemCountIsTheCBORBudgets(t *testing.T) {
	for _, s := range itemCountSeeds {
		checkItemCount(t, []byte(s))
	}
}

// FuzzJSONItemCount: the count never panics and agrees with the parse
// and the CBOR budget on every text the parse takes.
func FuzzJSONItemCount(f *testing.F) {
	for _, s := range itemCountSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkItemCount(t, doc)
	})
}

// TestJSONTextThatIsNotJSONBuildsNoTreeBeyondTheBudget: a text that is not
// JSON may be counted low (colons after strings outside objects take
// names back), and the parse builds what precedes its error. Member-name
// colons repeated after a million values, or strings and colons paired,
// must still be refused by the count, and a parse of more values than its
// bound stops at the bound (the second line of defence).
func TestJSONTextThatIsNotJSONBuildsNoTreeBeyondTheBudget(t *testing.T) {
	zeros := strings.Repeat("0,", 1<<20)
	for _, text := range [][]byte{
		[]byte("[" + zeros + strings.Repeat(":", 1<<20) + "]"),
		[]byte("[" + zeros + strings.Repeat(`"":`, 1<<20) + "]"),
		[]byte("[" + zeros + strings.Repeat(`"",:`, 1<<20) + "]"),
	} {
		var err error
		if n := testalloc.Least(func() { _, err = ValueFromJSONBudget(text, 1000) }); n > 4<<10 {
			t.Errorf("%.20q...: refusing it allocated %d bytes", text, n)
		}
		budgetRefusal(t, "a million zeros, then colons", err)
	}
	var err error
	text := zerosArray(1 << 20)
	if n := testalloc.Least(func() { _, err = valueFromJSON(text, 1000) }); n > 1<<20 {
		t.Errorf("a parse bounded at 1,000 values allocated %d bytes", n)
	}
	budgetRefusal(t, "a parse past its bound", err)
}

// TestStringEscapesReadOneWay: the JSON-1 check under ValueFromJSON
// against escapes split and disguised: whitespace between the halves of
// a pair (inside a string it is text, so each half is lone), a high half
// then a non-surrogate escape, hex digits in either case, an escaped
// backslash before `u` (text, not an escape), and a 16 MiB string of
// pairs read in time linear in its size. The 16 MiB string must read
// whole; its time is logged, and its ratio to a string of plain text as
// long is BenchmarkStringEscapes' (the escapes are read outside this
// package: jcs.ExactStrings, schemagraph.Parse, so no count of ours sees
// them).
func TestStringEscapesReadOneWay(t *testing.T) {
	for _, tc := range []struct {
		text string
		want any // nil: refused as invalid_json
	}{
		{`"\ud800 \udc00"`, nil},
		{`"\ud800\u0020\udc00"`, nil},
		{`"\uD800\u0041"`, nil},
		{`"\ud800\\udc00"`, nil},
		{`"\uD83D\uDE00"`, "\U0001F600"},
		{`"\ud83d\uDE00"`, "\U0001F600"},
		{`"\\ud800"`, `\ud800`},
		{`"\\\\ud800"`, `\\ud800`},
		{`{"\ud800":1,"\udc00":2}`, nil},
	} {
		got, err := ValueFromJSONBudget([]byte(tc.text), 0)
		if tc.want == nil {
			if amp.NameOf(err) != ErrInvalidJSON {
				t.Errorf("%s: %v, %v, want invalid_json", tc.text, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v, want %q", tc.text, got, err, tc.want)
		}
	}
	pair := `\ud83d\ude00`
	long := []byte(`"` + strings.Repeat(pair, (MaxJSONSize-2)/len(pair)) + `"`)
	start := time.Now()
	v, err := ValueFromJSONBudget(long, 0)
	// Linear work on 16 MiB takes well under a second; anything quadratic
	// in the escapes (1.4 million of them) would take hours.
	t.Logf("a 16 MiB string of surrogate pairs: %v", time.Since(start))
	if s, _ := v.(string); err != nil || len(s) != 4*((MaxJSONSize-2)/len(pair)) {
		t.Errorf("a 16 MiB string of surrogate pairs: %d bytes, %v", len(s), err)
	}
}

// BenchmarkStringEscapes times what TestStringEscapesReadOneWay reads: a
// string of surrogate-pair escapes as long as MaxJSONSize allows
// ("hostile", 1.4 million escapes), against its twin, a string of plain
// text as long ("twin"). The ratio should stay a small multiple: both are
// read in one pass; a check quadratic in the escapes would take hours.
func BenchmarkStringEscapes(b *testing.B) {
	pair := `\ud83d\ude00`
	n := (MaxJSONSize - 2) / len(pair) * len(pair)
	for _, bc := range []struct{ name, text string }{
		{"hostile", `"` + strings.Repeat(pair, n/len(pair)) + `"`},
		{"twin", `"` + strings.Repeat("a", n) + `"`},
	} {
		text := []byte(bc.text)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := ValueFromJSONBudget(text, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
