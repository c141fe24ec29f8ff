package bundle

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// Split media (FORMAT.md §13): a bundle file (full or delta) cut into
// numbered parts of at most a given size, plus a signed part index that
// gives the SHA-256 of every part and of the whole. The parts are plain
// slices of the file: concatenated in order they are the file.

// Part index constants.
const (
	// MediaTypePartIndex is the content type of a part index's COSE_Sign.
	MediaTypePartIndex = "application/ampbundle-parts+cbor"
	// PartsFormat is the value of a part index's "format" field.
	PartsFormat = "ampbundle-parts/1"
	// MaxParts caps the parts of one split.
	MaxParts = 10_000
	// MaxPartIndexSize caps the bytes of a part index file.
	MaxPartIndexSize = 4 << 20
	// MinPartSize is the smallest part size split accepts.
	MinPartSize = 64 << 10
	// maxFileName caps a file name in the index.
	maxFileName = 200
)

// Error names of split media.
const (
	// ErrPartMissing: a part the index lists is not among the files given.
	ErrPartMissing amp.ErrName = "part_missing"
	// ErrPartMismatch: a part of another size or hash than the index says
	// (a truncated, altered or swapped part), or a whole whose hash
	// differs.
	ErrPartMismatch amp.ErrName = "part_mismatch"
	// ErrPartDuplicate: two different files are given for one part.
	ErrPartDuplicate amp.ErrName = "part_duplicate"
)

// PartEntry is one part of a split.
type PartEntry struct {
	Name   string `cbor:"name"`   // file name: PartName(index name, i, count)
	Size   uint64 `cbor:"size"`   // bytes, > 0
	SHA256 []byte `cbor:"sha256"` // of the part's bytes
}

// PartIndex is the signed description of a split bundle file.
type PartIndex struct {
	Format   string      `cbor:"format"`
	BundleID string      `cbor:"bundle_id"` // of the bundle in the file (scope of the signer)
	Version  uint64      `cbor:"version"`
	Name     string      `cbor:"name"`   // file name of the whole
	Size     uint64      `cbor:"size"`   // bytes of the whole
	SHA256   []byte      `cbor:"sha256"` // of the whole
	Parts    []PartEntry `cbor:"parts"`
}

// PartName is the file name of part i (1-based) of n of the file name:
// "name.part001", with at least three digits and as many as n needs.
func PartName(name string, i, n int) string {
	w := max(len(fmt.Sprint(n)), 3)
	return fmt.Sprintf("%s.part%0*d", name, w, i)
}

// IndexName is the file name of the part index of the file name.
func IndexName(name string) string { return name + ".parts" }

// ValidFileName reports whether n can name a file of a split (the whole
// or a part): one safe path segment (FORMAT.md §3.2 rules for a
// segment), at most 200 bytes.
func ValidFileName(n string) bool {
	return len(n) <= maxFileName && !strings.Contains(n, "/") && ValidateKey(n) == nil
}

// Validate checks the rules of FORMAT.md §13.2.
func (x *PartIndex) Validate() error {
	if x.Format != PartsFormat {
		return fail(ErrUnknownFormat, "part index format is not %s", PartsFormat)
	}
	if err := ValidateBundleID(x.BundleID); err != nil {
		return err
	}
	if x.Version == 0 {
		return fail(ErrInconsistent, "part index version must be at least 1")
	}
	if !ValidFileName(x.Name) {
		return fail(ErrUnsafeKey, "part index name must be a safe file name")
	}
	if len(x.SHA256) != sha256.Size {
		return fail(ErrInconsistent, "part index sha256 must be %d bytes", sha256.Size)
	}
	if len(x.Parts) == 0 || len(x.Parts) > MaxParts {
		return fail(ErrTooLarge, "a split has 1 to %d parts", MaxParts)
	}
	var total uint64
	for i, p := range x.Parts {
		if p.Name != PartName(x.Name, i+1, len(x.Parts)) {
			return fail(ErrInconsistent, "part %d must be named %s", i+1, PartName(x.Name, i+1, len(x.Parts)))
		}
		if p.Size == 0 || len(p.SHA256) != sha256.Size {
			return fail(ErrInconsistent, "part %d must have a size and a %d-byte sha256", i+1, sha256.Size)
		}
		if total+p.Size < total {
			return fail(ErrTooLarge, "part sizes overflow")
		}
		total += p.Size
	}
	if total != x.Size {
		return fail(ErrInconsistent, "the parts add up to %d bytes, the index says %d", total, x.Size)
	}
	return nil
}

