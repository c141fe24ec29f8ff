package client

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestRetryableErrorDoesNotCloseTheOutboxEntry: an agent answers a
// CAP_INVOKE first with a signed ERROR that asks for a retry (5004,
// retry: true), then, to the retry of the same message, with a
// synchronous ACK, and later reports PROC_FAIL. Were the ERROR recorded
// as the final answer (OutAnswered) before the retry, the entry would be
// closed while the message was still being sent: the ACK of the retry
// and the PROC_FAIL that follows would be ignored, and the caller's
// outbox say the invocation was answered while it failed. A reply is
// recorded once no retry follows it: here the ACK (OutDelivered), then
// the PROC_FAIL (OutFailed).
func TestRetryableErrorDoesNotCloseTheOutboxEntry(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
	tr, provider := errorThenAck(t, p)
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := capability.ParseVersion("1.0.0")
	_, ex, err := c.Invoke(context.Background(), capability.Invoke{Capability: "org.example.x", Version: v, Params: []byte{0xa0}})
	if ex == nil || ex.Request == nil {
		t.Fatalf("no exchange (%v)", err)
	}
	if ex.Attempts != 2 {
		t.Fatalf("attempts = %d (%v), want 2: a retryable ERROR, then the ACK", ex.Attempts, err)
	}
	id := ex.Request.ID
	if st, _ := ob.State(id); st.State != OutDelivered {
		t.Errorf("state after a retryable ERROR and then a synchronous ACK = %d, want OutDelivered (%d)", st.State, OutDelivered)
	}
	fb, err := amp.Marshal(amp.ProcFailBody{})
	if err != nil {
		t.Fatal(err)
	}
	fail, _, err := (*provider).Seal(context.Background(), amp.Draft{Type: amp.TypeProcFail, To: amp.To(p.caller.DID), ReplyTo: id[:], Body: fb})
	if err != nil {
		t.Fatal(err)
	}
	if !ob.Receive(context.Background(), amp.Receipt{Message: fail}) {
		t.Error("the provider's PROC_FAIL after the retried message's ACK was ignored")
	}
	if st, _ := ob.State(id); st.State != OutFailed {
		t.Errorf("state after PROC_FAIL = %d, want OutFailed (%d)", st.State, OutFailed)
	}
}

// TestRetryableErrorToTheLastAttemptClosesTheOutboxEntry: the other side
// of the rule above: an agent that answers every attempt with a signed
// ERROR asking for a retry must not leave the entry open (OutSent) once
// the client stops retrying, holding a slot of the agent's share of the
// outbox until the message expires (24 h by default): a peer answering so
// would fill its share and have the client refuse every later message to
// it (recipient_outbox_full). The exchange ended with that ERROR: the
// entry is answered.
func TestRetryableErrorToTheLastAttemptClosesTheOutboxEntry(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		body, err := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy")))
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.Do(context.Background(), amp.TypePing, nil)
	if !errors.Is(err, amp.CodeOverloaded) || ex == nil || ex.Attempts != noSleep.MaxAttempts {
		t.Fatalf("ping answered busy every time: %v (exchange %+v), want 5004 after %d attempts", err, ex, noSleep.MaxAttempts)
	}
	if st, _ := ob.State(ex.Request.ID); st.State != OutAnswered {
		t.Errorf("state after the last attempt's retryable ERROR = %d, want OutAnswered (%d)", st.State, OutAnswered)
	}
}

// errorThenAck is an agent that answers the first attempt with a signed
// ERROR asking for a retry (5004, retry: true) and every later one with a
// synchronous ACK; *provider is the agent's sender once it has answered
// (for its later reports).
func errorThenAck(t *testing.T, p *parties) (tr Transport, provider **amp.Sender) {
	provider = new(*amp.Sender)
	attempts := 0
	tr = p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		*provider = send
		attempts++
		d := amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:]}
		var err error
		if attempts == 1 {
			d.Type = amp.TypeError
			d.Body, err = amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy")))
		} else {
			d.Body, err = amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: m.TS})
		}
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), d)
		return out, err
	})
	return tr, provider
}
