package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"sort"
	"strconv"

	"github.com/ampbundle/ampbundle/amp"
)

// Delta bundles (FORMAT.md §12). A delta is a bundle file that starts with
// a signed delta header, then carries the full bundle's signed manifest
// byte for byte, then only the artifacts its base lacks. Because the full
// bundle's own signed manifest travels unchanged, the importer ends with
// exactly the state a full import gives, and export writes the full bundle
// byte for byte.

// Delta constants.
const (
	// MediaTypeDelta is the content type of a delta header's COSE_Sign.
	MediaTypeDelta = "application/ampbundle-delta+cbor"
	// DeltaFormat is the value of a delta header's "format" field.
	DeltaFormat = "ampbundle-delta/1"
)

// Error names of delta bundles.
const (
	// ErrDeltaBundle: a delta given where only a full bundle is accepted.
	ErrDeltaBundle amp.ErrName = "delta_bundle"
	// ErrDeltaMismatch: a delta header that disagrees with the manifest it
	// carries or with the base it names (wrong bundle_id, version, hash,
	// an omitted artifact the base does not carry, a header no manifest
	// signer signed).
	ErrDeltaMismatch amp.ErrName = "delta_mismatch"
	// ErrDeltaBaseMissing: the store does not hold the base release a
	// delta names (its bundle_id at its version).
	ErrDeltaBaseMissing amp.ErrName = "delta_base_missing"
)

// BaseRef names the bundle a delta applies to: the release (bundle_id and
// version) and the signed manifest the delta was built against.
type BaseRef struct {
	BundleID string `cbor:"bundle_id"`
	Version  uint64 `cbor:"version"`
	// ManifestSHA256 is the SHA-256 of the base's signed manifest (item 0
	// of the base bundle file, the COSE_Sign bytes exactly). It says which
	// file the writer read; a reader does not require it of the base it
	// holds, since another copy of the release (other signatures,
	// FORMAT.md §12.3) may be what it kept.
	ManifestSHA256 []byte `cbor:"manifest_sha256"`
}

// String names the base for messages: "org.example.x version 3 (manifest
// sha256 1a2b3c4d…)".
func (b BaseRef) String() string {
	h := hex.EncodeToString(b.ManifestSHA256)
	if len(h) > 16 {
		h = h[:16] + "…"
	}
	return b.BundleID + " version " + strconv.FormatUint(b.Version, 10) + " (manifest sha256 " + h + ")"
}

// Delta is the signed header of a delta bundle.
type Delta struct {
	Format   string `cbor:"format"`
	BundleID string `cbor:"bundle_id"`
	Version  uint64 `cbor:"version"`
	// ManifestSHA256 is the SHA-256 of the full bundle's signed manifest,
	// which follows the header in the file.
	ManifestSHA256 []byte  `cbor:"manifest_sha256"`
	Base           BaseRef `cbor:"base"`
	// Omitted are the keys of the manifest's artifacts the file does not
	// carry: the importer takes them from the base. Sorted, unique.
	Omitted []string `cbor:"omitted"`
}

// BaseOf returns the reference to a base from its signed manifest (item 0
// of the base bundle), and the manifest. Nothing is verified here: the
// builder names a base, the importer checks it.
func BaseOf(signedManifest []byte) (BaseRef, *Manifest, error) {
	in, err := Inspect(bytes.NewReader(signedManifest), int64(len(signedManifest))+1)
	if err != nil {
		return BaseRef{}, nil, err
	}
	sum := sha256.Sum256(in.SignedManifest)
	return BaseRef{BundleID: in.Manifest.BundleID, Version: in.Manifest.Version, ManifestSHA256: sum[:]}, in.Manifest, nil
}

// Encode returns the deterministic CBOR of the header after Validate.
func (d *Delta) Encode() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	w := *d
	if w.Omitted == nil {
		w.Omitted = []string{}
	}
	return amp.Marshal(w)
}

