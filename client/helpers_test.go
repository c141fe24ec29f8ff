package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// identity is a did:key identity from a fixed seed (test keys only).
func identity(t testing.TB, seed byte) amp.Identity {
	t.Helper()
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
	x, err := amp.AgreementKeyFromEd25519(k)
	if err != nil {
		t.Fatal(err)
	}
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// parties are a caller, a provider and a third party sharing one clock.
type parties struct {
	clock                      *clock
	caller, provider, stranger amp.Identity
}

func newParties(t testing.TB) *parties {
	return &parties{clock: &clock{t: t0}, caller: identity(t, 1), provider: identity(t, 2), stranger: identity(t, 3)}
}

// seal seals a message of typ from id to the provider.
func (p *parties) seal(t testing.TB, from amp.Identity, typ amp.Type, body []byte) *amp.Message {
	t.Helper()
	s, err := amp.NewSender(amp.SenderConfig{Identity: from, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(p.provider.DID), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pongProvider is a minimal provider: it verifies each message and
// answers a PING with a signed PONG (reply_to set), anything else with a
// signed ERROR 1005. It stands in for an agent where only the client is
// under test.
func (p *parties) pongProvider(t testing.TB) Transport {
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
		d := amp.Draft{Type: amp.TypePong, To: amp.To(m.From), ReplyTo: m.ID[:]}
		if m.Type != amp.TypePing {
			body, _ := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeUnknownType, "not served")))
			d.Type, d.Body = amp.TypeError, body
		}
		_, out, err := send.Seal(ctx, d)
		return out, err
	})
}
