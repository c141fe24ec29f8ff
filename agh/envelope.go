package agh

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// The agh-network/v0 envelope and the proof this package signs
// (docs/FORMAT.md, "AGH projection"; docs/SPEC-DECISIONS.md AGH-3).
const (
	// Protocol is the only envelope protocol this package reads or writes.
	Protocol = "agh-network/v0"
	// KindCapability is the kind of a capability transfer envelope.
	KindCapability = "capability"
	// ProofType names our proof: Ed25519 over ProofContext, a zero byte and
	// the RFC 8785 form of the envelope without its "proof" member. The
	// name is namespaced: AGH v0 reserves "proof" and defines no type.
	ProofType = "ampbundle.ed25519-jcs"
	// ProofContext prefixes the signed bytes so that a proof can never be
	// taken for a signature of another protocol made with the same key.
	ProofContext = "agh-network/v0 proof " + ProofType
	// TrustUnverified is the seed's trust mode: no proof is relied on.
	TrustUnverified = "unverified"
	// DefaultDisplayName is the card's display_name when none is given.
	DefaultDisplayName = "ampagent"
	// DefaultChannel is the envelope channel when none is given.
	DefaultChannel = "ampbundle"
)

// Acceptance window of an envelope's ts, and bounds of its members.
const (
	// DefaultSkew is how far in the future a ts may be (the clock skew
	// tolerated, as MAX_CLOCK_SKEW of RFC 001).
	DefaultSkew = 30 * time.Second
	// DefaultMaxAge is how far in the past a ts may be: the skew plus the
	// time a transfer may take to arrive.
	DefaultMaxAge = 5 * time.Minute
	// maxIDBytes bounds id, channel, from, to, reply_to and the proof key.
	maxIDBytes = 512
	// maxSafeInt is the largest integer an I-JSON number carries exactly.
	maxSafeInt = 1<<53 - 1
)

// Error names of envelope reception; each is a refusal of the whole
// envelope, made before anything of it is used.
const (
	// ErrInvalidEnvelope: a required member missing or of the wrong type,
	// or a member over its bound.
	ErrInvalidEnvelope amp.ErrName = "invalid_envelope"
	// ErrUnsupportedProtocol: protocol is not agh-network/v0.
	ErrUnsupportedProtocol amp.ErrName = "unsupported_protocol"
	// ErrUnsupportedKind: a kind this receiver does not take (for a
	// transfer, anything but "capability").
	ErrUnsupportedKind amp.ErrName = "unsupported_kind"
	// ErrStaleTimestamp: ts older than the accepted age.
	ErrStaleTimestamp amp.ErrName = "stale_timestamp"
	// ErrFutureTimestamp: ts later than now plus the skew.
	ErrFutureTimestamp amp.ErrName = "future_timestamp"
	// ErrExpired: expires_at is in the past.
	ErrExpired amp.ErrName = "expired"
	// ErrMissingProof: proof null or absent where a proof is required.
	ErrMissingProof amp.ErrName = "missing_proof"
	// ErrUnsupportedProof: a proof of a type other than ProofType.
	ErrUnsupportedProof amp.ErrName = "unsupported_proof"
	// ErrInvalidProof: a proof object of the wrong shape.
	ErrInvalidProof amp.ErrName = "invalid_proof"
	// ErrSenderMismatch: the proof's key belongs to another DID than from.
	ErrSenderMismatch amp.ErrName = "sender_mismatch"
	// ErrUnknownSender: no signing key of from could be found.
	ErrUnknownSender amp.ErrName = "unknown_sender"
	// ErrBadProof: the signature does not verify.
	ErrBadProof amp.ErrName = "bad_proof"
	// ErrNotARecipient: the envelope's to names a peer other than this
	// receiver (ReceiveOptions.Self); the name the agent gives a message
	// not addressed to it.
	ErrNotARecipient amp.ErrName = "not_a_recipient"
	// ErrSenderUnresolved: the caller's context ended before the sender's
	// DID document was resolved (ReceiveTransferContext; AGH-18): nothing
	// is known of the sender either way, so the transfer may be retried,
	// unlike unknown_sender.
	ErrSenderUnresolved amp.ErrName = "sender_unresolved"
)

