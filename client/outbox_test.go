package client

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

func mustOutbox(t *testing.T, cfg OutboxConfig) *Outbox {
	t.Helper()
	o, err := NewOutbox(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOutboxAcceptsOnlyReportsTheRulesAllow(t *testing.T) {
	e := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 4, Now: e.clock.Now, TrustedRelays: []string{e.stranger.DID}})
	// The caller sent a message to the provider.
	req := e.seal(t, e.caller, amp.TypePing, nil)
	if err := ob.Add(req); err != nil {
		t.Fatal(err)
	}
	report := func(from amp.Identity, typ amp.Type, body any) Receipt {
		b, _ := amp.Marshal(body)
		s, _ := amp.NewSender(amp.SenderConfig{Identity: from, Rand: rand.Reader, Now: e.clock.Now})
		m, _, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(e.caller.DID), ReplyTo: req.ID[:], Body: b})
		if err != nil {
			t.Fatal(err)
		}
		return Receipt{Message: m}
	}
	recipientAck := amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: 1}
	relayAck := amp.AckBody{AckSource: amp.AckFromRelay, ReceivedAt: 1}
	for _, c := range []struct {
		name string
		r    Receipt
		used bool
		want OutState
	}{
		{"recipient ack from a non-recipient (forged delivery)", report(e.caller, amp.TypeAck, recipientAck), false, OutSent},
		{"relay ack from an untrusted relay", report(e.provider, amp.TypeAck, relayAck), false, OutSent},
		{"relay ack from a trusted relay", report(e.stranger, amp.TypeAck, relayAck), true, OutDelivered},
		{"proc_ok from someone else", report(e.stranger, amp.TypeProcOK, map[string]any{}), false, OutDelivered},
		{"proc_ok from the recipient", report(e.provider, amp.TypeProcOK, map[string]any{}), true, OutProcessed},
		{"a late error after the final state", report(e.provider, amp.TypeError, amp.ErrorBodyOf(amp.NewError(amp.CodeInternalError, "x"))), false, OutProcessed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if used := ob.Receive(context.Background(), c.r); used != c.used {
				t.Fatalf("used = %v", used)
			}
			if st, _ := ob.State(req.ID); st.State != c.want {
				t.Fatalf("state = %d, want %d", st.State, c.want)
			}
		})
	}
}

func TestOutboxExpiresAndStaysBounded(t *testing.T) {
	e := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 2, MaxPerRecipient: 2, Now: e.clock.Now})
	var ids []amp.ID
	for i := 0; i < 2; i++ {
		m := e.seal(t, e.caller, amp.TypePing, nil)
		if err := ob.Add(m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	m3 := e.seal(t, e.caller, amp.TypePing, nil)
	if err := ob.Add(m3); amp.CodeOf(err) != amp.CodeOverloaded {
		t.Fatalf("third message in a full outbox: %v", err)
	}
	e.clock.Add(amp.DefaultTTL + time.Minute)
	if st, _ := ob.State(ids[0]); st.State != OutExpired {
		t.Fatalf("state after the ttl = %d", st.State)
	}
	if err := ob.Add(m3); err != nil {
		t.Fatalf("expired messages did not make room: %v", err)
	}
}

func TestClientRecordsAnsweredRequestsInItsOutbox(t *testing.T) {
	e := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Now: e.clock.Now})
	c, err := New(Config{Identity: e.caller, Peer: e.provider.DID, Transport: e.pongProvider(t), Now: e.clock.Now,
		Rand: rand.Reader, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.Do(context.Background(), amp.TypePing, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := ob.State(ex.Request.ID); !ok || st.State != OutAnswered {
		t.Fatalf("state of an answered request: %+v %v", st, ok)
	}
}
