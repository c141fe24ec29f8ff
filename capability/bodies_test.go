package capability

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// decoders runs every body decoder on the same bytes.
func decoders() map[string]func([]byte) error {
	return map[string]func([]byte) error{
		"query":   func(b []byte) error { _, err := DecodeQuery(b); return err },
		"declare": func(b []byte) error { _, err := DecodeDeclare(b); return err },
		"invoke":  func(b []byte) error { _, err := DecodeInvoke(b); return err },
		"result":  func(b []byte) error { _, err := DecodeResult(b); return err },
	}
}

// TestBodyInvalidCBOR: bytes that are not one valid CBOR item are 1001 in
// every decoder; well-formed items of the wrong shape are 4001.
func TestBodyInvalidCBOR(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":           {},
		"break":           {0xff},
		"truncated map":   {0xa1, 0x61},
		"truncated text":  {0xa1, 0x61, 0x61, 0x63, 0x61},
		"indefinite map":  {0xbf, 0x61, 0x61, 0x01, 0xff},
		"duplicate keys":  {0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02},
		"trailing bytes":  {0xa0, 0x00},
		"invalid utf-8":   {0xa1, 0x61, 0xff, 0x01},
		"reserved info":   {0x1c},
		"two items":       {0x01, 0x01},
		"ill-formed simp": {0xf8, 0x01},
	} {
		for dn, dec := range decoders() {
			t.Run(dn+"/"+name, func(t *testing.T) {
				wantErr(t, dec(b), amp.CodeInvalidMessage, "", "")
			})
		}
	}
	for name, v := range map[string]any{
		"array":   []any{1},
		"text":    "cap",
		"null":    nil,
		"uint":    uint64(1),
		"int key": map[any]any{1: "x"},
		"tagged":  cbor.Tag{Number: 55799, Content: map[string]any{}},
		"empty":   map[string]any{},
	} {
		b := mustMarshal(t, v)
		for dn, dec := range decoders() {
			err := dec(b)
			if err == nil || amp.CodeOf(err) != amp.CodeBadRequest {
				t.Errorf("%s %s: %v, want 4001", dn, name, err)
			}
		}
	}
}

type bodyCase struct {
	name string
	body map[string]any
	err  amp.ErrName // "" means accepted
}

func runBodyCases(t *testing.T, decode func([]byte) (func() ([]byte, error), error), cases []bodyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := mustMarshal(t, c.body)
			encode, err := decode(in)
			if c.err != "" {
				wantErr(t, err, amp.CodeBadRequest, c.err, "")
				return
			}
			if err != nil {
				t.Fatalf("want acceptance, got %v", err)
			}
			out, err := encode()
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			if !bytes.Equal(in, out) {
				t.Fatalf("round trip changed the bytes\n in %x\nout %x", in, out)
			}
		})
	}
}