// envelopeNames are the envelope members this package reads; bodyNames
// those of a transfer's body. A member spelt like one of them but for case
// is invalid_envelope (AGH-5).
var (
	envelopeNames = []string{"protocol", "id", "kind", "channel", "from", "to", "reply_to", "ts", "expires_at", "body", "proof", "ext"}
	bodyNames     = []string{"capability"}
	// envelopeSpellings and bodySpellings are their spellings (AGH-10).
	envelopeSpellings = jcs.NewSpellings(envelopeNames...)
	bodySpellings     = jcs.NewSpellings(bodyNames...)
)

// knownKinds are the core kinds of agh-network/v0.
var knownKinds = map[string]bool{"greet": true, "whois": true, "say": true, "capability": true, "receipt": true, "trace": true}

func badEnvelope(format string, args ...any) error {
	return amp.Named(0, ErrInvalidEnvelope, format, args...)
}

// Signer signs envelopes as one agent.
type Signer struct {
	// DID is the agent's DID, written into "from" (and the card's
	// peer_id). For a did:key it is derived from Key when empty.
	DID string
	// KeyID is the DID URL of the verification method of Key: the DID, or
	// the DID with a fragment (no path or query). Default:
	// for a did:key, DID#multikey; otherwise the bare DID, which the
	// receiver resolves to the DID's signing key as RFC 001 senders' bare
	// DIDs are (amp.DIDDocument.SigningKey).
	KeyID string
	// Key signs.
	Key ed25519.PrivateKey
}

// resolved fills the defaults of s.
func (s *Signer) resolved() (did, keyID string, err error) {
	if s == nil || len(s.Key) != ed25519.PrivateKeySize {
		return "", "", invalid("the signer has no ed25519 key")
	}
	pub := s.Key.Public().(ed25519.PublicKey)
	did, keyID = s.DID, s.KeyID
	if did == "" {
		did = amp.DIDKey(pub)
	}
	if keyID == "" {
		keyID = did
		if strings.HasPrefix(did, "did:key:") {
			keyID = did + "#" + amp.EncodeMultikey(amp.KeyEd25519, pub)
		}
	}
	if !amp.ValidDID(keyID) || len(keyID) > maxIDBytes || amp.BareDID(keyID) != did {
		return "", "", invalid("the signer's key id is not a key of its DID (a DID or a DID URL with only a fragment, at most %d bytes)", maxIDBytes)
	}
	return did, keyID, nil
}

// TrustModes returns the card's trust_modes_supported: "unverified" (what
// the seed's peers send, and what we accept when the receiver allows it)
// and, for a peer that signs, ProofType.
func TrustModes(signs bool) []string {
	if signs {
		return []string{TrustUnverified, ProofType}
	}
	return []string{TrustUnverified}
}

// CardMembers returns the members of a peer card other than capabilities
// and ext, as the seed's example has them: peer_id, display_name
// (DefaultDisplayName when empty), profiles_supported ["agh-network/v0"],
// artifacts_supported ["capability"] and trust_modes_supported.
func CardMembers(peerID, displayName string, signs bool) map[string]json.RawMessage {
	if displayName == "" {
		displayName = DefaultDisplayName
	}
	enc := func(v any) json.RawMessage { b, _ := marshalNoEscape(v); return b }
	return map[string]json.RawMessage{
		"peer_id":               enc(peerID),
		"display_name":          enc(displayName),
		"profiles_supported":    enc([]string{Protocol}),
		"artifacts_supported":   enc([]string{KindCapability}),
		"trust_modes_supported": enc(TrustModes(signs)),
	}
}

