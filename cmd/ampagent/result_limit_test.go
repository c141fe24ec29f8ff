//go:build unix

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
)

// bigTranslation is a handler program printing a valid translate result
// of about n bytes.
func bigTranslation(n int) []string {
	return []string{"/bin/sh", "-c", `cat >/dev/null; t=$(head -c ` + itoa(n) + ` /dev/zero | tr '\0' a); printf '{"text":"%s","detected_source":"en"}' "$t"`}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// TestServeMaxResultBytesLetsALargeResultThrough: a handler whose config
// entry sets "max_result_bytes" delivers a 300 KiB result; the same
// program under the default (256 KiB) is answered by the final 5001
// result_too_large, which names the limit (threat, review of issue 29
// item 2, finding 4: a 300 KiB result ran its handler and was never
// delivered, answered a retryable 5004, with no setting to raise).
func TestServeMaxResultBytesLetsALargeResultThrough(t *testing.T) {
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{
		"allow": []string{"*=org.example."},
		"handlers": map[string]any{
			"org.example.translate.text:2.1.0": map[string]any{"command": bigTranslation(300 << 10), "max_result_bytes": 1 << 20},
			"org.example.translate.text:2.0.0": map[string]any{"command": bigTranslation(300 << 10)},
		},
	})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	c := newTestClient(t, r.url, r.did)
	out, err := invokeID(t, c, "org.example.translate.text:2.1.0", map[string]any{"text": "hello", "target": "fr"}, 0)
	if err != nil {
		t.Fatalf("a 300 KiB result under a max_result_bytes of 1 MiB: %v", err)
	}
	if text, _ := out["text"].(string); len(text) != 300<<10 {
		t.Fatalf("result text of %d bytes", len(text))
	}
	_, err = invokeID(t, c, "org.example.translate.text:2.0.0", map[string]any{"text": "hello", "target": "fr"}, 0)
	if !errors.Is(err, amp.CodeInternalError) || amp.NameOf(err) != agent.ErrResultTooLarge {
		t.Fatalf("a 300 KiB result under the default: %v, want 5001 %s", err, agent.ErrResultTooLarge)
	}
	res := r.stop()
	if res.code != 0 {
		t.Fatalf("serve exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "max_result_bytes") {
		t.Error("the log does not name the setting to raise")
	}
}

// TestServeRefusesAHandlerWhoseLargestResultCannotFitAShare: serve does
// not start with a handler whose largest result (its own
// "max_result_bytes", or --max-result-bytes) cannot fit in one caller's
// share of the ledger: each of its invocations would be refused 3005 for
// ever. Values under 1 KiB or over 16 MiB are refused as they are read.
func TestServeRefusesAHandlerWhoseLargestResultCannotFitAShare(t *testing.T) {
	db, key := serveStore(t)
	handler := func(max int64) map[string]any {
		h := map[string]any{"command": []string{"/bin/true"}}
		if max != 0 {
			h["max_result_bytes"] = max
		}
		return map[string]any{"org.example.translate.text:2.1.0": h}
	}
	overShare := writeConfig(t, map[string]any{"ledger_caller_bytes": 1 << 20, "handlers": handler(2 << 20)})
	defaultOverShare := writeConfig(t, map[string]any{"ledger_caller_bytes": 1 << 20, "max_result_bytes": 2 << 20, "handlers": handler(0)})
	tiny := writeConfig(t, map[string]any{"handlers": handler(100)})
	huge := writeConfig(t, map[string]any{"max_result_bytes": 32 << 20})
	base := []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"a handler's max_result_bytes over the share", []string{"--config", overShare}, string(agent.ErrResultExceedsShare), 1},
		{"the config's max_result_bytes over the share", []string{"--config", defaultOverShare}, string(agent.ErrResultExceedsShare), 1},
		{"--max-result-bytes over the share", []string{"--config", writeConfig(t, map[string]any{"ledger_caller_bytes": 1 << 20, "handlers": handler(0)}), "--max-result-bytes", "4194304"}, string(agent.ErrResultExceedsShare), 1},
		{"a handler's max_result_bytes under 1 KiB", []string{"--config", tiny}, "invalid_config", 1},
		{"max_result_bytes over 16 MiB", []string{"--config", huge}, "invalid_config", 1},
		{"--max-result-bytes under 1 KiB", []string{"--max-result-bytes", "100"}, "usage", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, exit := serveFails(t, append(base, tc.args...)...)
			if exit != tc.exit || code != tc.code {
				t.Fatalf("got %s exit %d, want %s exit %d", code, exit, tc.code, tc.exit)
			}
		})
	}
	// The refusal names the handler, and its hint both settings.
	r := serveRefusal(t, append(base, "--config", overShare)...)
	for _, want := range []string{"org.example.translate.text:2.1.0", "max_result_bytes", "ledger_caller_bytes"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("the refusal does not name %s: %s", want, r.stderr)
		}
	}
}
