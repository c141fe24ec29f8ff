package bundle

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// COSE constants (RFC 9052, RFC 9053).
const (
	coseSignTag       = 98 // COSE_Sign
	coseHeaderAlg     = 1
	coseHeaderCType   = 3
	coseHeaderKID     = 4
	coseAlgEdDSA      = -8
	sigContext        = "Signature"
	MaxSignatures     = 8 // signatures carried by one bundle
	maxKIDLen         = 256
	maxManifestDepth  = 16 // nesting inside item 0
	coseSignatureSize = ed25519.SignatureSize
)

// Signature is one signature of a bundle as found in the file.
type Signature struct {
	// KID is the key id of the protected header: the signer's did:key.
	KID string
	// Protected is the encoded protected header (covered by the signature).
	Protected []byte
	// Sig is the Ed25519 signature.
	Sig []byte
}

// signedObject is a decoded COSE_Sign: the first item of a bundle (its
// payload is the manifest) or another signed object of FORMAT.md.
type signedObject struct {
	bodyProtected []byte
	payload       []byte
	signatures    []Signature
}

// bodyProtectedHeader is the protected header of a COSE_Sign whose payload
// has content type ctype.
func bodyProtectedHeader(ctype string) []byte {
	b, _ := amp.Marshal(map[int]string{coseHeaderCType: ctype})
	return b
}

func signProtectedHeader(kid []byte) []byte {
	b, _ := amp.Marshal(map[int]any{coseHeaderAlg: coseAlgEdDSA, coseHeaderKID: kid})
	return b
}

// sigStructure returns the COSE Sig_structure of RFC 9052 §4.4 for a
// COSE_Sign signature: ["Signature", body_protected, sign_protected,
// external_aad = h”, payload].
func sigStructure(bodyProtected, signProtected, payload []byte) []byte {
	b, _ := amp.Marshal([]any{sigContext, bodyProtected, signProtected, []byte{}, payload})
	return b
}

// signManifest returns the encoded COSE_Sign over a manifest payload with
// one signature per key.
func signManifest(payload []byte, keys ...ed25519.PrivateKey) ([]byte, error) {
	return signCOSE(MediaTypeManifest, payload, keys)
}

// signCOSE returns the encoded COSE_Sign over payload (content type ctype)
// with one signature per key, sorted by kid (FORMAT.md §2: the file is a
// function of the set of keys, not of the order they were given in). The
// same key twice is refused: it would count once anyway.
func signCOSE(ctype string, payload []byte, keys []ed25519.PrivateKey) ([]byte, error) {
	if err := CheckSigningKeys(keys); err != nil {
		return nil, err
	}
	o := &signedObject{bodyProtected: bodyProtectedHeader(ctype), payload: payload}
	for _, k := range keys {
		if err := o.addSignature(k); err != nil {
			return nil, err
		}
	}
	return o.encode()
}

// CheckSigningKeys refuses a set of keys that could not sign an object,
// before any work is done with them (docs/SPEC-DECISIONS.md BUNDLE-25):
// 1 to MaxSignatures keys (ErrInconsistent), each an Ed25519 private key
// whose public half is its seed's (ErrInconsistent: ed25519.Sign panics
// on another length, and a key whose halves disagree signs what no key
// verifies), none twice (ErrDuplicateSigner).
func CheckSigningKeys(keys []ed25519.PrivateKey) error {
	if len(keys) == 0 || len(keys) > MaxSignatures {
		return fail(ErrInconsistent, "a signed object carries 1 to %d signatures", MaxSignatures)
	}
	for i, k := range keys {
		if err := checkSigningKey(k); err != nil {
			return err
		}
		for _, other := range keys[:i] {
			if k.Equal(other) {
				return fail(ErrDuplicateSigner, "the same signing key is given twice")
			}
		}
	}
	return nil
}

// checkSigningKey refuses a key that is not an Ed25519 private key whose
// public half is its seed's.
func checkSigningKey(k ed25519.PrivateKey) error {
	if len(k) != ed25519.PrivateKeySize {
		return fail(ErrInconsistent, "a signing key is not an Ed25519 private key (%d bytes, not %d)", len(k), ed25519.PrivateKeySize)
	}
	if !k.Equal(ed25519.NewKeyFromSeed(k.Seed())) {
		return fail(ErrInconsistent, "a signing key is not an Ed25519 private key: its public half is not its seed's")
	}
	return nil
}

