package keyfile_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
)

// A publisher key, encrypted under a passphrase for storage, read back
// with the passphrase given by a callback (a terminal prompt, a file, an
// environment variable: whatever the program chooses).
func Example_encrypted() {
	dir, _ := os.MkdirTemp("", "keyfile-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "publisher.key.pem")

	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{42}, ed25519.SeedSize)) // use rand in real code
	if err := keyfile.WritePrivateEncrypted(path, []byte("correct horse"), rand.Reader, key); err != nil {
		fmt.Println(err)
		return
	}

	// Without a passphrase, the error says what is missing.
	_, err := keyfile.ReadPrivate(path)
	fmt.Println(err)

	keys, err := keyfile.ReadPrivateWith(path, keyfile.Options{
		Passphrase: func() ([]byte, error) { return []byte("correct horse"), nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(amp.DIDKey(keys.Ed25519.Public().(ed25519.PublicKey)))
	// Output:
	// key_encrypted: private key is encrypted and no passphrase was given
	// did:key:z6MkgAnvkP45uNxwCKeNdt6wrYkEjpYX4f7Nrd8MQqFL8Fbn
}

// A public key given as a did:key or as a PEM or DER file, as the tools'
// --trust and trust add take it.
func ExampleParsePublic() {
	pub, err := keyfile.ParsePublic("did:key:z6MkgAnvkP45uNxwCKeNdt6wrYkEjpYX4f7Nrd8MQqFL8Fbn")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d-byte ed25519 key\n", len(pub))
	fmt.Print(string(keyfile.PublicPEM(pub)))
	// Output:
	// 32-byte ed25519 key
	// -----BEGIN PUBLIC KEY-----
	// MCowBQYDK2VwAyEAGX9rI+FshTLGq8g4+s1ep4m+DHaykgM0A5v6iz02jWE=
	// -----END PUBLIC KEY-----
}
