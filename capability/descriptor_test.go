package capability

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

var (
	inSchema  = []byte(`{"type":"object","required":["code"]}`)
	outSchema = []byte(`{"type":"object","required":["comments"]}`)
)

func sum256(b []byte) []byte { h := sha256.Sum256(b); return h[:] }

// descMap returns a valid descriptor in its CBOR map form; tests mutate it.
func descMap() map[string]any {
	ref := func(kind string, schema []byte) map[string]any {
		return map[string]any{
			"uri":          "https://registry.example/" + kind + ".json",
			"bundle_id":    "org.agentries.core",
			"artifact_key": "schemas/" + kind + ".json",
			"hash_alg":     "sha-256",
			"hash":         sum256(schema),
			"media_type":   "application/schema+json",
		}
	}
	return map[string]any{
		"id":               "org.agentries.code-review:2.1.0",
		"name":             "org.agentries.code-review",
		"version":          "2.1.0",
		"input_schema":     ref("input", inSchema),
		"output_schema":    ref("output", outSchema),
		"supported_ranges": []any{">=2.0.0 <2.2.0"},
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := amp.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDescriptor(t testing.TB) Descriptor {
	t.Helper()
	d, err := DecodeDescriptor(mustMarshal(t, descMap()))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ref(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// TestDescriptorRules mutates a valid descriptor once per §4.2 rule.
func TestDescriptorRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(m map[string]any)
		err    amp.ErrName // "" means accepted
	}{
		{"valid", func(m map[string]any) {}, ""},
		{"missing id", func(m map[string]any) { delete(m, "id") }, ErrMissingField},
		{"missing name", func(m map[string]any) { delete(m, "name") }, ErrMissingField},
		{"missing version", func(m map[string]any) { delete(m, "version") }, ErrMissingField},
		{"missing input_schema", func(m map[string]any) { delete(m, "input_schema") }, ErrMissingField},
		{"missing output_schema", func(m map[string]any) { delete(m, "output_schema") }, ErrMissingField},
		{"id other version", func(m map[string]any) { m["id"] = "org.agentries.code-review:2.1.1" }, ErrIdentityMismatch},
		{"id other name", func(m map[string]any) { m["id"] = "org.agentries.translate:2.1.0" }, ErrIdentityMismatch},
		{"id with build metadata", func(m map[string]any) { m["id"] = "org.agentries.code-review:2.1.0+b" }, ErrIdentityMismatch},
		{"id not an id", func(m map[string]any) { m["id"] = "code-review" }, ErrIdentityMismatch},
		{"id and version with build metadata", func(m map[string]any) {
			m["id"], m["version"] = "org.agentries.code-review:2.1.0+b", "2.1.0+b"
		}, ""},
		{"invalid name", func(m map[string]any) {
			m["name"], m["id"] = "org.Agentries.code-review", "org.Agentries.code-review:2.1.0"
		}, ErrInvalidName},
		{"partial version", func(m map[string]any) {
			m["version"], m["id"] = "2.1", "org.agentries.code-review:2.1"
		}, ErrInvalidVersion},
		{"v version", func(m map[string]any) {
			m["version"], m["id"] = "v2.1.0", "org.agentries.code-review:v2.1.0"
		}, ErrInvalidVersion},
		{"name not text", func(m map[string]any) { m["name"] = 7 }, ErrWrongType},
		{"name null", func(m map[string]any) { m["name"] = nil }, ErrWrongType},
		{"name bytes", func(m map[string]any) { m["name"] = []byte("org.agentries.code-review") }, ErrWrongType},
		{"empty name", func(m map[string]any) { m["name"] = "" }, ErrInvalidField},
		{"schema-ref not a map", func(m map[string]any) { m["input_schema"] = "https://x" }, ErrWrongType},
		{"hash_alg sha-1", func(m map[string]any) { ref(m, "input_schema")["hash_alg"] = "sha-1" }, ErrInvalidField},
		{"hash_alg uppercase", func(m map[string]any) { ref(m, "input_schema")["hash_alg"] = "SHA-256" }, ErrInvalidField},
		{"hash_alg missing", func(m map[string]any) { delete(ref(m, "output_schema"), "hash_alg") }, ErrMissingField},
		{"hash missing", func(m map[string]any) { delete(ref(m, "output_schema"), "hash") }, ErrMissingField},
		{"hash as text", func(m map[string]any) { ref(m, "input_schema")["hash"] = "00" }, ErrWrongType},
		{"sha-256 hash of 31 bytes", func(m map[string]any) { ref(m, "input_schema")["hash"] = make([]byte, 31) }, ErrInvalidField},
		{"sha-256 hash of 33 bytes", func(m map[string]any) { ref(m, "input_schema")["hash"] = make([]byte, 33) }, ErrInvalidField},
		{"sha-256 hash of 64 bytes", func(m map[string]any) { ref(m, "input_schema")["hash"] = make([]byte, 64) }, ErrInvalidField},
		{"empty hash", func(m map[string]any) { ref(m, "input_schema")["hash"] = []byte{} }, ErrInvalidField},
		{"sha-512 hash of 64 bytes", func(m map[string]any) {
			r := ref(m, "input_schema")
			h := sha512.Sum512(inSchema)
			r["hash_alg"], r["hash"] = "sha-512", h[:]
		}, ""},
		{"sha-512 hash of 32 bytes", func(m map[string]any) { ref(m, "input_schema")["hash_alg"] = "sha-512" }, ErrInvalidField},
		{"uri only", func(m map[string]any) {
			delete(ref(m, "input_schema"), "bundle_id")
			delete(ref(m, "input_schema"), "artifact_key")
		}, ""},
		{"bundle locators only", func(m map[string]any) { delete(ref(m, "input_schema"), "uri") }, ""},
		{"bundle_id without artifact_key", func(m map[string]any) { delete(ref(m, "input_schema"), "artifact_key") }, ErrMissingLocator},
		{"artifact_key without bundle_id", func(m map[string]any) { delete(ref(m, "output_schema"), "bundle_id") }, ErrMissingLocator},
		{"artifact_key only", func(m map[string]any) {
			delete(ref(m, "output_schema"), "bundle_id")
			delete(ref(m, "output_schema"), "uri")
		}, ErrMissingLocator},
		{"no locator", func(m map[string]any) {
			for _, k := range []string{"uri", "bundle_id", "artifact_key"} {
				delete(ref(m, "input_schema"), k)
			}
		}, ErrMissingLocator},
		{"empty uri", func(m map[string]any) { ref(m, "input_schema")["uri"] = "" }, ErrInvalidField},
		{"empty artifact_key", func(m map[string]any) { ref(m, "input_schema")["artifact_key"] = "" }, ErrInvalidField},
		{"uri not text", func(m map[string]any) { ref(m, "input_schema")["uri"] = 1 }, ErrWrongType},
		{"media_type not text", func(m map[string]any) { ref(m, "input_schema")["media_type"] = true }, ErrWrongType},
		{"updated_at as a tag", func(m map[string]any) {
			ref(m, "input_schema")["updated_at"] = cbor.Tag{Number: 0, Content: "2026-01-01T00:00:00Z"}
		}, ErrWrongType},
		{"schema-ref with an int key", func(m map[string]any) {
			m["input_schema"] = map[any]any{"hash_alg": "sha-256", 1: "x"}
		}, ErrWrongType},
		{"supported_ranges not an array", func(m map[string]any) { m["supported_ranges"] = ">=2.0.0" }, ErrWrongType},
		{"supported_ranges item not text", func(m map[string]any) { m["supported_ranges"] = []any{2} }, ErrWrongType},
		{"supported_ranges wildcard", func(m map[string]any) { m["supported_ranges"] = []any{">=2.0.0", "2.x"} }, ErrUnsupportedRange},
		{"supported_ranges caret", func(m map[string]any) { m["supported_ranges"] = []any{"^2.0.0"} }, ErrUnsupportedRange},
		{"supported_ranges empty range", func(m map[string]any) { m["supported_ranges"] = []any{""} }, ErrInvalidRange},
		{"supported_ranges empty array", func(m map[string]any) { m["supported_ranges"] = []any{} }, ""},
		{"supported_ranges absent", func(m map[string]any) { delete(m, "supported_ranges") }, ""},
		{"deprecated_ranges or", func(m map[string]any) { m["deprecated_ranges"] = []any{"1.0.0 || 2.0.0"} }, ErrUnsupportedRange},
		{"deprecated_ranges valid", func(m map[string]any) { m["deprecated_ranges"] = []any{"<2.1.0"} }, ""},
		{"notes not text", func(m map[string]any) { m["notes"] = []any{} }, ErrWrongType},
		{"notes", func(m map[string]any) { m["notes"] = "reviews code" }, ""},
		{"unknown fields", func(m map[string]any) {
			m["x-signature"] = []byte{1, 2}
			ref(m, "input_schema")["x-mirror"] = []any{"https://mirror"}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := descMap()
			c.mutate(m)
			_, err := DecodeDescriptor(mustMarshal(t, m))
			if c.err == "" {
				if err != nil {
					t.Fatalf("want acceptance, got %v", err)
				}
				return
			}
			wantErr(t, err, amp.CodeBadRequest, c.err, "")
		})
	}
}

func TestDescriptorNotAMap(t *testing.T) {
	for _, v := range []any{[]any{1}, "descriptor", nil, map[any]any{1: "x"}} {
		_, err := DecodeDescriptor(mustMarshal(t, v))
		wantErr(t, err, amp.CodeBadRequest, ErrWrongType, "")
	}
	for _, b := range [][]byte{nil, {0xff}, {0xa1, 0x61}, {0xbf, 0xff}, {0xa0, 0x00}} {
		_, err := DecodeDescriptor(b)
		wantErr(t, err, amp.CodeInvalidMessage, "", "")
	}
}

func TestDescriptorProfiles(t *testing.T) {
	d := mustDescriptor(t)
	for _, p := range []Profile{ProfileDefault, ProfileOffline} {
		if err := d.Validate(p); err != nil {
			t.Errorf("profile %d: %v", p, err)
		}
	}
	online := d
	online.InputSchema.BundleID, online.InputSchema.ArtifactKey = "", ""
	if err := online.Validate(ProfileDefault); err != nil {
		t.Errorf("uri-only schema-ref in the default profile: %v", err)
	}
	wantErr(t, online.Validate(ProfileOffline), amp.CodeBadRequest, ErrMissingLocator, "")
	wantErr(t, online.InputSchema.Validate(ProfileOffline), amp.CodeBadRequest, ErrMissingLocator, "")
	offline := d
	offline.OutputSchema.URI = ""
	for _, p := range []Profile{ProfileDefault, ProfileOffline} {
		if err := offline.Validate(p); err != nil {
			t.Errorf("offline-only schema-ref, profile %d: %v", p, err)
		}
	}
	half := d
	half.OutputSchema.ArtifactKey = ""
	for _, p := range []Profile{ProfileDefault, ProfileOffline} {
		wantErr(t, half.Validate(p), amp.CodeBadRequest, ErrMissingLocator, "")
	}
	dec := Declare{Capabilities: []Descriptor{d, online}}
	if err := dec.Validate(ProfileDefault); err != nil {
		t.Error(err)
	}
	err := dec.Validate(ProfileOffline)
	wantErr(t, err, amp.CodeBadRequest, ErrMissingLocator, "")
	if !strings.Contains(err.Error(), "capabilities[1].input_schema") {
		t.Errorf("error %v does not name the field", err)
	}
}

func TestDescriptorSupports(t *testing.T) {
	d := mustDescriptor(t) // 2.1.0, supported ">=2.0.0 <2.2.0"
	for v, want := range map[string]bool{
		"2.1.0": true, "2.0.0": true, "2.1.9": true, "2.2.0": false, "1.9.0": false,
		"2.1.0+b": true, "2.1.1-rc.1": false,
	} {
		if got := d.Supports(mustVersion(t, v)); got != want {
			t.Errorf("Supports(%s) = %v, want %v", v, got, want)
		}
	}
	d.SupportedRanges = nil // absent: the exact version only
	for v, want := range map[string]bool{"2.1.0": true, "2.1.0+b": false, "2.0.0": false} {
		if got := d.Supports(mustVersion(t, v)); got != want {
			t.Errorf("exact only: Supports(%s) = %v, want %v", v, got, want)
		}
	}
	d.SupportedRanges = []Range{} // present and empty: still its own version
	if !d.Supports(d.Version) || d.Supports(mustVersion(t, "2.0.0")) || d.Supports(Version{}) {
		t.Error("empty supported_ranges")
	}
	d.DeprecatedRanges = []Range{mustRange(t, "<2.1.0")}
	if !d.Deprecated(mustVersion(t, "2.0.5")) || d.Deprecated(mustVersion(t, "2.1.0")) {
		t.Error("Deprecated")
	}
	if id := d.ID().String(); id != "org.agentries.code-review:2.1.0" {
		t.Errorf("ID = %s", id)
	}
}

// TestDescriptorRoundTrip: deterministic input re-encodes to identical
// bytes, unknown fields included; non-deterministic input re-encodes to
// its deterministic form.
func TestDescriptorRoundTrip(t *testing.T) {
	m := descMap()
	m["x-signature"] = map[any]any{"alg": "ed25519", 1: []byte{9}, -1: cbor.Tag{Number: 1, Content: uint64(1700000000)}}
	m["notes"] = "reviews code"
	m["deprecated_ranges"] = []any{"<2.1.0", ">=2.0.0 <2.0.5"}
	ref(m, "input_schema")["x-mirror"] = []any{"https://mirror.example", 1.5}
	ref(m, "output_schema")["updated_at"] = "2026-02-07T00:00:00Z"
	in := mustMarshal(t, m)
	d, err := DecodeDescriptor(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Extra) != 1 || len(d.InputSchema.Extra) != 1 || d.OutputSchema.Extra != nil {
		t.Fatalf("extra fields: %v / %v / %v", d.Extra, d.InputSchema.Extra, d.OutputSchema.Extra)
	}
	out, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("round trip changed the bytes\n in %x\nout %x", in, out)
	}
	// Non-deterministic input: a map with keys out of order and a
	// non-minimal integer head inside an extra field.
	nd := append([]byte{}, in...)
	nd = bytes.Replace(nd, []byte{0x1a, 0x65, 0x53, 0xf1, 0x00}, []byte{0x1b, 0, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00}, 1)
	if bytes.Equal(nd, in) {
		t.Fatal("test did not alter the input")
	}
	d2, err := DecodeDescriptor(nd)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, d2) {
		t.Fatal("non-deterministic input decodes to another value")
	}
	out2, err := d2.Encode()
	if err != nil || !bytes.Equal(out2, in) {
		t.Fatalf("non-deterministic input re-encodes to %x, %v", out2, err)
	}
}

