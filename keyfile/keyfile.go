package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// maxKeyFile bounds what is read from a key file.
const maxKeyFile = 64 << 10

// maxKeysPerFile: a key file holds an Ed25519 key, an X25519 key, or both.
const maxKeysPerFile = 2

// Error names of this package (the Name of its *amp.Error values).
const (
	// ErrKeyUnreadable: the file cannot be opened, stat'd or read.
	ErrKeyUnreadable amp.ErrName = "key_unreadable"
	// ErrInsecureKeyFile: a private key file that group or others may read
	// or write, or that another user owns (CheckOwnerOnly).
	ErrInsecureKeyFile amp.ErrName = "insecure_key_file"
	// ErrInvalidKeyFile: the file is not a key file this package reads.
	ErrInvalidKeyFile amp.ErrName = "invalid_key_file"
	// ErrKeyEncrypted: the private key is encrypted and no passphrase was
	// given.
	ErrKeyEncrypted amp.ErrName = "key_encrypted"
	// ErrWrongPassphrase: decryption failed: a wrong passphrase or a
	// damaged file (the two cannot be told apart).
	ErrWrongPassphrase amp.ErrName = "wrong_passphrase"
	// ErrUnsupportedEncryption: the key is encrypted with a scheme or
	// parameters this package does not implement.
	ErrUnsupportedEncryption amp.ErrName = "unsupported_key_encryption"
	// ErrInvalidPublicKey: not an Ed25519 public key as PEM, DER or did:key.
	ErrInvalidPublicKey amp.ErrName = "invalid_public_key"
	// ErrKeyError: a key cannot be encoded or generated.
	ErrKeyError amp.ErrName = "key_error"
	// ErrFileExists: the writer refuses to overwrite a file.
	ErrFileExists amp.ErrName = "file_exists"
	// ErrIOError: a key file cannot be written.
	ErrIOError amp.ErrName = "io_error"
)

// Passphrase returns the passphrase of an encrypted private key. It is
// called only when a key is encrypted, at most once per parse. The slice
// it returns is the parser's: it is cleared before the parse returns,
// whatever the outcome (docs/SPEC-DECISIONS.md, CLI-31), so it must be
// fresh, never one the caller keeps.
type Passphrase func() ([]byte, error)

// Options tell the readers how to open encrypted keys. The zero value
// reads unencrypted keys only: an encrypted one is ErrKeyEncrypted.
type Options struct {
	// Passphrase, when set, supplies the passphrase of an encrypted key.
	Passphrase Passphrase
}

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
	return writePrivate(systemSteps(), path, keys...)
}

// writePrivate is WritePrivate through w's steps (writeNew).
func writePrivate(w writeSteps, path string, keys ...any) error {
	data, err := privatePEM(keys...)
	if err != nil {
		return err
	}
	return writeNew(w, path, data, 0o600)
}

// WritePrivateEncrypted is WritePrivate with each key encrypted under
// passphrase: "ENCRYPTED PRIVATE KEY" PEM blocks, PKCS#8 with PBES2,
// scrypt (N = 2^14, r = 8, p = 1) and AES-256-CBC, which OpenSSL reads too
// (`openssl pkey -in FILE`). rand supplies the salts and IVs. An empty
// passphrase is refused.
func WritePrivateEncrypted(path string, passphrase []byte, rand io.Reader, keys ...any) error {
	return writePrivateEncrypted(systemSteps(), path, passphrase, rand, keys...)
}

// writePrivateEncrypted is WritePrivateEncrypted through w's steps
// (writeNew).
func writePrivateEncrypted(w writeSteps, path string, passphrase []byte, rand io.Reader, keys ...any) error {
	data, err := EncryptedPEM(passphrase, rand, keys...)
	if err != nil {
		return err
	}
	return writeNew(w, path, data, 0o600)
}

// EncryptedPEM returns the bytes WritePrivateEncrypted writes.
func EncryptedPEM(passphrase []byte, rand io.Reader, keys ...any) ([]byte, error) {
	return encryptedPEM(passphrase, rand, defaultScheme(), keys...)
}

