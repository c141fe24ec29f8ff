package client

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestReopenedEntryIsNotLeftOpenWithNoReportToCome: a recipient's final
// report (PROC_OK, PROC_FAIL) may reach the Outbox before the synchronous
// answer to the same message (the agent reports on its own path, then
// answers), and that answer may be a signed ERROR asking for a retry.
// The answer overwrote the report's final state (OutAnswered, to be
// reopened), and the caller's retry of the message (Add, as the ERROR
// invites) put the entry back to OutSent with every recipient already
// reported: no report could close it again, so it stayed "sent" until
// its ttl, holding a slot of Max (with Max 1: every other message
// refused outbox_full for a day), while the recipient had said its last
// word. Equally, a report that came while a retryable answer had closed
// the entry was ignored, and the reopen then left the entry waiting for
// it. A recipient's final report now outranks a synchronous answer: an
// answer for a recipient that reported changes nothing, a report for one
// whose retryable answer closed it is taken, and Add reopens only the
// recipients a retryable answer settled (docs/SPEC-DECISIONS.md
// TRANSPORT-22).
func TestReopenedEntryIsNotLeftOpenWithNoReportToCome(t *testing.T) {
	for _, c := range []struct {
		name         string
		reportFirst  bool // the report comes before the synchronous answer
		report       amp.Type
		want         OutState
		wantReceived bool // Receive takes the report that comes after the answer
	}{
		{"PROC_OK before the retryable ERROR", true, amp.TypeProcOK, OutProcessed, false},
		{"PROC_FAIL before the retryable ERROR", true, amp.TypeProcFail, OutFailed, false},
		{"PROC_FAIL after the retryable ERROR", false, amp.TypeProcFail, OutFailed, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newParties(t)
			ob := mustOutbox(t, OutboxConfig{Max: 1, MaxPerRecipient: 1, Now: p.clock.Now})
			report := func(send *amp.Sender, id amp.ID) bool {
				b, _ := amp.Marshal(map[string]any{})
				m, _, err := send.Seal(context.Background(), amp.Draft{Type: c.report, To: amp.To(p.caller.DID), ReplyTo: id[:], Body: b})
				if err != nil {
					t.Fatal(err)
				}
				return ob.Receive(context.Background(), Receipt{Message: m})
			}
			var provider *amp.Sender
			tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
				provider = send
				if c.reportFirst && !report(send, m.ID) {
					t.Error("the recipient's report before the answer was ignored")
				}
				body, err := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy")))
				if err != nil {
					return nil, err
				}
				_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
				return out, err
			})
			// One attempt: the exchange ends with the retryable ERROR.
			once := Retry{MaxAttempts: 1, Sleep: noSleep.Sleep}
			cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: once, Outbox: ob})
			if err != nil {
				t.Fatal(err)
			}
			req, msg, err := cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.provider.DID)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Send(context.Background(), req, msg); !errors.Is(err, amp.CodeOverloaded) {
				t.Fatalf("the exchange: %v, want the agent's 5004", err)
			}
			if !c.reportFirst && report(provider, req.ID) != c.wantReceived {
				t.Errorf("the recipient's report after the retryable answer: taken %v, want %v", !c.wantReceived, c.wantReceived)
			}
			// The caller sends the message again, as the ERROR invites.
			if err := ob.Add(req); err != nil {
				t.Fatalf("the caller's retry of the same message: %v", err)
			}
			if st, _ := ob.State(req.ID); st.State != c.want {
				t.Fatalf("state after the recipient's report, the retryable answer and the caller's retry = %d, want %d: open with no report to come", st.State, c.want)
			}
			other := p.seal(t, p.caller, amp.TypePing, nil)
			if err := ob.Add(other); err != nil {
				t.Errorf("another message once the first was settled (Max 1): %v, want it taken", err)
			}
		})
	}
}

// TestReopenTakesNoRoomBeyondTheRecipientsShare: a retryable answer
// settles its recipient and frees its share (TRANSPORT-22), so another
// message to that recipient may take the room meanwhile. The caller's
// retry of the first then reopens it into a full share: were it reopened
// all the same, a peer that asks for retries would hold entries beyond
// MaxPerRecipient. The retry is refused recipient_outbox_full, as a new
// message would be, and the entry is not reopened.
func TestReopenTakesNoRoomBeyondTheRecipientsShare(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 4, MaxPerRecipient: 1, Now: p.clock.Now})
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		body, err := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy")))
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	once := Retry{MaxAttempts: 1, Sleep: noSleep.Sleep}
	cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: once, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	req, msg, err := cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.provider.DID)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Send(context.Background(), req, msg); !errors.Is(err, amp.CodeOverloaded) {
		t.Fatalf("the exchange: %v, want the agent's 5004", err)
	}
	if err := ob.Add(p.seal(t, p.caller, amp.TypePing, nil)); err != nil {
		t.Fatalf("another message to the peer once the first was answered: %v, want it taken", err)
	}
	if _, err := cl.Send(context.Background(), req, msg); amp.NameOf(err) != ErrRecipientOutboxFull {
		t.Fatalf("the caller's retry into a full share: %v, want recipient_outbox_full", err)
	}
	// The answered entry was final: the refusal's sweep may have dropped
	// it; it must not be open.
	if st, ok := ob.State(req.ID); ok && st.State != OutAnswered {
		t.Errorf("state after a refused retry = %d, want OutAnswered (%d) or dropped", st.State, OutAnswered)
	}
}
