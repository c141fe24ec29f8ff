package bundle

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"io"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// manifestCap is a reader's cap on the signed manifest item from the
// value the caller set for the option name (named in the refusal):
// DefaultMaxManifestSize when 0 or less, and refused above it
// (limit_exceeded, before anything is read). Nothing else of this project takes a larger item: a store
// imports under the default cap, Identify reads at most that (split, and
// the parts reader's check that its index names the bundle the parts
// carry, which passed a head over it on to the bundle reader: under a
// raised cap, an index of another bundle went unchecked), a co-signer
// writes at most that, so a raised cap only read as genuine what the
// rest then refused or did not check (docs/SPEC-DECISIONS.md BUNDLE-33,
// amending BUNDLE-28).
func manifestCap(value int64, name string) (int64, error) {
	if value > DefaultMaxManifestSize {
		return 0, fail(ErrTooLarge, "%s is %d: a signed manifest is at most %d bytes, the most a store, a split and a co-signer take; a reader may lower the cap, never raise it", name, value, DefaultMaxManifestSize)
	}
	limit.Default(&value, DefaultMaxManifestSize)
	return value, nil
}

// Reader defaults (FORMAT.md §6).
const (
	DefaultMaxManifestSize = 16 << 20  // bytes of the signed manifest item
	DefaultMaxArtifactSize = 256 << 20 // bytes of one artifact
	readBufferSize         = 256 << 10
)

// ReaderOptions configures a Reader.
type ReaderOptions struct {
	// Policy is the set of trusted keys. Required.
	Policy *Policy
	// Now is the clock for expiry. Required.
	Now func() time.Time
	// MaxManifestSize caps the signed manifest item. Default (0) and
	// most: DefaultMaxManifestSize, 16 MiB; a larger value is refused,
	// limit_exceeded (docs/SPEC-DECISIONS.md BUNDLE-33).
	MaxManifestSize int64
	// MaxArtifactSize caps one artifact, and so the memory Next needs.
	// Default 256 MiB.
	MaxArtifactSize int64
	// Progress, when set, is called with the number of artifact bytes read
	// so far.
	Progress func(done int64)
	// AllowDelta accepts a delta bundle (FORMAT.md §12). Its omitted
	// artifacts come out of Next with FromBase set and no bytes: the caller
	// takes them from the base (after CheckBase) and must check them
	// itself. Without it a delta is refused with ErrDeltaBundle.
	AllowDelta bool
}

// Artifact is one verified artifact: its manifest entry and its bytes.
type Artifact struct {
	ArtifactEntry
	Data []byte
	// FromBase is set for an artifact a delta bundle omits: Data is nil,
	// and the bytes are the base's (Reader.CheckBase).
	FromBase bool
}

// Reader reads a bundle as a stream. NewReader verifies the signatures, the
// manifest and the trust scope before any artifact is read; Next then
// returns each artifact only after its size and hash match the manifest.
// Memory is bounded by the signed manifest plus the largest artifact.
type Reader struct {
	br       *bufio.Reader
	opts     ReaderOptions
	signed   []byte
	obj      *signedObject
	manifest *Manifest
	signers  []*TrustedKey // verified, and in scope for the whole manifest
	delta    *Delta        // the verified delta header, nil for a full bundle
	omit     []bool        // by manifest index: artifacts a delta omits
	next     int           // index of the next artifact
	done     int64
	finished bool
	err      error // sticky
}

