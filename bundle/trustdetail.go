package bundle

import (
	"crypto/ed25519"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// UntrustedKeyDetails are the details of an ErrUntrustedKey error: the key
// of each signature of the bundle, none of which the trust policy holds
// (the --json error document carries them). A key is shown only when the
// file's kid is a canonical Ed25519 did:key; any other kid is
// attacker-chosen bytes and is never echoed.
type UntrustedKeyDetails struct {
	Signers []UntrustedSigner `json:"signers"`
}

// UntrustedSigner is one signature of a bundle no trusted key signed.
type UntrustedSigner struct {
	// Key is the signer's did:key, or "" when the kid is not a canonical
	// Ed25519 did:key.
	Key string `json:"key,omitempty"`
}

// safeKeyID returns kid when it is a canonical Ed25519 did:key, else "".
func safeKeyID(kid string) string {
	doc, err := amp.DIDKeyDocument(kid)
	if err != nil || len(doc.Methods) == 0 || doc.Methods[0].KeyType != amp.KeyEd25519 {
		return ""
	}
	if amp.DIDKey(ed25519.PublicKey(doc.Methods[0].PublicKey)) != kid {
		return ""
	}
	return kid
}

// untrustedKeyError is ErrUntrustedKey for a signed object none of whose
// signatures is by a trusted key: it names the signers.
func untrustedKeyError(o *signedObject) *amp.Error {
	d := UntrustedKeyDetails{Signers: []UntrustedSigner{}}
	ids := []string{}
	for _, s := range o.signatures {
		id := safeKeyID(s.KID)
		d.Signers = append(d.Signers, UntrustedSigner{Key: id})
		if id == "" {
			id = "a key id that is not an ed25519 did:key"
		}
		ids = append(ids, id)
	}
	return fail(ErrUntrustedKey, "not signed by a trusted key: signed by %s, which this policy does not trust", strings.Join(ids, ", ")).WithDetails(d)
}
