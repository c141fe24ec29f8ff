package client

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// jsonArray is the JSON array of n copies of the text item.
func jsonArray(item string, n int) []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]")
}

// decodeInto decodes data as Call decodes a result into Out.
func decodeInto[Out any](data []byte) error {
	_, err := decodeResult[Out](data)
	return err
}

// TestResultWhoseNumbersCostStrconvItsSlowPathIsRefused: attack: JSON-5
// left the first json.Unmarshal of decodeResult to encoding/json, which
// rounds every number an Out's float64, float32 or empty interface takes
// with strconv.ParseFloat. A provider whose result is an array of CBOR
// subnormal doubles (9 bytes each, written 5e-324 by amp.JSONValue) made
// a caller whose Out is []float64 or any pay strconv's decimal fallback
// for each: 116,508 of them (1 MiB of CBOR) took 1.66 s on the 2-core
// build machine, and a reply may be 16 MiB. Into a float32 any double
// beyond its range (1e-300) costs the same. Now decodeResult counts such
// numbers before encoding/json sees the result (slowNumbers, by the
// exact double of jsonnum) and refuses more than MaxSlowResultNumbers,
// ErrResultCost (4004); Outs that round nothing, and honest doubles that
// strconv rounds fast, are decoded as before.
func TestResultWhoseNumbersCostStrconvItsSlowPathIsRefused(t *testing.T) {
	over, at := MaxSlowResultNumbers+1, MaxSlowResultNumbers
	type quoted struct {
		X float64 `json:"x,string"`
	}
	type ints struct {
		N int `json:"n"`
	}
	objects := func(item string, n int) []byte {
		return []byte(`{"n":1,"rest":` + string(jsonArray(item, n)) + `}`)
	}
	cases := []struct {
		name    string
		decode  func([]byte) error
		data    []byte
		refused bool
	}{
		{"subnormals into []float64", decodeInto[[]float64], jsonArray("5e-324", over), true},
		{"subnormals into any", decodeInto[any], objects("-4.9e-324", over), true},
		{"subnormals into map[string]any", decodeInto[map[string]any], objects("1e-320", over), true},
		{"doubles beyond a float32 into []float32", decodeInto[[]float32], jsonArray("1e-300", over), true},
		{"subnormals in ,string fields", decodeInto[[]quoted], jsonArray(`{"x":"5e-324"}`, over), true},
		{"20-digit midpoints into []float64", decodeInto[[]float64], jsonArray("1.0000000000000001269e+300", over), true},
		{"subnormals at the bound", decodeInto[[]float64], jsonArray("5e-324", at), false},
		{"subnormals Out leaves unread", decodeInto[ints], objects("5e-324", 4*over), false},
		{"subnormals Out keeps as bytes", decodeInto[[]json.RawMessage], jsonArray("5e-324", 4*over), false},
		{"subnormals Out keeps as text", decodeInto[[]json.Number], jsonArray("5e-324", 4*over), false},
		{"small normal doubles into []float64", decodeInto[[]float64], jsonArray("1.2345678901234567e-300", 4*over), false},
		{"large normal doubles into []float64", decodeInto[[]float64], jsonArray("1.7976931348623157e+308", 4*over), false},
		{"doubles within a float32 into []float32", decodeInto[[]float32], jsonArray("1.5e-35", 4*over), false},
		{"integers into []float64", decodeInto[[]float64], jsonArray("18446744073709551615", 4*over), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(tc.data)
			switch {
			case tc.refused && (amp.NameOf(err) != ErrResultCost || amp.CodeOf(err) != amp.CodeSchemaViolation):
				t.Fatalf("decoded with %v, want %s (4004)", err, ErrResultCost)
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestCallRefusesAResultOfSubnormalDoublesBeforeDecodingIt: the attack
// through Call, as a provider sends it: a CBOR array of subnormal
// doubles for an Out of []float64 is refused ErrResultCost, not rounded
// one by one with strconv's decimal fallback.
func TestCallRefusesAResultOfSubnormalDoublesBeforeDecodingIt(t *testing.T) {
	n := 4 * MaxSlowResultNumbers
	result := []byte{0x99, byte(n >> 8), byte(n)} // an array of n items
	for range n {
		result = append(result, 0xfb, 0, 0, 0, 0, 0, 0, 0, 1) // 5e-324
	}
	p := newParties(t)
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		body, err := capability.Result{Status: capability.StatusSuccess, Result: result}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	got, err := Call[[]float64](context.Background(), p.client(t, tr), "org.example.count:1.0.0", map[string]any{})
	if amp.NameOf(err) != ErrResultCost || len(got) != 0 {
		t.Fatalf("a result of %d subnormal doubles: %d values, %v; want %s", n, len(got), err, ErrResultCost)
	}
	var named *amp.Error
	if !errors.As(err, &named) || strings.Contains(named.Message, "5e-324") {
		t.Fatalf("the refusal quotes the result or is not an amp error: %v", err)
	}
}

// TestSlowNumbersAreThoseOfTheDoublesEnds: slowFor, which reads a
// number's decimal place and rounds only the decade at either end of the
// range exactly, calls a double's shortest text (as amp.JSONValue writes
// it) slow for a float64 exactly when the double is subnormal, for
// doubles spread over the whole range and packed about its ends.
func TestSlowNumbersAreThoseOfTheDoublesEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var fs []float64
	for range 20000 {
		fs = append(fs, math.Float64frombits(rng.Uint64()))
	}
	for _, end := range []float64{0x1p-1022, 1e-308, 1e-307, math.MaxFloat64, 1e308} {
		f := end
		for range 200 {
			fs = append(fs, f, -f, math.Nextafter(end, 0))
			f = math.Nextafter(f, 0)
		}
	}
	wrong := 0
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		text := strconv.AppendFloat(nil, f, 'g', -1, 64)
		want := f != 0 && math.Abs(f) < 0x1p-1022
		if got := slowFor(text, rounding{f64: true}); got != want {
			wrong++
			if wrong < 5 {
				t.Errorf("%s: slow %v, want %v", text, got, want)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d doubles misjudged", wrong, len(fs))
	}
}
