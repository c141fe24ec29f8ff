package amp_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// counter is a stand-in for crypto/rand.Reader that makes the example
// reproducible. Never use anything but a CSPRNG in production.
type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		c.n++
		p[i] = c.n
	}
	return len(p), nil
}

// Two did:key agents: alice sends bob a signed, encrypted MESSAGE; bob
// validates it.
func Example() {
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	newIdentity := func(seed byte) amp.Identity {
		key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
		x, _ := amp.AgreementKeyFromEd25519(key)
		return amp.Identity{DID: amp.DIDKey(key.Public().(ed25519.PublicKey)), SigningKey: key, Agreement: x}
	}
	alice, bob := newIdentity(1), newIdentity(2)

	sender, err := amp.NewSender(amp.SenderConfig{Identity: alice, Rand: &counter{}, Now: now})
	if err != nil {
		panic(err)
	}
	body, _ := amp.Marshal(map[string]string{"msg": "secret"})
	sealed, wire, err := sender.Seal(context.Background(), amp.Draft{
		Type: amp.TypeMessage, To: amp.To(bob.DID), Body: body, Encrypt: true,
	})
	if err != nil {
		panic(err)
	}

	receiver, err := amp.NewReceiver(amp.ReceiverConfig{Now: now, AgreementKeys: []*amp.AgreementKey{bob.Agreement}})
	if err != nil {
		panic(err)
	}
	m, err := receiver.Receive(context.Background(), wire)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Type, m.Encrypted(), m.From == alice.DID)
	text, _ := amp.JSONValue(m.Body)
	fmt.Println(string(text))

	// A flipped bit in the signature is refused with 1002.
	flipped := bytes.Clone(sealed.Sig)
	flipped[0] ^= 1
	_, err = receiver.Receive(context.Background(), bytes.Replace(wire, sealed.Sig, flipped, 1))
	fmt.Println(errors.Is(err, amp.CodeInvalidSignature), err)
	// Output:
	// 0x10 MESSAGE true true
	// {"msg":"secret"}
	// true invalid_signature (1002): signature verification failed
}

// Canonical checks CBOR strictly and returns its deterministic encoding,
// keeping tags and values exactly.
func ExampleLimits_Canonical() {
	// {"bb": 1, "a": tag1(uint32 1600000000)} with keys out of order and a
	// long integer head.
	in := []byte{0xa2, 0x62, 'b', 'b', 0x01, 0x61, 'a', 0xc1, 0x1b, 0, 0, 0, 0, 0x5f, 0x5e, 0x10, 0x00}
	out, err := amp.Limits{}.Canonical(in)
	fmt.Printf("%x %v\n", out, err)

	_, err = amp.Limits{}.Canonical([]byte{0xa2, 0x61, 'a', 0x01, 0x61, 'a', 0x02})
	fmt.Println(err)
	// Output:
	// a26161c11a5f5e100062626201 <nil>
	// duplicate_map_key (1001): duplicate key in cbor map
}

// DIDKey and ResolveDID need no store: the document of a did:key is
// derived from the key itself, including its X25519 key agreement key.
func ExampleDIDKeyDocument() {
	doc, _ := amp.DIDKeyDocument("did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th")
	now := time.Now()
	sig, _ := doc.SigningKey(doc.ID, now)
	agree, _ := doc.AgreementKeys(now)
	fmt.Println(sig.KeyType, sig.ID == doc.AssertionMethod[0])
	fmt.Println(agree[0].KeyType, agree[0].ID[len(doc.ID):])
	// Output:
	// Ed25519 true
	// X25519 #z6LShpNhGwSupbB7zjuivH156vhLJBDDzmQtA4BY9S94pe1K
}
