package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// lookupRecorder is a DIDResolver that records every DID it is asked for
// and knows none: it stands for an embedder's resolver that fetches a
// did:web document over the network.
type lookupRecorder struct {
	mu    sync.Mutex
	asked []string
}

func (r *lookupRecorder) ResolveDID(_ context.Context, did string) (*amp.DIDDocument, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, did)
	return nil, errors.New("not found")
}

// TestReplyNamingAnotherSenderIsLookedUp: the attack: a hostile
// provider (or anyone on a plain-HTTP path: the signature is never
// reached) answers with a reply whose from names a DID of its choice,
// did:web:victim.internal. The client handed that DID to its Config.DIDs
// resolver (amp.Receiver resolves the sender's keys before the client
// checks that the sender is the provider), so a provider made the client
// look up, and a network resolver dial, any host it named, one per reply.
// Now only the provider's own DID is ever resolved; a reply from another
// DID is refused wrong_sender before its document is looked up
// (docs/SPEC-DECISIONS.md TRANSPORT-17).
func TestReplyNamingAnotherSenderIsLookedUp(t *testing.T) {
	dids := &lookupRecorder{}
	err := pingHostileSender(t, dids)
	if err == nil {
		t.Fatal("a PONG from another DID was accepted")
	}
	if len(dids.asked) != 0 {
		t.Errorf("the client looked up the DIDs the provider named: %q", dids.asked)
	}
	if amp.NameOf(err) != ErrWrongSender {
		t.Errorf("the reply from another DID is %v, want %s", err, ErrWrongSender)
	}
}

// TestReplyNamingAnotherSenderWithoutResolverIsWrongSender: the same reply
// to a client made without Config.DIDs (its provider a did:key) was 3001
// unknown_did, "no did document is known for the sender", which says the
// provider is unknown; it is wrong_sender as with a resolver
// (docs/SPEC-DECISIONS.md TRANSPORT-17 rejects unknown_did for it).
func TestReplyNamingAnotherSenderWithoutResolverIsWrongSender(t *testing.T) {
	err := pingHostileSender(t, nil)
	if amp.NameOf(err) != ErrWrongSender {
		t.Errorf("the reply from another DID is %v, want %s", err, ErrWrongSender)
	}
}

// pingHostileSender pings, through a client with dids as its Config.DIDs,
// a provider that answers as did:web:victim.internal, and returns the
// error of the ping.
func pingHostileSender(t *testing.T, dids amp.DIDResolver) error {
	t.Helper()
	p := newParties(t)
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	named := amp.Identity{DID: "did:web:victim.internal", SigningKey: k}
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	send, err := amp.NewSender(amp.SenderConfig{Identity: named, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	hostile := TransportFunc(func(ctx context.Context, raw []byte) ([]byte, error) {
		m, err := recv.Receive(ctx, raw)
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(ctx, amp.Draft{Type: amp.TypePong, To: amp.To(m.From), ReplyTo: m.ID[:]})
		return out, err
	})
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: hostile, DIDs: dids,
		Now: p.clock.Now, Rand: rand.Reader, Retry: Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return c.Ping(context.Background())
}
