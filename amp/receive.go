package amp

import (
	"context"
	"crypto/ed25519"
	"time"
)

// Timing rules of RFC 001 §8.3 and docs/SPEC-DECISIONS.md AMP-7, AMP-8.
const (
	// DefaultMaxClockSkew is MAX_CLOCK_SKEW.
	DefaultMaxClockSkew = 30 * time.Second
	// MaxIDSkew is the largest accepted difference between the id's
	// embedded timestamp and ts (§8.3: ±1 second).
	MaxIDSkew = time.Second
	// maxIDSkewMillis is MaxIDSkew in the unit of ts.
	maxIDSkewMillis = uint64(MaxIDSkew / time.Millisecond)
	// DefaultTTL is the TTL senders should use when none is asked for.
	DefaultTTL = 24 * time.Hour
	// maxSenderAgreementKeys caps the sender's agreement keys step 7
	// tries, smallest id first: the first is the one a sender selects
	// (RFC 001 §8.9), the next ones a sender mid-rotation may still use.
	// The encrypted part names no key, and each one tried costs an X25519
	// and a pass over the ciphertext before the signature is checked
	// (docs/SPEC-DECISIONS.md AMP-32).
	maxSenderAgreementKeys = 4
)

// ReceiverConfig configures a Receiver. Now is required: the clock is always
// injected.
type ReceiverConfig struct {
	// Limits caps the size and shape of accepted messages.
	Limits Limits
	// Now returns the current time. Required.
	Now func() time.Time
	// MaxClockSkew tolerates senders' clocks ahead of ours, and bounds the
	// age of a TTL=0 message. Default 30 s.
	MaxClockSkew time.Duration
	// Versions lists the supported protocol major versions (`v`). Default
	// [1].
	Versions []uint64
	// DIDs resolves sender DIDs other than did:key. Nil means did:key only.
	DIDs DIDResolver
	// AgreementKeys are the local X25519 keys tried, in order, to decrypt an
	// encrypted message (RFC 001 §8.9: all active local keys, for rotation).
	AgreementKeys []*AgreementKey
	// SharedKeys caches authcrypt shared keys; nil computes them each time.
	SharedKeys *SharedKeys
}

// Receiver validates incoming messages. It holds no per-message state and is
// safe for concurrent use.
type Receiver struct {
	cfg     ReceiverConfig
	didKeys *didKeyCache
}

// NewReceiver checks cfg and returns a Receiver. A misconfiguration is an
// error here, never a half-working Receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Now == nil {
		return nil, NewError(CodeInternalError, "receiver needs a clock")
	}
	if cfg.MaxClockSkew < 0 {
		return nil, NewError(CodeInternalError, "receiver clock skew must not be negative")
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	if len(cfg.Versions) == 0 {
		cfg.Versions = []uint64{1}
	}
	for i, k := range cfg.AgreementKeys {
		if k == nil {
			return nil, NewError(CodeInternalError, "receiver agreement key %d is nil", i)
		}
	}
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.Versions = append([]uint64(nil), cfg.Versions...)
	cfg.AgreementKeys = append([]*AgreementKey(nil), cfg.AgreementKeys...)
	return &Receiver{cfg: cfg, didKeys: newDIDKeyCache(1024)}, nil
}

// Limits returns the effective caps.
func (r *Receiver) Limits() Limits { return r.cfg.Limits }

