package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// relayFixture is a sender whose Client's peer is a relay (the
// provider's identity, none of the recipients), and the recipients bob
// and carol, who report on their own path (Outbox.Receive).
type relayFixture struct {
	p          *parties
	ob         *Outbox
	cl         *Client
	bob, carol amp.Identity
	answer     func(m *amp.Message, send *amp.Sender) ([]byte, error) // the relay's answer; settable
}

// newRelayFixture makes the fixture with an Outbox of Max 16 and share
// perRcpt; the relay is trusted for ACKs, and answers as f.answer says.
func newRelayFixture(t *testing.T, perRcpt int) *relayFixture {
	t.Helper()
	p := newParties(t)
	f := &relayFixture{p: p, bob: identity(t, 6), carol: identity(t, 7)}
	f.ob = mustOutbox(t, OutboxConfig{Max: 16, MaxPerRecipient: perRcpt, Now: p.clock.Now, TrustedRelays: []string{p.provider.DID}})
	relay := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) { return f.answer(m, send) })
	cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: relay, Now: p.clock.Now, Rand: rand.Reader,
		Retry: Retry{MaxAttempts: 1, Sleep: noSleep.Sleep}, Outbox: f.ob})
	if err != nil {
		t.Fatal(err)
	}
	f.cl = cl
	return f
}

// refuse makes the relay answer every message with a signed ERROR of
// body b.
func (f *relayFixture) refuse(t *testing.T, b amp.ErrorBody) {
	t.Helper()
	body, err := amp.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	f.answer = func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	}
}

// seal seals a PING from the caller to rcpts.
func (f *relayFixture) seal(t *testing.T, rcpts ...amp.Identity) (*amp.Message, []byte) {
	t.Helper()
	dids := make([]string, len(rcpts))
	for i, r := range rcpts {
		dids[i] = r.DID
	}
	to := amp.To(dids[0])
	if len(dids) > 1 {
		to = amp.ToList(dids...)
	}
	req, msg, err := f.cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: to})
	if err != nil {
		t.Fatal(err)
	}
	return req, msg
}

// state is the state of the entry id.
func (f *relayFixture) state(id amp.ID) Outbound {
	st, _ := f.ob.State(id)
	return st
}

// report makes from send a report of typ to the caller on id, as the
// receiving agent hands it to Outbox.Receive, and returns whether it was
// used.
func (f *relayFixture) report(t *testing.T, from amp.Identity, typ amp.Type, id amp.ID) bool {
	t.Helper()
	s, err := amp.NewSender(amp.SenderConfig{Identity: from, Rand: rand.Reader, Now: f.p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	if typ != amp.TypeAck {
		body, _ = amp.Marshal(map[string]any{})
	} else {
		body, _ = amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: 1})
	}
	m, _, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(f.p.caller.DID), ReplyTo: id[:], Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return f.ob.Receive(context.Background(), Receipt{Message: m})
}

// shareFull reports whether one more message to r is refused
// recipient_outbox_full (a plain Add, as any Client of the Outbox does).
func (f *relayFixture) shareFull(t *testing.T, r amp.Identity) bool {
	t.Helper()
	m, _ := f.seal(t, r)
	err := f.ob.Add(m)
	if err != nil && amp.NameOf(err) != ErrRecipientOutboxFull {
		t.Fatalf("another message to %s: %v, want taken or recipient_outbox_full", r.DID, err)
	}
	return err != nil
}

// errBody is an ERROR body of code c with the retry flag retry (nil:
// none), as any agent may sign it: the flag need not be the code's.
func errBody(c amp.Code, retry *bool) amp.ErrorBody {
	return amp.ErrorBody{Code: c, Category: c.Category(), Message: "refused by the relay", Retry: retry}
}

var yes, no = true, false