func encryptedPEM(passphrase []byte, rand io.Reader, s encryptScheme, keys ...any) ([]byte, error) {
	if len(passphrase) == 0 {
		return nil, fail(ErrKeyError, "refusing to encrypt a key with an empty passphrase")
	}
	var buf bytes.Buffer
	for _, k := range keys {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fail(ErrKeyError, "cannot encode private key").WithCause(err)
		}
		enc, err := encryptPKCS8(der, passphrase, rand, s)
		if err != nil {
			return nil, err
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}); err != nil {
			return nil, fail(ErrKeyError, "cannot encode private key").WithCause(err)
		}
	}
	return buf.Bytes(), nil
}

// privatePEM encodes keys as PKCS#8 PEM blocks.
func privatePEM(keys ...any) ([]byte, error) {
	var buf bytes.Buffer
	for _, k := range keys {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fail(ErrKeyError, "cannot encode private key").WithCause(err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
			return nil, fail(ErrKeyError, "cannot encode private key").WithCause(err)
		}
	}
	return buf.Bytes(), nil
}

// WritePublic writes an Ed25519 public key as PKIX PEM to a new file.
func WritePublic(path string, pub ed25519.PublicKey) error {
	return writePublic(systemSteps(), path, pub)
}

// writePublic is WritePublic through w's steps (writeNew).
func writePublic(w writeSteps, path string, pub ed25519.PublicKey) error {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fail(ErrKeyError, "cannot encode public key").WithCause(err)
	}
	return writeNew(w, path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}

// PublicPEM returns the PKIX PEM of an Ed25519 public key.
func PublicPEM(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ReadPrivate reads a private key file (see ReadPrivateWith) that is not
// encrypted.
func ReadPrivate(path string) (*Keys, error) {
	return ReadPrivateWith(path, Options{})
}

// ReadPrivateWith reads a private key file after checking that it is a
// regular file only its owner can read or write (CheckOwnerOnly, judged
// on the file opened and read), and parses it with ParsePrivateWith. A
// file that holds a public key is refused as one before its access is
// judged: a public key file is readable by all by design, and "run chmod
// 600" would send its owner the wrong way.
func ReadPrivateWith(path string, o Options) (*Keys, error) {
	const what = "private key file"
	f, st, err := OpenRegular(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadOpen(f, st, what)
	if err != nil {
		return nil, err
	}
	defer clear(data) // the keys returned are copies (CLI-31)
	if publicKeyOnly(data) {
		return nil, errPublicGiven()
	}
	if err := CheckOwnerOnly(f, st, what); err != nil {
		return nil, err
	}
	return ParsePrivateWith(data, o)
}

// CheckOwnerOnly refuses (ErrInsecureKeyFile) the open file f, with st
// its FileInfo, unless only its owner may read or write it; what names
// it at the start of the message ("private key file"). Where mode bits
// are access rights (Unix), the owner must be this process's effective
// user or root, and a mode giving group or others anything is refused
// ("run chmod 600"; docs/SPEC-DECISIONS.md, CLI-53). On Windows, where os.Stat reports 0666 for every
// writable file, f's security descriptor is judged, read from f's handle
// (never reopened by name): the owner must be this process's user,
// SYSTEM or Administrators, the access list must exist, and no allow
// entry may give anyone else more than reading the file's attributes or
// access list, as Win32-OpenSSH judges a private key; an entry it cannot
// read refuses the file (docs/SPEC-DECISIONS.md, CLI-51). A descriptor
// that cannot be read is ErrKeyUnreadable.
func CheckOwnerOnly(f *os.File, st fs.FileInfo, what string) error {
	return judgeOpenFile(f, st, what)
}

// OpenRegular opens path for reading only when it leads to a regular
// file (the operator's links followed), and returns it with its FileInfo.
// What the path leads to is examined before it is opened
// (regfile.Open): a FIFO (or a device) put where a key or passphrase file
// was is refused at once with ErrKeyUnreadable, never opened, so nothing
// waits for a writer and no driver runs (docs/SPEC-DECISIONS.md, CLI-29).
// what names the file in errors.
func OpenRegular(path, what string) (*os.File, fs.FileInfo, error) {
	f, st, err := regfile.Open(path, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, nil, fail(ErrKeyUnreadable, "the %s is not a regular file", what)
	}
	if err != nil {
		return nil, nil, fail(ErrKeyUnreadable, "cannot open the %s", what).WithCause(err)
	}
	return f, st, nil
}

// ReadKeyFile reads a key file, private or public, that is a regular file
// of at most 64 KiB (OpenRegular): what `key show` reads.
func ReadKeyFile(path string) ([]byte, error) {
	return readKeyFile(path, "key file")
}

// readKeyFile reads the regular file path (OpenRegular), at most
// maxKeyFile bytes (ErrInvalidKeyFile beyond).
func readKeyFile(path, what string) ([]byte, error) {
	f, st, err := OpenRegular(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, st, what)
}

// ReadOpen reads the open regular file f (OpenRegular's), whose FileInfo
// is st, the file what names ("key file"): at most 64 KiB, the bound of
// every key file (ErrInvalidKeyFile beyond; ErrKeyUnreadable when the
// read fails). A caller that must judge and parse one read of a key file
// (`key show`: docs/SPEC-DECISIONS.md CLI-96) opens it once and reads it
// with this.
func ReadOpen(f *os.File, st fs.FileInfo, what string) ([]byte, error) {
	if st.Size() > maxKeyFile {
		return nil, fail(ErrInvalidKeyFile, "the %s is larger than %d bytes", what, maxKeyFile)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, fail(ErrKeyUnreadable, "cannot read the %s", what).WithCause(err)
	}
	return data, nil
}

// ParsePrivate parses a private key file that is not encrypted (see
// ParsePrivateWith).
func ParsePrivate(data []byte) (*Keys, error) {
	return ParsePrivateWith(data, Options{})
}

// IsEncrypted reports whether data (a key file's bytes) holds an encrypted
// private key, so that a caller can ask for a passphrase only then.
func IsEncrypted(data []byte) bool {
	if isDER(data) {
		return derIsEncrypted(data)
	}
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return false
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" {
			return true
		}
	}
}