// addSignature signs o with k and inserts the signature before the first
// one whose kid sorts after k's (bytewise): a sorted list stays sorted and
// the signatures already there keep their order and bytes.
func (o *signedObject) addSignature(k ed25519.PrivateKey) error {
	if err := checkSigningKey(k); err != nil {
		return err
	}
	kid := KeyID(k.Public().(ed25519.PublicKey))
	at := len(o.signatures)
	for i, s := range o.signatures {
		if s.KID == string(kid) {
			return fail(ErrDuplicateSigner, "the object already carries a signature by %s", kid)
		}
		if at == len(o.signatures) && s.KID > string(kid) {
			at = i
		}
	}
	if len(o.signatures) >= MaxSignatures {
		return fail(ErrTooLarge, "a signed object carries at most %d signatures", MaxSignatures)
	}
	prot := signProtectedHeader(kid)
	s := Signature{KID: string(kid), Protected: prot, Sig: ed25519.Sign(k, sigStructure(o.bodyProtected, prot, o.payload))}
	o.signatures = append(o.signatures, Signature{})
	copy(o.signatures[at+1:], o.signatures[at:])
	o.signatures[at] = s
	return nil
}

// encode returns the deterministic encoding of o.
func (o *signedObject) encode() ([]byte, error) {
	sigs := make([]any, 0, len(o.signatures))
	for _, s := range o.signatures {
		sigs = append(sigs, []any{s.Protected, map[int]any{}, s.Sig})
	}
	out, err := amp.Marshal(cbor.Tag{Number: coseSignTag, Content: []any{o.bodyProtected, map[int]any{}, o.payload, sigs}})
	if err != nil {
		return nil, fail(ErrMalformed, "cannot encode the signed object").WithCause(err)
	}
	return out, nil
}

// decodeSigned parses the first item of a bundle. It checks structure and
// headers only; signatures are verified by the caller.
func decodeSigned(item []byte) (*signedObject, error) {
	return decodeCOSE(item, MediaTypeManifest)
}

// coseContentType returns the content type of an encoded COSE_Sign without
// checking anything else ("" when item is not one).
func coseContentType(item []byte) string {
	// Within the item's own length, not amp's default of 16 MiB: a reader
	// may take a larger item (ReaderOptions.MaxManifestSize, BUNDLE-28).
	lim := amp.Limits{MaxMessageSize: len(item) + 1}
	var tag cbor.RawTag
	if err := lim.Unmarshal(item, &tag); err != nil || tag.Number != coseSignTag {
		return ""
	}
	var parts []cbor.RawMessage
	if err := lim.Unmarshal(tag.Content, &parts); err != nil || len(parts) != 4 {
		return ""
	}
	var prot []byte
	if err := amp.Unmarshal(parts[0], &prot); err != nil {
		return ""
	}
	var hdr map[int]string
	if err := amp.Unmarshal(prot, &hdr); err != nil || len(hdr) != 1 {
		return ""
	}
	return hdr[coseHeaderCType]
}