// EnvelopeOptions are the per-message inputs of an envelope.
type EnvelopeOptions struct {
	// Now is the clock (required).
	Now func() time.Time
	// Rand supplies the 16 random bytes of the message id (required;
	// crypto/rand.Reader in production).
	Rand io.Reader
	// Channel defaults to DefaultChannel.
	Channel string
	// To is the target peer; omitted when empty.
	To string
}

// TransferEnvelope returns a kind:"capability" agh-network/v0 envelope
// carrying c with its canonical digest: protocol, id ("msg_" and 32
// random hex digits), kind, channel, from, to (when given), ts, body
// {"capability": {...}} and proof — signed by s, or null when s is nil
// (the seed's unverified mode; from is then peerID).
func TransferEnvelope(c Capability, s *Signer, peerID string, o EnvelopeOptions) (json.RawMessage, error) {
	body, err := TransferBody(c)
	if err != nil {
		return nil, err
	}
	if o.Now == nil || o.Rand == nil {
		return nil, invalid("an envelope needs a clock and a random source")
	}
	var rnd [16]byte
	if _, err := io.ReadFull(o.Rand, rnd[:]); err != nil {
		return nil, invalid("no randomness for the message id")
	}
	from := peerID
	var did, keyID string
	if s != nil {
		if did, keyID, err = s.resolved(); err != nil {
			return nil, err
		}
		from = did
	}
	if from == "" || len(from) > maxIDBytes {
		return nil, invalid("an envelope needs a from of 1 to %d bytes", maxIDBytes)
	}
	channel := o.Channel
	if channel == "" {
		channel = DefaultChannel
	}
	enc := func(v any) json.RawMessage { b, _ := marshalNoEscape(v); return b }
	m := map[string]json.RawMessage{
		"protocol": enc(Protocol),
		"id":       enc("msg_" + hex.EncodeToString(rnd[:])),
		"kind":     enc(KindCapability),
		"channel":  enc(channel),
		"from":     enc(from),
		"ts":       enc(o.Now().Unix()),
		"body":     body,
	}
	if o.To != "" {
		m["to"] = enc(o.To)
	}
	if s == nil {
		m["proof"] = json.RawMessage("null")
		return marshalNoEscape(m)
	}
	input, err := signingInput(m)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(s.Key, input)
	m["proof"] = enc(map[string]string{"type": ProofType, "key": keyID, "sig": base64.RawURLEncoding.EncodeToString(sig)})
	return marshalNoEscape(m)
}

// signingInput is ProofContext, 0x00 and the RFC 8785 form of the
// envelope's members other than "proof", for an envelope being built.
func signingInput(m map[string]json.RawMessage) ([]byte, error) {
	rest := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if k != "proof" {
			rest[k] = v
		}
	}
	raw, err := json.Marshal(rest)
	if err != nil {
		return nil, invalid("envelope cannot be encoded")
	}
	tree, err := jcs.Parse(raw, jcs.MaxDepth)
	env, ok := tree.(jcs.Object)
	if err != nil || !ok {
		return nil, badEnvelope("envelope has no canonical form")
	}
	return signingInputOf(env, newCanonBuf(len(raw)))
}

// signingInputOf is signingInput of a parsed envelope, valid until cb's
// next use.
func signingInputOf(env jcs.Object, cb *canonBuf) ([]byte, error) {
	in, err := cb.formWithout(ProofContext+"\x00", env, "proof")
	if err != nil {
		return nil, badEnvelope("envelope has no canonical form")
	}
	return in, nil
}