func TestDescriptorEncodeRefusesInvalid(t *testing.T) {
	d := mustDescriptor(t)
	for name, mutate := range map[string]func(d *Descriptor){
		"zero version": func(d *Descriptor) { d.Version = Version{} },
		"bad name":     func(d *Descriptor) { d.Name = "code-review" },
		"bad hash":     func(d *Descriptor) { d.InputSchema.Hash = d.InputSchema.Hash[:5] },
		"no locator": func(d *Descriptor) {
			d.OutputSchema.URI, d.OutputSchema.BundleID, d.OutputSchema.ArtifactKey = "", "", ""
		},
		"zero range":         func(d *Descriptor) { d.SupportedRanges = []Range{{}} },
		"zero deprecated":    func(d *Descriptor) { d.DeprecatedRanges = []Range{{}} },
		"extra shadows":      func(d *Descriptor) { d.Extra = map[string]cbor.RawMessage{"id": cbor.RawMessage{0x01}} },
		"extra shadows ref":  func(d *Descriptor) { d.InputSchema.Extra = map[string]cbor.RawMessage{"uri": {0x01}} },
		"extra absent field": func(d *Descriptor) { d.Extra = map[string]cbor.RawMessage{"notes": {0x61, 0x61}} },
		"extra empty value":  func(d *Descriptor) { d.Extra = map[string]cbor.RawMessage{"x": nil} },
	} {
		c := d
		c.InputSchema.Hash = append([]byte{}, d.InputSchema.Hash...)
		mutate(&c)
		if _, err := c.Encode(); err == nil {
			t.Errorf("%s: Encode accepted an invalid descriptor", name)
		} else {
			wantErr(t, err, amp.CodeBadRequest, "", "")
		}
		if _, err := c.MarshalJSON(); err == nil {
			t.Errorf("%s: MarshalJSON accepted an invalid descriptor", name)
		}
	}
	bad := d
	bad.Extra = map[string]cbor.RawMessage{"x": {0xff}}
	if _, err := bad.Encode(); err == nil {
		t.Error("Encode accepted invalid raw CBOR in Extra")
	}
}

