package capability

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// Threat: a publisher signs a bundle whose descriptor carries an extra
// field (RFC 004 §10) that the descriptor's JSON form cannot carry: a
// byte string, a tag, a map with an integer key, undefined, NaN, or an
// integer below -2^63. Every CBOR reader accepted it (the manifest, the
// store), but the JSON form is how the store's descriptors travel
// through the admin socket (internal/admin/ops.go, GET /v1/catalog:
// catalog, MCP tools, A2A card, `ampbundle` while an agent holds the
// store) and how a mirror serves descriptor.json: MarshalJSON refused
// the descriptor (the whole catalog document with it), or wrote a number
// that DecodeDescriptorJSON refuses, or wrote null for undefined, so
// the reader saw another descriptor than the store holds.
//
// Now the Offline Registry Profile, which every bundle descriptor is
// checked under (build, manifest decode, import), refuses an extra field
// whose JSON form does not read back as the same CBOR: 4001
// invalid_field. Outside the profile (a peer's CAP_DECLARE) such fields
// are still carried unchanged.

// TestBundleDescriptorWhoseExtraHasNoJSONFormIsRefused: each value, as a
// descriptor extra or a schema-ref extra, decodes (ProfileDefault) but is
// refused by Validate(ProfileOffline).
func TestBundleDescriptorWhoseExtraHasNoJSONFormIsRefused(t *testing.T) {
	for _, c := range []struct{ name, hex string }{
		{"byte string", "4100"},
		{"tag", "c11a00000000"},
		{"bignum tag", "c249010000000000000000"},
		{"integer map key", "a10102"},
		{"undefined", "f7"},
		{"simple value", "e0"},
		{"nan", "f97e00"},
		{"infinity", "f97c00"},
		{"negative infinity", "fbfff0000000000000"},
		{"-2^64", "3bffffffffffffffff"},
		{"-2^63-1", "3b8000000000000000"},
		{"byte string in an array", "8201" + "4100"},
		{"byte string in a map", "a1617a" + "4100"},
	} {
		for _, where := range []string{"descriptor", "input_schema", "bridge"} {
			t.Run(c.name+"/"+where, func(t *testing.T) {
				raw, err := hex.DecodeString(c.hex)
				if err != nil {
					t.Fatal(err)
				}
				d := extraDescriptor(t, where, raw)
				err = d.Validate(ProfileOffline)
				if !errors.Is(err, ErrInvalidField) || amp.AsError(err).Code != amp.CodeBadRequest {
					t.Fatalf("Validate(ProfileOffline) = %v, want 4001 %s", err, ErrInvalidField)
				}
				if strings.Contains(err.Error(), c.hex) {
					t.Fatalf("the error quotes the value: %v", err)
				}
				if err := d.Validate(ProfileDefault); err != nil {
					t.Fatalf("outside the offline profile the field is carried (§10): %v", err)
				}
				// The harm: the JSON form fails, or reads back as
				// another descriptor than the CBOR one.
				want, _ := d.Encode()
				if j, err := d.MarshalJSON(); err == nil {
					if back, err := DecodeDescriptorJSON(j); err == nil {
						if got, _ := back.Encode(); bytes.Equal(got, want) {
							t.Fatal("the value has a JSON form that reads back: the refusal is not needed")
						}
					}
				}
			})
		}
	}
	// Deeper than the JSON reader's cap: no decoder admits it (amp's
	// cap is the same depth), but a Descriptor built in Go can hold it.
	d := mustDescriptor(t)
	deep, _ := hex.DecodeString(strings.Repeat("81", maxJSONDepth) + "00")
	d.Extra = map[string]cbor.RawMessage{"x-ext": deep}
	if err := d.Validate(ProfileOffline); !errors.Is(err, ErrInvalidField) {
		t.Fatalf("Validate(ProfileOffline) of an extra nested past the json depth cap = %v, want %s", err, ErrInvalidField)
	}
}

// TestBundleDescriptorWithAJSONFormReadsBackAsTheSameCBOR: the values the
// profile keeps travel through the JSON form (MarshalJSON, then
// DecodeDescriptorJSON, as the admin socket's catalog does) and come
// back as the same CBOR, byte for byte.
func TestBundleDescriptorWithAJSONFormReadsBackAsTheSameCBOR(t *testing.T) {
	for _, c := range []struct{ name, hex string }{
		{"null", "f6"},
		{"true", "f5"},
		{"uint64 max", "1bffffffffffffffff"},
		{"-2^63", "3b7fffffffffffffff"},
		{"float", "f93e00"},
		{"negative zero", "f98000"},
		{"large float", "fb7e37e43c8800759c"},
		{"text", "62c3a9"},
		{"nested", "a2616180616ba1617af6"},
		{"nested to the json depth cap", strings.Repeat("81", maxJSONDepth-1) + "00"},
	} {
		for _, where := range []string{"descriptor", "input_schema"} {
			t.Run(c.name+"/"+where, func(t *testing.T) {
				raw, err := hex.DecodeString(c.hex)
				if err != nil {
					t.Fatal(err)
				}
				if where == "input_schema" && strings.HasPrefix(c.name, "nested to") {
					raw = raw[1:] // a schema-ref's field sits one level deeper
				}
				d := extraDescriptor(t, where, raw)
				if err := d.Validate(ProfileOffline); err != nil {
					t.Fatalf("Validate(ProfileOffline): %v", err)
				}
				want, err := d.Encode()
				if err != nil {
					t.Fatal(err)
				}
				j, err := d.MarshalJSON()
				if err != nil {
					t.Fatalf("MarshalJSON: %v", err)
				}
				back, err := DecodeDescriptorJSON(j)
				if err != nil {
					t.Fatalf("DecodeDescriptorJSON of MarshalJSON: %v", err)
				}
				got, err := back.Encode()
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("the JSON form reads back as other CBOR (%v)\n got %x\nwant %x", err, got, want)
				}
			})
		}
	}
}

// extraDescriptor decodes, as a manifest would, a valid offline
// descriptor of policy bridge whose extra field "x-ext" (on the
// descriptor, its input_schema or its bridge) holds raw.
func extraDescriptor(t *testing.T, where string, raw []byte) Descriptor {
	t.Helper()
	m := descMap()
	m["policy"] = string(PolicyBridge)
	m["bridge"] = map[string]any{"bundle_id": "org.agentries.core", "artifact_key": "bridges/b.json",
		"hash_alg": "sha-256", "hash": sum256([]byte("{}"))}
	target := m
	if where != "descriptor" {
		target = ref(m, where)
	}
	target["x-ext"] = cbor.RawMessage(raw)
	d, err := DecodeDescriptor(mustMarshal(t, m))
	if err != nil {
		t.Fatalf("DecodeDescriptor: %v", err)
	}
	return d
}
