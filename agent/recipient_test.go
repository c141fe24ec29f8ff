package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestNotARecipient: a message signed for another agent is refused with
// 3001 and runs nothing (threat: an invocation meant for agent X,
// captured and replayed to this agent, running here as its sender).
func TestNotARecipient(t *testing.T) {
	e := newEnv(t)
	body := invokeBody(t, "org.agentries.code-review:2.1.0", goodParams)
	s, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	other := identity(t, 40).DID
	for _, tc := range []struct {
		name string
		to   amp.Recipients
		want amp.Code // 0: a CAP_RESULT
	}{
		{"addressed to another agent", amp.To(other), amp.CodeUnauthorized},
		{"a list without this agent", amp.ToList(other, e.stranger.DID), amp.CodeUnauthorized},
		{"a list with this agent", amp.ToList(other, e.provider.DID), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.count("org.agentries.code-review:2.1.0").Load()
			_, msg, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeCapInvoke, To: tc.to, Body: body})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := e.agent.Handle(context.Background(), msg)
			if err != nil {
				t.Fatal(err)
			}
			reply := e.receive(e.caller, raw)
			ran := e.count("org.agentries.code-review:2.1.0").Load() - before
			if tc.want == 0 {
				if reply.Type != amp.TypeCapResult || ran != 1 {
					t.Fatalf("reply %s, handler ran %d times", reply.Type.Name(), ran)
				}
				return
			}
			if eb := errorOf(t, reply); eb.Code != tc.want || ran != 0 {
				t.Fatalf("code %d, handler ran %d times", eb.Code, ran)
			}
		})
	}
}

// TestLegacyTypeLeaksNothing: a caller allowed only com.example.* resolves
// legacy types as if the other capabilities did not exist (threat:
// enumeration of capabilities the caller may not use through the alias
// table, the 3001/4002 difference or an ambiguity's candidates).
func TestLegacyTypeLeaksNothing(t *testing.T) {
	e := newEnv(t)
	e.cfg.Policy = Rules{{Caller: e.caller.DID, Prefix: "com.example."}}
	e.cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{})
	a, err := New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = a

	query := func(typ string) *amp.Message {
		b, err := capability.Query{Filter: capability.Filter{Type: typ}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		_, reply := e.exchange(e.caller, amp.TypeCapQuery, b)
		return reply
	}
	// "translate" exists only under org.agentries, and "code-review" is
	// org.agentries' alias of org.agentries.code-review, which this caller
	// may not use: neither falls to the suffix match among what it may use
	// (com.example.code-review, docs/SPEC-DECISIONS.md CAP-12); each is the
	// same answer, byte for byte in its body, as a type that exists nowhere.
	none := errorOf(t, query("no-such-type"))
	nb, _ := amp.Marshal(none)
	for _, typ := range []string{"translate", "code-review"} {
		hidden := errorOf(t, query(typ))
		if hidden.Code != amp.CodeCapabilityNotFound || hidden.Code != none.Code || hidden.Message != none.Message {
			t.Fatalf("%s: hidden %+v vs unknown %+v", typ, hidden, none)
		}
		if hb, _ := amp.Marshal(hidden); !bytes.Equal(hb, nb) {
			t.Fatalf("%s: the error bodies differ", typ)
		}
	}
	// The same through CAP_INVOKE.
	p, _ := amp.Marshal(goodParams)
	v, _ := capability.ParseVersion("1.0.0")
	body, err := capability.Invoke{Type: "translate", Version: v, Params: p}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, body)
	if eb := errorOf(t, reply); eb.Code != amp.CodeCapabilityNotFound || eb.Message != none.Message {
		t.Fatalf("invoke by hidden type: %+v", eb)
	}
}