// ParsePrivateWith parses private keys: one or more PEM blocks, each a
// PKCS#8 "PRIVATE KEY" or a PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2 with
// PBKDF2 or scrypt, AES-CBC or AES-GCM), or one PKCS#8 key in DER,
// encrypted or not. Every key must be Ed25519 or X25519, at most one of
// each. An encrypted key needs o.Passphrase (ErrKeyEncrypted otherwise),
// which is asked once for the whole file. Every encrypted key's scheme
// and parameters are checked before the passphrase is asked, and the
// file's keys together may ask no more key derivation than one key may
// (ErrUnsupportedEncryption; docs/SPEC-DECISIONS.md, CLI-65, CLI-66).
func ParsePrivateWith(data []byte, o Options) (*Keys, error) {
	return parsePrivate(data, o, defaultLimits())
}

func parsePrivate(data []byte, o Options, lim kdfLimits) (*Keys, error) {
	var pass []byte
	defer func() { clear(pass) }() // CLI-31: no passphrase left in the heap
	asked := false
	decrypt := func(sealed *sealedKey) ([]byte, error) {
		if !asked {
			if o.Passphrase == nil {
				return nil, fail(ErrKeyEncrypted, "private key is encrypted and no passphrase was given")
			}
			p, err := o.Passphrase()
			if err != nil {
				return nil, err
			}
			pass, asked = p, true
		}
		plain, err := sealed.decrypt(pass, lim)
		if err != nil {
			return nil, err
		}
		// A wrong passphrase passes the CBC padding check about once in
		// 256 tries; what it decrypts to is then not a key.
		if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
			return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
		}
		return plain, nil
	}
	if publicKeyOnly(data) {
		return nil, errPublicGiven()
	}
	keys := &Keys{}
	if isDER(data) {
		der := data
		if derIsEncrypted(data) {
			if !sealedShape(data) {
				return nil, fail(ErrInvalidKeyFile, "key file holds an unreadable encrypted pkcs#8 key")
			}
			sealed, err := openSealedFile([][]byte{data}, lim)
			if err != nil {
				return nil, err
			}
			if der, err = decrypt(sealed[0]); err != nil {
				return nil, err
			}
			defer clear(der) // its plaintext; the key is a copy
		}
		if err := keys.add(der); err != nil {
			return nil, err
		}
		return keys, nil
	}
	plain, encrypted, err := pemShape(data)
	if err != nil {
		return nil, err
	}
	// Plain keys are read before encrypted ones, for CLI-29's reason.
	for _, der := range plain {
		if err := keys.add(der); err != nil {
			return nil, err
		}
	}
	// Every encrypted key's scheme and parameters, and what the file's
	// keys ask together, before the passphrase is asked and any key
	// derived (docs/SPEC-DECISIONS.md, CLI-65, CLI-66).
	sealed, err := openSealedFile(encrypted, lim)
	if err != nil {
		return nil, err
	}
	for _, enc := range sealed {
		der, err := decrypt(enc)
		if err != nil {
			return nil, err
		}
		err = keys.add(der) // the key is a copy: its plaintext is cleared
		clear(der)
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// pemShape checks a PEM key file's shape and returns the DER of its
// plain and of its encrypted keys: every block a private key, at most
// two, none damaged (decodePEM), and nothing after them. A file that
// cannot be a key file is refused before its passphrase is asked and any
// key derived (docs/SPEC-DECISIONS.md, CLI-29, CLI-83).
func pemShape(data []byte) (plain, encrypted [][]byte, err error) {
	rest := data
	for {
		block, next, damaged := decodePEM(rest)
		if damaged {
			return nil, nil, fail(ErrInvalidKeyFile, "key file holds a pem block that cannot be read (not base64, or without its END line) before another block")
		}
		if block == nil {
			break
		}
		rest = next
		switch block.Type {
		case "PRIVATE KEY":
			if block.Headers["Proc-Type"] != "" {
				return nil, nil, fail(ErrUnsupportedEncryption, "key file uses legacy pem encryption (Proc-Type), which is not supported; convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")
			}
			plain = append(plain, block.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			if !sealedShape(block.Bytes) {
				return nil, nil, fail(ErrInvalidKeyFile, "key file holds an unreadable encrypted pkcs#8 key")
			}
			encrypted = append(encrypted, block.Bytes)
		case "OPENSSH PRIVATE KEY":
			return nil, nil, fail(ErrInvalidKeyFile, "key file is an openssh private key; this tool reads pkcs#8 keys (make one with `keygen`)")
		case "PUBLIC KEY":
			return nil, nil, errPublicGiven()
		default:
			return nil, nil, fail(ErrInvalidKeyFile, "key file holds a pem block that is not a pkcs#8 private key")
		}
		if len(plain)+len(encrypted) > maxKeysPerFile {
			return nil, nil, fail(ErrInvalidKeyFile, "key file holds more than %d keys (one ed25519 and one x25519 at most)", maxKeysPerFile)
		}
	}
	if len(plain)+len(encrypted) == 0 {
		return nil, nil, fail(ErrInvalidKeyFile, "key file holds neither a pem nor a der private key")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, nil, fail(ErrInvalidKeyFile, "key file has data after its pem blocks")
	}
	return plain, encrypted, nil
}

// pemBegin starts a PEM encapsulation boundary where pem.Decode looks
// for one: at the start of a line, then a space (RFC 7468 §2).
const pemBegin = "-----BEGIN "

// decodePEM is pem.Decode for a key file, which also reports a damaged
// block: pem.Decode passes over a block it cannot read (a body that is
// not base64, no END line or another label's) as if it were the
// explanatory text RFC 7468 §2 allows before a block, and returns the
// next good one. Text before the block it returns may hold no line
// that begins "-----BEGIN " as pem.Decode reads one (damaged is true
// then): a key file whose first block is
// damaged is refused, not read as the block after it
// (docs/SPEC-DECISIONS.md, CLI-83). With no block, rest is data and
// damaged is false.
func decodePEM(data []byte) (block *pem.Block, rest []byte, damaged bool) {
	block, rest = pem.Decode(data)
	if block == nil {
		return nil, data, false
	}
	read := data[:len(data)-len(rest)]
	n := bytes.Count(read, []byte("\n"+pemBegin)) // read holds key text: never copied to a string
	if bytes.HasPrefix(read, []byte(pemBegin)) {
		n++
	}
	return block, rest, n != 1
}

// sealedShape reports whether der is one EncryptedPrivateKeyInfo with
// nothing after it, which openSealed checks again: it lets a damaged
// file be refused before its passphrase is asked.
func sealedShape(der []byte) bool {
	var info encryptedPrivateKeyInfo
	return unmarshalExact(der, &info)
}

// privateKeyInfo is the start of a PKCS#8 PrivateKeyInfo (RFC 5958 §2):
// the fields after privateKey (attributes, and a OneAsymmetricKey's
// publicKey) are not read, as crypto/x509 does not read them.
type privateKeyInfo struct {
	Version    int
	Algo       pkix.AlgorithmIdentifier
	PrivateKey []byte
}

// exactPKCS8 reports whether der is one PrivateKeyInfo with nothing
// after it, whose privateKey holds one OCTET STRING (RFC 8410 §7,
// CurvePrivateKey) with nothing after it either: crypto/x509 reads a key
// from the front of both and passes over what follows
// (docs/SPEC-DECISIONS.md, CLI-84).
func exactPKCS8(der []byte) bool {
	var info privateKeyInfo
	var curveKey []byte
	return unmarshalExact(der, &info) && unmarshalExact(info.PrivateKey, &curveKey)
}

// add parses one PKCS#8 PrivateKeyInfo into k: the whole of der, nothing
// after the key (exactPKCS8).
func (k *Keys) add(der []byte) error {
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return fail(ErrInvalidKeyFile, "key file holds an unreadable pkcs#8 key")
	}
	switch key.(type) {
	case ed25519.PrivateKey, *ecdh.PrivateKey:
		if !exactPKCS8(der) {
			return fail(ErrInvalidKeyFile, "key file holds bytes after a pkcs#8 key")
		}
	}
	switch key := key.(type) {
	case ed25519.PrivateKey:
		if k.Ed25519 != nil {
			return fail(ErrInvalidKeyFile, "key file holds two ed25519 keys")
		}
		k.Ed25519 = key
	case *ecdh.PrivateKey:
		if key.Curve() != ecdh.X25519() || k.X25519 != nil {
			return fail(ErrInvalidKeyFile, "key file holds an unsupported or repeated key agreement key")
		}
		k.X25519 = key
	default:
		return fail(ErrInvalidKeyFile, "key file holds a key that is neither ed25519 nor x25519")
	}
	return nil
}

// publicKeyOnly reports whether data is a public key file: PKIX DER, or
// PEM whose first block is a "PUBLIC KEY".
func publicKeyOnly(data []byte) bool {
	if isDER(data) {
		_, err := decodePKIX(data)
		return err == nil
	}
	block, _ := pem.Decode(data)
	return block != nil && block.Type == "PUBLIC KEY"
}

// errPublicGiven is the error for a public key file given where a private
// key file is needed.
func errPublicGiven() error {
	return fail(ErrInvalidKeyFile, "key file holds a public key where a private key is needed (give the private key file keygen wrote with -o, not the public one)")
}

// privateKeyOnly reports whether data is a private key file: PEM whose
// first block is a private key of any of the kinds ParsePrivate knows (or
// an OpenSSH one), or PKCS#8 DER, plain or encrypted.
func privateKeyOnly(data []byte) bool {
	if isDER(data) {
		if derIsEncrypted(data) {
			return sealedShape(data)
		}
		_, err := x509.ParsePKCS8PrivateKey(data)
		return err == nil
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return false
	}
	switch block.Type {
	case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
		return true
	}
	return false
}

// errPrivateGiven is the error for a private key file given where a public
// key is needed: it names the mistake and never shows the key.
func errPrivateGiven() error {
	return fail(ErrInvalidPublicKey, "key file holds a private key where a public key is needed (give the public key file keygen wrote with --pub, or the did:key)")
}

// isDER reports whether data looks like one DER SEQUENCE (a PEM file
// starts with text).
func isDER(data []byte) bool {
	return len(data) > 2 && data[0] == 0x30
}

// derIsEncrypted tells an EncryptedPrivateKeyInfo (a SEQUENCE whose first
// element is a SEQUENCE, the algorithm) from a PrivateKeyInfo (whose first
// element is the INTEGER version).
func derIsEncrypted(data []byte) bool {
	var outer asn1.RawValue
	if _, err := asn1.Unmarshal(data, &outer); err != nil || outer.Tag != asn1.TagSequence || len(outer.Bytes) == 0 {
		return false
	}
	return outer.Bytes[0] == 0x30
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
		return amp.Identity{}, fail(ErrInvalidKeyFile, "key file holds no ed25519 signing key")
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
// the path of a PKIX PEM or DER file. A key of small order or not in
// canonical form is ErrInvalidPublicKey (amp.CheckEd25519PublicKey).
func ParsePublic(s string) (ed25519.PublicKey, error) {
	if strings.HasPrefix(s, "did:key:") {
		doc, err := amp.DIDKeyDocument(amp.BareDID(s))
		if err != nil {
			return nil, fail(ErrInvalidPublicKey, "not an ed25519 did:key")
		}
		for _, m := range doc.Methods {
			if m.KeyType == amp.KeyEd25519 {
				return ed25519.PublicKey(m.PublicKey), nil
			}
		}
		return nil, fail(ErrInvalidPublicKey, "did:key holds no ed25519 key")
	}
	data, err := readKeyFile(s, "public key file")
	if err != nil {
		if amp.NameOf(err) == ErrInvalidKeyFile {
			return nil, fail(ErrInvalidPublicKey, "public key file is larger than %d bytes", maxKeyFile)
		}
		return nil, err
	}
	return ParsePublicKey(data)
}

// ParsePublicKey parses an Ed25519 public key given as one PKIX PEM
// "PUBLIC KEY" block or as PKIX DER.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	if isDER(data) {
		if privateKeyOnly(data) {
			return nil, errPrivateGiven()
		}
		return parsePKIX(data)
	}
	return ParsePublicPEM(data)
}

