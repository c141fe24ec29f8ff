package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestHandlerResultItemFloodRefusedBeforeParse: a caller gives a handler
// program params that make it print a long array of small values (a
// "range" or "repeat" capability; an echo of a generated list), 2 MiB of
// "[0,0,...]", a million values, within the 16 MiB stdout cap (threat: the
// agent parsing all of it into Go values, about 230 bytes a value: 240 MiB
// and seconds of CPU for one invocation, 2 GiB for 16 MiB of it, before
// refusing a result over its item budget, max_param_items). The output is
// counted first and refused at the same outcome, 5001 invalid_result, for
// the cost of its stdout buffer (CLI-35).
func TestHandlerResultItemFloodRefusedBeforeParse(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	body := append([]byte("["), bytes.Repeat([]byte("0,"), 1<<20)...)
	body[len(body)-1] = ']'
	if err := os.WriteFile(out, body, 0o600); err != nil {
		t.Fatal(err)
	}
	h := runProgram("org.example.range:1.0.0", execHandler{Command: []string{"/bin/cat", out}}, slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	got := testalloc.Least(func() { _, err = h(ctx, map[string]any{"n": 1 << 20}) })
	// The stdout buffer grows by doubling to 2 MiB (at most 4 MiB in all);
	// 32 MiB leaves room for the process start and the log line.
	if got > 32<<20 {
		t.Fatalf("a result of a million values cost %d MiB, bound 32 MiB", got>>20)
	}
	if amp.NameOf(err) != "invalid_result" {
		t.Fatalf("error %v, want invalid_result", err)
	}
}

// TestHandlerResultItemCountNeverRefusesWhatTheAgentAccepts: the count
// that refuses an output before its parse (offlineschema.ValueFromJSONBudget,
// 1001 limit_exceeded) is the agent's own
// (offlineschema.ValueFromCBORBudget after ToCBOR): for every valid text
// and budget, it refuses exactly what the agent refuses (threat: a valid
// result within max_param_items refused because commas or colons inside
// strings, keys, or nested containers were miscounted; or one over it
// parsed because they were missed), and a flat array is refused at
// exactly its budget.
func TestHandlerResultItemCountNeverRefusesWhatTheAgentAccepts(t *testing.T) {
	texts := []string{
		`0`, `"a,b:c[{"`, `"\\"`, `"\",:,:"`, `[]`, `{}`, `[0,0,0]`, `[[],[],[]]`, `[[0,0],[0,0]]`,
		`{"a":1,"b":[1,2]}`, `{"a,":"x:y","b":{"c":[{"d":null}]}}`, `[{"a":"x,y"},{"b":1},"\"],["]`,
		` [ 1 , 2 , { "k" : [ 3 , 4 ] } ] `, `[1.5e3,-2,true,false,null,"é"]`,
	}
	for _, text := range texts {
		v, err := offlineschema.ValueFromJSON([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		enc, err := offlineschema.ToCBOR(v)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		for most := 1; most <= 12; most++ {
			_, agentErr := offlineschema.ValueFromCBORBudget(enc, most)
			_, err := offlineschema.ValueFromJSONBudget([]byte(text), most)
			over := amp.CodeOf(err) == amp.CodeInvalidMessage && amp.NameOf(err) == offlineschema.ErrLimitExceeded
			if over != (agentErr != nil) || (err != nil && !over) {
				t.Fatalf("%s at a budget of %d values: counted over %v, the agent refuses it %v", text, most, over, agentErr != nil)
			}
		}
	}
	for n := 1; n <= 8; n++ {
		flat := "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" // n+1 values
		_, under := offlineschema.ValueFromJSONBudget([]byte(flat), n)
		_, at := offlineschema.ValueFromJSONBudget([]byte(flat), n+1)
		if amp.CodeOf(under) != amp.CodeInvalidMessage || amp.NameOf(under) != offlineschema.ErrLimitExceeded || at != nil {
			t.Fatalf("%s: refused at %d, accepted at %d: want exactly so", flat, n, n+1)
		}
	}
}

// TestHandlerResultItemBudgetIsTheConfigs: the count uses the config's
// max_param_items, the agent's budget (threat: an operator's larger
// budget refused, or a smaller one parsed in full).
func TestHandlerResultItemBudgetIsTheConfigs(t *testing.T) {
	const capID = "org.example.range:1.0.0"
	for _, tc := range []struct {
		values int // of the output: the array and its elements
		want   amp.ErrName
	}{{4, ""}, {5, "invalid_result"}} {
		t.Run(fmt.Sprint(tc.values), func(t *testing.T) {
			out := "[" + strings.TrimSuffix(strings.Repeat("7,", tc.values-1), ",") + "]"
			cfg := &serveConfig{MaxParamItems: 4, Handlers: map[string]execHandler{capID: {Command: []string{"/bin/echo", out}}}}
			cfg.resolveHandlers(hostMounts())
			h := runProgram(capID, cfg.Handlers[capID], slog.New(slog.DiscardHandler), nil)
			_, err := h(context.Background(), map[string]any{})
			if amp.NameOf(err) != tc.want {
				t.Fatalf("%s: error %v, want %q", out, err, tc.want)
			}
		})
	}
}

// TestHandlerResultTooDeepIsNotJSONNotOverTheBudget: a result nested past
// offlineschema.MaxDepth, within the item budget, is refused as invalid
// JSON (5001 invalid_result, logged as "not json"), not as a result over
// the budget: only ValueFromJSONBudget's 1001 limit_exceeded is the item
// count's (threat: matching limit_exceeded by name alone, which its depth
// error shares with code 0, would report a deep result as a flood and
// send an operator raising max_param_items after the wrong limit).
func TestHandlerResultTooDeepIsNotJSONNotOverTheBudget(t *testing.T) {
	const capID = "org.example.deep:1.0.0"
	for _, tc := range []struct {
		out, logged string
	}{
		{strings.Repeat("[", offlineschema.MaxDepth+2) + strings.Repeat("]", offlineschema.MaxDepth+2), "not json"},
		{"[" + strings.TrimSuffix(strings.Repeat("7,", 2*offlineschema.MaxDepth), ",") + "]", "more values"},
	} {
		var logs bytes.Buffer
		cfg := &serveConfig{MaxParamItems: offlineschema.MaxDepth + 8, Handlers: map[string]execHandler{capID: {Command: []string{"/bin/echo", tc.out}}}}
		cfg.resolveHandlers(hostMounts())
		h := runProgram(capID, cfg.Handlers[capID], slog.New(slog.NewTextHandler(&logs, nil)), nil)
		_, err := h(context.Background(), map[string]any{})
		if amp.NameOf(err) != "invalid_result" || !strings.Contains(logs.String(), tc.logged) {
			t.Fatalf("%.20s...: error %v, log %q; want invalid_result logged as %q", tc.out, err, logs.String(), tc.logged)
		}
	}
}
