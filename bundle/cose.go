package bundle

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
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

// signedObject is the decoded first item of a bundle: a COSE_Sign whose
// payload is the manifest.
type signedObject struct {
	bodyProtected []byte
	payload       []byte
	signatures    []Signature
}

func bodyProtectedHeader() []byte {
	b, _ := amp.Marshal(map[int]string{coseHeaderCType: MediaTypeManifest})
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

// signManifest returns the encoded COSE_Sign over payload with one
// signature per key.
func signManifest(payload []byte, keys ...ed25519.PrivateKey) ([]byte, error) {
	if len(keys) == 0 || len(keys) > MaxSignatures {
		return nil, fail(ErrInconsistent, "a bundle carries 1 to %d signatures", MaxSignatures)
	}
	body := bodyProtectedHeader()
	sigs := make([]any, 0, len(keys))
	for _, k := range keys {
		prot := signProtectedHeader(KeyID(k.Public().(ed25519.PublicKey)))
		sig := ed25519.Sign(k, sigStructure(body, prot, payload))
		sigs = append(sigs, []any{prot, map[int]any{}, sig})
	}
	out, err := amp.Marshal(cbor.Tag{Number: coseSignTag, Content: []any{body, map[int]any{}, payload, sigs}})
	if err != nil {
		return nil, fail(ErrMalformed, "cannot encode the signed manifest").WithCause(err)
	}
	return out, nil
}

// decodeSigned parses the first item of a bundle. It checks structure and
// headers only; signatures are verified by the caller.
func decodeSigned(item []byte) (*signedObject, error) {
	lim := amp.Limits{MaxMessageSize: len(item) + 1, MaxArrayLen: MaxArtifacts, MaxMapPairs: MaxAliases}
	canon, err := lim.Canonical(item)
	if err != nil {
		return nil, fail(ErrMalformed, "signed manifest is not valid cbor").WithCause(err)
	}
	if !bytes.Equal(canon, item) {
		return nil, fail(ErrMalformed, "signed manifest is not in deterministic cbor encoding")
	}
	var tag cbor.RawTag
	if err := amp.Unmarshal(item, &tag); err != nil || tag.Number != coseSignTag {
		return nil, fail(ErrUnknownFormat, "file does not start with a COSE_Sign (tag 98) object")
	}
	var parts []cbor.RawMessage
	if err := amp.Unmarshal(tag.Content, &parts); err != nil || len(parts) != 4 {
		return nil, fail(ErrUnknownFormat, "COSE_Sign must be an array of 4 items")
	}
	o := &signedObject{}
	if err := amp.Unmarshal(parts[0], &o.bodyProtected); err != nil || !bytes.Equal(o.bodyProtected, bodyProtectedHeader()) {
		return nil, fail(ErrUnknownFormat, "COSE_Sign protected header must be exactly {3: %q}", MediaTypeManifest)
	}
	if !bytes.Equal(parts[1], []byte{0xa0}) {
		return nil, fail(ErrUnknownFormat, "COSE_Sign unprotected header must be empty")
	}
	if err := amp.Unmarshal(parts[2], &o.payload); err != nil || o.payload == nil {
		return nil, fail(ErrUnknownFormat, "COSE_Sign payload must be an embedded byte string")
	}
	var sigs []cbor.RawMessage
	if err := amp.Unmarshal(parts[3], &sigs); err != nil || len(sigs) == 0 {
		return nil, fail(ErrUnknownFormat, "COSE_Sign must carry at least one signature")
	}
	if len(sigs) > MaxSignatures {
		return nil, fail(ErrTooLarge, "bundle carries more than %d signatures", MaxSignatures)
	}
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
		if !bytes.Equal(sp[1], []byte{0xa0}) {
			return nil, fail(ErrUnknownFormat, "COSE_Signature unprotected header must be empty")
		}
		if err := amp.Unmarshal(sp[2], &s.Sig); err != nil || len(s.Sig) != coseSignatureSize {
			return nil, fail(ErrUnknownFormat, "COSE_Signature signature must be %d bytes", coseSignatureSize)
		}
		o.signatures = append(o.signatures, s)
	}
	return o, nil
}