// Receive validates one incoming message and returns it with Body set to the
// verified plaintext body. The checks run in this fixed order, and the first
// failure decides the error:
//
//  1. decode and shape (RFC 001 §4.1): one strict CBOR item within the caps,
//     a map of envelope fields of their CDDL types          → 1001
//  2. `v` is a supported major version (§13.1)             → 1004
//  3. `typ` is a registered type code (§4.3, SPEC-DECISIONS AMP-2) → 1005
//  4. required fields present, exactly one of body/enc, DIDs
//     well-formed, enc of the authcrypt profile (§4.1)      → 1001
//  5. time (§8.3, SPEC-DECISIONS AMP-7, AMP-8): not expired (now > ts+ttl; TTL=0 accepted
//     while now-ts <= skew), not in the future (ts > now+skew), id
//     timestamp within 1 s of ts                           → 1003
//  6. sender's keys from its DID document (§8.9)           → 3001
//  7. decryption of an encrypted body (§8.6), against the
//     sender's first 4 agreement keys (SPEC-DECISIONS AMP-32) → 3001
//  8. Ed25519 signature over Sig_Input (§8.1-8.2)          → 1002
//
// and, for an encrypted message, the decrypted bytes must then be one valid
// CBOR item (§8.6 step 4) → 1001.
//
// The cheap checks come first, so a forged or stale message costs no
// signature verification (~40 µs, against ~0.1 µs for the cheap checks).
// Replay detection is not part of Receive: it needs state (RFC 001 §8.4)
// and belongs to the caller, after Receive has authenticated the sender.
func (r *Receiver) Receive(ctx context.Context, data []byte) (*Message, error) {
	// Step 1.
	raw, err := decodeEnvelope(data, r.cfg.Limits)
	if err != nil {
		return nil, err
	}
	// Step 2. A missing v is a missing required field (step 4).
	if raw.v != nil {
		v, _ := asUint(raw.v)
		if !r.supports(v) {
			return nil, Named(CodeUnsupportedVersion, "unsupported_version", "protocol version %d is not supported", v)
		}
	}
	// Step 3. A missing typ is a missing required field (step 4).
	if raw.typ != nil {
		t, _ := asUint(raw.typ)
		if !Type(t).Known() {
			return nil, Named(CodeUnknownType, "unknown_type", "message type 0x%02x is not registered", t)
		}
	}
	// Step 4.
	m, err := requiredFields(&raw)
	if err != nil {
		return nil, err
	}
	if m.Type.IsHandshake() && m.V != 1 {
		return nil, Named(CodeUnsupportedVersion, "unsupported_version", "handshake messages travel with v = 1")
	}
	// Step 5.
	if err := r.checkTime(m); err != nil {
		return nil, err
	}
	// Step 6.
	doc, err := resolveDID(ctx, r.cfg.DIDs, m.From, r.didKeys)
	if err != nil {
		return nil, err
	}
	now := r.cfg.Now()
	signing, err := doc.SigningKey(m.From, now)
	if err != nil {
		return nil, err
	}
	var senderX []VerificationMethod
	if m.Enc != nil {
		if senderX, err = doc.AgreementKeys(now); err != nil {
			return nil, err
		}
		senderX = senderX[:min(len(senderX), maxSenderAgreementKeys)]
	}
	// Step 7.
	if m.Enc != nil {
		if m.Body, err = r.decrypt(m.Enc, senderX); err != nil {
			return nil, err
		}
	} else {
		// Step 1 rewrote the whole message, when it was not deterministic,
		// and kept its body item: the form Sig_Input takes.
		m.Body = raw.canonBody
	}
	// Step 8. Sig_Input is built in a buffer on the stack when it fits.
	var buf [sigInputStack]byte
	if len(m.Sig) != SigSize || !ed25519.Verify(signing.PublicKey, m.AppendSigInput(buf[:0]), m.Sig) {
		return nil, Named(CodeInvalidSignature, "invalid_signature", "signature verification failed")
	}
	if m.Enc != nil {
		if _, err := r.cfg.Limits.Canonical(m.Body); err != nil {
			return nil, Named(CodeInvalidMessage, "invalid_body", "decrypted body is not a valid cbor item").WithCause(err)
		}
	}
	return m, nil
}

func (r *Receiver) supports(v uint64) bool {
	for _, s := range r.cfg.Versions {
		if s == v {
			return true
		}
	}
	return false
}

func missing(name string) *Error {
	return Named(CodeInvalidMessage, "missing_field", "required field %q is missing", name)
}

