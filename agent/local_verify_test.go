package agent

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// countingReceiver replaces e's receiver with one whose clock counts its
// calls: Receive reads the clock at least once per message (the timestamp
// check), DecodeOwn never, so the count is a count of verifications.
func countingReceiver(t testing.TB, e *env) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	r, err := amp.NewReceiver(amp.ReceiverConfig{Limits: e.agent.recv.Limits(), MaxClockSkew: e.agent.cfg.MaxClockSkew,
		Now: func() time.Time { n.Add(1); return e.clock.Now() }})
	if err != nil {
		t.Fatal(err)
	}
	e.agent.recv = r
	return &n
}

func localTranslate(t testing.TB, e *env, key string) LocalCall {
	t.Helper()
	id, err := capability.ParseID("org.agentries.translate:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	return LocalCall{Caller: e.caller.DID, Capability: id, Params: mustMarshal(t, map[string]any{"text": "hello"}), IdempotencyKey: key}
}

// TestLocalFreshReplyNotReverifiedLedgerReplyIs: the reply a local call has
// just signed is decoded, not verified again (no Ed25519 verification per
// call), while the same call's reply read back from the ledger (a keyed
// retry) goes through the full Receive.
func TestLocalFreshReplyNotReverifiedLedgerReplyIs(t *testing.T) {
	e := newEnv(t, withMemoryLedger())
	n := countingReceiver(t, e)
	ctx := context.Background()
	call := localTranslate(t, e, "k1")
	first, err := e.agent.InvokeLocal(ctx, call)
	if err != nil || first.Type != amp.TypeCapResult {
		t.Fatalf("first call: %v %v", err, first.Type)
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("a fresh reply was verified again (%d clock reads by the receiver)", got)
	}
	// The decoded fresh reply is still the signed one: it verifies.
	if _, err := e.agent.recv.Receive(ctx, first.Reply); err != nil {
		t.Fatalf("the fresh reply does not verify: %v", err)
	}
	n.Store(0)
	again, err := e.agent.InvokeLocal(ctx, call)
	if err != nil || string(again.Reply) != string(first.Reply) || string(again.Body) != string(first.Body) {
		t.Fatalf("keyed retry: %v, same reply %v", err, string(again.Reply) == string(first.Reply))
	}
	if n.Load() == 0 {
		t.Fatal("a reply read back from the ledger was handed out unverified")
	}
	n.Store(0)
	if _, err := e.agent.InvokeLocal(ctx, localTranslate(t, e, "")); err != nil || n.Load() != 0 {
		t.Fatalf("unkeyed call: %v, %d receiver clock reads", err, n.Load())
	}
}

// TestTamperedRecordedLocalReplyRefused: a reply recorded in the ledger
// under a keyed local call's id (a corrupted entry, or one written by
// another process sharing the store) is verified before it is handed
// out: altered after signing, signed by another key, or answering
// another call, it is refused and nothing of it is returned.
func TestTamperedRecordedLocalReplyRefused(t *testing.T) {

	other := identity(t, 40)
	signed := func(t *testing.T, e *env, key ed25519.PrivateKey, replyTo amp.ID, alter bool) []byte {
		t.Helper()
		m := &amp.Message{V: 1, Type: amp.TypeCapResult, TS: uint64(e.clock.Now().UnixMilli()), TTL: 60_000,
			From: e.provider.DID, To: amp.To(e.caller.DID), ReplyTo: replyTo[:],
			Body: mustEncode(t, capability.Result{Status: capability.StatusSuccess, Result: mustMarshal(t, map[string]any{"ok": true})})}
		id, err := amp.NewID(rand0{}, m.TS)
		if err != nil {
			t.Fatal(err)
		}
		m.ID = id
		if err := amp.Sign(m, key); err != nil {
			t.Fatal(err)
		}
		if alter {
			m.Body = mustEncode(t, capability.Result{Status: capability.StatusSuccess, Result: mustMarshal(t, map[string]any{"ok": false})})
		}
		return m.Encode()
	}
	for _, tc := range []struct {
		name     string
		reply    func(t *testing.T, e *env, id amp.ID) []byte
		wantName amp.ErrName
	}{
		{"body altered after signing", func(t *testing.T, e *env, id amp.ID) []byte {
			return signed(t, e, e.provider.SigningKey, id, true)
		}, "invalid_signature"},
		{"signed by another key as the agent", func(t *testing.T, e *env, id amp.ID) []byte {
			return signed(t, e, other.SigningKey, id, false)
		}, "invalid_signature"},
		{"validly signed, answers another call", func(t *testing.T, e *env, id amp.ID) []byte {
			id[0] ^= 1
			return signed(t, e, e.provider.SigningKey, id, false)
		}, "reply_mismatch"},
		{"not a message", func(t *testing.T, e *env, id amp.ID) []byte { return []byte{0xa0} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withMemoryLedger())
			call := localTranslate(t, e, "k-tampered")
			id := LocalKeyID(call.Caller, call.Capability, call.IdempotencyKey)
			st, err := e.agent.ledger.Start(call.Caller, id, e.clock.Now().Add(time.Hour))
			if err != nil || st.Ticket == nil {
				t.Fatalf("claim: %v %v", err, st.State)
			}
			must(t, st.Ticket.Finish(tc.reply(t, e, id)))
			res, err := e.agent.InvokeLocal(context.Background(), call)
			if err == nil || res.Reply != nil || res.Body != nil {
				t.Fatalf("a tampered recorded reply was handed out: %v %x", err, res.Reply)
			}
			if amp.CodeOf(err) != amp.CodeInternalError {
				t.Fatalf("code %d, want 5001: %v", amp.CodeOf(err), err)
			}
			// The refusal names the failed check, itself or as its cause.
			if got := amp.NameOf(err); tc.wantName != "" && got != tc.wantName && amp.NameOf(errors.Unwrap(err)) != tc.wantName {
				t.Fatalf("name %q (cause %v), want %q", got, errors.Unwrap(err), tc.wantName)
			}
			if n := e.count(call.Capability.String()).Load(); n != 0 {
				t.Fatalf("the handler ran %d times for a recorded call", n)
			}
		})
	}
}

