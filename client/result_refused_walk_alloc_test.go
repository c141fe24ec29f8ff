package client

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
)

// TestRefusedResultIsNotWalkedTokenByToken: attack: when a result did not
// decode into Out as written (one mistyped member, or a result of
// another shape), decodeResult ran integralFloats, which walked the
// whole view with json.Decoder.Token: some 6 allocations an item,
// whatever the numbers. A provider's 1 MiB result of 983,025 small
// integers (the CBOR item bound is 1,048,576) and one float, for an Out
// of []int, cost the caller 5.9 million allocations, 112 MB, and 0.43 s
// on the 2-core build machine (four times the decode itself) to refuse
// it, at every Call. Now integralFloats reads the view by bytes
// (scanJSON) and rounds only a number its digits cannot tell
// (notIntegral): the refusal allocates nothing per item.
func TestRefusedResultIsNotWalkedTokenByToken(t *testing.T) {
	item := []byte{0x90, 0xf9, 0x3e, 0x00} // [1.5, then 15 arrays of 65,535 zeros]
	for range 15 {
		item = append(item, 0x99, 0xff, 0xff)
		item = append(item, make([]byte, 65535)...)
	}
	view, err := amp.JSONValue(item)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	allocs := testing.AllocsPerRun(2, func() { got, _ = integralFloats(view) })
	if got != nil || allocs > 16 {
		t.Fatalf("a view of %d items with no integral float: %v allocations (rewritten: %v); want at most 16, none per item", 15*65535, allocs, got != nil)
	}
	if _, err := decodeResult[[]int](view); amp.NameOf(err) != ErrResultType {
		t.Fatalf("the mistyped result: %v, want %s", err, ErrResultType)
	}
}

// tokenIntegralFloats is integralFloats as it was (json.Decoder.Token):
// the oracle of what is rewritten.
func tokenIntegralFloats(data []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []byte
	last := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		n, isNum := tok.(json.Number)
		if !isNum || !strings.ContainsAny(string(n), ".eE") {
			continue
		}
		f, err := jsonnum.ParseFloat(string(n))
		if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(n)
		if start < last || string(data[start:end]) != string(n) {
			return nil, false
		}
		out = append(out, data[last:start]...)
		out = strconv.AppendInt(out, int64(f), 10)
		last = end
	}
	if out == nil {
		return nil, false
	}
	return append(out, data[last:]...), true
}

// TestIntegralFloatsRewritesWhatTheTokenWalkRewrote: the byte scan
// rewrites exactly the numbers the token walk rewrote, and refuses the
// texts it refused: numbers at the edges of notIntegral's rule (a
// fraction rounded away at 2^52, 0.99…9 rounding to 1, an underflow to
// zero, trailing zeros, exponents), numbers inside strings and keys, and
// random doubles written in several forms.
func TestIntegralFloatsRewritesWhatTheTokenWalkRewrote(t *testing.T) {
	texts := []string{
		`[4503599627370496.5, 0.99999999999999999999, 1e-400, -1e-400, -0.0, 0.0, 1.0e0, 100.0, 1.50e1, 1.5, 0.1]`,
		`[9007199254740991.0, 9007199254740992.0, 123456789012345.6, 12345678901234.56, 1e15, 1e-300, 5e-324, 1.0000000000000001]`,
		`{"1.0": "2.0", "a\"1.0": [3.0e0, "4.0"], "b": {"c": 2.5E1, "d": -7.000}}`,
		`"1.0"`, `1.0`, `{"a":1.0} x`, `[]`,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteByte('[')
	for i := range 5000 {
		f := math.Float64frombits(rng.Uint64())
		switch i % 3 {
		case 1:
			f = math.Trunc(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(18))))
		case 2:
			f = float64(rng.IntN(1000)) / float64(1+rng.IntN(8))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(strconv.AppendFloat(nil, f, "gef"[rng.IntN(3)], rng.IntN(20)-1, 64))
	}
	b.WriteByte(']')
	texts = append(texts, b.String())
	for _, text := range texts {
		want, wantOK := tokenIntegralFloats([]byte(text))
		got, ok := integralFloats([]byte(text))
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Errorf("%.80s: rewritten %v %.200s, want %v %.200s", text, ok, got, wantOK, want)
		}
	}
}
