package agent

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// TestLocalRetryReplyCannotBeRewrittenThroughTheHandedOutBytes: a keyed
// retry hands out the reply read back from the ledger. If those bytes are
// the ledger's own record (not a copy), a caller that reuses or scribbles
// on LocalResult.Reply or .Body rewrites what every later retry gets:
// byte-identical replies are a promise, and the record must not be
// reachable through a handed-out slice. Checked for a result (a
// handler ran: the store's record) and for a refusal (no handler ran: the
// ledger's volatile cache), with the durable file ledger and the memory
// one.
func TestLocalRetryReplyCannotBeRewrittenThroughTheHandedOutBytes(t *testing.T) {
	for _, led := range []struct {
		name string
		opts []envOption
	}{{"file ledger", nil}, {"memory ledger", []envOption{withMemoryLedger()}}} {
		for _, refused := range []bool{false, true} {
			name := led.name + "/result"
			if refused {
				name = led.name + "/refusal"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, led.opts...)
				ctx := context.Background()
				call := localTranslate(t, e, "k-alias")
				if refused {
					call.Capability.Name = "org.agentries.not-served"
				}
				first, err := e.agent.InvokeLocal(ctx, call)
				if err != nil {
					t.Fatalf("first call: %v", err)
				}
				want := bytes.Clone(first.Reply)
				again, err := e.agent.InvokeLocal(ctx, call)
				if err != nil || !bytes.Equal(again.Reply, want) {
					t.Fatalf("retry: %v, same bytes %v", err, bytes.Equal(again.Reply, want))
				}
				// The caller reuses its buffers.
				for i := range again.Reply {
					again.Reply[i] ^= 0xff
				}
				for i := range again.Body {
					again.Body[i] ^= 0xff
				}
				third, err := e.agent.InvokeLocal(ctx, call)
				if err != nil {
					t.Fatalf("a retry after the caller reused the handed-out bytes fails: %v", err)
				}
				if !bytes.Equal(third.Reply, want) {
					t.Fatal("a retry got other bytes than the first reply: the handed-out slice was the ledger's record")
				}
			})
		}
	}
}

// TestLocalFreshReplyBodyIsNotSharedWithTheReplyBytes: the handed-out
// message of a fresh reply (MCP-16) and its bytes are separate: a caller
// that rewrites Body leaves Reply (the bytes recorded and sent) as signed,
// and the other way round.
func TestLocalFreshReplyBodyIsNotSharedWithTheReplyBytes(t *testing.T) {
	e := newEnv(t, withMemoryLedger())
	ctx := context.Background()
	res, err := e.agent.InvokeLocal(ctx, localTranslate(t, e, "k-fresh-share"))
	if err != nil {
		t.Fatal(err)
	}
	reply, body := bytes.Clone(res.Reply), bytes.Clone(res.Body)
	for i := range res.Body {
		res.Body[i] ^= 0xff
	}
	if !bytes.Equal(res.Reply, reply) {
		t.Fatal("rewriting the handed-out Body rewrote the signed reply bytes")
	}
	res.Body = body
	for i := range res.Reply {
		res.Reply[i] ^= 0xff
	}
	if !bytes.Equal(res.Body, body) {
		t.Fatal("rewriting the reply bytes rewrote the handed-out Body")
	}
}