// decodeCOSE parses a COSE_Sign whose payload has content type ctype. It
// checks structure and headers only; signatures are verified by the
// caller.
func decodeCOSE(item []byte, ctype string) (*signedObject, error) {
	lim := amp.Limits{MaxMessageSize: len(item) + 1, MaxArrayLen: MaxArtifacts, MaxMapPairs: MaxAliases}
	if err := checkDeterministic(lim, item, "signed object"); err != nil {
		return nil, err
	}
	// Every decoding below is held to lim, the item's own length, not to
	// amp's default of 16 MiB: a reader may take a larger item
	// (ReaderOptions.MaxManifestSize), which was refused here as
	// unknown_format (BUNDLE-28).
	var tag cbor.RawTag
	if err := lim.Unmarshal(item, &tag); err != nil || tag.Number != coseSignTag {
		return nil, fail(ErrUnknownFormat, "file does not start with a COSE_Sign (tag 98) object")
	}
	var parts []cbor.RawMessage
	if err := lim.Unmarshal(tag.Content, &parts); err != nil || len(parts) != 4 {
		return nil, fail(ErrUnknownFormat, "COSE_Sign must be an array of 4 items")
	}
	o := &signedObject{}
	if err := amp.Unmarshal(parts[0], &o.bodyProtected); err != nil || !bytes.Equal(o.bodyProtected, bodyProtectedHeader(ctype)) {
		return nil, fail(ErrUnknownFormat, "COSE_Sign protected header must be exactly {3: %q}", ctype)
	}
	if !bytes.Equal(parts[1], []byte{0xa0}) {
		return nil, fail(ErrUnknownFormat, "COSE_Sign unprotected header must be empty")
	}
	if err := lim.Unmarshal(parts[2], &o.payload); err != nil || o.payload == nil {
		return nil, fail(ErrUnknownFormat, "COSE_Sign payload must be an embedded byte string")
	}
	var sigs []cbor.RawMessage
	if err := amp.Unmarshal(parts[3], &sigs); err != nil || len(sigs) == 0 {
		return nil, fail(ErrUnknownFormat, "COSE_Sign must carry at least one signature")
	}
	if len(sigs) > MaxSignatures {
		return nil, fail(ErrTooLarge, "signed object carries more than %d signatures", MaxSignatures)
	}
	kids := map[string]bool{}
	for _, raw := range sigs {
		var sp []cbor.RawMessage
		if err := amp.Unmarshal(raw, &sp); err != nil || len(sp) != 3 {
			return nil, fail(ErrUnknownFormat, "COSE_Signature must be an array of 3 items")
		}
		var s Signature
		if err := amp.Unmarshal(sp[0], &s.Protected); err != nil {
			return nil, fail(ErrUnknownFormat, "COSE_Signature protected header must be a byte string")
		}
		var hdr map[int]cbor.RawMessage
		if err := amp.Unmarshal(s.Protected, &hdr); err != nil || len(hdr) != 2 {
			return nil, fail(ErrUnknownFormat, "COSE_Signature protected header must be {1: alg, 4: kid}")
		}
		var alg int64
		if err := amp.Unmarshal(hdr[coseHeaderAlg], &alg); err != nil {
			return nil, fail(ErrUnknownFormat, "COSE_Signature protected header must be {1: alg, 4: kid}")
		}
		if alg != coseAlgEdDSA {
			return nil, fail(ErrUnsupportedAlgorithm, "signature algorithm is not EdDSA (-8)")
		}
		var kid []byte
		if err := amp.Unmarshal(hdr[coseHeaderKID], &kid); err != nil || len(kid) == 0 || len(kid) > maxKIDLen {
			return nil, fail(ErrUnknownFormat, "COSE_Signature protected header must carry a kid byte string")
		}
		// The protected header must be exactly what a writer produces.
		if !bytes.Equal(s.Protected, signProtectedHeader(kid)) {
			return nil, fail(ErrUnknownFormat, "COSE_Signature protected header is not in its one allowed form")
		}
		s.KID = string(kid)
		// One signature per key: a second one could only be an attempt
		// to count one key twice toward a threshold.
		if kids[s.KID] {
			return nil, fail(ErrDuplicateSigner, "two signatures carry the same kid")
		}
		kids[s.KID] = true
		if !bytes.Equal(sp[1], []byte{0xa0}) {
			return nil, fail(ErrUnknownFormat, "COSE_Signature unprotected header must be empty")
		}
		if err := amp.Unmarshal(sp[2], &s.Sig); err != nil || len(s.Sig) != coseSignatureSize {
			return nil, fail(ErrUnknownFormat, "COSE_Signature signature must be %d bytes", coseSignatureSize)
		}
		o.signatures = append(o.signatures, s)
	}
	// The one allowed form of the whole (docs/FORMAT.md §2): a tag on any
	// item inside (the decoder takes a tagged byte string or array for the
	// bare one) or a self-described CBOR prefix before tag 98 would give
	// one signed object many files, every signature still verifying
	// (docs/SPEC-DECISIONS.md BUNDLE-26).
	if again, err := o.encode(); err != nil || !bytes.Equal(again, item) {
		return nil, fail(ErrUnknownFormat, "COSE_Sign is not in its one allowed form (a tag on one of its items, or around it)")
	}
	return o, nil
}

// verify checks every signature of o against the key its kid names,
// whether or not p trusts that key (FORMAT.md §2, "Which signatures
// count"), and returns the distinct trusted keys among the signers. The
// signature list is covered by no signature: a copy with a forged
// signature under the kid of a key some other store trusts would otherwise
// pass here and be kept and relayed, and be refused wherever that key is
// trusted. Statements are held to the same rule (VerifyStatement runs
// VerifyAll, FORMAT.md §21).
func (o *signedObject) verify(p *Policy) ([]*TrustedKey, error) {
	return o.signers(p, true)
}

