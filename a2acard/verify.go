package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/url"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
)

// Verified is what Verify established of a card: which key signed it,
// the bytes that signature covers, and the members a caller shows, read
// from those bytes.
type Verified struct {
	// KeyID is the kid of the signature that verified.
	KeyID string
	// Payload is the card's canonical form without its signatures and
	// defaults: the bytes the signature covers.
	Payload []byte
	// Name and Version are the card's.
	Name, Version string
	// Skills are the ids of the card's skills, in card order.
	Skills []string
}

// header is a protected header as Verify reads it.
type header struct {
	alg, kid, typ string
	hasTyp        bool
	unknown       bool // a parameter this package does not implement (crit, b64, x5c, ...)
	names         map[string]bool
}

// Verify checks the signed A2A Agent Card data against the Ed25519 key pub
// named by kid ("" means DIDKeyID(pub); a kid is a DID or DID URL, and a
// did:key kid must be pub's own):
// the card is at most MaxCardBytes of I-JSON with no duplicate member, no
// member of a Card struct spelt in another case or with other underscores
// or dashes (A2A-10, A2A-12, A2A-15), nor an A2A 0.3 endpoint member
// (url, additionalInterfaces, their url) spelt so (A2A-19), and every
// number in its RFC 8785 form; every signatures entry is a well-formed
// AgentCardSignature (a protected jku or x5u, if any, an https WebURL,
// A2A-20, A2A-21); one
// with the kid exists, is EdDSA with typ "JOSE", and verifies over the
// canonical card without its signatures and defaults (A2A §8.4.3); any
// other entry with the kid verifies too; and the signed card has the
// REQUIRED members of an AgentCard, no skill id, extension uri or id of
// our extension's params twice (A2A-13), those ids printable ASCII
// (A2A-22), no extension uri spelt like ExtensionURI but not exactly it
// (A2A-23), and web URLs only (WebURL),
// securitySchemes' included (A2A-14, A2A-16). Signatures under other kids
// are checked for form only. A key of small order or not in canonical form
// (amp.CheckEd25519PublicKey), which anybody can sign as, is
// invalid_public_key. Nothing is returned but an error until every check
// has passed.
func Verify(data []byte, pub ed25519.PublicKey, kid string) (*Verified, error) {
	if len(data) > MaxCardBytes {
		return nil, fail(ErrTooLarge, "the card is larger than %d bytes", MaxCardBytes)
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, amp.Named(0, "invalid_public_key", "the verification key is not an ed25519 public key")
	}
	if amp.CheckEd25519PublicKey(pub) != nil {
		return nil, amp.Named(0, "invalid_public_key", "the verification key is an ed25519 key of small order or not in canonical form: no one holds its private key, and anybody can sign as it")
	}
	if kid == "" {
		kid = DIDKeyID(pub)
	}
	if err := checkKid(pub, kid); err != nil {
		return nil, err
	}
	tree, err := jcs.ParseLimited(data, jcs.MaxDepth, MaxCardValues)
	if err != nil {
		return nil, parseError(err)
	}
	card, ok := tree.(jcs.Object)
	if !ok {
		return nil, fail(ErrMalformed, "the card is not a JSON object")
	}
	if cardNames().caseVariant(card) {
		return nil, fail(ErrDuplicateMember, "an object of the card spells one of its AgentCard members in another case")
	}
	if endpoint03Variant(card) {
		return nil, fail(ErrDuplicateMember, "the card spells an A2A 0.3 endpoint member (url, additionalInterfaces) in another case or with other underscores or dashes")
	}
	if !numbersCanonical(tree) {
		return nil, fail(ErrNumberNotCanonical, "a number of the card is not written in its RFC 8785 form")
	}
	sigs, err := signatureEntries(card)
	if err != nil {
		return nil, err
	}
	stripped := stripDefaults(card.Without("signatures"), cardShape)
	// The canonical form is at most about as long as the card: its numbers
	// are canonical already, and escapes only shrink.
	payload, err := jcs.AppendCanonical(make([]byte, 0, len(data)), stripped)
	if err != nil {
		return nil, parseError(err)
	}
	// One encoding of the payload serves every signature under the kid.
	in := signingInputs(payload)
	found := false
	for _, s := range sigs {
		h, sig, err := readSignature(s)
		if err != nil {
			return nil, err
		}
		if h.kid != kid {
			continue
		}
		found = true
		if err := h.check(); err != nil {
			return nil, err
		}
		if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, in.of(s.Protected), sig) {
			return nil, fail(ErrBadSignature, "the signature does not verify over the canonical card with the given key")
		}
	}
	if !found {
		return nil, fail(ErrKidMismatch, "no signature of the card names the given key")
	}
	v, err := required(stripped)
	if err != nil {
		return nil, err
	}
	v.KeyID, v.Payload = kid, payload
	return v, nil
}

