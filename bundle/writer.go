package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"errors"
	"io"
	"sort"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Source is one artifact to write.
type Source struct {
	Key       string
	MediaType string
	// Open returns the artifact's bytes. Write calls it twice: once to hash,
	// once to copy; both reads must give the same bytes. With Hash set it
	// calls it once, to copy.
	Open func() (io.ReadCloser, error)
	// Size is the expected size, used only for progress reports (-1 when
	// unknown), unless Hash is set: then it is the exact size.
	Size int64
	// Hash, when set, is the hash of the artifact's bytes under the
	// draft's HashAlg, computed by the caller from what it checked
	// (bundlebuild.LoadSource does). Write puts it and Size in the manifest without
	// reading the artifact, then hashes the bytes it copies and fails
	// (invalid_source) when they differ: what is written is what was
	// checked.
	Hash []byte
}

// BytesSource returns a Source over bytes in memory.
func BytesSource(key, mediaType string, data []byte) Source {
	return Source{Key: key, MediaType: mediaType, Size: int64(len(data)), Open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// Draft is what a bundle is built from. Write computes every artifact's
// size and hash and completes the capabilities' schema references.
type Draft struct {
	BundleID  string
	Version   uint64
	CreatedAt time.Time
	ExpiresAt *time.Time
	Publisher string // a DID; empty means the did:key of the first signer
	HashAlg   string // "sha-256" (default) or "sha-512"
	Artifacts []Source
	// Capabilities need in each schema reference only ArtifactKey (and may
	// carry a URI); BundleID, HashAlg, Hash and MediaType are filled in.
	Capabilities []capability.Descriptor
	Aliases      map[string]string
}

// WriteOptions configures Write.
type WriteOptions struct {
	// Progress, when set, is called with the number of artifact bytes
	// written so far.
	Progress func(done int64)
}

// Write builds the bundle described by d, signs it with keys (one
// signature each, at least one) and writes it to w. The result is a pure
// function of d and the keys: same inputs, same bytes (Ed25519 signatures
// are deterministic).
//
// Artifacts are streamed twice (hash, then copy) so memory does not grow
// with their size; if a source changes between the two reads, Write fails
// and what it wrote must be discarded. A manifest no reader would take
// (a signed manifest over 16 MiB, or over a limit of DecodeManifest) is
// refused, limit_exceeded, before anything is written (BUNDLE-27).
func Write(w io.Writer, d *Draft, keys []ed25519.PrivateKey, opts WriteOptions) (*Manifest, error) {
	return writeBundle(w, d, keys, opts, nil)
}

// deltaHook, given the manifest and its signed bytes, returns what to
// write before them (a delta header) and which artifacts (by manifest
// index) to leave out.
type deltaHook func(m *Manifest, signed []byte) (head []byte, omit []bool, err error)

// writeBundle is Write, and WriteDelta when delta is set. It reads every
// artifact twice: once to hash it into the manifest (hashArtifacts), once
// to copy it after the signed manifest (copyArtifacts), re-hashed.
func writeBundle(w io.Writer, d *Draft, keys []ed25519.PrivateKey, opts WriteOptions, delta deltaHook) (*Manifest, error) {
	// The keys first: nothing is hashed or written with keys that cannot
	// sign (a short key panicked in draftManifest).
	if err := CheckSigningKeys(keys); err != nil {
		return nil, err
	}
	alg := d.HashAlg
	if alg == "" {
		alg = capability.HashSHA256
	}
	if _, err := NewHash(alg); err != nil {
		return nil, err
	}
	m := draftManifest(d, keys)
	srcs := append([]Source(nil), d.Artifacts...)
	sort.SliceStable(srcs, func(i, j int) bool { return srcs[i].Key < srcs[j].Key })
	if err := m.hashArtifacts(srcs, alg); err != nil {
		return nil, err
	}
	if err := m.completeRefs(d.Capabilities); err != nil {
		return nil, err
	}
	SortCapabilities(m.Capabilities)
	payload, err := m.Encode() // validates every manifest rule
	if err != nil {
		return nil, err
	}
	if err := checkReadable(payload); err != nil {
		return nil, err
	}
	signed, err := signManifest(payload, keys...)
	if err != nil {
		return nil, err
	}
	if err := checkSignedSize(signed); err != nil {
		return nil, err
	}
	var omit []bool
	if delta != nil {
		head, o, err := delta(m, signed)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(head); err != nil {
			return nil, fail(ErrIO, "cannot write the bundle").WithCause(err)
		}
		omit = o
	}
	if _, err := w.Write(signed); err != nil {
		return nil, fail(ErrIO, "cannot write the bundle").WithCause(err)
	}
	if err := m.copyArtifacts(w, srcs, alg, omit, opts.Progress); err != nil {
		return nil, err
	}
	return m, nil
}

// checkReadable refuses a manifest payload that a reader would refuse
// (docs/SPEC-DECISIONS.md BUNDLE-27): over the 16 MiB a reader takes of
// a signed manifest by default (docs/FORMAT.md §6), or over a limit
// DecodeManifest applies to what it decodes (nesting, the pairs of a
// map, the elements of an array), which Validate does not see: an
// extension field of a descriptor can exceed them. Write would sign it,
// and every reader would refuse the file.
func checkReadable(payload []byte) error {
	if len(payload) > DefaultMaxManifestSize {
		return fail(ErrTooLarge, "the manifest is %d bytes: a signed manifest is at most %d bytes, and readers take no larger one", len(payload), DefaultMaxManifestSize)
	}
	if _, err := DecodeManifest(payload); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return fail(ErrTooLarge, "the manifest is over a limit every reader applies to it (nesting 32, 10000 pairs in a map, 100000 elements in an array): no reader would take it").WithCause(err)
		}
		return err
	}
	return nil
}

