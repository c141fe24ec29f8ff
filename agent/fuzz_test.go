package agent

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// FuzzHandle feeds arbitrary bytes to the agent (what the HTTP binding
// passes on). Threats: a crash or a hang on hostile input, and a reply that
// is not a valid signed message of the agent. Whatever comes in, the agent
// either refuses without a reply or answers with a message that verifies
// and comes from it.
func FuzzHandle(f *testing.F) {
	e := newEnv(f)
	_, invoke := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(f, "org.agentries.code-review:2.1.0", map[string]any{"code": "x", "language": "go"}))
	q, _ := capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}}.Encode()
	_, query := e.seal(e.caller, amp.TypeCapQuery, q)
	_, ping := e.seal(e.caller, amp.TypePing, nil)
	_, stranger := e.seal(e.stranger, amp.TypeCapInvoke, invokeBody(f, "org.agentries.code-review:2.1.0", map[string]any{"code": "x", "language": "go"}))
	for _, seed := range [][]byte{invoke, query, ping, stranger, {}, {0xa0}, {0xff}} {
		f.Add(seed)
	}
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		reply, err := e.agent.Handle(context.Background(), msg)
		if err != nil || reply == nil {
			return
		}
		m, err := recv.Receive(context.Background(), reply)
		if err != nil {
			t.Fatalf("the agent's reply does not verify: %v", err)
		}
		if m.From != e.provider.DID {
			t.Fatalf("reply from %s", m.From)
		}
	})
}

// FuzzQueryCursor sends signed CAP_QUERYs with hostile cursors and limits.
// Threats: a forged or replayed cursor that is accepted, a crash in cursor
// decoding, an internal error instead of a refusal. A cursor this agent did
// not issue for this caller and filter is 4001; nothing else may come back
// but a CAP_DECLARE.
func FuzzQueryCursor(f *testing.F) {
	e := newEnv(f)
	// A real cursor, as a seed the fuzzer can mutate.
	lim := uint64(2)
	q, _ := capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}, Limit: &lim}.Encode()
	_, first := e.exchange(e.caller, amp.TypeCapQuery, q)
	decl, err := capability.DecodeDeclare(first.Body)
	if err != nil || decl.NextCursor == "" {
		f.Fatalf("no cursor to seed with: %v", err)
	}
	f.Add(decl.NextCursor, uint64(2))
	f.Add("", uint64(0))
	f.Add("AAAA", uint64(1<<40))
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now, AgreementKeys: []*amp.AgreementKey{e.caller.Agreement}})
	if err != nil {
		f.Fatal(err)
	}
	sender, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cursor string, limit uint64) {
		body, err := capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}, Cursor: cursor, Limit: &limit}.Encode()
		if err != nil {
			return // not a query the caller can even encode
		}
		_, msg, err := sender.Seal(context.Background(), amp.Draft{Type: amp.TypeCapQuery, To: amp.To(e.provider.DID), Body: body})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := e.agent.Handle(context.Background(), msg)
		if err != nil {
			t.Fatalf("a signed query got no reply: %v", err)
		}
		m, err := recv.Receive(context.Background(), raw)
		if err != nil {
			t.Fatalf("reply does not verify: %v", err)
		}
		switch m.Type {
		case amp.TypeCapDeclare:
			if cursor != "" && cursor != decl.NextCursor {
				t.Fatalf("a cursor the agent never issued was accepted: %q", cursor)
			}
		case amp.TypeError:
			eb, err := amp.DecodeError(m.Body)
			if err != nil || eb.Code != amp.CodeBadRequest {
				t.Fatalf("refused with %v %v, want 4001", eb.Code, err)
			}
		default:
			t.Fatalf("reply type %v", m.Type)
		}
	})
}

// FuzzParseRule: allow rules come from operators' config files. An accepted
// rule must print back to itself.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"*=org.example.", "did:key:z6Mkexample=org.example.translate", "*=*", "=", "a=b=c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if r.Caller+"="+r.Prefix != s {
			t.Fatalf("%q parsed as %q=%q", s, r.Caller, r.Prefix)
		}
	})
}