// Encode returns the deterministic CBOR of the index after Validate.
func (x *PartIndex) Encode() ([]byte, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	return amp.Marshal(x)
}

// SignPartIndex encodes x (after Validate) and signs it with keys: the
// bytes of a part index file (FORMAT.md §13.2).
func SignPartIndex(x *PartIndex, keys []ed25519.PrivateKey) ([]byte, error) {
	payload, err := x.Encode()
	if err != nil {
		return nil, err
	}
	return signCOSE(MediaTypePartIndex, payload, keys)
}

// DecodePartIndex decodes a part index payload: deterministic CBOR with
// exactly the fields of FORMAT.md §13.2, re-encoding to the same bytes.
func DecodePartIndex(data []byte) (*PartIndex, error) {
	return decodeExact[PartIndex](data, MaxParts, "part index", PartsFormat)
}

// ReadPartIndex reads a signed part index file (a COSE_Sign of content
// type MediaTypePartIndex and nothing after it), verifies its signatures
// against p, decodes it, and checks that a verified signer is trusted for
// its bundle_id. It returns the index and the names of those signers.
func ReadPartIndex(r io.Reader, p *Policy) (*PartIndex, []string, error) {
	obj, err := readPartIndexObject(r)
	if err != nil {
		return nil, nil, err
	}
	verified, err := obj.verify(p)
	if err != nil {
		return nil, nil, err
	}
	x, err := DecodePartIndex(obj.payload)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, k := range verified {
		if k.covers(x.BundleID) {
			names = append(names, k.Name)
		}
	}
	if len(names) == 0 {
		return nil, nil, fail(ErrUntrustedNamespace, "no signer of the part index is trusted for bundle %s", x.BundleID)
	}
	return x, names, nil
}

// DecodePartIndexFile reads a part index file like ReadPartIndex but
// verifies no signature: for join, whose output is verified when used.
func DecodePartIndexFile(r io.Reader) (*PartIndex, error) {
	obj, err := readPartIndexObject(r)
	if err != nil {
		return nil, err
	}
	return DecodePartIndex(obj.payload)
}

// readPartIndexObject reads the one COSE_Sign of a part index file.
func readPartIndexObject(r io.Reader) (*signedObject, error) {
	br := bufio.NewReader(io.LimitReader(r, MaxPartIndexSize+1))
	item, err := readItem(br, MaxPartIndexSize)
	if err != nil {
		return nil, err
	}
	// A byte after the index is trailing data; a failed read is no byte
	// at all, and says nothing of the file's content (BUNDLE-30).
	switch _, err := br.ReadByte(); {
	case err == nil:
		return nil, fail(ErrTrailingData, "part index file has data after its signed index")
	case err != io.EOF:
		return nil, fail(ErrIO, "cannot read the part index file").WithCause(err)
	}
	return decodeCOSE(item, MediaTypePartIndex)
}

// IsPartIndex reports whether head, the first bytes of a file (64 are
// enough), starts a part index rather than a bundle.
func IsPartIndex(head []byte) bool {
	hdr := bodyProtectedHeader(MediaTypePartIndex)
	prefix := append(append([]byte{0xd8, coseSignTag, 0x84}, ByteStringHead(uint64(len(hdr)))...), hdr...)
	return bytes.HasPrefix(head, prefix)
}

// Identify returns the bundle_id and version of a bundle file (full or
// delta) from its first item, without verifying anything.
func Identify(r io.Reader) (string, uint64, error) {
	item, err := readItem(bufio.NewReader(r), DefaultMaxManifestSize)
	if err != nil {
		return "", 0, err
	}
	if coseContentType(item) == MediaTypeDelta {
		obj, err := decodeCOSE(item, MediaTypeDelta)
		if err != nil {
			return "", 0, err
		}
		d, err := DecodeDelta(obj.payload)
		if err != nil {
			return "", 0, err
		}
		return d.BundleID, d.Version, nil
	}
	obj, err := decodeSigned(item)
	if err != nil {
		return "", 0, err
	}
	m, err := DecodeManifest(obj.payload)
	if err != nil {
		return "", 0, err
	}
	return m.BundleID, m.Version, nil
}