// rand0 is a deterministic source for message ids in tests.
type rand0 struct{}

func (rand0) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	return len(p), nil
}

// TestLocalFreshReplyHandedOutIsTheSignedOne: for a fresh reply, InvokeLocal
// hands out the message the reply path signed instead of decoding the
// bytes again (MCP-16); what it hands out (type, body, the call's id) must
// be exactly what the signed bytes say, for a result and for a refusal,
// so that a bridge never renders content other than what was signed.
func TestLocalFreshReplyHandedOutIsTheSignedOne(t *testing.T) {
	e := newEnv(t, withMemoryLedger())
	n := countingReceiver(t, e)
	ctx := context.Background()
	refused := localTranslate(t, e, "")
	refused.Capability.Name = "org.agentries.not-served"
	for _, tc := range []struct {
		name string
		call LocalCall
		want amp.Type
	}{
		{"result", localTranslate(t, e, ""), amp.TypeCapResult},
		{"keyed result", localTranslate(t, e, "k-fresh"), amp.TypeCapResult},
		{"refusal", refused, amp.TypeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Store(0)
			res, err := e.agent.InvokeLocal(ctx, tc.call)
			if err != nil || res.Type != tc.want {
				t.Fatalf("call: %v, type %v, want %v", err, res.Type, tc.want)
			}
			if got := n.Load(); got != 0 {
				t.Fatalf("a fresh reply was read back (%d receiver clock reads)", got)
			}
			signed, err := e.agent.recv.Receive(ctx, res.Reply)
			if err != nil {
				t.Fatalf("the reply does not verify: %v", err)
			}
			if signed.Type != res.Type || string(signed.Body) != string(res.Body) || string(signed.ReplyTo) != string(res.ID[:]) {
				t.Fatalf("handed out %v %x for call %s; the signed reply says %v %x reply_to %x",
					res.Type, res.Body, res.ID, signed.Type, signed.Body, signed.ReplyTo)
			}
		})
	}
}