// NewReader reads and verifies the signed manifest of the bundle in r.
// The order of checks (FORMAT.md §5): structure of the signed object,
// signatures against the policy, manifest shape and rules, trust scope,
// expiry. The first failure decides the error.
func NewReader(r io.Reader, opts ReaderOptions) (*Reader, error) {
	if opts.Policy == nil || opts.Now == nil {
		return nil, fail(ErrIO, "bundle reader needs a trust policy and a clock")
	}
	var err error
	if opts.MaxManifestSize, err = manifestCap(opts.MaxManifestSize, "ReaderOptions.MaxManifestSize"); err != nil {
		return nil, err
	}
	limit.Default(&opts.MaxArtifactSize, DefaultMaxArtifactSize)
	rd := &Reader{br: bufio.NewReaderSize(r, readBufferSize), opts: opts}
	item, err := readItem(rd.br, opts.MaxManifestSize)
	if err != nil {
		return nil, err
	}
	var hdrSigners []*TrustedKey
	if coseContentType(item) == MediaTypeDelta {
		if !opts.AllowDelta {
			return nil, fail(ErrDeltaBundle, "this is a delta bundle: it carries only what its base lacks; import it into a store that holds the base")
		}
		obj, err := decodeCOSE(item, MediaTypeDelta)
		if err != nil {
			return nil, err
		}
		if hdrSigners, err = rd.readDelta(obj); err != nil {
			return nil, err
		}
		// Item 1 is the full bundle's signed manifest.
		if item, err = readItem(rd.br, opts.MaxManifestSize); err != nil {
			return nil, err
		}
	}
	obj, err := decodeSigned(item)
	if err != nil {
		return nil, err
	}
	rd.signed, rd.obj = item, obj
	verified, err := rd.obj.verify(opts.Policy)
	if err != nil {
		return nil, err
	}
	if rd.manifest, err = DecodeManifest(rd.obj.payload); err != nil {
		return nil, err
	}
	if rd.signers, err = admit(opts.Policy, rd.manifest, verified); err != nil {
		return nil, err
	}
	if exp := rd.manifest.ExpiresAt; exp != nil && !opts.Now().Before(*exp) {
		return nil, fail(ErrExpired, "bundle expired at %s", exp.Format(time.RFC3339))
	}
	for _, a := range rd.manifest.Artifacts {
		if a.Size > uint64(opts.MaxArtifactSize) {
			return nil, fail(ErrTooLarge, "artifact %s is larger than the %d-byte limit", a.Key, opts.MaxArtifactSize)
		}
	}
	if rd.delta != nil {
		if err := rd.checkDelta(hdrSigners); err != nil {
			return nil, err
		}
	}
	return rd, nil
}

// hashFrom feeds the next n bytes of br to h straight from br's buffer (no
// second copy: verifying costs little more than hashing). It returns the
// read error that stopped it before n bytes, io.EOF or another.
func hashFrom(h io.Writer, br *bufio.Reader, n uint64) error {
	for n > 0 {
		chunk := min(uint64(br.Size()), n)
		b, err := br.Peek(int(chunk))
		if len(b) > 0 {
			h.Write(b)
			br.Discard(len(b))
			n -= uint64(len(b))
		}
		if err != nil && n > 0 {
			return err
		}
	}
	return nil
}

// artifactReadError names a read that stopped inside artifact key: a
// verdict the stream itself reached (streamVerdict) is returned as it
// is; the end of the file, or another error that carries a name, is
// truncated, as it always was; any other error of the reader (the
// medium) is io_error, which says nothing of the file's content
// (BUNDLE-30).
func artifactReadError(key string, err error) error {
	if streamVerdict(err) {
		return err
	}
	var named *amp.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &named) {
		return fail(ErrTruncated, "file ends inside artifact %s", key)
	}
	return fail(ErrIO, "cannot read artifact %s", key).WithCause(err)
}

// streamVerdict reports whether err, as a read of the bundle's stream
// returned it, is that stream's own verdict: an *amp.Error that carries
// a name of this project and no AMP code, such as the part_mismatch, or
// the io_error naming a part, of a split's bundlebuild.PartsReader. Such
// an error is returned as it is wherever the read met it, in a signed
// manifest, at an artifact's head, inside an artifact or after the last
// (docs/SPEC-DECISIONS.md BUNDLE-32): the reader below named what it
// found, and the place where a part happens to end must not rename it
// (truncated, malformed_bundle, io_error). amp's readers name the CBOR
// they refuse with code 1001, so their verdicts are never taken for the
// stream's; an error the caller wrapped in a type of its own is the
// caller's to name (resolver/import.go wraps a failed transfer so), and
// keeps the names of BUNDLE-30.
func streamVerdict(err error) bool {
	e, ok := err.(*amp.Error)
	return ok && e.Code == 0
}

// readSigned reads and decodes the first item.
func readSigned(br *bufio.Reader, max int64) ([]byte, *signedObject, error) {
	item, err := readItem(br, max)
	if err != nil {
		return nil, nil, err
	}
	obj, err := decodeSigned(item)
	if err != nil {
		return nil, nil, err
	}
	return item, obj, nil
}

// Manifest returns the verified manifest.
func (r *Reader) Manifest() *Manifest { return r.manifest }

// SignedManifest returns the first item of the bundle exactly as read: the
// COSE_Sign object with the manifest as its payload.
func (r *Reader) SignedManifest() []byte { return r.signed }

// Signatures returns every signature of the bundle, verified or not.
func (r *Reader) Signatures() []Signature { return append([]Signature(nil), r.obj.signatures...) }