func TestDecodeQuery(t *testing.T) {
	f := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	name := "org.agentries.code-review"
	runBodyCases(t, func(b []byte) (func() ([]byte, error), error) {
		q, err := DecodeQuery(b)
		return q.Encode, err
	}, []bodyCase{
		{"capability", f("filter", f("capability", name)), ""},
		{"type", f("filter", f("type", "code-review")), ""},
		{"both, capability wins", f("filter", f("capability", name, "type", "other")), ""},
		{"all fields", f("filter", f("capability", name, "version", ">=2.0.0 <3.0.0"), "limit", 2, "cursor", "opaque", "order", "oldest-first"), ""},
		{"limit 0", f("filter", f("capability", name), "limit", 0), ""},
		{"unknown fields", f("filter", f("capability", name, "x-f", 1), "x-q", []any{"a"}), ""},
		{"missing filter", f("limit", 1), ErrMissingField},
		{"filter not a map", f("filter", name), ErrWrongType},
		{"empty filter", f("filter", f()), ErrMissingField},
		{"filter with version only", f("filter", f("version", "1.0.0")), ErrMissingField},
		{"invalid capability", f("filter", f("capability", "Org.agentries.code-review")), ErrInvalidName},
		{"capability not text", f("filter", f("capability", 1)), ErrWrongType},
		{"empty type", f("filter", f("type", "")), ErrInvalidField},
		{"version or", f("filter", f("capability", name, "version", "1.0.0 || 2.0.0")), ErrUnsupportedRange},
		{"version partial", f("filter", f("capability", name, "version", "2.1")), ErrUnsupportedRange},
		{"version not text", f("filter", f("capability", name, "version", []any{"1.0.0"})), ErrWrongType},
		{"negative limit", f("filter", f("capability", name), "limit", -1), ErrWrongType},
		{"limit text", f("filter", f("capability", name), "limit", "10"), ErrWrongType},
		{"limit float", f("filter", f("capability", name), "limit", 1.5), ErrWrongType},
		{"cursor not text", f("filter", f("capability", name), "cursor", []byte("c")), ErrWrongType},
		{"empty cursor", f("filter", f("capability", name), "cursor", ""), ErrInvalidField},
		{"unknown order", f("filter", f("capability", name), "order", "random"), ErrInvalidField},
		{"order case", f("filter", f("capability", name), "order", "Newest-First"), ErrInvalidField},
	})
	q, err := DecodeQuery(mustMarshal(t, f("filter", f("type", "code-review"))))
	if err != nil || q.EffectiveOrder() != OrderNewestFirst || q.Order != "" || q.Limit != nil {
		t.Fatalf("defaults: %+v %v", q, err)
	}
	q.Order = OrderOldestFirst
	if q.EffectiveOrder() != OrderOldestFirst {
		t.Fatal("EffectiveOrder")
	}
}

func TestDecodeDeclare(t *testing.T) {
	d1, d2 := descMap(), descMap()
	d2["version"], d2["id"] = "2.0.0", "org.agentries.code-review:2.0.0"
	bad := descMap()
	bad["id"] = "org.agentries.code-review:1.0.0"
	runBodyCases(t, func(b []byte) (func() ([]byte, error), error) {
		d, err := DecodeDeclare(b)
		return d.Encode, err
	}, []bodyCase{
		{"one", map[string]any{"capabilities": []any{d1}}, ""},
		{"two, next_cursor", map[string]any{"capabilities": []any{d1, d2}, "next_cursor": "page-2"}, ""},
		{"unknown field", map[string]any{"capabilities": []any{d1}, "x-generation": 7}, ""},
		{"missing capabilities", map[string]any{"next_cursor": "c"}, ErrMissingField},
		{"empty capabilities", map[string]any{"capabilities": []any{}}, ErrInvalidField},
		{"capabilities not an array", map[string]any{"capabilities": d1}, ErrWrongType},
		{"descriptor not a map", map[string]any{"capabilities": []any{"x"}}, ErrWrongType},
		{"invalid descriptor", map[string]any{"capabilities": []any{d1, bad}}, ErrIdentityMismatch},
		{"next_cursor not text", map[string]any{"capabilities": []any{d1}, "next_cursor": 2}, ErrWrongType},
		{"empty next_cursor", map[string]any{"capabilities": []any{d1}, "next_cursor": ""}, ErrInvalidField},
	})
	_, err := DecodeDeclare(mustMarshal(t, map[string]any{"capabilities": []any{d1, bad}}))
	if !strings.Contains(err.Error(), "capabilities[1].id") {
		t.Errorf("error %v does not name the field", err)
	}
	if _, err := (Declare{}).Encode(); !errors.Is(err, ErrInvalidField) {
		t.Errorf("empty Declare encodes: %v", err)
	}
}

