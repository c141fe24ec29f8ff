package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// seenBytes is a json.Unmarshaler that keeps the bytes it was given.
type seenBytes struct{ b string }

func (s *seenBytes) UnmarshalJSON(b []byte) error { s.b = string(b); return nil }

// strictInt is a json.Unmarshaler that takes only an integer as written.
type strictInt int

func (s *strictInt) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*s = strictInt(n)
	return nil
}

// TestIntegralFallbackShowsRawFieldsAnotherNumber covers the view a
// caller who asked for the provider's bytes gets when Call reads an
// integral float as an integer for an integer field (AMP-16).
//
// Attack: the result {"n": 1.0, "raw": 1.0}. The fallback decode rewrote
// every integral float of the view before decoding, so a json.RawMessage
// (or any json.Unmarshaler, or a json.Number) field saw 1 where the item
// held the float 1.0: the provider's float read as an integer by a
// caller who kept the raw bytes precisely to tell the two apart
// (JSONValue shows no two different items alike).
//
// Should: integer fields take 1.0 as 1, and every json.Unmarshaler,
// json.RawMessage and json.Number, wherever it sits (a field, a pointer,
// a slice, a map), gets JSONValue's bytes as written; an Unmarshaler that
// refuses them makes the result result_type_mismatch, as it would without
// the fallback.
func TestIntegralFallbackShowsRawFieldsAnotherNumber(t *testing.T) {
	result, err := amp.Marshal(map[string]any{
		"n": float64(1), "raw": float64(1), "num": float64(2), "seen": float64(3),
		"ptr": float64(4), "list": []any{float64(5), int64(6)}, "dict": map[string]any{"k": float64(7)},
		"in": map[string]any{"m": float64(8), "r": float64(9)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if view, _ := amp.JSONValue(result); !strings.Contains(string(view), `"raw":1.0`) {
		t.Fatalf("the view does not show the float: %s", view)
	}
	type inner struct {
		M int             `json:"m"`
		R json.RawMessage `json:"r"`
	}
	type out struct {
		N    int                        `json:"n"`
		Raw  json.RawMessage            `json:"raw"`
		Num  json.Number                `json:"num"`
		Seen seenBytes                  `json:"seen"`
		Ptr  *json.RawMessage           `json:"ptr"`
		List []json.RawMessage          `json:"list"`
		Map  map[string]json.RawMessage `json:"dict"`
		Nest inner                      `json:"in"`
	}
	got, err := scriptedCall[out](t, result)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	for _, c := range []struct{ field, got, want string }{
		{"raw", string(got.Raw), "1.0"},
		{"num", string(got.Num), "2.0"},
		{"seen", got.Seen.b, "3.0"},
		{"ptr", ptrText(got.Ptr), "4.0"},
		{"list[0]", elem(got.List, 0), "5.0"},
		{"list[1]", elem(got.List, 1), "6"},
		{"map.k", string(got.Map["k"]), "7.0"},
		{"in.r", string(got.Nest.R), "9.0"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, the provider's item is %s", c.field, c.got, c.want)
		}
	}
	if got.N != 1 || got.Nest.M != 8 {
		t.Errorf("integer fields: n %d, in.m %d; want 1, 8", got.N, got.Nest.M)
	}

	// An Unmarshaler that refuses the provider's 1.0 is not handed 1.
	type strict struct {
		A strictInt       `json:"n"`
		R json.RawMessage `json:"raw"`
	}
	if _, err := scriptedCall[strict](t, result); amp.NameOf(err) != ErrResultType {
		t.Errorf("an Unmarshaler refusing 1.0: %v, want %s", err, ErrResultType)
	}
}

func ptrText(p *json.RawMessage) string {
	if p == nil {
		return "<nil>"
	}
	return string(*p)
}

func elem(l []json.RawMessage, i int) string {
	if i >= len(l) {
		return "<missing>"
	}
	return string(l[i])
}
