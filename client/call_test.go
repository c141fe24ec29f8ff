package client

import (
	"bytes"
	"math"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestCallParamsKeepIntegersExact: Call's params go through encoding/json
// without passing integers through float64 (threat: an id or amount beyond
// 2^53 silently rounded on its way to the provider); fractions stay
// floats; a value with no JSON form is refused before anything is sent.
func TestCallParamsKeepIntegersExact(t *testing.T) {
	in := map[string]any{"big": uint64(math.MaxUint64), "neg": int64(math.MinInt64), "f": 1.5, "list": []any{int64(1 << 60), "x", nil, true}}
	got, err := paramsCBOR(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := amp.Marshal(map[string]any{"big": uint64(math.MaxUint64), "neg": int64(math.MinInt64), "f": 1.5, "list": []any{int64(1 << 60), "x", nil, true}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("params\n got %x\nwant %x", got, want)
	}
	if _, err := paramsCBOR(map[string]any{"c": make(chan int)}); amp.NameOf(err) != ErrParamsEncoding {
		t.Fatalf("a channel: %v", err)
	}
}