// Signers returns the names of the trusted keys whose signatures verified
// and who are trusted for everything the bundle carries.
func (r *Reader) Signers() []TrustedKey {
	out := make([]TrustedKey, len(r.signers))
	for i, k := range r.signers {
		out[i] = *k
	}
	return out
}

// Next returns the next artifact, verified. After the last artifact it
// returns io.EOF, having checked that nothing follows. Errors are sticky.
func (r *Reader) Next() (*Artifact, error) {
	if r.err != nil {
		return nil, r.err
	}
	a, err := r.next1(true)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return a, err
}

// VerifyRest reads and verifies every remaining artifact without keeping
// their bytes, then checks that nothing follows.
func (r *Reader) VerifyRest() error {
	for {
		if r.err != nil {
			return r.err
		}
		_, err := r.next1(false)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			r.err = err
			return err
		}
	}
}

func (r *Reader) next1(keep bool) (*Artifact, error) {
	arts := r.manifest.Artifacts
	if r.next == len(arts) {
		return nil, r.end()
	}
	e := arts[r.next]
	if r.omit != nil && r.omit[r.next] {
		r.next++
		return &Artifact{ArtifactEntry: e, FromBase: true}, nil
	}
	hd, err := amp.ReadHeadFrom(r.br)
	switch {
	case streamVerdict(err):
		return nil, err
	case errors.Is(err, io.EOF):
		return nil, fail(ErrCountMismatch, "bundle ends after %d of %d artifacts", r.next, len(arts))
	case errors.Is(err, amp.ErrTruncated):
		return nil, fail(ErrTruncated, "file ends inside a cbor head")
	case errors.As(err, new(*amp.Error)):
		return nil, fail(ErrMalformed, "indefinite-length or reserved cbor item").WithCause(err)
	case err != nil:
		return nil, fail(ErrIO, "cannot read the bundle").WithCause(err)
	case hd.Major != amp.MajorBytes:
		return nil, fail(ErrMalformed, "artifact %s is not a cbor byte string", e.Key)
	case !hd.Minimal:
		return nil, fail(ErrMalformed, "artifact %s has a non-deterministic length header", e.Key)
	case hd.Arg != e.Size:
		return nil, fail(ErrSizeMismatch, "artifact %s has %d bytes, the manifest says %d", e.Key, hd.Arg, e.Size)
	}
	h, err := NewHash(e.HashAlg)
	if err != nil {
		return nil, err
	}
	// DID documents are always read into memory: their DID must be checked
	// against the signers' scope whoever asks. They are at most
	// amp.MaxDIDDocumentSize bytes (Manifest.Validate).
	isDID := e.MediaType == MediaTypeDID
	var data []byte
	if keep || isDID {
		data = make([]byte, e.Size)
		if _, err := io.ReadFull(r.br, data); err != nil {
			return nil, artifactReadError(e.Key, err)
		}
		h.Write(data)
	} else if err := hashFrom(h, r.br, e.Size); err != nil {
		return nil, artifactReadError(e.Key, err)
	}
	if subtle.ConstantTimeCompare(h.Sum(nil), e.Hash) != 1 {
		return nil, fail(ErrHashMismatch, "artifact %s does not match its %s hash", e.Key, e.HashAlg)
	}
	if isDID {
		if err := r.checkDID(e, data); err != nil {
			return nil, err
		}
	}
	if !keep {
		data = nil
	}
	r.next++
	r.done += int64(e.Size)
	if r.opts.Progress != nil {
		r.opts.Progress(r.done)
	}
	return &Artifact{ArtifactEntry: e, Data: data}, nil
}

// checkDID checks a DID document artifact: it parses, and a signer is
// trusted for its DID (FORMAT.md §5 step 7).
func (r *Reader) checkDID(e ArtifactEntry, data []byte) error {
	doc, err := amp.ParseDIDDocument(data)
	if err != nil {
		return fail(ErrInconsistent, "artifact %s is not a valid did document", e.Key).WithCause(err)
	}
	return admitDID(r.opts.Policy, r.signers, e.Key, doc.ID)
}

// end checks that nothing follows the last artifact.
func (r *Reader) end() error {
	if r.finished {
		return io.EOF
	}
	b, err := r.br.ReadByte()
	if errors.Is(err, io.EOF) {
		r.finished = true
		return io.EOF
	}
	if streamVerdict(err) {
		return err
	}
	if err != nil {
		return fail(ErrIO, "cannot read the bundle").WithCause(err)
	}
	if b>>5 == 2 {
		return fail(ErrCountMismatch, "bundle has more artifacts than its manifest lists")
	}
	return fail(ErrTrailingData, "bundle has data after its last artifact")
}
