package agent

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

type funcIn struct {
	Name  string `json:"name"`
	Count uint64 `json:"count"`
}

type funcOut struct {
	Greeting string  `json:"greeting"`
	Big      uint64  `json:"big"`
	Ratio    float64 `json:"ratio"`
}

// TestFuncRefusesParamsThatFitTheSchemaButNotTheType: params that a loose
// schema lets through but that do not decode into the handler's type never
// reach the handler (threat: a handler running on a zero value it took for
// the caller's input), are refused with 4004 params_type_mismatch, and the
// message does not quote them (never echo raw peer input).
func TestFuncRefusesParamsThatFitTheSchemaButNotTheType(t *testing.T) {
	ran := false
	h := Func(func(ctx context.Context, in funcIn) (funcOut, error) {
		ran = true
		return funcOut{}, nil
	})
	for name, params := range map[string]any{
		"number for a string": map[string]any{"name": json.Number("42")},
		"string for a number": map[string]any{"name": "x", "count": "<script>"},
		"negative for uint":   map[string]any{"count": int64(-1)},
		"array for an object": []any{"<script>"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h(context.Background(), params)
			var ae *amp.Error
			if ran || !asAMP(err, &ae) || ae.Code != amp.CodeSchemaViolation || ae.Name != ErrParamsType {
				t.Fatalf("ran %v, err %v", ran, err)
			}
			if strings.Contains(ae.Message, "script") || strings.Contains(ae.Message, "42") {
				t.Fatalf("the refusal quotes the params: %q", ae.Message)
			}
		})
	}
}

// TestFuncKeepsIntegersExact: a typed result's integers beyond 2^53 reach
// the JSON data model exactly (threat: a uint64 rounded through float64 on
// its way to the caller), and the params' integers reach In exactly.
func TestFuncKeepsIntegersExact(t *testing.T) {
	var got uint64
	h := Func(func(ctx context.Context, in funcIn) (funcOut, error) {
		got = in.Count
		return funcOut{Greeting: "hi " + in.Name, Big: math.MaxUint64, Ratio: 0.5}, nil
	})
	v, err := h(context.Background(), map[string]any{"name": "x", "count": uint64(math.MaxUint64 - 1), "extra": true})
	if err != nil || got != math.MaxUint64-1 {
		t.Fatalf("err %v, count %d", err, got)
	}
	m, ok := v.(map[string]any)
	if !ok || m["greeting"] != "hi x" || m["big"] != json.Number("18446744073709551615") || m["ratio"] != json.Number("0.5") {
		t.Fatalf("result %#v", v)
	}
}

// TestFuncResultWithoutJSONFormFailsGenerically: a result encoding/json
// cannot encode is 5001 result_not_json, with the generic message (threat:
// the handler's internals in the caller's error).
func TestFuncResultWithoutJSONFormFailsGenerically(t *testing.T) {
	h := Func(func(ctx context.Context, in funcIn) (map[string]any, error) {
		return map[string]any{"secret": make(chan int)}, nil
	})
	_, err := h(context.Background(), map[string]any{})
	var ae *amp.Error
	if !asAMP(err, &ae) || ae.Code != amp.CodeInternalError || ae.Name != ErrResultType || ae.Message != "the capability failed" {
		t.Fatalf("err %v", err)
	}
	// A handler's own *amp.Error passes through unchanged.
	want := amp.Named(amp.CodeBadRequest, "no_such_language", "the target language is not offered")
	h2 := Func(func(ctx context.Context, in funcIn) (funcOut, error) { return funcOut{}, want })
	if _, err := h2(context.Background(), map[string]any{}); err != want {
		t.Fatalf("err %v", err)
	}
}

func asAMP(err error, ae **amp.Error) bool {
	e, ok := err.(*amp.Error)
	*ae = e
	return ok
}