// requiredFields is step 4: it builds the Message from the shape-checked
// fields.
func requiredFields(raw *rawMessage) (*Message, error) {
	for _, f := range []struct {
		name string
		item []byte
	}{{"v", raw.v}, {"id", raw.id}, {"typ", raw.typ}, {"ts", raw.ts}, {"ttl", raw.ttl}, {"from", raw.from}, {"to", raw.to}, {"sig", raw.sig}} {
		if f.item == nil {
			return nil, missing(f.name)
		}
	}
	switch {
	case raw.body != nil && raw.enc != nil:
		return nil, Named(CodeInvalidMessage, "body_and_enc", "a message carries body or enc, never both")
	case raw.body == nil && raw.enc == nil:
		return nil, missing("body")
	}
	m := &Message{}
	m.V, _ = asUint(raw.v)
	idb, _ := asBytes(raw.id)
	copy(m.ID[:], idb)
	t, _ := asUint(raw.typ)
	m.Type = Type(t)
	m.TS, _ = asUint(raw.ts)
	m.TTL, _ = asUint(raw.ttl)
	m.From, _ = asText(raw.from)
	m.To, _ = decodeRecipients(raw.to)
	if !ValidDID(m.From) {
		return nil, Named(CodeInvalidMessage, "invalid_did", "field \"from\" is not a did")
	}
	for _, d := range m.To.DIDs {
		if !ValidDID(d) {
			return nil, Named(CodeInvalidMessage, "invalid_did", "field \"to\" holds a value that is not a did")
		}
	}
	if raw.replyTo != nil {
		b, _ := asBytes(raw.replyTo)
		m.ReplyTo = append([]byte{}, b...)
	}
	if raw.threadID != nil {
		b, _ := asBytes(raw.threadID)
		m.ThreadID = append([]byte{}, b...)
	}
	sig, _ := asBytes(raw.sig)
	m.Sig = append([]byte(nil), sig...)
	if raw.ext != nil {
		// ext is unsigned; keep it, deterministically encoded, so that a
		// received message re-encodes to the deterministic form of its
		// input. It is held to the default caps, and its deterministic
		// form is the one step 1 made (docs/SPEC-DECISIONS.md AMP-24).
		if _, err := (Limits{}).scan(raw.ext, false); err != nil {
			return nil, err
		}
		m.Ext = append([]byte(nil), raw.canonExt...)
	}
	if raw.enc != nil {
		enc, err := decodeEnc(raw.enc)
		if err != nil {
			return nil, err
		}
		enc.Nonce = append([]byte(nil), enc.Nonce...)
		enc.Ciphertext = append([]byte(nil), enc.Ciphertext...)
		m.Enc = enc
	}
	return m, nil
}

// checkTime is step 5.
func (r *Receiver) checkTime(m *Message) error {
	n := uint64(max(r.cfg.Now().UnixMilli(), 0))
	skew := uint64(r.cfg.MaxClockSkew.Milliseconds())
	if m.TS > n && m.TS-n > skew {
		return Named(CodeInvalidTimestamp, "future_timestamp", "message timestamp is too far in the future")
	}
	// Expiry: now > ts + ttl, computed without overflow. TTL=0 (SPEC-DECISIONS AMP-8):
	// a direct recipient accepts it while now - ts is within the skew.
	if n > m.TS {
		age := n - m.TS
		if m.TTL == 0 && age > skew || m.TTL != 0 && age > m.TTL {
			return Named(CodeInvalidTimestamp, "expired", "message has expired")
		}
	}
	idTS := m.ID.Timestamp()
	if idTS > m.TS && idTS-m.TS > maxIDSkewMillis || idTS < m.TS && m.TS-idTS > maxIDSkewMillis {
		return Named(CodeInvalidTimestamp, "id_timestamp_mismatch", "message id timestamp does not match ts")
	}
	return nil
}

// decrypt is step 7: every local agreement key is tried against the
// sender's eligible agreement keys. Every failure is the same 3001, so that
// nothing tells a prober why (RFC 001 §15.3 privacy note).
func (r *Receiver) decrypt(enc *Encrypted, senderKeys []VerificationMethod) ([]byte, error) {
	var nonce [NonceSize]byte
	copy(nonce[:], enc.Nonce)
	for _, own := range r.cfg.AgreementKeys {
		for _, sk := range senderKeys {
			var peer [32]byte
			copy(peer[:], sk.PublicKey)
			if pt, ok := r.cfg.SharedKeys.open(enc.Ciphertext, &nonce, own, &peer); ok {
				return pt, nil
			}
		}
	}
	return nil, Named(CodeUnauthorized, "decryption_failed", "message cannot be decrypted")
}