// signers returns the distinct keys of p whose signatures on o verify. A
// trusted key with a bad signature fails at once (tampering). With all,
// every other signature is checked too, against the key its kid names
// (checkSignature); without it, signatures by keys p does not know are
// skipped unread (SignedObject.Verify). No verified trusted signature at
// all is ErrUntrustedKey. Keys are counted by their kid after
// deduplication: the same key under two names of p counts once.
func (o *signedObject) signers(p *Policy, all bool) ([]*TrustedKey, error) {
	var ok []*TrustedKey
	seen := map[string]bool{}
	for _, s := range o.signatures {
		k, known := p.find([]byte(s.KID))
		if !known && !all {
			continue
		}
		if err := o.checkSignature(s, k); err != nil {
			return nil, err
		}
		if !known || seen[string(k.Key)] {
			continue
		}
		seen[string(k.Key)] = true
		ok = append(ok, k)
	}
	if len(ok) == 0 {
		return nil, untrustedKeyError(o)
	}
	return ok, nil
}

// checkSignature verifies s against the key its kid names: k, the trusted
// key of that kid, or nil when the reader does not trust it; then the key
// is read from the kid itself, which must be an Ed25519 did:key (FORMAT.md
// §2: a did:key is self-describing, and no other kid is resolved, so
// nothing here reaches the network): else unknown_format. A key read from
// a kid is only ever used to check its own signature, never trusted. The
// errors name a key only by its canonical did:key, never by the file's
// bytes.
func (o *signedObject) checkSignature(s Signature, k *TrustedKey) error {
	var key ed25519.PublicKey
	if k != nil {
		// A trusted key of small order, or not in canonical form, verifies
		// nothing, whoever built the policy (TRUST-21): for it, one fixed
		// signature verifies every message.
		if amp.CheckEd25519PublicKey(k.Key) != nil {
			return fail(ErrBadSignature, "trusted key %q is an ed25519 key of small order or not in canonical form: it verifies nothing", k.Name).
				WithDetails(map[string]any{"signer": k.Name})
		}
		key = k.Key
	} else {
		pub, ok := KeyFromKID(s.KID)
		if !ok {
			return fail(ErrUnknownFormat, "a signature's kid is not an ed25519 did:key")
		}
		key = pub
	}
	if ed25519.Verify(key, sigStructure(o.bodyProtected, s.Protected, o.payload), s.Sig) {
		return nil
	}
	if k != nil {
		return fail(ErrBadSignature, "signature by trusted key %q does not verify", k.Name).
			WithDetails(map[string]any{"signer": k.Name, "key": amp.DIDKey(k.Key)})
	}
	return fail(ErrBadSignature, "the signature by %s, a key this policy does not trust, does not verify: every signature must verify, trusted or not", amp.DIDKey(key)).
		WithDetails(map[string]any{"key": amp.DIDKey(key)})
}

// readItem reads item 0 of a bundle from br with amp's strict reader: at
// most budget bytes in all and nested at most 16 deep (docs/FORMAT.md §5,
// §6). Nothing is allocated for a length before it is checked against the
// budget.
func readItem(br *bufio.Reader, budget int64) ([]byte, error) {
	item, err := amp.ReadItem(br, budget, maxManifestDepth)
	switch {
	case err == nil:
		return item, nil
	case streamVerdict(err):
		return nil, err // the stream's own verdict, as it named it (BUNDLE-32)
	case errors.Is(err, io.EOF), errors.Is(err, amp.ErrTruncated):
		return nil, fail(ErrTruncated, "file ends inside the signed manifest")
	case errors.Is(err, amp.ErrLimitExceeded):
		return nil, fail(ErrTooLarge, "signed manifest is larger than %d bytes", budget)
	case errors.Is(err, amp.ErrTooDeep):
		return nil, fail(ErrMalformed, "signed manifest nests too deeply")
	}
	var ae *amp.Error
	if errors.As(err, &ae) {
		return nil, fail(ErrMalformed, "signed manifest is not valid cbor").WithCause(err)
	}
	// An error of the reader itself (the medium): named, as every error
	// of this package is, and never for the content (BUNDLE-30).
	return nil, fail(ErrIO, "cannot read the signed manifest").WithCause(err)
}
