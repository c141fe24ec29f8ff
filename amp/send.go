package amp

import (
	"context"
	"crypto/ed25519"
	"io"
	"time"
)

// Sign canonicalizes m.Body (nil means CBOR null) and sets m.Sig to the
// Ed25519 signature of m.SigInput() (RFC 001 §8.1).
func Sign(m *Message, key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return NewError(CodeInternalError, "invalid ed25519 signing key")
	}
	if m.Body == nil {
		m.Body = []byte{0xf6}
	}
	body, err := Limits{}.Canonical(m.Body)
	if err != nil {
		return err
	}
	m.Body = body
	var buf [sigInputStack]byte
	m.Sig = ed25519.Sign(key, m.AppendSigInput(buf[:0]))
	return nil
}

// Encrypt seals m.Body, the exact deterministic bytes that Sign signed, for
// the recipient's X25519 key with authcrypt (RFC 001 §8.5.1, §8.6
// sign-then-encrypt) and sets m.Enc. The body stays in m.Body for the
// sender's own use; Encode writes only enc. nonce must be fresh: 24 bytes
// from a CSPRNG. A recipient key of small order is refused with 3001
// invalid_did_document (docs/SPEC-DECISIONS.md AMP-14).
func Encrypt(m *Message, own *AgreementKey, recipient *[32]byte, nonce *[NonceSize]byte, cache *SharedKeys) error {
	if m.Sig == nil {
		return NewError(CodeInternalError, "sign the message before encrypting it")
	}
	if own == nil || recipient == nil || nonce == nil {
		return NewError(CodeInternalError, "encryption needs both agreement keys and a nonce")
	}
	ct, ok := cache.seal(m.Body, nonce, own, recipient)
	if !ok {
		return errDIDDoc("the recipient's agreement key is of small order")
	}
	m.Enc = &Encrypted{
		Alg:        EncAlg,
		Mode:       EncMode,
		Nonce:      append([]byte(nil), nonce[:]...),
		Ciphertext: ct,
	}
	return nil
}

// Identity is an agent's own DID and private keys.
type Identity struct {
	// DID is the sender DID written into `from` (a DID URL with a key
	// fragment pins the signing key).
	DID string
	// SigningKey signs every message.
	SigningKey ed25519.PrivateKey
	// Agreement is the X25519 key for authcrypt; nil means this identity
	// can neither send nor receive encrypted messages.
	Agreement *AgreementKey
}

// SenderConfig configures a Sender. Rand and Now are required.
type SenderConfig struct {
	Identity Identity
	// Rand is the CSPRNG for message ids and nonces (crypto/rand.Reader in
	// production).
	Rand io.Reader
	// Now returns the current time.
	Now func() time.Time
	// Version is the `v` written into messages. Default 1.
	Version uint64
	// DIDs resolves recipients' DID documents (for their agreement keys);
	// did:key recipients need no resolver.
	DIDs DIDResolver
	// SharedKeys caches authcrypt shared keys; nil computes them each time.
	SharedKeys *SharedKeys
}

// Sender builds, signs and optionally encrypts outgoing messages. Safe for
// concurrent use when Rand is.
type Sender struct {
	cfg     SenderConfig
	didKeys *didKeyCache
}

// NewSender checks cfg and returns a Sender.
func NewSender(cfg SenderConfig) (*Sender, error) {
	switch {
	case !ValidDID(cfg.Identity.DID):
		return nil, NewError(CodeInternalError, "sender identity needs a valid did")
	case len(cfg.Identity.SigningKey) != ed25519.PrivateKeySize:
		return nil, NewError(CodeInternalError, "sender identity needs an ed25519 signing key")
	case cfg.Rand == nil:
		return nil, NewError(CodeInternalError, "sender needs a source of randomness")
	case cfg.Now == nil:
		return nil, NewError(CodeInternalError, "sender needs a clock")
	}
	if cfg.Version == 0 {
		cfg.Version = 1
	}
	return &Sender{cfg: cfg, didKeys: newDIDKeyCache(1024)}, nil
}

