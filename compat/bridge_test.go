package compat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func errName(err error) amp.ErrName {
	var e *amp.Error
	if errors.As(err, &e) {
		return e.Name
	}
	return ""
}

// TestBridgeOpsTurnOldShapeIntoNew covers each operation on the input side:
// what it does when its member is present, absent, or in the way.
func TestBridgeOpsTurnOldShapeIntoNew(t *testing.T) {
	for _, tc := range []struct {
		name, op, in, want string
		err                amp.ErrName
	}{
		{"rename present", `{"op":"rename","from":"/a","to":"/b"}`, `{"a":1,"c":2}`, `{"b":1,"c":2}`, ""},
		{"rename absent is a no-op", `{"op":"rename","from":"/a","to":"/b"}`, `{"c":2}`, `{"c":2}`, ""},
		{"rename nested", `{"op":"rename","from":"/x/a","to":"/x/b"}`, `{"x":{"a":[1]}}`, `{"x":{"b":[1]}}`, ""},
		{"rename never overwrites", `{"op":"rename","from":"/a","to":"/b"}`, `{"a":1,"b":2}`, ``, ErrBridgeConflict},
		{"move creates parents", `{"op":"move","from":"/a","to":"/o/p/a"}`, `{"a":"v"}`, `{"o":{"p":{"a":"v"}}}`, ""},
		{"move into existing parent", `{"op":"move","from":"/a","to":"/o/a"}`, `{"a":"v","o":{"k":1}}`, `{"o":{"a":"v","k":1}}`, ""},
		{"move through a non-object", `{"op":"move","from":"/a","to":"/o/a"}`, `{"a":"v","o":3}`, ``, ErrBridgeConflict},
		{"move escaped pointer", `{"op":"move","from":"/a~1b","to":"/c~0d"}`, `{"a/b":1}`, `{"c~d":1}`, ""},
		{"default when absent", `{"op":"default","path":"/o/f","value":{"k":[true]}}`, `{}`, `{"o":{"f":{"k":[true]}}}`, ""},
		{"default keeps a present value", `{"op":"default","path":"/f","value":1}`, `{"f":null}`, `{"f":null}`, ""},
		{"drop-optional present", `{"op":"drop-optional","path":"/o/x"}`, `{"o":{"x":1,"y":2}}`, `{"o":{"y":2}}`, ""},
		{"drop-optional absent", `{"op":"drop-optional","path":"/o/x"}`, `{"o":5}`, `{"o":5}`, ""},
		{"value not an object", `{"op":"drop-optional","path":"/x"}`, `[1]`, ``, ErrBridgeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBridge([]byte(`{"bridge":1,"input":[` + tc.op + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			in := mustJSON(t, tc.in)
			before, _ := json.Marshal(in)
			got, err := b.ApplyInput(in)
			if after, _ := json.Marshal(in); string(after) != string(before) {
				t.Fatalf("the caller's value was modified: %s", after)
			}
			if tc.err != "" {
				if errName(err) != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, mustJSON(t, tc.want)) {
				g, _ := json.Marshal(got)
				t.Fatalf("got %s, want %s", g, tc.want)
			}
		})
	}
}

// TestBridgeOutputSideIsSeparate: the output side runs its own operations,
// not the input side's.
func TestBridgeOutputSideIsSeparate(t *testing.T) {
	b, err := ParseBridge([]byte(`{"bridge":1,"input":[{"op":"rename","from":"/a","to":"/b"}],"output":[{"op":"rename","from":"/new","to":"/old"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.ApplyOutput(mustJSON(t, `{"a":1,"new":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, mustJSON(t, `{"a":1,"old":2}`)) {
		t.Fatalf("got %v", got)
	}
}

// TestMalformedBridgeRefused: anything outside the format or its bounds is
// refused by the parser, never half-applied.
func TestMalformedBridgeRefused(t *testing.T) {
	deep := `"/` + strings.Repeat("a/", MaxBridgePathDepth) + `a"`
	many := `{"bridge":1,"input":[` + strings.Repeat(`{"op":"drop-optional","path":"/a"},`, MaxBridgeOps) + `{"op":"drop-optional","path":"/a"}]}`
	for name, doc := range map[string]string{
		"not json":              `{`,
		"not an object":         `[]`,
		"version missing":       `{"input":[]}`,
		"version 2":             `{"bridge":2}`,
		"unknown member":        `{"bridge":1,"code":"rm -rf"}`,
		"duplicate member":      `{"bridge":1,"bridge":1}`,
		"duplicate op member":   `{"bridge":1,"input":[{"op":"drop-optional","path":"/a","path":"/b"}]}`,
		"trailing data":         `{"bridge":1} {}`,
		"unknown op":            `{"bridge":1,"input":[{"op":"exec","path":"/a"}]}`,
		"op not text":           `{"bridge":1,"input":[{"op":1}]}`,
		"missing to":            `{"bridge":1,"input":[{"op":"move","from":"/a"}]}`,
		"extra op member":       `{"bridge":1,"input":[{"op":"drop-optional","path":"/a","value":1}]}`,
		"default without value": `{"bridge":1,"input":[{"op":"default","path":"/a"}]}`,
		"root pointer":          `{"bridge":1,"input":[{"op":"drop-optional","path":""}]}`,
		"relative pointer":      `{"bridge":1,"input":[{"op":"drop-optional","path":"a"}]}`,
		"empty segment":         `{"bridge":1,"input":[{"op":"drop-optional","path":"/a//b"}]}`,
		"bad escape":            `{"bridge":1,"input":[{"op":"drop-optional","path":"/a~2"}]}`,
		"path too deep":         `{"bridge":1,"input":[{"op":"drop-optional","path":` + deep + `}]}`,
		"too many ops":          many,
		"same from and to":      `{"bridge":1,"input":[{"op":"move","from":"/a","to":"/a"}]}`,
		"to inside from":        `{"bridge":1,"input":[{"op":"move","from":"/a","to":"/a/b"}]}`,
		"rename across parents": `{"bridge":1,"input":[{"op":"rename","from":"/a","to":"/o/a"}]}`,
		"too nested":            `{"bridge":1,"input":[{"op":"default","path":"/a","value":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}]}`,
		"too large":             `{"bridge":1,"input":[{"op":"default","path":"/a","value":"` + strings.Repeat("x", MaxBridgeSize) + `"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseBridge([]byte(doc)); errName(err) != ErrBridgeMalformed {
				t.Fatalf("err = %v, want %s", err, ErrBridgeMalformed)
			}
		})
	}
}

// TestBridgeDroppingRequiredFieldRefused: a bridge whose removal would
// leave the produced shape without a field its target schema requires
// (or that the builder cannot prove safe) is refused.
func TestBridgeDroppingRequiredFieldRefused(t *testing.T) {
	l := memLoader{files: map[string][]byte{
		"new-in.json":  []byte(`{"type":"object","required":["q"],"properties":{"q":{"type":"string"},"o":{"type":"object","required":["k"],"properties":{"k":{}}}}}`),
		"old-out.json": []byte(`{"type":"object","required":["translation"],"properties":{"translation":{"type":"string"}}}`),
		"ref-in.json":  []byte(`{"$ref":"new-in.json"}`),
		"pat-in.json":  []byte(`{"type":"object","patternProperties":{"^q":{}}}`),
	}}
	in, out := Schema{Loader: l, Key: "new-in.json"}, Schema{Loader: l, Key: "old-out.json"}
	for _, tc := range []struct {
		name, doc string
		in        Schema
		refused   bool
	}{
		{"drop optional", `{"bridge":1,"input":[{"op":"drop-optional","path":"/legacy"}]}`, in, false},
		{"drop required", `{"bridge":1,"input":[{"op":"drop-optional","path":"/q"}]}`, in, true},
		{"drop nested required", `{"bridge":1,"input":[{"op":"drop-optional","path":"/o/k"}]}`, in, true},
		{"rename away from required", `{"bridge":1,"input":[{"op":"rename","from":"/q","to":"/query"}]}`, in, true},
		{"move into required", `{"bridge":1,"input":[{"op":"move","from":"/query","to":"/q"}]}`, in, false},
		{"output drops what the caller requires", `{"bridge":1,"output":[{"op":"rename","from":"/translation","to":"/t"}]}`, in, true},
		{"output drops optional", `{"bridge":1,"output":[{"op":"drop-optional","path":"/extra"}]}`, in, false},
		{"unprovable through $ref", `{"bridge":1,"input":[{"op":"drop-optional","path":"/x"}]}`, Schema{Loader: l, Key: "ref-in.json"}, true},
		{"unprovable through patternProperties", `{"bridge":1,"input":[{"op":"drop-optional","path":"/q/x"}]}`, Schema{Loader: l, Key: "pat-in.json"}, true},
		{"target schema missing", `{"bridge":1,"input":[{"op":"drop-optional","path":"/x"}]}`, Schema{Loader: l, Key: "nope.json"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBridge([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckBridge(b, tc.in, out)
			if tc.refused && errName(err) != ErrBridgeDropsRequired {
				t.Fatalf("err = %v, want %s", err, ErrBridgeDropsRequired)
			}
			if !tc.refused && err != nil {
				t.Fatalf("refused a safe bridge: %v", err)
			}
		})
	}
}

// TestBridgeFormatDocExample keeps the annotated example of docs/FORMAT.md
// honest: the block shown is testdata/compat/bridge/example.json, it parses,
// and it turns the documented request and result into the documented
// shapes.
func TestBridgeFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join("..", "testdata", "compat", "bridge", "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(name string) string {
		begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
		a, z := strings.Index(string(doc), begin), strings.Index(string(doc), end)
		if a < 0 || z < a {
			t.Fatalf("docs/FORMAT.md has no %s block", name)
		}
		s := strings.TrimSpace(string(doc)[a+len(begin) : z])
		s = strings.TrimSuffix(strings.TrimPrefix(s, "```json"), "```")
		return strings.TrimSpace(s)
	}
	if block("bridge-example") != strings.TrimSpace(string(file)) {
		t.Fatal("the bridge example of docs/FORMAT.md differs from testdata/compat/bridge/example.json")
	}
	b, err := ParseBridge(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in, want string
		apply    func(any) (any, error)
	}{
		{block("bridge-example-request"), block("bridge-example-request-bridged"), b.ApplyInput},
		{block("bridge-example-result"), block("bridge-example-result-bridged"), b.ApplyOutput},
	} {
		got, err := c.apply(mustJSON(t, c.in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, mustJSON(t, c.want)) {
			g, _ := json.Marshal(got)
			t.Fatalf("%s bridged to %s, the doc says %s", c.in, g, c.want)
		}
	}
}

// TestBridgeErrorDoesNotEchoLongOrRawMemberName: a bridge document is
// peer-supplied (it travels in bundles); a refused member name reaches the
// error escaped and cut, never as 60 KiB or terminal control bytes.
func TestBridgeErrorDoesNotEchoLongOrRawMemberName(t *testing.T) {
	long := strings.Repeat("m", 60000)
	tests := []struct{ name, doc string }{
		{"long top member", `{"bridge":1,"` + long + `":1}`},
		{"long op member", `{"bridge":1,"input":[{"op":"drop-optional","path":"/a","` + long + `":1}]}`},
		{"control bytes", `{"bridge":1,"\u001b]0;pwned\u0007":1}`},
	}
	for _, tt := range tests {
		_, err := ParseBridge([]byte(tt.doc))
		if !errors.Is(err, ErrBridgeMalformed) {
			t.Fatalf("%s: got %v, want %s", tt.name, err, ErrBridgeMalformed)
		}
		if msg := err.Error(); len(msg) > 200 || strings.ContainsAny(msg, "\x1b\x07") {
			t.Errorf("%s: error echoes the member name raw or unbounded (%d bytes): %.120q", tt.name, len(msg), msg)
		}
	}
}