// checkSignedSize refuses a signed manifest (item 0) over the size every
// reader takes by default (docs/FORMAT.md §6, BUNDLE-27).
func checkSignedSize(signed []byte) error {
	if len(signed) > DefaultMaxManifestSize {
		return fail(ErrTooLarge, "the signed manifest would be %d bytes: a signed manifest is at most %d bytes, and readers take no larger one", len(signed), DefaultMaxManifestSize)
	}
	return nil
}

// draftManifest is the manifest's header from the draft: times in UTC
// whole seconds, the publisher defaulted to the first key's did:key, no
// empty alias map (so that it encodes as absent).
func draftManifest(d *Draft, keys []ed25519.PrivateKey) *Manifest {
	m := &Manifest{Format: Format, BundleID: d.BundleID, Version: d.Version,
		CreatedAt: d.CreatedAt.UTC().Truncate(time.Second), Publisher: d.Publisher, Aliases: d.Aliases}
	if d.ExpiresAt != nil {
		t := d.ExpiresAt.UTC().Truncate(time.Second)
		m.ExpiresAt = &t
	}
	if m.Publisher == "" {
		m.Publisher = amp.DIDKey(keys[0].Public().(ed25519.PublicKey))
	}
	if len(m.Aliases) == 0 {
		m.Aliases = nil
	}
	return m
}

// hashArtifacts is the first pass: the artifact entries, in key order,
// with sizes and hashes (read from each source unless the draft gives
// both).
func (m *Manifest) hashArtifacts(srcs []Source, alg string) error {
	for i, s := range srcs {
		if err := ValidateKey(s.Key); err != nil {
			return err
		}
		if i > 0 && srcs[i-1].Key == s.Key {
			return fail(ErrDuplicateKey, "two artifacts have the key %s", s.Key)
		}
		size, sum := uint64(s.Size), s.Hash
		if s.Hash == nil || s.Size < 0 {
			var err error
			if size, sum, err = hashSource(s, alg, nil, -1); err != nil {
				return err
			}
		}
		m.Artifacts = append(m.Artifacts, ArtifactEntry{Key: s.Key, MediaType: s.MediaType, Size: size, HashAlg: alg, Hash: sum})
	}
	return nil
}

