package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// ackProvider answers every request with a signed ACK carrying body.
func (p *parties) ackProvider(t testing.TB, body []byte) Transport {
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	send, err := amp.NewSender(amp.SenderConfig{Identity: p.provider, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return TransportFunc(func(ctx context.Context, raw []byte) ([]byte, error) {
		m, err := recv.Receive(ctx, raw)
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(ctx, amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
}

// TestAckWithoutAckSourceIsRefused: RFC 001 §16.1 requires every ACK body
// to say who acknowledges (ack_source: relay or recipient), so that a
// relay's "received" is never taken for the recipient's. An ACK answering
// a request synchronously was returned as a good exchange whatever its
// body, and the outbox marked the request answered; it must pass the same
// rules as an ACK that arrives on its own, and a refused one leaves the
// request open.
func TestAckWithoutAckSourceIsRefused(t *testing.T) {
	e := newParties(t)
	mustBody := func(v any) []byte {
		b, err := amp.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		body []byte
		want amp.ErrName // "" accepted
	}{
		{"without ack_source", mustBody(map[string]any{"received_at": uint64(1)}), "missing_field"},
		{"ack_source null", mustBody(map[string]any{"received_at": uint64(1), "ack_source": nil}), "wrong_shape"},
		{"ack_source of another value", mustBody(map[string]any{"received_at": uint64(1), "ack_source": "provider"}), "wrong_shape"},
		{"not a map", mustBody(uint64(1)), ""},
		{"relay ack from the recipient itself, no relay trusted", mustBody(amp.AckBody{AckSource: amp.AckFromRelay, ReceivedAt: 1}), "untrusted_relay_ack"},
		{"recipient ack", mustBody(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: 1}), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ob := mustOutbox(t, OutboxConfig{Now: e.clock.Now})
			cl, err := New(Config{Identity: e.caller, Peer: e.provider.DID, Transport: e.ackProvider(t, c.body), Now: e.clock.Now,
				Rand: rand.Reader, Outbox: ob, Retry: Retry{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			ex, err := cl.Do(context.Background(), amp.TypeMessage, mustBody(map[string]any{"text": "hi"}))
			st, _ := ob.State(ex.Request.ID)
			if c.name == "recipient ack" {
				if err != nil || ex.Reply == nil || st.State != OutDelivered { // an ACK says delivered, not answered (REPORT-4)
					t.Fatalf("a valid recipient ack: %v, state %d", err, st.State)
				}
				return
			}
			if err == nil {
				t.Fatalf("an ack %s was accepted", c.name)
			}
			if c.want != "" && amp.NameOf(err) != c.want {
				t.Fatalf("refused as %s (%v), want %s", amp.NameOf(err), err, c.want)
			}
			if amp.AsError(err).Code != amp.CodeInvalidMessage {
				t.Fatalf("refused with code %d, want 1001: %v", amp.AsError(err).Code, err)
			}
			if st.State == OutAnswered {
				t.Fatal("the outbox counts a refused ack as an answer")
			}
		})
	}
}