func TestSchemaRefMatches(t *testing.T) {
	d := mustDescriptor(t)
	if !d.InputSchema.Matches(inSchema) || d.InputSchema.Matches(outSchema) || !d.OutputSchema.Matches(outSchema) {
		t.Error("sha-256 Matches")
	}
	h := sha512.Sum512(inSchema)
	r := SchemaRef{HashAlg: HashSHA512, Hash: h[:]}
	if !r.Matches(inSchema) || r.Matches(append(inSchema, ' ')) {
		t.Error("sha-512 Matches")
	}
	r.HashAlg = "md5"
	if r.Matches(inSchema) {
		t.Error("unknown algorithm matched")
	}
	if n, ok := HashSize(HashSHA512); !ok || n != 64 {
		t.Error("HashSize")
	}
	if _, ok := HashSize("sha-1"); ok {
		t.Error("HashSize(sha-1)")
	}
}

const descJSON = `{
  "id": "org.agentries.code-review:2.1.0",
  "name": "org.agentries.code-review",
  "version": "2.1.0",
  "input_schema": {"bundle_id": "org.agentries.core", "artifact_key": "schemas/input.json",
    "hash_alg": "sha-256", "hash": "HASHIN", "x-mirror": ["https://m", 1, -2, 1.5, 2.0, null, true, {"k": "v"}]},
  "output_schema": {"uri": "https://registry.example/output.json", "hash_alg": "sha-256", "hash": "HASHOUT"},
  "supported_ranges": [">=2.0.0 <2.2.0"],
  "x-owner": "platform <team> & co"
}`

