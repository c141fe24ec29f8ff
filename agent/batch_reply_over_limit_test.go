package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// Threat: a verified caller's BATCH whose item replies, once the replies
// no longer fit, are each replaced by an ERROR that was added without
// checking that it fits either, so that the agent signed a BATCH reply
// over its own message limit: 256 undecodable one-byte items (a container
// of under 1 KiB) drew a reply of some 95 KiB from an agent whose limit is
// 64 KiB, and an item whose reply filled the batch left every later
// item's ERROR over it. A caller with the agent's limit cannot read such a
// reply at all, and a retry of the batch draws the same one.
func TestBatchReplyNeverExceedsTheMessageLimit(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("x", limit-8<<10) // a result that fills the batch's reply almost alone
	for _, tc := range []struct {
		name    string
		items   func(e *env) [][]byte
		refused bool // the batch cannot be answered within the limit: refused whole, nothing ran
	}{
		{"256 undecodable items", func(e *env) [][]byte {
			items := make([][]byte, MaxBatchItems)
			for i := range items {
				items[i] = []byte{0}
			}
			return items
		}, true},
		{"a large reply then undecodable items", func(e *env) [][]byte {
			_, m := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.translate:1.0.0", map[string]any{"text": "hi"}))
			items := [][]byte{m}
			for range 24 {
				items = append(items, []byte{0})
			}
			return items
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) { c.Limits = amp.Limits{MaxMessageSize: limit} }),
				withHandler("org.agentries.translate:1.0.0", func(ctx context.Context, params any) (any, error) {
					return map[string]any{"text": big}, nil
				}))
			items := tc.items(e)
			_, container := e.batchOf(e.caller, items...)
			raw, err := e.agent.Handle(context.Background(), container)
			if err != nil {
				t.Fatalf("handle: %v", err)
			}
			if len(raw) > limit {
				t.Fatalf("the agent signed a %d-byte reply; its message limit is %d", len(raw), limit)
			}
			r, err := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now, Limits: amp.Limits{MaxMessageSize: limit}})
			must(t, err)
			reply, err := r.Receive(context.Background(), raw)
			if err != nil {
				t.Fatalf("a caller with the agent's limit cannot read the reply: %v", err)
			}
			if tc.refused {
				if reply.Type != amp.TypeError {
					t.Fatalf("reply %s, want the batch refused whole", reply.Type)
				}
				if eb := errorOf(t, reply); eb.Code != amp.CodeInvalidMessage || eb.BatchIndex != nil {
					t.Fatalf("refusal %+v, want 1001 about the whole batch", eb)
				}
				return
			}
			b, err := amp.DecodeBatch(reply.Body)
			must(t, err)
			if len(b.Items) != len(items) {
				t.Fatalf("%d replies for %d items", len(b.Items), len(items))
			}
		})
	}
}

// The room kept for each item's answer holds the ERROR that replaces a
// reply that does not fit, at its largest: encrypted, with the longest
// thread_id, the sender's DID with a fragment, the largest batch_index and
// the longest ttl.
func TestBatchItemRoomHoldsTheErrorThatReplacesAReply(t *testing.T) {
	e := newEnv(t, withMemoryLedger())
	for _, enc := range []bool{false, true} {
		m := &amp.Message{From: e.caller.DID + "#" + strings.TrimPrefix(e.caller.DID, "did:key:"), ThreadID: []byte(strings.Repeat("t", amp.MaxRefBytes)),
			TTL: uint64(e.agent.cfg.MaxTTL.Milliseconds())}
		if enc {
			m.Enc = &amp.Encrypted{}
		}
		out, err := e.agent.batchItemError(context.Background(), m, MaxBatchItems-1, errBatchReplyTooLarge())
		must(t, err)
		if room := e.agent.batchItemRoom(m); len(out)+16 > room {
			t.Fatalf("encrypted %v: the ERROR takes %d bytes and its framing 16; the room kept is %d", enc, len(out), room)
		}
	}
}
