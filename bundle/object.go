package bundle

import (
	"crypto/ed25519"
	"crypto/sha256"
)

// Content types of the signed objects of FORMAT.md besides the bundle
// manifest: each is a COSE_Sign exactly like item 0 of a bundle (§2), with
// its own content type in the body's protected header.
const (
	MediaTypeReceipt    = "application/ampbundle-receipt+cbor"    // FORMAT.md §20
	MediaTypeRevocation = "application/ampbundle-revocation+cbor" // FORMAT.md §21
)

// SignedObject is a decoded COSE_Sign of FORMAT.md §2 and its payload. Its
// signatures are not verified by DecodeObject: VerifyAll or Verify does it.
type SignedObject struct {
	ContentType string
	Payload     []byte
	Signatures  []Signature
	obj         *signedObject
}

// SignObject returns the deterministic COSE_Sign of payload, content type
// ctype, signed by each key (signatures sorted by kid, one per key).
func SignObject(ctype string, payload []byte, keys []ed25519.PrivateKey) ([]byte, error) {
	return signCOSE(ctype, payload, keys)
}

// DecodeObject decodes a COSE_Sign whose content type must be ctype, with
// the checks of FORMAT.md §2 (deterministic encoding, the one allowed form
// of every header, 1 to 8 signatures, one per kid).
func DecodeObject(item []byte, ctype string) (*SignedObject, error) {
	o, err := decodeCOSE(item, ctype)
	if err != nil {
		return nil, err
	}
	return &SignedObject{ContentType: ctype, Payload: o.payload, Signatures: append([]Signature(nil), o.signatures...), obj: o}, nil
}

// PayloadSHA256 returns the SHA-256 of o's payload: a signed statement's
// identity (docs/FORMAT.md §21, "Identity"). Every signature covers the payload (and
// the body's protected header, which its content type fixes), while the
// list of signatures is not covered by any: anyone can add a signature by
// a key of their own (CosignStatement), reorder them or drop some, and
// the result, another file, is the same statement. A store keeps and
// charges a statement once per payload, and a trust statement's prev
// names statement n-1 by its payload (§22).
func (o *SignedObject) PayloadSHA256() []byte {
	sum := sha256.Sum256(o.Payload)
	return sum[:]
}

// ContentType returns the content type of an encoded COSE_Sign ("" when
// item is not one): how an importer tells a bundle from a statement.
func ContentType(item []byte) string { return coseContentType(item) }

// VerifyAll checks every signature against the key its kid names,
// trusted or not (FORMAT.md §2, §21): a kid that is not an Ed25519
// did:key is unknown_format, a signature that does not verify
// bad_signature.
func (o *SignedObject) VerifyAll() error { return o.obj.verifyAll() }

// Verify checks the signatures of keys p trusts (a bad one fails) and
// returns the distinct trusted keys whose signatures verify. Signatures by
// keys p does not know are not read: a caller that keeps or relays the
// file runs VerifyAll as well (VerifyStatement does, and a bundle's
// reader checks every signature, FORMAT.md §2); Verify alone only counts
// signers of a file already checked so.
func (o *SignedObject) Verify(p *Policy) ([]TrustedKey, error) {
	ks, err := o.obj.signers(p, false)
	if err != nil {
		return nil, err
	}
	out := make([]TrustedKey, len(ks))
	for i, k := range ks {
		out[i] = *k
	}
	return out, nil
}

// CosignStatement adds key's signature to a signed statement (a one-item
// file such as a revocation, FORMAT.md §21) after checking its form and
// every signature already there: the result differs from data only by the
// inserted COSE_Signature, at its place in kid order.
func CosignStatement(data []byte, key ed25519.PrivateKey) ([]byte, error) {
	ct := ContentType(data)
	switch ct {
	case MediaTypeRevocation:
		if _, _, err := ParseRevocation(data); err != nil {
			return nil, err
		}
	case MediaTypeRotation:
		if _, _, err := ParseRotation(data); err != nil {
			return nil, err
		}
	case MediaTypeHeartbeat:
		if _, _, err := ParseHeartbeat(data); err != nil {
			return nil, err
		}
	default:
		return nil, fail(ErrUnknownFormat, "not a signed statement this version can co-sign")
	}
	o, err := decodeCOSE(data, ct)
	if err != nil {
		return nil, err
	}
	if err := o.verifyAll(); err != nil {
		return nil, err
	}
	if err := o.addSignature(key); err != nil {
		return nil, err
	}
	return o.encode()
}