// TestDecodeInvoke covers every identification rule of §6.3 and §7.4.
func TestDecodeInvoke(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	const name = "org.agentries.code-review"
	params := map[string]any{"code": "x"}
	b := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	long := make([]any, MaxAcceptable+1)
	for i := range long {
		long[i] = "1.0.0"
	}
	runBodyCases(t, func(bb []byte) (func() ([]byte, error), error) {
		inv, err := DecodeInvoke(bb)
		return inv.Encode, err
	}, []bodyCase{
		{"by id", b("id", id, "params", params), ""},
		{"by id, timeout", b("id", id, "params", params, "timeout_ms", 30000), ""},
		{"by id, agreeing capability", b("id", id, "capability", name, "params", params), ""},
		{"by id, agreeing version", b("id", id, "version", "2.1.0", "params", params), ""},
		{"by id, agreeing both", b("id", id, "capability", name, "version", "2.1.0", "params", params), ""},
		{"by id, legacy type", b("id", id, "type", "code-review", "params", params), ""},
		{"by id, null params", b("id", id, "params", nil), ""},
		{"by id, unknown field", b("id", id, "params", 1, "x-trace", "t"), ""},
		{"by name, version", b("capability", name, "version", "2.1.0", "params", params), ""},
		{"by name, negotiate", b("capability", name, "negotiate", b("preferred", "2.2.0", "acceptable", []any{"2.1.0"}, "range", ">=2.0.0 <3.0.0"), "params", params), ""},
		{"by name, empty negotiate", b("capability", name, "negotiate", b(), "params", params), ""},
		{"by name, negotiate unknown field", b("capability", name, "negotiate", b("x-h", true), "params", params), ""},
		{"by type, version", b("type", "code-review", "version", "2.1.0", "params", params), ""},
		{"by capability and type", b("capability", name, "type", "code-review", "version", "2.1.0", "params", params), ""},
		// A.16 and friends
		{"id and negotiate", b("id", id, "negotiate", b("preferred", "2.1.0"), "params", params), ErrIdentityConflict},
		{"id, capability, negotiate", b("id", id, "capability", name, "negotiate", b(), "params", params), ErrIdentityConflict},
		{"version and negotiate", b("capability", name, "version", "2.1.0", "negotiate", b(), "params", params), ErrIdentityConflict},
		// A.8 and friends
		{"id vs capability", b("id", id, "capability", "org.agentries.translate", "params", params), ErrIdentityMismatch},
		{"id vs version", b("id", id, "version", "1.0.0", "params", params), ErrIdentityMismatch},
		{"id vs version build metadata", b("id", id, "version", "2.1.0+b", "params", params), ErrIdentityMismatch},
		{"id vs both", b("id", id, "capability", "org.agentries.translate", "version", "1.0.0", "params", params), ErrIdentityMismatch},
		{"by name without version or negotiate", b("capability", name, "params", params), ErrMissingField},
		{"no target", b("version", "2.1.0", "params", params), ErrMissingField},
		{"nothing but params", b("params", params), ErrMissingField},
		{"missing params", b("id", id), ErrMissingField},
		{"missing params by name", b("capability", name, "version", "2.1.0"), ErrMissingField},
		{"invalid id", b("id", "org.agentries.code-review", "params", params), ErrInvalidID},
		{"invalid id version", b("id", "org.agentries.code-review:2.1", "params", params), ErrInvalidID},
		{"id not text", b("id", 5, "params", params), ErrWrongType},
		{"empty id", b("id", "", "params", params), ErrInvalidField},
		{"invalid capability", b("capability", "code-review", "version", "2.1.0", "params", params), ErrInvalidName},
		{"invalid version", b("capability", name, "version", "2.1", "params", params), ErrInvalidVersion},
		{"version not text", b("capability", name, "version", 2, "params", params), ErrWrongType},
		{"negotiate not a map", b("capability", name, "negotiate", "2.1.0", "params", params), ErrWrongType},
		{"preferred partial", b("capability", name, "negotiate", b("preferred", "2.1"), "params", params), ErrInvalidVersion},
		{"acceptable not an array", b("capability", name, "negotiate", b("acceptable", "2.1.0"), "params", params), ErrWrongType},
		{"acceptable item invalid", b("capability", name, "negotiate", b("acceptable", []any{"2.1.0", "v2.0.0"}), "params", params), ErrInvalidVersion},
		{"acceptable item not text", b("capability", name, "negotiate", b("acceptable", []any{2}), "params", params), ErrWrongType},
		{"acceptable too long", b("capability", name, "negotiate", b("acceptable", long), "params", params), ErrInvalidField},
		{"range caret", b("capability", name, "negotiate", b("range", "^2.0.0"), "params", params), ErrUnsupportedRange},
		{"timeout text", b("id", id, "params", params, "timeout_ms", "1s"), ErrWrongType},
		{"timeout negative", b("id", id, "params", params, "timeout_ms", -1), ErrWrongType},
	})
	inv, err := DecodeInvoke(mustMarshal(t, b("id", id, "params", nil)))
	if err != nil || !inv.ByID() || !bytes.Equal(inv.Params, []byte{0xf6}) {
		t.Fatalf("null params: %+v %v", inv, err)
	}
}

