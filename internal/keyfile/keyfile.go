package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// maxKeyFile bounds what is read from a key file.
const maxKeyFile = 64 << 10

// Keys are the private keys found in a key file.
type Keys struct {
	Ed25519 ed25519.PrivateKey // nil when absent
	X25519  *ecdh.PrivateKey   // nil when absent
}

func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}

// WritePrivate writes the given keys (ed25519.PrivateKey and/or
// *ecdh.PrivateKey on X25519), in that order, as PKCS#8 PEM blocks to a new
// file of mode 0600. An existing file is never overwritten.
func WritePrivate(path string, keys ...any) error {
	data, err := privatePEM(keys...)
	if err != nil {
		return err
	}
	return writeNew(path, data, 0o600)
}

// privatePEM encodes keys as PKCS#8 PEM blocks.
func privatePEM(keys ...any) ([]byte, error) {
	var buf bytes.Buffer
	for _, k := range keys {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fail("key_error", "cannot encode private key").WithCause(err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
			return nil, fail("key_error", "cannot encode private key").WithCause(err)
		}
	}
	return buf.Bytes(), nil
}

// WritePublic writes an Ed25519 public key as PKIX PEM to a new file.
func WritePublic(path string, pub ed25519.PublicKey) error {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fail("key_error", "cannot encode public key").WithCause(err)
	}
	return writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}

// PublicPEM returns the PKIX PEM of an Ed25519 public key.
func PublicPEM(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail("file_exists", "refusing to overwrite an existing file").WithCause(err)
		}
		return fail("io_error", "cannot create key file").WithCause(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fail("io_error", "cannot write key file").WithCause(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fail("io_error", "cannot write key file").WithCause(err)
	}
	return f.Close()
}

// ReadPrivate reads a private key file after checking that only its owner
// can read it. Every PEM block must be a PKCS#8 Ed25519 or X25519 key; at
// most one of each.
func ReadPrivate(path string) (*Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fail("key_unreadable", "cannot open private key file").WithCause(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fail("key_unreadable", "cannot stat private key file").WithCause(err)
	}
	if !st.Mode().IsRegular() {
		return nil, fail("key_unreadable", "private key path is not a regular file")
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fail("insecure_key_file", "private key file is readable or writable by group or others (mode %04o); run chmod 600 on it", st.Mode().Perm())
	}
	if st.Size() > maxKeyFile {
		return nil, fail("invalid_key_file", "private key file is too large")
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, fail("key_unreadable", "cannot read private key file").WithCause(err)
	}
	return ParsePrivate(data)
}

// ParsePrivate parses PKCS#8 PEM private keys (see ReadPrivate).
func ParsePrivate(data []byte) (*Keys, error) {
	keys := &Keys{}
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "PRIVATE KEY" {
			return nil, fail("invalid_key_file", "key file holds a pem block that is not a pkcs#8 private key")
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fail("invalid_key_file", "key file holds an unreadable pkcs#8 key")
		}
		switch k := k.(type) {
		case ed25519.PrivateKey:
			if keys.Ed25519 != nil {
				return nil, fail("invalid_key_file", "key file holds two ed25519 keys")
			}
			keys.Ed25519 = k
		case *ecdh.PrivateKey:
			if k.Curve() != ecdh.X25519() || keys.X25519 != nil {
				return nil, fail("invalid_key_file", "key file holds an unsupported or repeated key agreement key")
			}
			keys.X25519 = k
		default:
			return nil, fail("invalid_key_file", "key file holds a key that is neither ed25519 nor x25519")
		}
	}
	if keys.Ed25519 == nil && keys.X25519 == nil {
		return nil, fail("invalid_key_file", "key file holds no pem private key")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fail("invalid_key_file", "key file has data after its pem blocks")
	}
	return keys, nil
}

// ReadSigningKey reads a private key file that must hold an Ed25519 key.
func ReadSigningKey(path string) (ed25519.PrivateKey, error) {
	k, err := ReadPrivate(path)
	if err != nil {
		return nil, err
	}
	if k.Ed25519 == nil {
		return nil, fail("invalid_key_file", "key file holds no ed25519 signing key")
	}
	return k.Ed25519, nil
}

// Identity returns the AMP identity of a key file: the Ed25519 key, and the
// X25519 key of the file or, when the file has none, the one derived from
// the Ed25519 key (the did:key key agreement key). The DID is did (when not
// empty) or the did:key of the Ed25519 key.
func (k *Keys) Identity(did string) (amp.Identity, error) {
	if k.Ed25519 == nil && k.X25519 != nil && did == "" {
		// A lone X25519 key: usable for decryption only.
		var priv [32]byte
		copy(priv[:], k.X25519.Bytes())
		x, err := amp.NewAgreementKey(priv)
		return amp.Identity{Agreement: x}, err
	}
	if k.Ed25519 == nil {
		return amp.Identity{}, fail("invalid_key_file", "key file holds no ed25519 signing key")
	}
	id := amp.Identity{DID: did, SigningKey: k.Ed25519}
	if did == "" {
		id.DID = amp.DIDKey(k.Ed25519.Public().(ed25519.PublicKey))
	}
	var err error
	if k.X25519 != nil {
		var priv [32]byte
		copy(priv[:], k.X25519.Bytes())
		id.Agreement, err = amp.NewAgreementKey(priv)
	} else {
		id.Agreement, err = amp.AgreementKeyFromEd25519(k.Ed25519)
	}
	if err != nil {
		return amp.Identity{}, err
	}
	return id, nil
}

// ParsePublic reads a public key given as a did:key ("did:key:z6Mk…") or as
// the path of a PKIX PEM file.
func ParsePublic(s string) (ed25519.PublicKey, error) {
	if strings.HasPrefix(s, "did:key:") {
		doc, err := amp.DIDKeyDocument(amp.BareDID(s))
		if err != nil {
			return nil, fail("invalid_public_key", "not an ed25519 did:key")
		}
		for _, m := range doc.Methods {
			if m.KeyType == amp.KeyEd25519 {
				return ed25519.PublicKey(m.PublicKey), nil
			}
		}
		return nil, fail("invalid_public_key", "did:key holds no ed25519 key")
	}
	f, err := os.Open(s)
	if err != nil {
		return nil, fail("key_unreadable", "cannot read public key file").WithCause(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fail("key_unreadable", "cannot read public key file").WithCause(err)
	}
	if len(data) > maxKeyFile {
		return nil, fail("invalid_public_key", "public key file is too large")
	}
	return ParsePublicPEM(data)
}

// ParsePublicPEM parses one PKIX PEM Ed25519 public key.
func ParsePublicPEM(data []byte) (ed25519.PublicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fail("invalid_public_key", "public key file is not one pem \"PUBLIC KEY\" block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fail("invalid_public_key", "public key file holds an unreadable key")
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fail("invalid_public_key", "public key is not ed25519")
	}
	return pub, nil
}
