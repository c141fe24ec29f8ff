package client

import (
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// unmarshalCalls counts the calls of countingUnmarshaler.UnmarshalJSON.
var unmarshalCalls atomic.Int64

// countingUnmarshaler is a json.Unmarshaler with a side effect: it counts
// its calls (as a caller's type might log, allocate or look something up).
type countingUnmarshaler struct{ b string }

func (c *countingUnmarshaler) UnmarshalJSON(b []byte) error {
	unmarshalCalls.Add(1)
	c.b = string(b)
	return nil
}

// TestIntegralFallbackCallsUnmarshalersThrice: a caller's
// json.Unmarshaler sees the provider's bytes as few times as the fallback
// needs.
//
// Attack: the provider answers {"n": 1.0, "u": <anything>} to a caller
// whose Out has an integer n and a json.Unmarshaler u. The 1.0 makes
// Call's first decode fail; the fallback then decoded the rewritten view
// and, because Out keeps bytes, the view as written once more inside a
// wrapper: every Unmarshaler of Out runs three times on the provider's
// bytes (its side effects three times, its cost three times), although
// the first decode was already a decode of the view as written.
//
// Should: the view as written is decoded once (in the wrapper that tells
// whether an Unmarshaler stopped it) and the rewritten view once: each
// Unmarshaler is called at most twice, with the same result as before.
func TestIntegralFallbackCallsUnmarshalersThrice(t *testing.T) {
	result, err := amp.Marshal(map[string]any{"n": float64(1), "u": float64(2)})
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		N int                 `json:"n"`
		U countingUnmarshaler `json:"u"`
	}
	unmarshalCalls.Store(0)
	got, err := scriptedCall[out](t, result)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if got.N != 1 || got.U.b != "2.0" {
		t.Fatalf("n %d, u %q; want 1 and the provider's 2.0", got.N, got.U.b)
	}
	if n := unmarshalCalls.Load(); n > 2 {
		t.Fatalf("the Unmarshaler was called %d times on the provider's bytes, want at most 2", n)
	}
}