func TestDecodeResult(t *testing.T) {
	b := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	runBodyCases(t, func(bb []byte) (func() ([]byte, error), error) {
		r, err := DecodeResult(bb)
		return r.Encode, err
	}, []bodyCase{
		{"success", b("status", "success", "result", b("comments", []any{"ok"})), ""},
		{"success null", b("status", "success", "result", nil), ""},
		{"success tagged", b("status", "success", "result", cbor.Tag{Number: 1, Content: uint64(1)}), ""},
		{"error minimal", b("status", "error", "error", b("code", 5001)), ""},
		{"error full", b("status", "error", "error", b("code", 4004, "name", "schema_violation", "message", "params violate the input schema", "details", b("path", "/code"))), ""},
		{"error unknown fields", b("status", "error", "error", b("code", 5001, "x-e", 1), "x-r", 2), ""},
		{"missing status", b("result", 1), ErrMissingField},
		{"unknown status", b("status", "ok", "result", 1), ErrInvalidField},
		{"status not text", b("status", 1, "result", 1), ErrWrongType},
		{"success without result", b("status", "success"), ErrMissingField},
		{"success with error", b("status", "success", "result", 1, "error", b("code", 5001)), ErrInvalidField},
		{"error without error", b("status", "error"), ErrMissingField},
		{"error with result", b("status", "error", "result", 1, "error", b("code", 5001)), ErrInvalidField},
		{"error not a map", b("status", "error", "error", "boom"), ErrWrongType},
		{"error without code", b("status", "error", "error", b("message", "boom")), ErrMissingField},
		{"error code text", b("status", "error", "error", b("code", "5001")), ErrWrongType},
		{"error code negative", b("status", "error", "error", b("code", -1)), ErrWrongType},
		{"error code 0", b("status", "error", "error", b("code", 0)), ErrInvalidField},
		{"error code too big", b("status", "error", "error", b("code", 70000)), ErrInvalidField},
		{"error empty message", b("status", "error", "error", b("code", 5001, "message", "")), ErrInvalidField},
		{"error name not text", b("status", "error", "error", b("code", 5001, "name", 1)), ErrWrongType},
	})
}

