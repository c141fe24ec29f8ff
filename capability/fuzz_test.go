package capability

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/ampbundle/ampbundle/amp"
)

// Fuzz targets. Their seed corpus (files under testdata/vectors/rfc004 and
// literals) runs in every `go test`. Properties: no panic; every error is an
// *amp.Error with a non-zero code; a successful decode re-encodes to bytes
// that decode to the same value (and deterministic input re-encodes to
// itself).

// checkFuzzErr fails unless err is an *amp.Error with one of the codes.
func checkFuzzErr(t *testing.T, err error, codes ...amp.Code) {
	t.Helper()
	var e *amp.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *amp.Error", err, err)
	}
	if e.Code == 0 {
		t.Fatalf("error %v has no code", err)
	}
	for _, c := range codes {
		if e.Code == c {
			return
		}
	}
	t.Fatalf("error %v has code %d, want one of %v", err, e.Code, codes)
}

// vectorBodies returns the body_hex of every vector file; it fails the
// fuzz target if there are none.
func vectorBodies(f *testing.F) [][]byte {
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	if len(files) == 0 {
		f.Fatalf("no vector files match %s/*.json", vectorDir)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var v struct {
			Input struct {
				BodyHex string `json:"body_hex"`
			} `json:"input"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			f.Fatal(err)
		}
		if v.Input.BodyHex == "" {
			continue
		}
		b, err := hex.DecodeString(v.Input.BodyHex)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		f.Fatal("no vector file has a body_hex")
	}
	return out
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{
		"org.agentries.code-review:2.1.0", "com.acme.risk-evaluator:1.4.2", "org.x.y:1.0.0-rc.1+b.2",
		"org.agentries.code-review", "org.agentries.code-review:2.1", ":1.0.0", "a.b.c:v1.0.0",
		"org.Example.x:1.0.0", "org.example.x:1.0.0:1", "org..x:1.0.0", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			checkFuzzErr(t, err, amp.CodeBadRequest)
			if strings.Contains(err.Error(), s) && len(s) > 8 {
				t.Fatalf("error %v echoes its input", err)
			}
			return
		}
		if id.String() != s {
			t.Fatalf("String() = %q, want %q", id.String(), s)
		}
		if err := ValidateName(id.Name); err != nil {
			t.Fatalf("parsed id has an invalid name: %v", err)
		}
		ns, slug, err := SplitName(id.Name)
		if err != nil || ns+"."+slug != id.Name || !InNamespace(id.Name, ns) || !InNamespace(id.Name, "*") {
			t.Fatalf("SplitName/InNamespace disagree on %q", id.Name)
		}
		again, err := ParseID(id.String())
		if err != nil || again != id {
			t.Fatalf("reparse: %v %v", again, err)
		}
	})
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{
		"1.2.3", ">=1.2.0 <2.0.0", ">=1.2.3-alpha <2.0.0", "=1.0.0+b", "  >1.0.0   <=1.5.0 ",
		"1.0.0 || 2.0.0", "1.x", "*", "~1.2.3", "^1.2.3", "1.0.0 - 2.0.0", "!=1.0.0", ">=1.0.0, <2.0.0",
		"1.2", "v1.2.3", "", ">= 1.0.0", "=>1.0.0", ">=1.0.0-01",
	} {
		for _, v := range []string{"1.2.3", "1.2.3-beta", "2.0.0", "1.0.0+b", "1.0.0-99999999999999999999"} {
			f.Add(s, v)
		}
	}
	f.Fuzz(func(t *testing.T, s, vs string) {
		r, err := ParseRange(s)
		if err != nil {
			checkFuzzErr(t, err, amp.CodeBadRequest)
			if !errors.Is(err, ErrInvalidRange) && !errors.Is(err, ErrUnsupportedRange) {
				t.Fatalf("unexpected name: %v", err)
			}
			return
		}
		if r.String() != s || r.IsZero() {
			t.Fatalf("String() = %q, want %q", r.String(), s)
		}
		again, err := ParseRange(s)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("reparse: %v", err)
		}
		v, err := ParseVersion(vs)
		if err != nil {
			checkFuzzErr(t, err, amp.CodeBadRequest)
			return
		}
		got := r.Contains(v)
		// Differential check against Masterminds where the rules agree:
		// numeric prerelease identifiers fit in uint64, and the version
		// has no prerelease or our prerelease rule admits it.
		if hugeNumeric(v) || v.pre != "" && !r.admits(v) {
			return
		}
		for _, c := range r.cmps {
			if hugeNumeric(c.v) {
				return
			}
		}
		c, err := semver.NewConstraint(s)
		if err != nil {
			return
		}
		if want := c.Check(semver.MustParse(vs)); got != want {
			t.Fatalf("%q contains %q: %v, semver says %v", s, vs, got, want)
		}
	})
}

// hugeNumeric reports whether v has a numeric prerelease identifier too
// long for uint64 (Masterminds then compares it as text).
func hugeNumeric(v Version) bool {
	for _, id := range strings.Split(v.pre, ".") {
		if numeric(id) && len(id) > 19 {
			return true
		}
	}
	return false
}

// bodyCodec pairs a decoder with the encoder of its result.
type bodyCodec struct {
	name   string
	decode func([]byte) (any, func() ([]byte, error), error)
}

func bodyCodecs() []bodyCodec {
	return []bodyCodec{
		{"query", func(b []byte) (any, func() ([]byte, error), error) { v, err := DecodeQuery(b); return v, v.Encode, err }},
		{"declare", func(b []byte) (any, func() ([]byte, error), error) {
			v, err := DecodeDeclare(b)
			return v, v.Encode, err
		}},
		{"invoke", func(b []byte) (any, func() ([]byte, error), error) {
			v, err := DecodeInvoke(b)
			return v, v.Encode, err
		}},
		{"result", func(b []byte) (any, func() ([]byte, error), error) {
			v, err := DecodeResult(b)
			return v, v.Encode, err
		}},
		{"descriptor", func(b []byte) (any, func() ([]byte, error), error) {
			v, err := DecodeDescriptor(b)
			return v, v.Encode, err
		}},
	}
}

// FuzzDecodeBody runs every body decoder (and DecodeDescriptor) on the same
// input.
func FuzzDecodeBody(f *testing.F) {
	for _, b := range vectorBodies(f) {
		f.Add(b)
	}
	d := descMap()
	d["x-ext"] = map[any]any{1: []byte{1}}
	for _, v := range []any{
		d,
		map[string]any{"filter": map[string]any{"capability": "org.a.b", "version": ">=1.0.0"}, "limit": 5, "cursor": "c", "order": "oldest-first", "x": 1},
		map[string]any{"filter": map[string]any{"type": "b"}},
		map[string]any{"capabilities": []any{descMap()}, "next_cursor": "n"},
		map[string]any{"id": "org.a.b:1.0.0", "params": nil, "timeout_ms": 10},
		map[string]any{"type": "b", "negotiate": map[string]any{"preferred": "1.0.0", "acceptable": []any{"0.9.0"}, "range": "<2.0.0"}, "params": []any{1.5}},
		map[string]any{"status": "success", "result": map[string]any{"a": -1}},
		map[string]any{"status": "error", "error": map[string]any{"code": 4004, "name": "schema_violation", "message": "m", "details": []any{}}},
		map[string]any{"status": "error", "result": 1},
		[]any{},
	} {
		f.Add(mustMarshal(f, v))
	}
	f.Add([]byte{0xa1, 0x66, 's', 't', 'a', 't', 'u', 's', 0x18}) // truncated
	f.Add([]byte{0xbf, 0xff})                                     // indefinite
	f.Fuzz(func(t *testing.T, data []byte) {
		canonical := amp.Limits{}.IsCanonical(data)
		for _, c := range bodyCodecs() {
			v, encode, err := c.decode(data)
			if err != nil {
				checkFuzzErr(t, err, amp.CodeInvalidMessage, amp.CodeBadRequest)
				continue
			}
			out, err := encode()
			if err != nil {
				t.Fatalf("%s: decoded value does not encode: %v", c.name, err)
			}
			if canonical && !bytes.Equal(out, data) {
				t.Fatalf("%s: deterministic input re-encodes differently\n in %x\nout %x", c.name, data, out)
			}
			v2, encode2, err := c.decode(out)
			if err != nil {
				t.Fatalf("%s: re-encoded body does not decode: %v", c.name, err)
			}
			if !reflect.DeepEqual(v, v2) {
				t.Fatalf("%s: re-encoded body decodes to another value\n%+v\n%+v", c.name, v, v2)
			}
			if out2, err := encode2(); err != nil || !bytes.Equal(out, out2) {
				t.Fatalf("%s: encoding is not stable", c.name)
			}
		}
	})
}

func FuzzDecodeDescriptorJSON(f *testing.F) {
	f.Add([]byte(jsonDescriptor()))
	f.Add([]byte(`{"id":"a.b.c:1.0.0","name":"a.b.c","version":"1.0.0","input_schema":{"uri":"u","hash_alg":"sha-256","hash":"` + strings.Repeat("00", 32) + `"},"output_schema":{"uri":"u","hash_alg":"sha-256","hash":"` + strings.Repeat("ab", 32) + `"},"x":[1.0,-0.0,1e300,{"k":null}]}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDescriptorJSON(data)
		if err != nil {
			checkFuzzErr(t, err, amp.CodeInvalidMessage, amp.CodeBadRequest)
			return
		}
		j, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("decoded descriptor does not marshal: %v", err)
		}
		d2, err := DecodeDescriptorJSON(j)
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("JSON round trip: %v\n%+v\n%+v", err, d, d2)
		}
		c, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		d3, err := DecodeDescriptor(c)
		if err != nil || !reflect.DeepEqual(d, d3) {
			t.Fatalf("CBOR form: %v", err)
		}
	})
}