// TestRelayFinalRefusalFreesRecipientShares: a relay (a Client's peer
// that is none of the message's recipients, RFC 001 §1.6) that refuses
// a message for good (a signed ERROR whose code RFC 001 §15.3 does not
// make retryable and that does not ask for a retry: too large, a policy,
// expired) will never deliver it. The entry stayed OutSent to its ttl
// (24 h by default), holding every recipient's share: a relay's
// refusals filled MaxPerRecipient, and the sender could not send that
// recipient anything else, by any path, for a day. The refusal now ends
// the entry OutFailed and frees the shares, without saying that a
// recipient answered (no Report; docs/SPEC-DECISIONS.md TRANSPORT-25).
func TestRelayFinalRefusalFreesRecipientShares(t *testing.T) {
	for _, r := range []struct {
		name string
		body amp.ErrorBody
	}{
		{"too large (1001, retry false)", errBody(amp.CodeInvalidMessage, &no)},
		{"a policy (3003, no retry flag)", errBody(amp.CodeContactDenied, nil)},
		{"expired on the way (2004)", amp.ErrorBodyOf(amp.NewError(amp.CodeTTLExpired, "expired"))},
		{"a vendor code outside 5xxx (4901)", errBody(4901, &no)},
	} {
		for _, n := range []int{1, 2} {
			t.Run(r.name+"/"+[]string{"", "one recipient", "two recipients"}[n], func(t *testing.T) {
				f := newRelayFixture(t, 2)
				f.refuse(t, r.body)
				rcpts := []amp.Identity{f.bob, f.carol}[:n]
				// Two refused messages fill each recipient's share of two
				// were they kept; the third must still be sent.
				var sent []amp.ID
				for i := range 3 {
					req, msg := f.seal(t, rcpts...)
					ex, err := f.cl.Send(context.Background(), req, msg)
					if amp.NameOf(err) == ErrRecipientOutboxFull {
						t.Fatalf("message %d to the recipients refused recipient_outbox_full: the relay's %d final refusals still hold their shares", i+1, i)
					}
					if amp.CodeOf(err) != r.body.Code || ex.Attempts != 1 {
						t.Fatalf("message %d: %v after %d attempts, want the relay's refusal %d once", i+1, err, ex.Attempts, r.body.Code)
					}
					sent = append(sent, req.ID)
				}
				for i, id := range sent {
					st := f.state(id)
					if st.State != OutFailed {
						t.Fatalf("message %d refused for good by the relay: state %d, want OutFailed (%d)", i+1, st.State, OutFailed)
					}
					if st.Report != nil {
						t.Fatalf("message %d: the relay's refusal became the Report of a recipient: %+v", i+1, st.Report)
					}
				}
				for _, rc := range rcpts {
					if f.shareFull(t, rc) {
						t.Errorf("a message to %s after the relay's final refusals: refused recipient_outbox_full", rc.DID)
					}
				}
			})
		}
	}
}

// TestRelayRetryableRefusalKeepsShares: a relay's refusal that the
// module treats as retryable (its code's Retry column in RFC 001 §15.3,
// amp.Code.Retryable, or an ERROR that asks for a retry) says the
// message may yet go: the sender may retry it, and a store-and-forward
// relay may yet take it. It frees nothing: the entry stays OutSent and
// holds each recipient's share, as TRANSPORT-23 has every relay answer
// do (docs/SPEC-DECISIONS.md TRANSPORT-25). Were any refusal to end the
// entry, a relay that is only busy would end messages it may still
// forward.
func TestRelayRetryableRefusalKeepsShares(t *testing.T) {
	for _, r := range []struct {
		name string
		body amp.ErrorBody
	}{
		{"busy (5004, retry true)", amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "busy"))},
		{"recipient not found (2001, retryable in §15.3)", amp.ErrorBodyOf(amp.NewError(amp.CodeRecipientNotFound, "unknown"))},
		{"relay rejected (2003), no retry flag", errBody(amp.CodeRelayRejected, nil)},
		{"unavailable (5002) though retry false: the code outranks the flag", errBody(amp.CodeUnavailable, &no)},
		{"bad request (4001) that asks for a retry", errBody(amp.CodeBadRequest, &yes)},
		{"a vendor 5xxx code (5950)", errBody(5950, nil)},
	} {
		for _, n := range []int{1, 2} {
			t.Run(r.name+"/"+[]string{"", "one recipient", "two recipients"}[n], func(t *testing.T) {
				f := newRelayFixture(t, 1)
				f.refuse(t, r.body)
				rcpts := []amp.Identity{f.bob, f.carol}[:n]
				req, msg := f.seal(t, rcpts...)
				if _, err := f.cl.Send(context.Background(), req, msg); amp.CodeOf(err) != r.body.Code {
					t.Fatalf("Send: %v, want the relay's refusal %d", err, r.body.Code)
				}
				if st := f.state(req.ID); st.State != OutSent {
					t.Fatalf("after the relay's retryable refusal: state %d, want OutSent (%d)", st.State, OutSent)
				}
				for _, rc := range rcpts {
					if !f.shareFull(t, rc) {
						t.Errorf("a message to %s, whose share the retryably refused message holds: taken, want recipient_outbox_full", rc.DID)
					}
				}
			})
		}
	}
}