// signingInputBuf builds the JWS Signing Inputs of one payload under
// several protected headers in one buffer: the payload's base64url
// written once, each header written in front of it.
type signingInputBuf struct {
	buf []byte // room for the longest header, '.', then the payload
	at  int    // where '.' and the payload start
}

func signingInputs(payload []byte) *signingInputBuf {
	room := base64.RawURLEncoding.EncodedLen(maxHeaderBytes)
	buf := make([]byte, room+1, room+1+base64.RawURLEncoding.EncodedLen(len(payload)))
	buf[room] = '.'
	return &signingInputBuf{buf: base64.RawURLEncoding.AppendEncode(buf, payload), at: room}
}

// of returns protected "." BASE64URL(payload), valid until the next call;
// readSignature has bounded protected to maxHeaderBytes decoded.
func (b *signingInputBuf) of(protected string) []byte {
	start := b.at - len(protected)
	copy(b.buf[start:], protected)
	return b.buf[start:]
}

// check applies this package's header policy to the signature under the
// expected kid.
func (h header) check() error {
	if h.alg != Alg {
		return fail(ErrAlgUnsupported, "the signature's alg is not EdDSA")
	}
	if !h.hasTyp || !asciiEqualFold(h.typ, Typ) {
		return fail(ErrHeaderUnsupported, "the protected header's typ is not JOSE")
	}
	if h.unknown {
		return fail(ErrHeaderUnsupported, "the protected header has a parameter this verifier does not implement")
	}
	return nil
}

// numbersCanonical reports whether every number of v is written in its
// RFC 8785 form.
func numbersCanonical(v any) bool {
	switch t := v.(type) {
	case json.Number:
		return jcs.IsCanonicalNumber(string(t))
	case []any:
		for _, x := range t {
			if !numbersCanonical(x) {
				return false
			}
		}
	case jcs.Object:
		for _, m := range t {
			if !numbersCanonical(m.Value) {
				return false
			}
		}
	}
	return true
}