// Validate checks the rules a delta header obeys on its own (FORMAT.md
// §11.2).
func (d *Delta) Validate() error {
	if d.Format != DeltaFormat {
		return fail(ErrUnknownFormat, "delta header format is not %s", DeltaFormat)
	}
	if err := ValidateBundleID(d.BundleID); err != nil {
		return err
	}
	if err := ValidateBundleID(d.Base.BundleID); err != nil {
		return err
	}
	if d.Version == 0 || d.Base.Version == 0 {
		return fail(ErrInconsistent, "delta versions must be at least 1")
	}
	if len(d.ManifestSHA256) != sha256.Size || len(d.Base.ManifestSHA256) != sha256.Size {
		return fail(ErrInconsistent, "delta manifest hashes must be %d bytes", sha256.Size)
	}
	if d.Base.BundleID != d.BundleID {
		return fail(ErrDeltaMismatch, "delta for %s names a base of another bundle_id, %s", d.BundleID, d.Base.BundleID)
	}
	if d.Base.Version >= d.Version {
		return fail(ErrDeltaMismatch, "delta to version %d names base version %d; a base is an older version", d.Version, d.Base.Version)
	}
	if len(d.Omitted) > MaxArtifacts {
		return fail(ErrTooLarge, "delta omits more than %d artifacts", MaxArtifacts)
	}
	for i, k := range d.Omitted {
		if err := ValidateKey(k); err != nil {
			return err
		}
		if i > 0 && d.Omitted[i-1] >= k {
			return fail(ErrInconsistent, "delta omitted keys are not sorted and unique")
		}
	}
	return nil
}

// DecodeDelta decodes a delta header payload: deterministic CBOR with
// exactly the fields of FORMAT.md §12.2, re-encoding to the same bytes.
func DecodeDelta(data []byte) (*Delta, error) {
	return decodeExact[Delta](data, MaxArtifacts, "delta header", DeltaFormat)
}

// contentKey is what makes two artifact entries the same bytes for a
// delta: hash algorithm, hash, size and media type.
type contentKey struct {
	hashAlg, hash, mediaType string
	size                     uint64
}

func contentOf(e ArtifactEntry) contentKey {
	return contentKey{hashAlg: e.HashAlg, hash: string(e.Hash), mediaType: e.MediaType, size: e.Size}
}

// baseCarries reports whether the base manifest carries bytes identical to
// artifact e: the same hash algorithm, hash, size and media type, under
// any key. Only such artifacts are omitted from a delta.
func baseCarries(base map[contentKey]struct{}, e ArtifactEntry) bool {
	_, ok := base[contentOf(e)]
	return ok
}

// contentIndex indexes every entry of m by all four fields: a manifest may
// list the same bytes under several keys and media types, and each listing
// counts (an index by hash alone kept the last, so a base copy listing the
// omitted bytes also under another media type was refused, BUNDLE-22).
func contentIndex(m *Manifest) map[contentKey]struct{} {
	idx := make(map[contentKey]struct{}, len(m.Artifacts))
	for _, a := range m.Artifacts {
		idx[contentOf(a)] = struct{}{}
	}
	return idx
}

// WriteDelta builds the bundle described by d exactly as Write does, and
// writes it as a delta against the base whose signed manifest (item 0 of
// the base bundle file) is baseSigned: the signed delta header, the full
// bundle's signed manifest, then only the artifacts the base does not
// carry. Importing it into a store that holds the base gives the same
// state as importing the full bundle; exporting it then gives the full
// bundle byte for byte.
func WriteDelta(w io.Writer, d *Draft, keys []ed25519.PrivateKey, baseSigned []byte, opts WriteOptions) (*Manifest, *Delta, error) {
	ref, bm, err := BaseOf(baseSigned)
	if err != nil {
		return nil, nil, err
	}
	var hdr *Delta
	m, err := writeBundle(w, d, keys, opts, func(m *Manifest, signed []byte) ([]byte, []bool, error) {
		sum := sha256.Sum256(signed)
		hdr = &Delta{Format: DeltaFormat, BundleID: m.BundleID, Version: m.Version, ManifestSHA256: sum[:], Base: ref, Omitted: []string{}}
		idx := contentIndex(bm)
		omit := make([]bool, len(m.Artifacts))
		for i, a := range m.Artifacts {
			if baseCarries(idx, a) {
				omit[i] = true
				hdr.Omitted = append(hdr.Omitted, a.Key)
			}
		}
		payload, err := hdr.Encode()
		if err != nil {
			return nil, nil, err
		}
		signedHdr, err := signCOSE(MediaTypeDelta, payload, keys)
		return signedHdr, omit, err
	})
	if err != nil {
		return nil, nil, err
	}
	return m, hdr, nil
}

// readDelta verifies and decodes a delta header (item 0 of a delta file)
// against the reader's policy. It returns the trusted keys whose
// signatures verified.
func (r *Reader) readDelta(obj *signedObject) ([]*TrustedKey, error) {
	verified, err := obj.verify(r.opts.Policy)
	if err != nil {
		return nil, err
	}
	if r.delta, err = DecodeDelta(obj.payload); err != nil {
		return nil, err
	}
	return verified, nil
}