func jsonDescriptor() string {
	r := strings.NewReplacer("HASHIN", hexOf(sum256(inSchema)), "HASHOUT", hexOf(sum256(outSchema)))
	return r.Replace(descJSON)
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestDescriptorJSON(t *testing.T) {
	d, err := DecodeDescriptorJSON([]byte(jsonDescriptor()))
	if err != nil {
		t.Fatal(err)
	}
	if !d.InputSchema.Matches(inSchema) || !d.OutputSchema.Matches(outSchema) {
		t.Fatal("hex hashes were not decoded")
	}
	if len(d.Extra) != 1 || len(d.InputSchema.Extra) != 1 {
		t.Fatalf("extra fields lost: %v %v", d.Extra, d.InputSchema.Extra)
	}
	// JSON -> descriptor -> JSON -> descriptor is stable, and so is CBOR.
	j, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(j) || !strings.Contains(string(j), `"platform <team> & co"`) {
		t.Fatalf("MarshalJSON = %s", j)
	}
	d2, err := DecodeDescriptorJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, d2) {
		t.Fatalf("JSON round trip changed the descriptor\n%+v\n%+v", d, d2)
	}
	j2, _ := d2.MarshalJSON()
	if !bytes.Equal(j, j2) {
		t.Fatalf("MarshalJSON is not stable\n%s\n%s", j, j2)
	}
	c, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	d3, err := DecodeDescriptor(c)
	if err != nil || !reflect.DeepEqual(d, d3) {
		t.Fatalf("JSON and CBOR forms disagree: %v", err)
	}
}

