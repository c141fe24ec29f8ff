package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRelaysAnswerCannotSettleTheRecipientsItIsNot: a Client whose peer
// is a relay (an intermediary, RFC 001 §1.6) sends a sealed message to
// recipients the relay is none of. The relay's synchronous answer (a
// PONG of its own, a PROC_OK it has no standing to send, an ERROR)
// closed the whole entry OutAnswered, final: the recipients' own reports
// were then ignored, their shares freed at once, and the sender read the
// message as answered by recipients that never got it. A relay may say
// only that it accepted the message for delivery (a relay ACK, §16.1):
// its answer now settles no recipient; the entry stays OutSent (its ACK:
// OutDelivered), each recipient keeps its share, and the message is
// final when the recipients' own reports came (docs/SPEC-DECISIONS.md
// TRANSPORT-23). A relay's ERROR that refuses the message for good is
// the one answer that ends it (refused, not answered: TRANSPORT-25,
// TestRelayFinalRefusalFreesRecipientShares); a retryable one is here.
func TestRelaysAnswerCannotSettleTheRecipientsItIsNot(t *testing.T) {
	p := newParties(t)
	bob, carol := identity(t, 6), identity(t, 7)
	empty, _ := amp.Marshal(map[string]any{})
	errorBody := func(e *amp.Error) []byte {
		b, err := amp.Marshal(amp.ErrorBodyOf(e))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ack, _ := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRelay, ReceivedAt: 1})
	answers := []struct {
		name string
		typ  amp.Type
		body []byte
		want OutState // right after the relay's answer
	}{
		{"a pong of its own", amp.TypePong, nil, OutSent},
		{"a proc_ok it cannot send", amp.TypeProcOK, empty, OutSent},
		{"a retryable error", amp.TypeError, errorBody(amp.NewError(amp.CodeRelayRejected, "recipient offline")), OutSent},
		{"its relay ack", amp.TypeAck, ack, OutDelivered},
	}
	for _, to := range []struct {
		name string
		rcpt []amp.Identity
	}{
		{"two recipients", []amp.Identity{bob, carol}},
		{"one recipient", []amp.Identity{bob}},
	} {
		for _, a := range answers {
			t.Run(to.name+"/"+a.name, func(t *testing.T) {
				ob := mustOutbox(t, OutboxConfig{Max: 8, MaxPerRecipient: 1, Now: p.clock.Now, TrustedRelays: []string{p.provider.DID}})
				relay := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
					_, out, err := send.Seal(context.Background(), amp.Draft{Type: a.typ, To: amp.To(m.From), ReplyTo: m.ID[:], Body: a.body})
					return out, err
				})
				cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: relay, Now: p.clock.Now, Rand: rand.Reader,
					Retry: Retry{MaxAttempts: 1, Sleep: noSleep.Sleep}, Outbox: ob})
				if err != nil {
					t.Fatal(err)
				}
				dids := make([]string, len(to.rcpt))
				for i, r := range to.rcpt {
					dids[i] = r.DID
				}
				rcpts := amp.To(dids[0])
				if len(dids) > 1 {
					rcpts = amp.ToList(dids...)
				}
				req, msg, err := cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: rcpts})
				if err != nil {
					t.Fatal(err)
				}
				ex, _ := cl.Send(context.Background(), req, msg)
				if ex == nil || ex.Reply == nil || ex.Reply.Type != a.typ {
					t.Fatalf("the relay's answer was not verified: %+v", ex)
				}
				state := func() OutState {
					st, _ := ob.State(req.ID)
					return st.State
				}
				if got := state(); got != a.want {
					t.Fatalf("after the relay's answer: state %d, want %d: the relay settled recipients it is not", got, a.want)
				}
				// Every recipient still holds its share of one.
				for _, r := range to.rcpt {
					other, _, err := cl.send.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(r.DID)})
					if err != nil {
						t.Fatal(err)
					}
					if err := ob.Add(other); amp.NameOf(err) != ErrRecipientOutboxFull {
						t.Errorf("another message to %s, whose share the unsettled message holds: %v, want recipient_outbox_full", r.DID, err)
					}
				}
				// The recipients' own reports settle it, each its own.
				for i, r := range to.rcpt {
					rs, err := amp.NewSender(amp.SenderConfig{Identity: r, Rand: rand.Reader, Now: p.clock.Now})
					if err != nil {
						t.Fatal(err)
					}
					ok, _, err := rs.Seal(context.Background(), amp.Draft{Type: amp.TypeProcOK, To: amp.To(p.caller.DID), ReplyTo: req.ID[:], Body: empty})
					if err != nil {
						t.Fatal(err)
					}
					if !ob.Receive(context.Background(), Receipt{Message: ok}) {
						t.Fatalf("recipient %d's PROC_OK after the relay's answer was not matched", i+1)
					}
					want := OutDelivered
					if i == len(to.rcpt)-1 {
						want = OutProcessed
					}
					if got := state(); got != want {
						t.Fatalf("after recipient %d's PROC_OK: state %d, want %d", i+1, got, want)
					}
				}
			})
		}
	}
}