// checkDelta binds a verified delta header to the verified full manifest
// that follows it: same bundle, the hash of its signed bytes, a header
// signer among the manifest's signers, and omitted keys the manifest lists.
func (r *Reader) checkDelta(hdrSigners []*TrustedKey) error {
	d, m := r.delta, r.manifest
	sum := sha256.Sum256(r.signed)
	if d.BundleID != m.BundleID || d.Version != m.Version || !bytes.Equal(d.ManifestSHA256, sum[:]) {
		return fail(ErrDeltaMismatch, "delta header is for another manifest than the one the file carries")
	}
	signed := false
	for _, h := range hdrSigners {
		for _, s := range r.signers {
			if h == s {
				signed = true
			}
		}
	}
	if !signed {
		return fail(ErrDeltaMismatch, "no key that signed the manifest also signed the delta header")
	}
	r.omit = make([]bool, len(m.Artifacts))
	for _, k := range d.Omitted {
		i := sort.Search(len(m.Artifacts), func(i int) bool { return m.Artifacts[i].Key >= k })
		if i == len(m.Artifacts) || m.Artifacts[i].Key != k {
			return fail(ErrDeltaMismatch, "delta omits artifact %s, which the manifest does not list", k)
		}
		r.omit[i] = true
	}
	return nil
}

// Delta returns the verified delta header when the file is a delta bundle,
// else nil.
func (r *Reader) Delta() *Delta { return r.delta }

// CheckBase checks that the manifest baseSigned (the signed manifest of a
// base, as installed or as item 0 of the base file) is of the base release
// the delta names (its bundle_id at its version; else delta_base_missing),
// and that it carries every artifact the delta omits (the same hash, size
// and media type; else delta_mismatch). Its signed manifest's hash need not
// equal the header's: the base only supplies bytes, and every omitted
// artifact is checked against the delta's own signed manifest, so another
// copy of the release, or another payload of that version, cannot make a
// reader take bytes that manifest does not name (FORMAT.md §12.4).
func (r *Reader) CheckBase(baseSigned []byte) error {
	if r.delta == nil {
		return nil
	}
	ref, bm, err := BaseOf(baseSigned)
	if err != nil {
		return err
	}
	want := r.delta.Base
	if ref.BundleID != want.BundleID || ref.Version != want.Version {
		return fail(ErrDeltaBaseMissing, "delta needs base %s; the base given is %s", want, ref)
	}
	idx := contentIndex(bm)
	for i, e := range r.manifest.Artifacts {
		if r.omit[i] && !baseCarries(idx, e) {
			return fail(ErrDeltaMismatch, "delta omits artifact %s, which its base does not carry", e.Key)
		}
	}
	return nil
}

// Omitted reports the number and total size of the artifacts a delta
// takes from its base (0, 0 for a full bundle).
func (r *Reader) Omitted() (count int, bytes uint64) {
	for i, o := range r.omit {
		if o {
			count++
			bytes += r.manifest.Artifacts[i].Size
		}
	}
	return count, bytes
}

// VerifyFromBase checks the bytes a delta's importer took from the base
// for an omitted artifact a (one that Next returned with FromBase set), as
// Next checks a carried one: the size always; the hash when rehash is set
// or the artifact is a DID document; and a DID document's scope. Call it
// only after CheckBase accepted the base.
func (r *Reader) VerifyFromBase(a *Artifact, data []byte, rehash bool) error {
	if !a.FromBase {
		return fail(ErrDeltaMismatch, "artifact %s is carried by the file, not taken from the base", a.Key)
	}
	if uint64(len(data)) != a.Size {
		return fail(ErrSizeMismatch, "the base's copy of artifact %s has %d bytes, the manifest says %d", a.Key, len(data), a.Size)
	}
	isDID := a.MediaType == MediaTypeDID
	if rehash || isDID {
		h, err := NewHash(a.HashAlg)
		if err != nil {
			return err
		}
		h.Write(data)
		if subtle.ConstantTimeCompare(h.Sum(nil), a.Hash) != 1 {
			return fail(ErrHashMismatch, "the base's copy of artifact %s does not match its %s hash", a.Key, a.HashAlg)
		}
	}
	if isDID {
		return r.checkDID(a.ArtifactEntry, data)
	}
	return nil
}