func TestDescriptorJSONRefused(t *testing.T) {
	good := jsonDescriptor()
	upper := strings.Replace(good, hexOf(sum256(inSchema)), strings.ToUpper(hexOf(sum256(inSchema))), 1)
	for _, c := range []struct {
		name string
		in   string
		code amp.Code
		err  amp.ErrName
	}{
		{"uppercase hex", upper, amp.CodeBadRequest, ErrInvalidField},
		{"odd hex", strings.Replace(good, hexOf(sum256(inSchema)), "abc", 1), amp.CodeBadRequest, ErrInvalidField},
		{"short hash", strings.Replace(good, hexOf(sum256(inSchema)), "abcd", 1), amp.CodeBadRequest, ErrInvalidField},
		{"hash not a string", strings.Replace(good, `"`+hexOf(sum256(inSchema))+`"`, "12", 1), amp.CodeBadRequest, ErrWrongType},
		{"duplicate key", strings.Replace(good, `"version": "2.1.0",`, `"version": "2.1.0", "version": "2.1.0",`, 1), amp.CodeInvalidMessage, ErrInvalidJSON},
		{"duplicate nested key", strings.Replace(good, `"hash_alg": "sha-256", "hash": "`+hexOf(sum256(inSchema)), `"hash_alg": "sha-256", "hash_alg": "sha-256", "hash": "`+hexOf(sum256(inSchema)), 1), amp.CodeInvalidMessage, ErrInvalidJSON},
		{"syntax", good[:len(good)-2], amp.CodeInvalidMessage, ErrInvalidJSON},
		{"trailing data", good + " {}", amp.CodeInvalidMessage, ErrInvalidJSON},
		{"invalid utf-8", strings.Replace(good, "platform", "plat\xffform", 1), amp.CodeInvalidMessage, ErrInvalidJSON},
		{"too deep", strings.Repeat("[", 40) + strings.Repeat("]", 40), amp.CodeInvalidMessage, ErrInvalidJSON},
		{"case-variant key", strings.Replace(good, `"name"`, `"Name"`, 1), amp.CodeBadRequest, ErrMissingField},
		{"array", `[1]`, amp.CodeBadRequest, ErrWrongType},
		{"huge integer", strings.Replace(good, `"x-owner": "platform <team> & co"`, `"x-n": 123456789012345678901234567890`, 1), amp.CodeBadRequest, ErrInvalidField},
		{"id mismatch", strings.Replace(good, `"id": "org.agentries.code-review:2.1.0"`, `"id": "org.agentries.code-review:2.0.0"`, 1), amp.CodeBadRequest, ErrIdentityMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeDescriptorJSON([]byte(c.in))
			wantErr(t, err, c.code, c.err, "")
		})
	}
	// An extra field with no JSON form cannot be written as JSON.
	d := mustDescriptor(t)
	d.Extra = map[string]cbor.RawMessage{"x-bytes": mustMarshal(t, []byte{1})}
	if _, err := d.MarshalJSON(); !errors.Is(err, ErrInvalidField) {
		t.Errorf("MarshalJSON with a byte-string extra: %v", err)
	}
}

// TestDescriptorEmbedded: a Descriptor inside another structure (a bundle
// manifest) encodes and decodes through its marshaler methods.
func TestDescriptorEmbedded(t *testing.T) {
	type manifest struct {
		Format       string       `cbor:"format" json:"format"`
		Capabilities []Descriptor `cbor:"capabilities" json:"capabilities"`
	}
	m := manifest{Format: "ampbundle/1", Capabilities: []Descriptor{mustDescriptor(t)}}
	b, err := amp.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back manifest
	if err := amp.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, back) {
		t.Fatal("CBOR: embedded descriptor changed")
	}
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var jback manifest
	if err := json.Unmarshal(j, &jback); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, jback) {
		t.Fatal("JSON: embedded descriptor changed")
	}
	// An invalid embedded descriptor fails the outer decode.
	bad := descMap()
	bad["id"] = "org.agentries.code-review:9.9.9"
	raw := mustMarshal(t, map[string]any{"format": "ampbundle/1", "capabilities": []any{bad}})
	if err := amp.Unmarshal(raw, &back); !errors.Is(err, ErrIdentityMismatch) {
		t.Errorf("embedded invalid descriptor: %v", err)
	}
}
