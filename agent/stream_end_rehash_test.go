package agent

import (
	"bytes"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStreamEndsSentAgainDoNotHashTheStreamAgain: a complete stream whose
// STREAM_END is refused retryably stays open (AGENT-6), and each
// STREAM_END sent again, some 300 bytes, hashed the whole content again:
// with its waiting params at PerSender, a sender kept one 8 MiB params
// stream and had it hashed once per STREAM_END, any number of times (a
// 64 MiB one: 67 ms of CPU each). The hash is now computed once, at the
// first STREAM_END that finds every chunk (AGENT-32): the content changed
// under the agent afterwards (here, by the test, in the spool file) is
// not read again by the STREAM_ENDs sent again, which before the change
// saw it and answered hash_mismatch. The stream is handed over once there
// is room, and a STREAM_END with a wrong hash after a retryable refusal
// is still hash_mismatch.
func TestStreamEndsSentAgainDoNotHashTheStreamAgain(t *testing.T) {
	e, _, _ := paramsEnv(t, &ParamStreamLimits{PerSender: 1, Keep: time.Minute}, withConfig(func(c *Config) { c.Limits = amp.DefaultLimits() }))
	wantAck(t, e.sendParams(t, e.caller, "", "a", bigText(t, 16)), "a", 1)
	content := bytes.Repeat([]byte{0xa5}, 8<<20) // spooled: over the 4 KiB threshold
	wantStreamError(t, e.sendParams(t, e.caller, "", "b", content), amp.CodeOverloaded, "params_budget_exceeded")
	end := endBody(t, "b", content)
	e.agent.streams.mu.Lock()
	s := e.agent.streams.open[streamKey{e.caller.DID, "b"}]
	e.agent.streams.mu.Unlock()
	if s == nil || s.file == nil {
		t.Fatal("setup: stream b is not open and spooled")
	}
	poke := func(b byte) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, err := s.file.WriteAt([]byte{b}, 0); err != nil {
			t.Fatal(err)
		}
	}
	poke(0x5a)
	for range 3 {
		wantStreamError(t, e.sendFrom(e.caller, "", amp.TypeStreamEnd, end), amp.CodeOverloaded, "params_budget_exceeded")
	}
	poke(0xa5)
	// Handed over once there is room, and still judged by its hash.
	e.clock.Add(2 * time.Minute) // past Keep: "a" is dropped; within Idle
	wantAck(t, e.sendFrom(e.caller, "", amp.TypeStreamEnd, end), "b", 1)
	small := bigText(t, 8<<10)
	wantStreamError(t, e.sendParams(t, e.caller, "", "c", small), amp.CodeOverloaded, "params_budget_exceeded")
	wantStreamError(t, e.sendFrom(e.caller, "", amp.TypeStreamEnd, endBody(t, "c", content)), amp.CodeInvalidMessage, "hash_mismatch")
	wantStreamError(t, e.sendFrom(e.caller, "", amp.TypeStreamEnd, endBody(t, "c", small)), amp.CodeInvalidMessage, "unknown_stream")
}
