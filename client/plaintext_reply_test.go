package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestPlaintextReplyToAnEncryptedRequestIsRefused: the caller asks for
// authcrypt (Config.Encrypt; 'ampagent invoke --encrypt', whose
// docs/CLI.md §3.6 promises "the reply too"); the agent answers with a
// signed CAP_RESULT in clear, which crossed the wire readable by anyone on
// the path of an http:// URL. Its signature proves the sender, not that
// the result stayed confidential: a reply to an encrypted request that is
// not encrypted is refused (4001 plaintext_reply, before its body is
// used), as TLS refuses a downgrade (AMP-13).
func TestPlaintextReplyToAnEncryptedRequestIsRefused(t *testing.T) {
	p := newParties(t)
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: p.clock.Now, AgreementKeys: []*amp.AgreementKey{p.provider.Agreement}})
	if err != nil {
		t.Fatal(err)
	}
	send, err := amp.NewSender(amp.SenderConfig{Identity: p.provider, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	tr := TransportFunc(func(ctx context.Context, raw []byte) ([]byte, error) {
		m, err := recv.Receive(ctx, raw)
		if err != nil {
			return nil, err
		}
		if !m.Encrypted() {
			t.Error("the request was not encrypted")
		}
		body, err := capability.Result{Status: capability.StatusSuccess, Result: []byte{0x01}}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(ctx, amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Encrypt: true})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := capability.ParseVersion("1.0.0")
	res, ex, err := c.Invoke(context.Background(), capability.Invoke{Capability: "org.example.x", Version: v, Params: []byte{0xa0}})
	if err == nil {
		t.Errorf("a plaintext reply to an encrypted request was taken: %+v (encrypted: %v)", res, ex.Reply.Encrypted())
	}
}