// ReceiveOptions configures ReceiveTransfer.
type ReceiveOptions struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Skew and MaxAge bound ts (DefaultSkew, DefaultMaxAge when zero).
	Skew, MaxAge time.Duration
	// AllowUnverified accepts an envelope whose proof is null or absent,
	// as the seed's v0 peers send it, when its from is a plain peer id of
	// ASCII letters, digits and ". _ - @ / + ~" (a DID's holder signs, and
	// a DID, or anything a reader may take for one, is missing_proof;
	// AGH-12, AGH-14); the result says Verified false, and its From, To
	// and Channel are the sender's unchecked claims, checked against Self
	// and Channels only as a filter. Without it such an envelope is
	// missing_proof. A proof that is present is always checked, and a bad
	// one always refused.
	AllowUnverified bool
	// DIDs resolves a DID that is not a did:key (did:key needs none),
	// as amp.ReceiverConfig.DIDs does (a resolver.Store is one); nil
	// refuses every other DID (unknown_sender). It is given the context
	// of ReceiveTransferContext and must return when that context ends:
	// a resolution the context outlives is sender_unresolved (AGH-18).
	DIDs amp.DIDResolver
	// Self are the names this receiver is addressed by: its card's
	// peer_id (its DID when it signs) and any other peer id it answers
	// to. An envelope whose to is set and is none of them, compared
	// byte for byte, is not_a_recipient; with no names, every envelope
	// with a to is. An envelope without to (or with an empty one) is the
	// channel's, taken by any receiver of that channel.
	Self []string
	// Channels are the channels this receiver listens on, compared byte
	// for byte; none names DefaultChannel alone. An envelope posted on
	// any other channel, addressed or not, is not_a_recipient (AGH-11):
	// the proof covers channel, so a transfer posted elsewhere, replayed
	// here within the window, would otherwise verify as posted here.
	Channels []string
}

// Transfer is an accepted capability transfer.
type Transfer struct {
	// ID, Channel, From, To are the envelope's members (To may be "").
	ID, Channel, From, To string
	// TS is the envelope's ts.
	TS int64
	// Capability is body.capability, its digest verified.
	Capability Capability
	// Verified is true when a proof by From's key verified; false for an
	// unverified envelope accepted under AllowUnverified.
	Verified bool
	// KeyID is the id of the verification method that signed it, as its
	// DID document names it, whatever the proof spelt ("" unverified).
	KeyID string
	// Ext is the envelope's ext, kept opaque (nil when absent): each
	// member in the RFC 8785 form the proof covers.
	Ext map[string]json.RawMessage
}

// ReceiveTransfer checks a kind:"capability" envelope and returns its
// capability. In order, each failure a named refusal and nothing used
// before every check passed: size, number of values and JSON (too_large,
// invalid_document); protocol (unsupported_protocol); kind
// (unsupported_kind); the members' names, types and bounds
// (invalid_envelope: a member spelt like a known one but for case,
// underscores or dashes is refused; an ext of more than MaxOpaqueMembers
// members is too_large); ts within [now-MaxAge, now+Skew]
// (stale_timestamp, future_timestamp) and expires_at (expired); the
// proof — absent (missing_proof unless AllowUnverified, and always when
// from is not a plain peer id), of another type (unsupported_proof),
// malformed (invalid_proof), by a key of another DID than from
// (sender_mismatch), by a key not found (unknown_sender), not verifying
// (bad_proof); channel not one of o.Channels, or to set and
// not one of o.Self (not_a_recipient); last the capability's digest
// (verification_failed). Members this version does not know are covered
// by the proof and ignored. The envelope is parsed once; what is returned
// comes from that parse, opaque members (ext, the capability's examples,
// requirements and unknown members) in the RFC 8785 form the proof and
// digest cover. It is ReceiveTransferContext without a deadline.
func ReceiveTransfer(data []byte, o ReceiveOptions) (*Transfer, error) {
	return ReceiveTransferContext(context.Background(), data, o)
}

// ReceiveTransferContext is ReceiveTransfer bounded by ctx: the one step
// that may wait, the resolution of a sender's DID other than a did:key
// (o.DIDs), is given ctx, and a transfer whose sender is still
// unresolved when ctx ends is refused, sender_unresolved (the cause is
// ctx's error), whatever the resolver returned (AGH-18). Every other step
// is a bounded computation on the bytes.
func ReceiveTransferContext(ctx context.Context, data []byte, o ReceiveOptions) (*Transfer, error) {
	m, err := parseObject(data, "envelope")
	if err != nil {
		return nil, err
	}
	if err := checkTransferKind(m); err != nil {
		return nil, err
	}
	cb := newCanonBuf(len(data))
	t, capability, exp, err := transferMembers(m, cb)
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	now := o.Now()
	if err := checkTransferTimes(t.TS, exp, o, now); err != nil {
		return nil, err
	}
	if err := checkProof(ctx, m, t, o, now, cb); err != nil {
		return nil, err
	}
	if err := checkRecipient(t.Channel, t.To, o.Channels, o.Self); err != nil {
		return nil, err
	}
	c, err := verifyCapability(capability, cb)
	if err != nil {
		return nil, err
	}
	t.Capability = c
	return t, nil
}

