package bundle

import (
	"bufio"
	"crypto/ed25519"
	"io"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// CosignOptions configures Cosign.
type CosignOptions struct {
	// Now is the clock: an expired bundle is not signed. Required.
	Now func() time.Time
	// MaxManifestSize and MaxArtifactSize are the reader caps
	// (FORMAT.md §6); zero means the defaults. A MaxManifestSize over
	// the default is refused, as ReaderOptions' is.
	MaxManifestSize int64
	MaxArtifactSize int64
}

// KeyFromKID returns the Ed25519 public key a kid names (a did:key).
func KeyFromKID(kid string) (ed25519.PublicKey, bool) {
	doc, err := amp.DIDKeyDocument(kid)
	if err != nil {
		return nil, false
	}
	for _, m := range doc.Methods {
		if m.KeyType == amp.KeyEd25519 && len(m.PublicKey) == ed25519.PublicKeySize {
			return ed25519.PublicKey(m.PublicKey), true
		}
	}
	return nil, false
}

// verifyAll checks every signature of o against the key its kid names,
// whoever that is (checkSignature): a co-signer adds a signature only to
// an object whose signatures are all genuine (nothing is signed that did
// not verify), and a statement is kept and relayed only so (FORMAT.md §21).
func (o *signedObject) verifyAll() error {
	for _, s := range o.signatures {
		if err := o.checkSignature(s, nil); err != nil {
			return err
		}
	}
	return nil
}

// selfPolicy trusts every signer of o for everything: what a co-signer
// checks a bundle with before adding a signature (its artifacts, DID
// documents and structure), since it may not hold a trust store.
func (o *signedObject) selfPolicy() *Policy { return SelfPolicy(o.signatures) }

// SelfPolicy is the policy that trusts the key each of sigs' kids names
// (a did:key, FORMAT.md §2) for every name, and no other key: what a file
// is checked with when only its own signers matter (a co-signer's check,
// a delta's base given to verify --base). A kid that names no key is left
// out, so its signature fails as a reader's does (TRUST-20). Decoding
// refuses two signatures of one kid and more than MaxSignatures.
func SelfPolicy(sigs []Signature) *Policy {
	p := &Policy{}
	for _, s := range sigs {
		if pub, ok := KeyFromKID(s.KID); ok {
			p.Keys = append(p.Keys, TrustedKey{Name: s.KID, Key: pub, Scopes: []string{"*"}})
		}
	}
	return p
}

// Cosign adds key's signature to the bundle read from r and writes the
// result to w (FORMAT.md §2, "Co-signing"). The manifest, the artifacts and
// the signatures already there are unchanged, byte for byte: only one
// COSE_Signature is inserted, at its place in kid order. Before anything
// is signed the bundle is verified whole: every existing signature against
// the key its kid names, the manifest rules, expiry, every artifact's size
// and hash, nothing trailing. A key that already signed is refused
// (duplicate_signer), as is a ninth signature, and one that would make the
// signed manifest larger than a reader takes (limit_exceeded, BUNDLE-27).
//
// Nothing is signed and nothing is written to w before all of that has
// passed (docs/SPEC-DECISIONS.md BUNDLE-29): r is read twice, first to
// verify the bundle whole, then, from where its signed manifest ends, to
// copy the artifacts after the new signed manifest, each verified again
// as it is copied. Should r change between the two reads, the second one
// fails and what w received must be discarded (the CLI writes to a
// temporary file that it renames only on success).
func Cosign(w io.Writer, r io.ReadSeeker, key ed25519.PrivateKey, opts CosignOptions) (*Manifest, error) {
	if opts.Now == nil || len(key) != ed25519.PrivateKeySize {
		return nil, fail(ErrIO, "cosign needs a clock and an ed25519 key")
	}
	if err := checkSigningKey(key); err != nil {
		return nil, err // before the bundle is read (BUNDLE-25)
	}
	var err error
	if opts.MaxManifestSize, err = manifestCap(opts.MaxManifestSize, "CosignOptions.MaxManifestSize"); err != nil {
		return nil, err
	}
	limit.Default(&opts.MaxArtifactSize, DefaultMaxArtifactSize)
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fail(ErrIO, "cannot read the bundle").WithCause(err)
	}
	br := bufio.NewReaderSize(r, readBufferSize)
	item, obj, err := readSigned(br, opts.MaxManifestSize)
	if err != nil {
		return nil, err
	}
	// Every signature, against the key its kid names (verify, as any
	// reader of a bundle checks them).
	policy := obj.selfPolicy()
	verified, err := obj.verify(policy)
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(obj.payload)
	if err != nil {
		return nil, err
	}
	if exp := m.ExpiresAt; exp != nil && !opts.Now().Before(*exp) {
		return nil, fail(ErrExpired, "bundle expired at %s; an expired bundle is not signed", exp.Format(time.RFC3339))
	}
	ropts := ReaderOptions{Policy: policy, Now: opts.Now, MaxManifestSize: opts.MaxManifestSize, MaxArtifactSize: opts.MaxArtifactSize}
	for _, a := range m.Artifacts {
		if a.Size > uint64(opts.MaxArtifactSize) {
			return nil, fail(ErrTooLarge, "artifact %s is larger than the %d-byte limit", a.Key, opts.MaxArtifactSize)
		}
	}
	// The artifacts and the end of the file, before anything is signed:
	// a co-signer never signs a bundle that does not verify whole.
	first := &Reader{br: br, opts: ropts, obj: obj, manifest: m, signers: verified}
	if err := first.VerifyRest(); err != nil {
		return nil, err
	}
	if err := obj.addSignature(key); err != nil {
		return nil, err
	}
	out, err := obj.encode()
	if err != nil {
		return nil, err
	}
	// One more signature makes item 0 longer: a manifest near the cap
	// would be pushed over what every reader takes (BUNDLE-27).
	if err := checkSignedSize(out); err != nil {
		return nil, err
	}
	if _, err := r.Seek(start+int64(len(item)), io.SeekStart); err != nil {
		return nil, fail(ErrIO, "cannot read the bundle again").WithCause(err)
	}
	if _, err := w.Write(out); err != nil {
		return nil, fail(ErrIO, "cannot write the bundle").WithCause(err)
	}
	// The artifacts are copied exactly as read while they are verified
	// again: the bytes written are the bytes verified, not merely those
	// of the first read.
	again := &Reader{br: bufio.NewReaderSize(io.TeeReader(r, w), readBufferSize), opts: ropts, obj: obj, manifest: m, signers: verified}
	if err := again.VerifyRest(); err != nil {
		return nil, err
	}
	return m, nil
}
