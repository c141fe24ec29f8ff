package agent

import (
	"context"
	"crypto/rand"
	"math"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRefusalIsNeverSignedForTheRequestersOverlongTTL: a verified
// request whose ttl is longer than MaxTTL (or that is addressed to another
// agent, checked before the ttl) is refused with a signed ERROR. Threat:
// that ERROR copied the request's ttl, so the agent signed a statement
// valid for as long as the attacker asked — a century, or whatever
// time.Duration(ttl)*time.Millisecond wrapped to for a ttl near 2^64 —
// though it keeps nothing past MaxTTL and refused the request for that
// very ttl; anyone replaying a captured message got a long-lived signed
// refusal. A refusal the agent does not record is valid for RefusalTTL
// at most (AGENT-12), every reply for MaxTTL at most.
func TestRefusalIsNeverSignedForTheRequestersOverlongTTL(t *testing.T) {
	e := newEnv(t)
	other := identity(t, 77)
	for _, tc := range []struct {
		name string
		to   string
		ttl  uint64 // milliseconds
		code amp.Code
	}{
		{"ttl_too_long", e.provider.DID, uint64((100 * 365 * 24 * time.Hour).Milliseconds()), amp.CodeInvalidTimestamp},
		{"ttl_near_2^64", e.provider.DID, math.MaxUint64, amp.CodeInvalidTimestamp},
		{"ttl_wrapping_negative", e.provider.DID, 1 << 63, amp.CodeInvalidTimestamp},
		{"not_a_recipient", other.DID, uint64((100 * 365 * 24 * time.Hour).Milliseconds()), amp.CodeUnauthorized},
		{"not_a_recipient_short_ttl", other.DID, uint64(time.Hour.Milliseconds()), amp.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
			must(t, err)
			m, _, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeCapInvoke, To: amp.To(tc.to),
				Body: invokeBody(t, reviewID, goodParams), TTL: time.Hour})
			must(t, err)
			m.TTL = tc.ttl // any ttl the wire allows, signed again
			must(t, amp.Sign(m, e.caller.SigningKey))
			out, err := e.agent.Handle(context.Background(), m.Encode())
			must(t, err)
			rep := e.receive(e.caller, out)
			if eb := errorOf(t, rep); eb.Code != tc.code {
				t.Fatalf("refusal %d %s, want %d", eb.Code, eb.Message, tc.code)
			}
			if most := uint64(min(RefusalTTL, e.agent.cfg.MaxTTL).Milliseconds()); rep.TTL > most || rep.TTL == 0 {
				t.Fatalf("the agent signed a refusal valid for %d ms (the requester asked %d ms): want at most RefusalTTL (%v), and not 0",
					rep.TTL, tc.ttl, RefusalTTL)
			}
		})
	}
}

// TestRecordedReplyKeepsTheRequestsTTL: a reply the ledger keeps is
// replayed, byte for byte, to duplicates for as long as the request is
// valid, so it keeps the request's ttl (within MaxTTL): shortened like a
// refusal, a duplicate sent an hour later would get a reply already
// expired.
func TestRecordedReplyKeepsTheRequestsTTL(t *testing.T) {
	e := newEnv(t)
	_, msg := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams), 6*time.Hour)
	out, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if rep := e.receive(e.caller, out); rep.TTL != uint64((6 * time.Hour).Milliseconds()) {
		t.Fatalf("the recorded reply has ttl %d ms, want the request's %d", rep.TTL, (6 * time.Hour).Milliseconds())
	}
}