// Identity returns the sender's identity.
func (s *Sender) Identity() Identity { return s.cfg.Identity }

// Draft describes a message to send.
type Draft struct {
	Type Type
	To   Recipients
	// TTL is the validity window. Zero means DefaultTTL (24 h); a negative
	// value means ttl = 0, immediate delivery only.
	TTL      time.Duration
	ReplyTo  []byte
	ThreadID []byte
	// Body is the CBOR body (any encoding; it is canonicalized). Nil means
	// no payload (CBOR null).
	Body []byte
	// Ext is an optional CBOR map of unsigned extensions.
	Ext []byte
	// Encrypt seals the body for the single recipient with authcrypt.
	Encrypt bool
	// RecipientKey overrides the recipient's agreement key, which is
	// otherwise selected from its DID document (RFC 001 §8.9).
	RecipientKey *[32]byte
}

// Seal builds, signs and (when asked) encrypts a message and returns it with
// its encoding.
func (s *Sender) Seal(ctx context.Context, d Draft) (*Message, []byte, error) {
	now := s.cfg.Now()
	ts := uint64(0)
	if ms := now.UnixMilli(); ms > 0 {
		ts = uint64(ms)
	}
	id, err := NewID(s.cfg.Rand, ts)
	if err != nil {
		return nil, nil, err
	}
	ttl := uint64(DefaultTTL.Milliseconds())
	switch {
	case d.TTL < 0:
		ttl = 0
	case d.TTL > 0:
		ttl = uint64(d.TTL.Milliseconds())
	}
	if len(d.To.DIDs) == 0 {
		return nil, nil, NewError(CodeInternalError, "a message needs at least one recipient")
	}
	if len(d.ReplyTo) > MaxRefBytes || len(d.ThreadID) > MaxRefBytes {
		return nil, nil, NewError(CodeInternalError, "reply_to and thread_id are at most %d bytes", MaxRefBytes)
	}
	m := &Message{V: s.cfg.Version, ID: id, Type: d.Type, TS: ts, TTL: ttl, From: s.cfg.Identity.DID,
		To: d.To, ReplyTo: d.ReplyTo, ThreadID: d.ThreadID, Body: d.Body}
	if d.Type.IsHandshake() {
		m.V = 1
	}
	if d.Ext != nil {
		if _, _, err := mapEntries(d.Ext, "ext"); err != nil {
			return nil, nil, err
		}
		if m.Ext, err = (Limits{}).Canonical(d.Ext); err != nil {
			return nil, nil, err
		}
	}
	if err := Sign(m, s.cfg.Identity.SigningKey); err != nil {
		return nil, nil, err
	}
	if d.Encrypt {
		if err := s.encrypt(ctx, m, d); err != nil {
			return nil, nil, err
		}
	}
	return m, m.Encode(), nil
}

func (s *Sender) encrypt(ctx context.Context, m *Message, d Draft) error {
	own := s.cfg.Identity.Agreement
	if own == nil {
		return NewError(CodeInternalError, "sender identity has no agreement key to encrypt with")
	}
	if len(d.To.DIDs) != 1 {
		return NewError(CodeInternalError, "authcrypt encrypts for exactly one recipient")
	}
	peer := d.RecipientKey
	if peer == nil {
		doc, err := resolveDID(ctx, s.cfg.DIDs, d.To.DIDs[0], s.didKeys)
		if err != nil {
			return err
		}
		keys, err := doc.AgreementKeys(s.cfg.Now())
		if err != nil {
			return err
		}
		peer = new([32]byte)
		copy(peer[:], keys[0].PublicKey)
	}
	var nonce [NonceSize]byte
	if _, err := io.ReadFull(s.cfg.Rand, nonce[:]); err != nil {
		return Wrap(CodeInternalError, err, "cannot read randomness for a nonce")
	}
	return Encrypt(m, own, peer, &nonce, s.cfg.SharedKeys)
}