// verify checks the signatures against p and returns the trusted keys whose
// signatures verify. A trusted key with a bad signature fails at once
// (tampering); signatures by keys p does not know are ignored; no verified
// trusted signature at all is ErrUntrustedKey.
func (o *signedObject) verify(p *Policy) ([]*TrustedKey, error) {
	var ok []*TrustedKey
	for _, s := range o.signatures {
		k, known := p.find([]byte(s.KID))
		if !known {
			continue
		}
		if !ed25519.Verify(k.Key, sigStructure(o.bodyProtected, s.Protected, o.payload), s.Sig) {
			return nil, fail(ErrBadSignature, "signature by trusted key %q does not verify", k.Name)
		}
		ok = append(ok, k)
	}
	if len(ok) == 0 {
		return nil, fail(ErrUntrustedKey, "bundle is not signed by a trusted key")
	}
	return ok, nil
}

// Streaming reads of CBOR heads and items.

// readHead reads one CBOR head from br. It refuses indefinite lengths and
// reserved values. EOF before the first byte is io.EOF; inside the head it
// is ErrTruncated.
func readHead(br *bufio.Reader) (major byte, arg uint64, raw []byte, err error) {
	b, err := br.ReadByte()
	if err != nil {
		return 0, 0, nil, err
	}
	major, info := b>>5, b&0x1f
	raw = []byte{b}
	var n int
	switch {
	case info < 24:
		return major, uint64(info), raw, nil
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	default:
		return 0, 0, nil, fail(ErrMalformed, "indefinite-length or reserved cbor item")
	}
	var buf [8]byte
	if _, err := io.ReadFull(br, buf[8-n:]); err != nil {
		return 0, 0, nil, fail(ErrTruncated, "file ends inside a cbor head")
	}
	arg = binary.BigEndian.Uint64(buf[:])
	return major, arg, append(raw, buf[8-n:]...), nil
}

// minimalHead reports whether raw is the shortest head for its argument.
func minimalHead(raw []byte, arg uint64) bool {
	switch len(raw) {
	case 1:
		return true
	case 2:
		return arg >= 24
	case 3:
		return arg > 0xff
	case 5:
		return arg > 0xffff
	}
	return arg > 0xffffffff
}

// readItem reads one complete CBOR data item from br, at most budget bytes
// in all and nested at most 16 deep (FORMAT.md §6). Nothing is allocated
// for a length before it is checked against the budget.
func readItem(br *bufio.Reader, budget int64) ([]byte, error) {
	var out bytes.Buffer
	remaining := budget
	var walk func(depth int) error
	walk = func(depth int) error {
		if depth > 16 {
			return fail(ErrMalformed, "signed manifest nests too deeply")
		}
		major, arg, raw, err := readHead(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fail(ErrTruncated, "file ends inside the signed manifest")
			}
			return err
		}
		if remaining -= int64(len(raw)); remaining < 0 {
			return fail(ErrTooLarge, "signed manifest is larger than %d bytes", budget)
		}
		out.Write(raw)
		switch major {
		case 2, 3:
			if arg > uint64(remaining) {
				return fail(ErrTooLarge, "signed manifest is larger than %d bytes", budget)
			}
			remaining -= int64(arg)
			if _, err := io.CopyN(&out, br, int64(arg)); err != nil {
				return fail(ErrTruncated, "file ends inside the signed manifest")
			}
		case 4, 5:
			n := arg
			if major == 5 {
				if arg > uint64(remaining)/2 {
					return fail(ErrTooLarge, "signed manifest is larger than %d bytes", budget)
				}
				n = 2 * arg
			}
			if n > uint64(remaining) {
				return fail(ErrTooLarge, "signed manifest is larger than %d bytes", budget)
			}
			for i := uint64(0); i < n; i++ {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
		case 6:
			return walk(depth + 1)
		}
		return nil
	}
	if err := walk(0); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
