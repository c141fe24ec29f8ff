package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOnePeersAnswerCannotSettleAMessageForTheOtherRecipients: a message
// names several recipients and goes through one Client, whose peer is
// one of them. The peer's synchronous answer closed the whole entry
// (OutAnswered, final): the other recipients' reports were then ignored
// (a PROC_FAIL from one that failed never showed), and the entry left
// every recipient's share at once, a silent one's too, as one
// recipient's report did before TRANSPORT-19. The peer's answer now
// settles the peer's own recipient only: its share is freed, the others
// keep theirs and are matched as reports come (OutDelivered until the
// last, OutFailed when one failed); a retryable answer from the peer is
// reopened by the caller's retry for the peer alone. A message to the
// peer alone is answered whole, as before (docs/SPEC-DECISIONS.md
// TRANSPORT-22); one whose recipients do not include the peer (a relay)
// is settled by none of its answers (TRANSPORT-23,
// TestRelaysAnswerCannotSettleTheRecipientsItIsNot).
func TestOnePeersAnswerCannotSettleAMessageForTheOtherRecipients(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 8, MaxPerRecipient: 1, Now: p.clock.Now})
	retryable := true
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		d := amp.Draft{Type: amp.TypePong, To: amp.To(m.From), ReplyTo: m.ID[:]}
		if retryable {
			b, err := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy")))
			if err != nil {
				return nil, err
			}
			d.Type, d.Body = amp.TypeError, b
		}
		_, out, err := send.Seal(context.Background(), d)
		return out, err
	})
	once := Retry{MaxAttempts: 1, Sleep: noSleep.Sleep}
	cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: once, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	seal := func(to amp.Recipients) (*amp.Message, []byte) {
		req, msg, err := cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: to})
		if err != nil {
			t.Fatal(err)
		}
		return req, msg
	}
	state := func(m *amp.Message) OutState {
		st, _ := ob.State(m.ID)
		return st.State
	}
	req, msg := seal(amp.ToList(p.provider.DID, p.stranger.DID))

	// The peer asks for a retry: its recipient is settled, the other not.
	_, _ = cl.Send(context.Background(), req, msg)
	if state(req) != OutDelivered {
		t.Fatalf("after the peer's retryable ERROR: state %d, want OutDelivered (%d): the stranger has not reported", state(req), OutDelivered)
	}
	// The caller's retry reopens the peer's recipient, and the peer
	// answers (PONG): still the stranger's to report.
	retryable = false
	if _, err := cl.Send(context.Background(), req, msg); err != nil {
		t.Fatalf("the caller's retry: %v", err)
	}
	if state(req) != OutDelivered {
		t.Fatalf("after the peer's answer: state %d, want OutDelivered (%d): one peer's answer settled the stranger's part", state(req), OutDelivered)
	}
	// The peer's share is free, the silent stranger's is not.
	if err := ob.Add(p.seal(t, p.caller, amp.TypePing, nil)); err != nil {
		t.Errorf("a message to the peer, whose answer settled its part: %v, want it taken", err)
	}
	toStranger, _ := seal(amp.To(p.stranger.DID))
	if err := ob.Add(toStranger); amp.NameOf(err) != ErrRecipientOutboxFull {
		t.Errorf("a message to the silent stranger while the first holds its share of one: %v, want recipient_outbox_full", err)
	}
	// The stranger's PROC_FAIL is matched, and the message failed.
	rs, err := amp.NewSender(amp.SenderConfig{Identity: p.stranger, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := amp.Marshal(map[string]any{})
	fail, _, err := rs.Seal(context.Background(), amp.Draft{Type: amp.TypeProcFail, To: amp.To(p.caller.DID), ReplyTo: req.ID[:], Body: b})
	if err != nil {
		t.Fatal(err)
	}
	if !ob.Receive(context.Background(), Receipt{Message: fail}) || state(req) != OutFailed {
		t.Fatalf("the stranger's PROC_FAIL after the peer's answer: state %d, want OutFailed (%d)", state(req), OutFailed)
	}

	// Settled by none: a message whose recipients do not include the
	// peer (TRANSPORT-23).
	viaPeer, msg := seal(amp.To(p.stranger.DID))
	if _, err := cl.Send(context.Background(), viaPeer, msg); err != nil {
		t.Fatal(err)
	}
	if state(viaPeer) != OutSent {
		t.Errorf("a message the peer answered for recipients it is not: state %d, want OutSent (%d)", state(viaPeer), OutSent)
	}
}