// completeRefs copies the draft's descriptors into m, their schema and
// bridge references completed from the artifacts they name (bundle,
// hash, media type); the draft's own references stay as they were.
func (m *Manifest) completeRefs(ds []capability.Descriptor) error {
	m.Capabilities = make([]capability.Descriptor, len(ds))
	copy(m.Capabilities, ds)
	for i := range m.Capabilities {
		c := &m.Capabilities[i]
		refs := []*capability.SchemaRef{&c.InputSchema, &c.OutputSchema}
		if c.Bridge != nil {
			b := *c.Bridge // the draft's reference stays as it was
			c.Bridge = &b
			refs = append(refs, c.Bridge)
		}
		for _, ref := range refs {
			a, ok := m.Artifact(ref.ArtifactKey)
			if !ok {
				return fail(ErrInconsistent, "capability %s references artifact %q that the bundle does not carry", c.ID(), ref.ArtifactKey)
			}
			ref.BundleID, ref.HashAlg, ref.Hash, ref.MediaType = m.BundleID, a.HashAlg, a.Hash, a.MediaType
		}
	}
	return nil
}

// copyArtifacts is the second pass: the artifacts, in manifest order,
// each re-hashed as copied to w and refused if it is no longer what the
// signed manifest says; those omit marks (a delta's) are left out.
// progress, when set, is called with the bytes copied so far.
func (m *Manifest) copyArtifacts(w io.Writer, srcs []Source, alg string, omit []bool, progress func(int64)) error {
	var done int64
	for i, s := range srcs {
		e := m.Artifacts[i]
		if omit != nil && omit[i] {
			continue // a delta takes it from its base
		}
		if _, err := w.Write(ByteStringHead(e.Size)); err != nil {
			return fail(ErrIO, "cannot write the bundle").WithCause(err)
		}
		// At most one byte more than the manifest says is copied: a
		// source that grew is refused without reading all of it.
		size, sum, err := hashSource(s, alg, w, int64(e.Size)+1)
		if err != nil {
			return err
		}
		if size != e.Size || subtle.ConstantTimeCompare(sum, e.Hash) != 1 {
			return fail(ErrSource, "artifact %s changed while the bundle was being written", e.Key)
		}
		done += int64(size)
		if progress != nil {
			progress(done)
		}
	}
	return nil
}

// hashSource reads s once, hashing it and copying it to w when w is set;
// at most max bytes when max >= 0.
func hashSource(s Source, alg string, w io.Writer, max int64) (uint64, []byte, error) {
	rc, err := s.Open()
	if err != nil {
		return 0, nil, fail(ErrIO, "cannot read artifact %s", s.Key).WithCause(err)
	}
	defer rc.Close()
	var r io.Reader = rc
	if max >= 0 {
		r = io.LimitReader(rc, max)
	}
	h, _ := NewHash(alg)
	dst := io.Writer(h)
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	n, err := io.Copy(dst, r)
	if err != nil {
		return 0, nil, fail(ErrIO, "cannot read or write artifact %s", s.Key).WithCause(err)
	}
	return uint64(n), h.Sum(nil), nil
}

// ByteStringHead returns the deterministic CBOR head of a byte string of n
// bytes.
func ByteStringHead(n uint64) []byte {
	switch {
	case n < 24:
		return []byte{0x40 | byte(n)}
	case n <= 0xff:
		return []byte{0x58, byte(n)}
	case n <= 0xffff:
		return []byte{0x59, byte(n >> 8), byte(n)}
	case n <= 0xffffffff:
		return []byte{0x5a, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return []byte{0x5b, byte(n >> 56), byte(n >> 48), byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}