// TestBoundsDefaultsAreTheOnesNewUsedToApply holds WithDefaults to the
// defaults New applied before the bounds were grouped (git show
// eb22639^:agent/agent.go): zero and negative take them, DefaultTimeout
// and DefaultLimit are clamped to their maxima, MaxBatchDuration follows
// the MaxTimeout given, and a caller's ParamStreams is never changed.
func TestBoundsDefaultsAreTheOnesNewUsedToApply(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Bounds
		want func(b Bounds) bool
	}{
		{"zero", Bounds{}, func(b Bounds) bool {
			return b.MaxTTL == 7*24*time.Hour && b.DefaultTimeout == 30*time.Second && b.MaxTimeout == 60*time.Second &&
				b.CursorTTL == 10*time.Minute && b.SweepEvery == time.Minute && b.MaxClockSkew == amp.DefaultMaxClockSkew &&
				b.MaxBatchDuration == 60*time.Second && b.DefaultLimit == 20 && b.MaxLimit == 100 &&
				b.MaxParamItems == offlineschema.DefaultMaxItems && b.Limits == amp.DefaultLimits() && b.ParamStreams == nil &&
				b.StreamLimits.MaxStreams == 256 && b.LedgerLimits.Budget > 0
		}},
		{"negative", Bounds{MaxTTL: -1, DefaultTimeout: -1, MaxTimeout: -1, CursorTTL: -1, SweepEvery: -1, MaxClockSkew: -1,
			MaxBatchDuration: -1, DefaultLimit: -1, MaxLimit: -1, MaxParamItems: -1}, func(b Bounds) bool {
			return b.MaxTTL == 7*24*time.Hour && b.DefaultTimeout == 30*time.Second && b.MaxTimeout == 60*time.Second &&
				b.CursorTTL == 10*time.Minute && b.SweepEvery == time.Minute && b.MaxClockSkew == amp.DefaultMaxClockSkew &&
				b.MaxBatchDuration == 60*time.Second && b.DefaultLimit == 20 && b.MaxLimit == 100 && b.MaxParamItems == offlineschema.DefaultMaxItems
		}},
		{"clamps", Bounds{MaxTimeout: 10 * time.Second, MaxLimit: 5}, func(b Bounds) bool {
			return b.DefaultTimeout == 10*time.Second && b.MaxBatchDuration == 10*time.Second && b.DefaultLimit == 5
		}},
		{"default timeout over max", Bounds{DefaultTimeout: 90 * time.Second}, func(b Bounds) bool {
			return b.DefaultTimeout == 60*time.Second && b.MaxTimeout == 60*time.Second
		}},
	} {
		if got := tc.in.WithDefaults(); !tc.want(got) {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	ps := &ParamStreamLimits{}
	b := Bounds{ParamStreams: ps}.WithDefaults()
	if *ps != (ParamStreamLimits{}) || b.ParamStreams == ps || b.ParamStreams.MaxSize == 0 {
		t.Errorf("a caller's ParamStreams was changed or shared: %+v", *ps)
	}
	if again := b.WithDefaults(); again.StreamLimits != b.StreamLimits || again.LedgerLimits != b.LedgerLimits || *again.ParamStreams != *b.ParamStreams {
		t.Error("WithDefaults is not idempotent")
	}
}

// TestHandleRetryReplyCannotBeRewrittenThroughTheReturnedBytes: Handle
// answers a retransmission with the recorded reply; an embedder that
// reuses the []byte Handle returned (Handle's doc: "get signed reply bytes
// back") must not rewrite the record a later retransmission is answered
// with.
func TestHandleRetryReplyCannotBeRewrittenThroughTheReturnedBytes(t *testing.T) {
	for _, led := range []struct {
		name string
		opts []envOption
	}{{"file ledger", nil}, {"memory ledger", []envOption{withMemoryLedger()}}} {
		t.Run(led.name, func(t *testing.T) {
			e := newEnv(t, led.opts...)
			id, err := capability.ParseID("org.agentries.not-served:1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			_, msg := e.seal(e.caller, amp.TypeCapInvoke, mustEncode(t, capability.Invoke{ID: id, Params: mustMarshal(t, map[string]any{})}))
			ctx := context.Background()
			first, err := e.agent.Handle(ctx, msg)
			if err != nil {
				t.Fatal(err)
			}
			want := bytes.Clone(first)
			again, err := e.agent.Handle(ctx, msg)
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("retransmission: %v, same bytes %v", err, bytes.Equal(again, want))
			}
			for i := range again {
				again[i] = 0
			}
			third, err := e.agent.Handle(ctx, msg)
			if err != nil || !bytes.Equal(third, want) {
				t.Fatalf("a retransmission after the embedder reused the returned bytes got other bytes (%v)", err)
			}
		})
	}
}