// ParsePublicPEM parses one PKIX PEM Ed25519 public key. A private key
// file is refused as such (errPrivateGiven), before anything else is said
// of its blocks. A damaged block before it refuses the file (decodePEM,
// CLI-83): a file of two PUBLIC KEY blocks never reads as its second.
func ParsePublicPEM(data []byte) (ed25519.PublicKey, error) {
	if privateKeyOnly(data) {
		return nil, errPrivateGiven()
	}
	block, rest, damaged := decodePEM(data)
	if block == nil || damaged || block.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fail(ErrInvalidPublicKey, "public key file is not one pem \"PUBLIC KEY\" block")
	}
	return parsePKIX(block.Bytes)
}

// parsePKIX parses a PKIX Ed25519 public key, refusing one of small order
// or not in canonical form (amp.CheckEd25519PublicKey): no one holds its
// private key, and crypto/ed25519.Verify accepts forged signatures for
// it (docs/SPEC-DECISIONS.md TRUST-21).
func parsePKIX(der []byte) (ed25519.PublicKey, error) {
	pub, err := decodePKIX(der)
	if err != nil {
		return nil, err
	}
	if amp.CheckEd25519PublicKey(pub) != nil {
		return nil, fail(ErrInvalidPublicKey, "public key is an ed25519 key of small order or not in canonical form: no one holds its private key, and anybody can sign as it")
	}
	return pub, nil
}

// decodePKIX decodes a PKIX Ed25519 public key, any 32 bytes.
func decodePKIX(der []byte) (ed25519.PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fail(ErrInvalidPublicKey, "public key file holds an unreadable key")
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fail(ErrInvalidPublicKey, "public key is not ed25519")
	}
	return pub, nil
}