// envelopeString reads the string member k of an envelope: absent or
// null is "" (badEnvelope when required), present it must be a string of
// at most maxIDBytes (and not empty when required).
func envelopeString(m jcs.Object, k string, required bool) (string, error) {
	v, _ := m.Get(k)
	if v == nil {
		if required {
			return "", badEnvelope("envelope lacks %s", k)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok || (required && s == "") || len(s) > maxIDBytes {
		return "", badEnvelope("envelope %s must be a string of 1 to %d bytes", k, maxIDBytes)
	}
	return s, nil
}

// checkTransferKind refuses an envelope of another protocol, or of a
// kind other than capability (naming whether the kind is one of the
// protocol's at all).
func checkTransferKind(m jcs.Object) error {
	proto, err := envelopeString(m, "protocol", true)
	if err != nil {
		return err
	}
	if proto != Protocol {
		return amp.Named(0, ErrUnsupportedProtocol, "envelope protocol is not %s", Protocol)
	}
	kind, err := envelopeString(m, "kind", true)
	if err != nil {
		return err
	}
	if kind != KindCapability {
		if knownKinds[kind] {
			return amp.Named(0, ErrUnsupportedKind, "a transfer must be of kind capability")
		}
		return amp.Named(0, ErrUnsupportedKind, "envelope kind is not a kind of %s", Protocol)
	}
	return nil
}

// transferMembers reads the members of a transfer envelope, each of its
// type and within its bounds (invalid_envelope): the ids, ts, ext and
// the body's capability object (returned unverified), and expires_at (exp,
// nil when absent or null). Members are read by their exact names; one
// spelt like a known member of the envelope or body but for case,
// underscores or dashes, which a folding decoder would take for it, is
// refused (AGH-5, AGH-10, AGH-13).
func transferMembers(m jcs.Object, cb *canonBuf) (t *Transfer, capability jcs.Object, exp *int64, err error) {
	if envelopeSpellings.Variant(m) {
		return nil, nil, nil, badEnvelope("a member of the envelope is a known member spelt in another case or with other underscores or dashes")
	}
	t = &Transfer{}
	for _, f := range []struct {
		k   string
		dst *string
		req bool
	}{{"id", &t.ID, true}, {"channel", &t.Channel, true}, {"from", &t.From, true}, {"to", &t.To, false}, {"reply_to", nil, false}} {
		s, err := envelopeString(m, f.k, f.req)
		if err != nil {
			return nil, nil, nil, err
		}
		if f.dst != nil {
			*f.dst = s
		}
	}
	ts, ok, err := intMember(m, "ts")
	if err != nil || !ok {
		return nil, nil, nil, badEnvelope("envelope ts must be an integer of Unix seconds")
	}
	e, hasExp, err := intMember(m, "expires_at")
	if err != nil {
		return nil, nil, nil, badEnvelope("envelope expires_at must be an integer or null")
	}
	if hasExp {
		exp = &e
	}
	bv, _ := m.Get("body")
	body, ok := bv.(jcs.Object)
	if !ok {
		return nil, nil, nil, badEnvelope("envelope body must be an object with a capability object")
	}
	if bodySpellings.Variant(body) {
		return nil, nil, nil, badEnvelope("a member of the envelope body is a known member spelt in another case or with other underscores or dashes")
	}
	cv, _ := body.Get("capability")
	if capability, ok = cv.(jcs.Object); !ok {
		return nil, nil, nil, badEnvelope("envelope body must be an object with a capability object")
	}
	if ev, present := m.Get("ext"); present {
		ext, ok := ev.(jcs.Object)
		if !ok {
			return nil, nil, nil, badEnvelope("envelope ext must be an object")
		}
		if err := keptMembers(len(ext), "the envelope's ext"); err != nil {
			return nil, nil, nil, err
		}
		t.Ext = make(map[string]json.RawMessage, len(ext))
		for _, e := range ext {
			t.Ext[e.Name] = cb.raw(e.Value)
		}
	}
	t.TS = ts
	return t, capability, exp, nil
}

// checkTransferTimes refuses an envelope whose ts is not within
// [now-MaxAge, now+Skew] (the defaults where o gives none), or whose
// expires_at (exp, when set) has passed.
func checkTransferTimes(ts int64, exp *int64, o ReceiveOptions, now time.Time) error {
	skew, maxAge := o.Skew, o.MaxAge
	limit.Default(&skew, DefaultSkew)
	limit.Default(&maxAge, DefaultMaxAge)
	if ts > now.Add(skew).Unix() {
		return amp.Named(0, ErrFutureTimestamp, "envelope ts is more than %s ahead of this clock", skew)
	}
	if ts < now.Add(-maxAge).Unix() {
		return amp.Named(0, ErrStaleTimestamp, "envelope ts is more than %s old", maxAge)
	}
	if exp != nil && now.Unix() > *exp {
		return amp.Named(0, ErrExpired, "envelope expires_at has passed")
	}
	return nil
}

// checkProof verifies the envelope's proof, or accepts its absence under
// AllowUnverified.
func checkProof(ctx context.Context, m jcs.Object, t *Transfer, o ReceiveOptions, now time.Time, cb *canonBuf) error {
	raw, _ := m.Get("proof")
	if raw == nil {
		if !o.AllowUnverified {
			return amp.Named(0, ErrMissingProof, "the envelope carries no proof and unverified transfers are not accepted")
		}
		if !plainPeerID(t.From) {
			return amp.Named(0, ErrMissingProof, "the envelope carries no proof and its from is not a plain peer id (letters, digits and . _ - @ / + ~): a DID, or what may read as one, needs a proof")
		}
		return nil
	}
	p, ok := raw.(jcs.Object)
	if !ok {
		return amp.Named(0, ErrInvalidProof, "envelope proof must be an object or null")
	}
	member := func(k string) (string, bool) {
		v, _ := p.Get(k)
		s, ok := v.(string)
		return s, ok
	}
	typ, ok := member("type")
	if !ok {
		return amp.Named(0, ErrInvalidProof, "proof type must be a string")
	}
	if typ != ProofType {
		return amp.Named(0, ErrUnsupportedProof, "proof type is not %s", ProofType)
	}
	key, keyOK := member("key")
	sig, sigOK := member("sig")
	// The key is outside the signed bytes, so it must be an id a DID
	// document can name: a DID, or a DID URL with only a fragment (no path
	// or query a relay could append and SigningKey would ignore), since it
	// becomes Transfer.KeyID.
	if len(p) != 3 || !keyOK || !sigOK || len(key) > maxIDBytes || !amp.ValidDID(key) {
		return amp.Named(0, ErrInvalidProof, "proof must be {type, key: a DID or a DID URL with only a fragment, sig}")
	}
	sigBytes, ok := decodeSig(sig)
	if !ok {
		return amp.Named(0, ErrInvalidProof, "proof sig must be 64 bytes in canonical unpadded base64url")
	}
	did := amp.BareDID(key)
	if did != t.From {
		return amp.Named(0, ErrSenderMismatch, "the proof's key does not belong to the envelope's from")
	}
	doc, err := senderDocument(ctx, did, o.DIDs)
	if err != nil {
		return err
	}
	vm, err := doc.SigningKey(key, now)
	if err != nil || len(vm.PublicKey) != ed25519.PublicKeySize {
		return amp.Named(0, ErrUnknownSender, "the proof's key is not an active signing key of the sender")
	}
	input, err := signingInputOf(m, cb)
	if err != nil {
		return err
	}
	if !ed25519.Verify(ed25519.PublicKey(vm.PublicKey), input, sigBytes) {
		return amp.Named(0, ErrBadProof, "the proof's signature does not verify")
	}
	t.Verified, t.KeyID = true, vm.ID // the method the document selected, however the relay spelled it
	return nil
}

// senderDocument returns the DID document of did, the proof's bare DID:
// a did:key expanded here, another DID from dids, asked with ctx (AGH-18).
// A resolution begun after ctx ended, or still unanswered when it ended,
// is sender_unresolved whatever the resolver returned: a resolver that
// ignores ctx still holds its caller, but never makes it act on a
// sender past the caller's deadline.
func senderDocument(ctx context.Context, did string, dids amp.DIDResolver) (*amp.DIDDocument, error) {
	if strings.HasPrefix(did, "did:key:") {
		doc, err := amp.DIDKeyDocument(did)
		if err != nil {
			return nil, amp.Named(0, ErrUnknownSender, "the sender's DID cannot be resolved")
		}
		return doc, nil
	}
	if dids == nil {
		return nil, amp.Named(0, ErrUnknownSender, "the sender's DID cannot be resolved here")
	}
	unresolved := func() error {
		return amp.Named(0, ErrSenderUnresolved, "the sender's DID was not resolved before the caller's deadline").WithCause(ctx.Err())
	}
	if ctx.Err() != nil {
		return nil, unresolved()
	}
	doc, err := dids.ResolveDID(ctx, did)
	if ctx.Err() != nil {
		return nil, unresolved()
	}
	if err != nil || doc == nil {
		return nil, amp.Named(0, ErrUnknownSender, "the sender's DID cannot be resolved")
	}
	return doc, nil
}

// plainPeerID reports whether from is a peer id an unsigned envelope may
// carry (AGH-12, AGH-14): ASCII letters, digits and ". _ - @ / + ~" only,
// as the page's peer ids ("designer.session-19"). A DID names a key its
// holder signs with, so an unsigned envelope claiming one is a stripped
// proof or a forgery whose to and channel nobody vouches for; and every
// spelling a reader may turn into a DID holds a ':' or something that
// encodes one: "DID:KEY:", a leading blank or BOM a reader trims, a
// zero-width space it drops, "did%3Akey", a fullwidth colon NFKC maps to
// ':', a Cyrillic і that shows as i, "did&#58;" or "did=3A". None of them
// is written in this alphabet.
func plainPeerID(from string) bool {
	for i := range len(from) {
		switch c := from[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._-@/+~", c) >= 0:
		default:
			return false
		}
	}
	return from != ""
}

// decodeSig decodes an Ed25519 signature written in the one spelling
// ReceiveTransfer accepts: the unpadded base64url encoding of its 64
// bytes, exactly as the sender writes it (the decoder alone would skip CR
// and LF and, not Strict, ignore the unused trailing bits). The proof is
// outside the signed bytes, so every other spelling would be a
// byte-different envelope that still verifies.
func decodeSig(s string) ([]byte, bool) {
	if len(s) != base64.RawURLEncoding.EncodedLen(ed25519.SignatureSize) {
		return nil, false
	}
	b, ok := amp.DecodeBase64URLStrict(s)
	return b, ok && len(b) == ed25519.SignatureSize
}

// intMember reads an optional integer member (null counts as absent): an
// integer of at most 2^53-1 in magnitude, written without fraction or
// exponent.
func intMember(m jcs.Object, k string) (int64, bool, error) {
	v, _ := m.Get(k)
	if v == nil {
		return 0, false, nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, false, badEnvelope("%s must be an integer", k)
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || n > maxSafeInt || n < -maxSafeInt {
		return 0, false, badEnvelope("%s must be an integer", k)
	}
	return n, true, nil
}
