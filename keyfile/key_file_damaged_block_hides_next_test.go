package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
)

// damagedPEM returns p, one PEM block, with its body damaged as how says:
// a character that is not base64, no END line, or the END line of
// another label. pem.Decode cannot read any of them.
func damagedPEM(t *testing.T, p []byte, how string) []byte {
	t.Helper()
	lines := bytes.SplitAfter(p, []byte("\n"))
	if len(lines) < 4 {
		t.Fatalf("a pem block of %d lines", len(lines))
	}
	out := make([][]byte, len(lines))
	copy(out, lines)
	switch how {
	case "not base64":
		body := append([]byte{}, out[1]...)
		body[3] = '!'
		out[1] = body
	case "no END line":
		out = out[:len(out)-2] // the END line, and the empty tail
	case "END of another label":
		out[len(out)-2] = []byte("-----END CERTIFICATE-----\n")
	default:
		t.Fatalf("no damage %q", how)
	}
	return bytes.Join(out, nil)
}

// TestKeyFileWhoseDamagedBlockHidesTheNextIsRefused: pem.Decode passes
// over a block it cannot read (a body that is not base64, no END line,
// another label's END line) as if it were explanatory text and returns
// the next good block. The parsers checked only that nothing followed
// the last block read, so a damaged block was refused at the end of a
// file but silently skipped anywhere before a good one: a private key
// file whose damaged first block was its Ed25519 key read as the X25519
// key after it alone (a decryption-only identity, without its signing
// key), and a public key file of a damaged PUBLIC KEY block (the key its
// reader sees, which OpenSSL refuses to read) followed by another
// trusted the second key. Expected: invalid_key_file and
// invalid_public_key, the passphrase never asked; files with text before
// and between their blocks still read (docs/SPEC-DECISIONS.md, CLI-83).
func TestKeyFileWhoseDamagedBlockHidesTheNextIsRefused(t *testing.T) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	x, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{4}, 32))
	if err != nil {
		t.Fatal(err)
	}
	edPEM, err := privatePEM(ed)
	if err != nil {
		t.Fatal(err)
	}
	xPEM, err := privatePEM(x)
	if err != nil {
		t.Fatal(err)
	}
	edEnc, err := encryptedPEM([]byte("pw"), bytes.NewReader(make([]byte, 64)), scryptScheme(4, 8, 1), ed)
	if err != nil {
		t.Fatal(err)
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32))
	seen := PublicPEM(ed.Public().(ed25519.PublicKey))
	trusted := PublicPEM(other.Public().(ed25519.PublicKey))
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	dir := t.TempDir()
	for _, how := range []string{"not base64", "no END line", "END of another label"} {
		t.Run(how, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				file []byte
			}{
				{"damaged ed25519 block, then the x25519 one", cat(damagedPEM(t, edPEM, how), xPEM)},
				{"damaged encrypted ed25519 block, then the x25519 one", cat(damagedPEM(t, edEnc, how), xPEM)},
				{"text, a damaged block, text, a good block", cat([]byte("key of example\n"), damagedPEM(t, edPEM, how), []byte("x25519:\n"), xPEM)},
			} {
				asked := 0
				keys, err := ParsePrivateWith(tc.file, Options{Passphrase: func() ([]byte, error) {
					asked++
					return []byte("pw"), nil
				}})
				if errName(err) != ErrInvalidKeyFile || keys != nil || asked != 0 {
					t.Errorf("%s: keys %v, err %v, passphrase asked %d times; want %s, never asked", tc.name, keys != nil, err, asked, ErrInvalidKeyFile)
				}
				p := filepath.Join(dir, "key")
				if err := os.WriteFile(p, tc.file, 0o600); err != nil {
					t.Fatal(err)
				}
				if _, err := ReadPrivate(p); errName(err) != ErrInvalidKeyFile {
					t.Errorf("%s: ReadPrivate: %v, want %s", tc.name, err, ErrInvalidKeyFile)
				}
				os.Remove(p)
			}
			pub := cat(damagedPEM(t, seen, how), trusted)
			if got, err := ParsePublicKey(pub); errName(err) != ErrInvalidPublicKey {
				t.Errorf("damaged PUBLIC KEY block, then another: got key %x, err %v; want %s", got, err, ErrInvalidPublicKey)
			}
			p := filepath.Join(dir, "pub.pem")
			if err := os.WriteFile(p, pub, 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := ParsePublic(p); errName(err) != ErrInvalidPublicKey {
				t.Errorf("ParsePublic of a damaged PUBLIC KEY block, then another: got key %x, err %v; want %s", got, err, ErrInvalidPublicKey)
			}
			os.Remove(p)
		})
	}

	// Explanatory text before and between good blocks still reads.
	keys, err := ParsePrivate(cat([]byte("Subject: an agent\n"), edPEM, []byte("and its x25519 key\n"), xPEM))
	if err != nil || !keys.Ed25519.Equal(ed) || keys.X25519 == nil || !keys.X25519.Equal(x) {
		t.Fatalf("a file with text around its blocks: %v", err)
	}
	if got, err := ParsePublicKey(cat([]byte("the publisher's key\n"), trusted)); err != nil || !got.Equal(other.Public()) {
		t.Fatalf("a public key file with text before its block: %x, %v", got, err)
	}
	// Text naming a boundary where pem.Decode starts none (mid-line, or
	// with no space after it) is explanatory text too (a read of CLI-83).
	note := []byte("copy from -----BEGIN PRIVATE KEY----- to its END line\n-----BEGINNING notes\n")
	if keys, err := ParsePrivate(cat(note, edPEM, xPEM)); err != nil || !keys.Ed25519.Equal(ed) {
		t.Fatalf("a file whose text names a boundary pem.Decode does not start: %v", err)
	}
}
