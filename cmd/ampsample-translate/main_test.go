package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestSampleHandlerAnswersTheOutputSchema: the sample handler's answers
// have exactly the fields the 2.1.0 output schema requires (threat: the
// README's flow failing at the agent's output check), a known word is
// translated and an unknown text comes back unchanged; input over its cap
// or not JSON fails (non-zero exit) instead of answering.
func TestSampleHandlerAnswersTheOutputSchema(t *testing.T) {
	tests := []struct {
		in, text, source string
	}{
		{`{"text":"hello","target":"fr"}`, "bonjour", "en"},
		{`{"text":"Thank you","target":"de-AT","formality":"formal"}`, "danke", "en"},
		{`{"text":"unknown words","target":"fr"}`, "unknown words", "en"},
		{`{"text":"hola","source":"es","target":"fr"}`, "hola", "es"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		if err := run(strings.NewReader(tc.in), &out); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		var got map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 2 || got["text"] != tc.text || got["detected_source"] != tc.source {
			t.Fatalf("%s: %s (%v)", tc.in, out.Bytes(), err)
		}
	}
	for _, bad := range []string{"", "[1]", `{"text":` + strings.Repeat(" ", maxInput) + `"x"}`} {
		if err := run(strings.NewReader(bad), &bytes.Buffer{}); err == nil {
			t.Fatalf("%.20q: accepted", bad)
		}
	}
}
