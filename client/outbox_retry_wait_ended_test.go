package client

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestContextEndDuringRetryWaitDoesNotCloseTheOutboxEntry: the agent
// answers a message first with a signed ERROR that asks for a retry (5004,
// retry: true), with a Retry-After or simply a backoff long enough that
// the caller's context ends during the wait. Send returns 5003 ("gave up
// retrying") and records the ERROR in the Outbox as the answer
// (docs/SPEC-DECISIONS.md TRANSPORT-8: an agent that asks for retries for
// ever must not keep entries open). The caller does what 5003 invites,
// Send again with the same message: were the entry left closed (Add took
// the message as "a retry of the same message" and changed nothing), the
// retry's ACK and the agent's later PROC_FAIL would be ignored, and the
// Outbox say the message was answered while it failed. Add reopens an
// entry that a retryable ERROR closed, so both are recorded (OutDelivered,
// then OutFailed); and the 5003 carries the ERROR it ended on, so that it
// does not claim nothing was answered.
func TestContextEndDuringRetryWaitDoesNotCloseTheOutboxEntry(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
	tr, provider := errorThenAck(t, p)
	// The caller's context ends during the wait before the retry.
	ends := Retry{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return context.DeadlineExceeded }}
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: ends, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	req, msg, err := c.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.provider.DID)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), req, msg)
	if amp.CodeOf(err) != amp.CodeTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context ended in the wait: %v, want 5003 wrapping the context's end", err)
	}
	if !errors.Is(err, &amp.Error{Code: amp.CodeOverloaded, Name: "overloaded"}) {
		t.Errorf("the 5003 %q does not carry the agent's ERROR (5004 overloaded) it ended on", err)
	}
	if st, _ := ob.State(req.ID); st.State != OutAnswered {
		t.Errorf("state after a retryable ERROR and the caller's context ending in the wait = %d, want OutAnswered (%d, TRANSPORT-8)", st.State, OutAnswered)
	}
	// The caller retries the same message, as a 5003 allows.
	c.cfg.Retry = noSleep
	ex, err := c.Send(context.Background(), req, msg)
	if err != nil || ex.Reply == nil || ex.Reply.Type != amp.TypeAck {
		t.Fatalf("the caller's retry of the same message: %v, want its ACK", err)
	}
	if st, _ := ob.State(req.ID); st.State != OutDelivered {
		t.Errorf("state after a retryable ERROR, the caller's context ending in the wait, and the caller's retry ACKed = %d, want OutDelivered (%d): the ACK was ignored", st.State, OutDelivered)
	}
	fb, err := amp.Marshal(amp.ProcFailBody{})
	if err != nil {
		t.Fatal(err)
	}
	fail, _, err := (*provider).Seal(context.Background(), amp.Draft{Type: amp.TypeProcFail, To: amp.To(p.caller.DID), ReplyTo: req.ID[:], Body: fb})
	if err != nil {
		t.Fatal(err)
	}
	if !ob.Receive(context.Background(), amp.Receipt{Message: fail}) {
		t.Error("the provider's PROC_FAIL after the retried message's ACK was ignored")
	}
	if st, _ := ob.State(req.ID); st.State != OutFailed {
		t.Errorf("state after PROC_FAIL = %d, want OutFailed (%d): the Outbox says answered while the message failed", st.State, OutFailed)
	}
}

// TestOutboxReopensOnlyWhatARetryableErrorClosed: Add reopens an entry
// only when the answer that closed it was a signed ERROR asking for a
// retry; a PONG or an ERROR with retry: false stays the answer, whatever
// the caller sends again. A reopened entry is the same entry, counted in
// its recipient's share again (the answer freed it, TRANSPORT-22): with a
// share of one, a second message to that recipient is refused while it
// is open, so that a peer that asks for retries gains no room by it.
func TestOutboxReopensOnlyWhatARetryableErrorClosed(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(m *amp.Message) amp.Draft
		want   OutState
	}{
		{"a retryable ERROR", func(m *amp.Message) amp.Draft {
			b, _ := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy")))
			return amp.Draft{Type: amp.TypeError, Body: b}
		}, OutSent},
		{"an ERROR with retry: false", func(m *amp.Message) amp.Draft {
			b, _ := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeBadRequest, "no")))
			return amp.Draft{Type: amp.TypeError, Body: b}
		}, OutAnswered},
		{"a PONG", func(m *amp.Message) amp.Draft { return amp.Draft{Type: amp.TypePong} }, OutAnswered},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newParties(t)
			ob := mustOutbox(t, OutboxConfig{Max: 4, MaxPerRecipient: 1, Now: p.clock.Now})
			tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
				d := c.answer(m)
				d.To, d.ReplyTo = amp.To(m.From), m.ID[:]
				_, out, err := send.Seal(context.Background(), d)
				return out, err
			})
			// One attempt: the exchange ends with the agent's answer.
			once := Retry{MaxAttempts: 1, Sleep: noSleep.Sleep}
			cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: once, Outbox: ob})
			if err != nil {
				t.Fatal(err)
			}
			req, msg, err := cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.provider.DID)})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = cl.Send(context.Background(), req, msg)
			if st, _ := ob.State(req.ID); st.State != OutAnswered {
				t.Fatalf("state after the exchange = %d, want OutAnswered (%d)", st.State, OutAnswered)
			}
			if err := ob.Add(req); err != nil {
				t.Fatalf("the caller's retry of the same message: %v", err)
			}
			if st, _ := ob.State(req.ID); st.State != c.want {
				t.Fatalf("state after the caller's retry = %d, want %d", st.State, c.want)
			}
			other := p.seal(t, p.caller, amp.TypePing, nil)
			err = ob.Add(other)
			if c.want == OutSent && !errors.Is(err, ErrRecipientOutboxFull) {
				t.Errorf("a second message while the reopened one holds the recipient's share of one: %v, want recipient_outbox_full", err)
			}
			if c.want != OutSent && err != nil {
				t.Errorf("a second message once the first was answered: %v, want it taken (the answered entry makes room)", err)
			}
		})
	}
}
