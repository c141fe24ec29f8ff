package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"testing"
)

// TestPassphraseLeftInMemory: the passphrase a Passphrase source hands
// the parser (read from --passphrase-file, $AMP_KEY_PASSPHRASE or the
// terminal into a fresh slice no one else holds) stayed in the heap after
// the key was opened, and after a wrong passphrase was refused, until the
// collector happened to reuse the memory: a core dump, a swapped page or a
// later heap disclosure shows it. The parser, the last user of the slice,
// now clears it before it returns, whatever the outcome, and the keys it
// returns (copies) still work (docs/SPEC-DECISIONS.md, CLI-31).
func TestPassphraseLeftInMemory(t *testing.T) {
	x, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	file, err := EncryptedPEM([]byte("correct horse"), zeroReader{}, testKey(), x)
	if err != nil {
		t.Fatal(err)
	}
	for _, given := range []string{"correct horse", "wrong horse"} {
		var handed []byte
		keys, err := ParsePrivateWith(file, Options{Passphrase: func() ([]byte, error) {
			handed = []byte(given)
			return handed, nil
		}})
		if (given == "correct horse") != (err == nil) {
			t.Fatalf("%s: %v", given, err)
		}
		if err == nil && (!keys.Ed25519.Equal(testKey()) || !keys.X25519.Equal(x)) {
			t.Errorf("the keys opened are not the keys written (cleared with their plaintext?)")
		}
		if !bytes.Equal(handed, make([]byte, len(handed))) {
			t.Errorf("the passphrase %q is still in memory after the parser returned", handed)
		}
	}
}
