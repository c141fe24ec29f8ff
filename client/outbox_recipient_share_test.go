package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOneSilentPeerCannotFillTheOutboxForAll: one Outbox serves a
// sender's clients of every peer (Config.Outbox; agent.Config.Receipts).
// A hostile peer never confirms anything: every message to it stays until
// its ttl (24 h by default). With one bound for all peers, once the
// messages to that peer filled Max, a message to any other peer would be
// refused outbox_full (5004) for up to a day. Each recipient gets a share
// of Max (MaxPerRecipient, as the agent's admission shares its slots by
// peer): beyond it only messages to the silent peer are refused
// (REPORT-4).
func TestOneSilentPeerCannotFillTheOutboxForAll(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 8, Now: p.clock.Now})
	for i := 0; ; i++ {
		if err := ob.Add(p.seal(t, p.caller, amp.TypePing, nil)); err != nil {
			if i == 0 {
				t.Fatal(err)
			}
			break // the silent provider's share, or all of Max, is taken
		}
		if i > 8 {
			t.Fatal("the outbox took more than Max messages")
		}
	}
	s, err := amp.NewSender(amp.SenderConfig{Identity: p.caller, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(p.stranger.DID)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Add(other); err != nil {
		t.Errorf("a message to another peer is refused because one peer never answered: %v", err)
	}
}
