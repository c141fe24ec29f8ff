package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOneRecipientCannotSettleAMessageForTheOthers: a message names
// several recipients (the array form of "to"). The Outbox took the first
// PROC_OK, PROC_FAIL or ERROR from any of them as the message's final
// state, so one recipient (hostile, or merely first) decided it for all:
// its PROC_OK said "processed" for a recipient that never processed it,
// the others' reports were then ignored, and the entry left every
// recipient's share at once, a silent one's too. Each recipient's final
// report now counts for itself (TRANSPORT-19): the message is final once
// every recipient reported (failed when any failed), a report frees only
// its sender's share, and a recipient reports once.
func TestOneRecipientCannotSettleAMessageForTheOthers(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 8, MaxPerRecipient: 2, Now: p.clock.Now})
	s, err := amp.NewSender(amp.SenderConfig{Identity: p.caller, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	toBoth := func() *amp.Message {
		m, _, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.ToList(p.provider.DID, p.stranger.DID, p.provider.DID+"#key-1")})
		if err != nil {
			t.Fatal(err)
		}
		if err := ob.Add(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	report := func(from amp.Identity, typ amp.Type, req *amp.Message) bool {
		b, _ := amp.Marshal(map[string]any{})
		if typ == amp.TypeError {
			b, _ = amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeInternalError, "x")))
		}
		rs, _ := amp.NewSender(amp.SenderConfig{Identity: from, Rand: rand.Reader, Now: p.clock.Now})
		m, _, err := rs.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(p.caller.DID), ReplyTo: req.ID[:], Body: b})
		if err != nil {
			t.Fatal(err)
		}
		return ob.Receive(context.Background(), Receipt{Message: m})
	}
	state := func(m *amp.Message) OutState {
		st, _ := ob.State(m.ID)
		return st.State
	}

	a, b := toBoth(), toBoth()
	if !report(p.stranger, amp.TypeProcOK, a) || state(a) != OutDelivered {
		t.Fatalf("one recipient's PROC_OK: state %d, want %d (delivered, the other has not reported)", state(a), OutDelivered)
	}
	if report(p.stranger, amp.TypeProcFail, a) {
		t.Fatal("a recipient reported twice")
	}
	if !report(p.provider, amp.TypeError, a) || state(a) != OutFailed {
		t.Fatalf("the other recipient's ERROR after a PROC_OK: state %d, want %d", state(a), OutFailed)
	}
	if !report(p.stranger, amp.TypeProcOK, b) || !report(p.provider, amp.TypeProcOK, b) || state(b) != OutProcessed {
		t.Fatalf("both recipients' PROC_OK: state %d, want %d", state(b), OutProcessed)
	}

	// The stranger reported on c and d; the provider stays silent: the
	// stranger's share is free, the silent provider's is not.
	c, d := toBoth(), toBoth()
	report(p.stranger, amp.TypeProcOK, c)
	report(p.stranger, amp.TypeProcOK, d)
	toStranger, _, _ := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.stranger.DID)})
	if err := ob.Add(toStranger); err != nil {
		t.Fatalf("a recipient that reported keeps its share: %v", err)
	}
	toProvider, _, _ := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.provider.DID)})
	if err := ob.Add(toProvider); amp.NameOf(err) != ErrRecipientOutboxFull {
		t.Fatalf("a silent recipient's share was freed by another's report: %v", err)
	}
}
