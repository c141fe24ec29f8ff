package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestForgedRelayRefusalFreesNothing: a relay's final refusal now ends
// an entry and frees its recipients' shares, so whoever can put bytes on
// the connection (a path between the sender and its relay, another party
// the reply names, a replay of the relay's refusal of another message)
// would end messages the relay took, were an answer taken before the
// Client verified it. Only a reply the Client verified (signed by its
// peer's key, from the peer, to the caller, reply_to the message's id,
// encrypted when the request was) is recorded; an unsigned refusal of
// the transport, an ERROR body that does not decode, and an ERROR that
// comes on its own from a party that is none of the recipients
// (Outbox.Receive) end nothing: the entry stays OutSent and holds its
// share (docs/SPEC-DECISIONS.md TRANSPORT-25).
func TestForgedRelayRefusalFreesNothing(t *testing.T) {
	p := newParties(t) // for the stranger's identity; each case has its own fixture
	stranger, err := amp.NewSender(amp.SenderConfig{Identity: p.stranger, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	final, err := amp.Marshal(errBody(amp.CodeInvalidMessage, &no))
	if err != nil {
		t.Fatal(err)
	}
	refusal := func(m *amp.Message) amp.Draft {
		return amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: final}
	}
	sealed := func(s *amp.Sender, d amp.Draft, change func(*amp.Message)) ([]byte, error) {
		m, out, err := s.Seal(context.Background(), d)
		if err != nil || change == nil {
			return out, err
		}
		change(m)
		return m.Encode(), nil
	}
	for _, c := range []struct {
		name   string
		answer func(m *amp.Message, relay *amp.Sender) ([]byte, error)
	}{
		{"signed by a third party", func(m *amp.Message, _ *amp.Sender) ([]byte, error) {
			return sealed(stranger, refusal(m), nil)
		}},
		{"the relay's name over a third party's signature", func(m *amp.Message, _ *amp.Sender) ([]byte, error) {
			return sealed(stranger, refusal(m), func(r *amp.Message) { r.From = p.provider.DID })
		}},
		{"the relay's, its signature broken", func(m *amp.Message, relay *amp.Sender) ([]byte, error) {
			return sealed(relay, refusal(m), func(r *amp.Message) { r.Sig[0] ^= 1 })
		}},
		{"the relay's refusal of another message", func(m *amp.Message, relay *amp.Sender) ([]byte, error) {
			d, other := refusal(m), amp.ID{1, 2, 3}
			d.ReplyTo = other[:]
			return sealed(relay, d, nil)
		}},
		{"the relay's refusal with no reply_to", func(m *amp.Message, relay *amp.Sender) ([]byte, error) {
			d := refusal(m)
			d.ReplyTo = nil
			return sealed(relay, d, nil)
		}},
		{"the relay's refusal to another party", func(m *amp.Message, relay *amp.Sender) ([]byte, error) {
			d := refusal(m)
			d.To = amp.To(p.stranger.DID)
			return sealed(relay, d, nil)
		}},
		{"an unsigned refusal of the transport", func(*amp.Message, *amp.Sender) ([]byte, error) {
			return nil, amp.NewError(amp.CodeInvalidMessage, "too large")
		}},
		{"an ERROR body that does not decode", func(m *amp.Message, relay *amp.Sender) ([]byte, error) {
			d := refusal(m)
			d.Body, _ = amp.Marshal(map[string]any{"code": "1001"})
			return sealed(relay, d, nil)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRelayFixture(t, 1)
			f.answer = c.answer
			req, msg := f.seal(t, f.bob)
			if _, err := f.cl.Send(context.Background(), req, msg); err == nil {
				t.Fatal("Send took the answer as no error")
			}
			if st := f.state(req.ID); st.State != OutSent {
				t.Fatalf("after %s: state %d, want OutSent (%d)", c.name, st.State, OutSent)
			}
			if !f.shareFull(t, f.bob) {
				t.Errorf("after %s: a message to bob was taken: the entry left his share", c.name)
			}
		})
	}
	t.Run("the relay's refusal on its own path", func(t *testing.T) {
		f := newRelayFixture(t, 1)
		req, _ := f.seal(t, f.bob)
		if err := f.ob.Add(req); err != nil {
			t.Fatal(err)
		}
		if f.report(t, f.p.provider, amp.TypeError, req.ID) {
			t.Error("the relay's ERROR received on its own was matched: the relay is none of the recipients")
		}
		if st := f.state(req.ID); st.State != OutSent || !f.shareFull(t, f.bob) {
			t.Errorf("after the relay's ERROR on its own path: state %d, want OutSent with bob's share held", st.State)
		}
	})
}
