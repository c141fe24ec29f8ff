package a2acard_test

import (
	"crypto/ed25519"
	"fmt"

	"github.com/ampbundle/ampbundle/a2acard"
)

// An embedder signs the card of what it serves and a client checks it with
// the agent's public key.
func Example() {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)) // TEST-ONLY seed
	card, err := a2acard.New(a2acard.Options{Name: "translator", Version: "1.0.0", URL: "https://agent.example/amp"},
		[]a2acard.Served{{ID: "org.example.translate.text:2.1.0", Name: "org.example.translate.text", Version: "2.1.0",
			Summary: "adds formality", BundleID: "org.example.translate", InputSchema: "sha-256:00", OutputSchema: "sha-256:01"}})
	if err != nil {
		panic(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	signed, err := a2acard.Sign(card, key, a2acard.DIDKeyID(pub))
	if err != nil {
		panic(err)
	}
	v, err := a2acard.Verify(signed, pub, "")
	fmt.Println(v.Name, v.Skills, err)
	_, err = a2acard.Verify(signed[:len(signed)-1], pub, "")
	fmt.Println(err)
	// Output:
	// translator [org.example.translate.text:2.1.0] <nil>
	// card_malformed: the card is not one I-JSON value
}