// signatureEntries reads the card's signatures member: 1 to MaxSignatures
// objects with a string protected and signature, an optional object
// header, and nothing else.
func signatureEntries(card jcs.Object) ([]Signature, error) {
	raw, ok := card.Get("signatures")
	if !ok || raw == nil {
		return nil, fail(ErrUnsigned, "the card has no signatures")
	}
	arr, ok := raw.([]any)
	if !ok {
		return nil, fail(ErrSignatureMalformed, "the card's signatures is not an array")
	}
	if len(arr) == 0 {
		return nil, fail(ErrUnsigned, "the card's signatures array is empty")
	}
	if len(arr) > MaxSignatures {
		return nil, fail(ErrTooLarge, "the card has more than %d signatures", MaxSignatures)
	}
	out := make([]Signature, 0, len(arr))
	for i, x := range arr {
		o, ok := x.(jcs.Object)
		if !ok {
			return nil, fail(ErrSignatureMalformed, "signature %d is not an object", i)
		}
		var s Signature
		var hasSig bool
		for _, m := range o {
			switch m.Name {
			case "protected", "signature":
				str, ok := m.Value.(string)
				if !ok {
					return nil, fail(ErrSignatureMalformed, "signature %d: %s is not a string", i, m.Name)
				}
				if m.Name == "protected" {
					s.Protected = str
				} else {
					s.Signature, hasSig = str, true
				}
			case "header":
				h, ok := m.Value.(jcs.Object)
				if !ok {
					return nil, fail(ErrSignatureMalformed, "signature %d: header is not an object", i)
				}
				b, _ := jcs.Marshal(h)
				s.Header = b
			default:
				return nil, fail(ErrSignatureMalformed, "signature %d has a member an AgentCardSignature does not define", i)
			}
		}
		// An empty signature is well-formed JWS (alg "none" has one): the
		// header policy, then the signature check, refuse it by name.
		if s.Protected == "" || !hasSig {
			return nil, fail(ErrSignatureMalformed, "signature %d lacks protected or signature", i)
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeB64 decodes unpadded base64url of at most max bytes in its one
// canonical spelling (amp.DecodeBase64URLStrict: no other character, no
// CR or LF, no non-zero trailing bits).
func decodeB64(s string, max int) ([]byte, bool) {
	if len(s) > base64.RawURLEncoding.EncodedLen(max) {
		return nil, false
	}
	return amp.DecodeBase64URLStrict(s)
}

// readSignature decodes one entry: its protected header and signature
// bytes, and checks that an unprotected header neither repeats a
// protected parameter (RFC 7515 §7.2.1) nor carries one that must be
// protected.
func readSignature(s Signature) (header, []byte, error) {
	hb, ok := decodeB64(s.Protected, maxHeaderBytes)
	if !ok {
		return header{}, nil, fail(ErrSignatureMalformed, "a protected header is not base64url")
	}
	sig, ok := decodeB64(s.Signature, ed25519.SignatureSize)
	if !ok {
		return header{}, nil, fail(ErrSignatureMalformed, "a signature is not base64url of at most %d bytes", ed25519.SignatureSize)
	}
	tree, err := jcs.Parse(hb, 4)
	obj, ok := tree.(jcs.Object)
	if err != nil || !ok {
		return header{}, nil, fail(ErrSignatureMalformed, "a protected header is not a JSON object with unique member names")
	}
	h := header{names: map[string]bool{}}
	for _, m := range obj {
		h.names[m.Name] = true
		str, isStr := m.Value.(string)
		switch m.Name {
		case "alg", "kid", "typ", "jku", "x5u":
			if !isStr {
				return header{}, nil, fail(ErrSignatureMalformed, "a protected header's %s is not a string", m.Name)
			}
		}
		switch m.Name {
		case "alg":
			h.alg = str
		case "kid":
			h.kid = str
		case "typ":
			h.typ, h.hasTyp = str, true
		case "jku":
			// Never fetched here (A2A-2), but a client dials it for the
			// key: RFC 7515 §4.1.2 asks for TLS (A2A-20).
			if !jkuURL(str) {
				return header{}, nil, fail(ErrSignatureMalformed, "a protected header's jku is not an absolute https URL with a host and no userinfo")
			}
		case "x5u":
			// Not implemented here (refused under the verifying kid), but a
			// client checking the entry dials it for the certificate
			// chain, and RFC 7515 §4.1.5 asks for TLS as of a jku (A2A-21).
			if !jkuURL(str) {
				return header{}, nil, fail(ErrSignatureMalformed, "a protected header's x5u is not an absolute https URL with a host and no userinfo")
			}
			h.unknown = true
		default:
			h.unknown = true
		}
	}
	if h.alg == "" || h.kid == "" {
		return header{}, nil, fail(ErrSignatureMalformed, "a protected header lacks alg or kid")
	}
	if s.Header != nil {
		tree, _ := jcs.Parse(s.Header, jcs.MaxDepth)
		unprotected, _ := tree.(jcs.Object) // signatureEntries wrote it from an object
		for _, m := range unprotected {
			switch {
			case h.names[m.Name]:
				return header{}, nil, fail(ErrSignatureMalformed, "an unprotected header repeats a protected parameter")
			case mustBeProtected(m.Name):
				return header{}, nil, fail(ErrSignatureMalformed, "an unprotected header carries a parameter that must be protected")
			}
		}
	}
	return h, sig, nil
}

// jkuURL reports whether s is a jku (or x5u) Verify accepts: a WebURL
// whose scheme is https, as RFC 7515 §4.1.2 requires of the JWK Set's
// retrieval and §4.1.5 of the certificate's (docs/SPEC-DECISIONS.md
// A2A-20, A2A-21).
func jkuURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && WebURL(s)
}

// mustBeProtected reports whether a header parameter may appear only in
// the protected header (A2A-2): those that choose the algorithm, the key
// or how the payload is read (alg, kid, typ, crit, b64), and every key
// reference of RFC 7515 §4.1.2-4.1.8 (jku, jwk, x5u, x5c, x5t, x5t#S256).
// An unprotected header is outside the signature, so anyone relaying the
// card can add one: a key named there is the relay's, not the signer's.
func mustBeProtected(name string) bool {
	switch name {
	case "alg", "kid", "typ", "crit", "b64", "jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256":
		return true
	}
	return false
}

// asciiEqualFold compares a and b ignoring ASCII case only, as RFC 7515
// §4.1.9 compares typ (media type names); Unicode folding would take
// "JO\u017fE" for "JOSE".
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