func TestBodyEncodeRefusesInvalid(t *testing.T) {
	v := mustVersion(t, "2.1.0")
	id := ID{Name: "org.agentries.code-review", Version: v}
	for name, enc := range map[string]func() ([]byte, error){
		"query without filter":     Query{}.Encode,
		"query bad order":          Query{Filter: Filter{Type: "x"}, Order: "sideways"}.Encode,
		"query bad capability":     Query{Filter: Filter{Capability: "x"}}.Encode,
		"query extra shadows":      Query{Filter: Filter{Type: "x"}, Extra: map[string]cbor.RawMessage{"limit": {0x01}}}.Encode,
		"filter extra shadows":     Query{Filter: Filter{Type: "x", Extra: map[string]cbor.RawMessage{"version": {0x01}}}}.Encode,
		"invoke without params":    Invoke{ID: id}.Encode,
		"invoke id and negotiate":  Invoke{ID: id, Negotiate: &NegotiateHints{}, Params: []byte{0xf6}}.Encode,
		"invoke id mismatch":       Invoke{ID: id, Capability: "org.agentries.translate", Params: []byte{0xf6}}.Encode,
		"invoke by name, no vers":  Invoke{Capability: id.Name, Params: []byte{0xf6}}.Encode,
		"invoke bad id":            Invoke{ID: ID{Name: "x", Version: v}, Params: []byte{0xf6}}.Encode,
		"invoke id without vers":   Invoke{ID: ID{Name: id.Name}, Params: []byte{0xf6}}.Encode,
		"invoke zero acceptable":   Invoke{Capability: id.Name, Negotiate: &NegotiateHints{Acceptable: []Version{{}}}, Params: []byte{0xf6}}.Encode,
		"invoke hints shadow":      Invoke{Capability: id.Name, Negotiate: &NegotiateHints{Extra: map[string]cbor.RawMessage{"range": {0x01}}}, Params: []byte{0xf6}}.Encode,
		"result empty":             Result{}.Encode,
		"result success, no value": Result{Status: StatusSuccess}.Encode,
		"result both":              Result{Status: StatusSuccess, Result: []byte{1}, Error: &ResultError{Code: 5001}}.Encode,
		"result error, no error":   Result{Status: StatusError}.Encode,
		"result error code 0":      Result{Status: StatusError, Error: &ResultError{}}.Encode,
		"result error and value":   Result{Status: StatusError, Result: []byte{1}, Error: &ResultError{Code: 5001}}.Encode,
		"result error extra":       Result{Status: StatusError, Error: &ResultError{Code: 5001, Extra: map[string]cbor.RawMessage{"code": {1}}}}.Encode,
		"result bad status":        Result{Status: "done", Result: []byte{1}}.Encode,
	} {
		if _, err := enc(); err == nil {
			t.Errorf("%s: Encode accepted an invalid body", name)
		} else {
			wantErr(t, err, amp.CodeBadRequest, "", "")
		}
	}
}

// TestBodyNonDeterministicInput: bodies in non-deterministic CBOR decode to
// the same values as their deterministic form, and encode to it.
func TestBodyNonDeterministicInput(t *testing.T) {
	// {"params": [1], "id": "org.a.b:1.0.0"} with keys unsorted and a
	// two-byte head for the integer 1.
	in := []byte{0xa2,
		0x66, 'p', 'a', 'r', 'a', 'm', 's', 0x81, 0x18, 0x01,
		0x62, 'i', 'd', 0x6d, 'o', 'r', 'g', '.', 'a', '.', 'b', ':', '1', '.', '0', '.', '0'}
	inv, err := DecodeInvoke(in)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := amp.Limits{}.Canonical(in)
	if err != nil {
		t.Fatal(err)
	}
	inv2, err := DecodeInvoke(canon)
	if err != nil || !reflect.DeepEqual(inv, inv2) {
		t.Fatalf("deterministic form decodes differently: %v", err)
	}
	out, err := inv.Encode()
	if err != nil || !bytes.Equal(out, canon) {
		t.Fatalf("Encode = %x, %v; want %x", out, err, canon)
	}
}

func TestErrorResult(t *testing.T) {
	r := NewErrorResult(amp.NewError(amp.CodeSchemaViolation, "params violate the input schema").WithDetails(map[string]any{"path": "/code"}).WithCause(errors.New("secret cause")))
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("secret")) {
		t.Fatal("the cause leaked into the result")
	}
	back, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	e := back.Error.AsError()
	if !errors.Is(e, amp.CodeSchemaViolation) || !errors.Is(e, amp.ErrName("schema_violation")) || e.Message != "params violate the input schema" || e.Details == nil {
		t.Fatalf("AsError = %+v", e)
	}
	// A plain error becomes 5001 without its text.
	r = NewErrorResult(errors.New("disk on fire at /var/x"))
	if r.Error.Code != amp.CodeInternalError || strings.Contains(r.Error.Message, "disk") {
		t.Fatalf("plain error: %+v", r.Error)
	}
	if _, err := r.Encode(); err != nil {
		t.Fatal(err)
	}
	// A local error without a code becomes 5001.
	r = NewErrorResult(&amp.Error{Name: "hash_mismatch", Message: "hash mismatch"})
	if r.Error.Code != amp.CodeInternalError || r.Error.Name != "" {
		t.Fatalf("local error: %+v", r.Error)
	}
	if e := (ResultError{Code: amp.CodeTimeout}).AsError(); e.Name != "timeout" {
		t.Fatalf("default name: %+v", e)
	}
}
