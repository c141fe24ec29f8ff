package bundle

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
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
	w := len(fmt.Sprint(n))
	if w < 3 {
		w = 3
	}
	return fmt.Sprintf("%s.part%0*d", name, w, i)
}

// IndexName is the file name of the part index of the file name.
func IndexName(name string) string { return name + ".parts" }

// validFileName checks a file name of the index: one safe path segment
// (FORMAT.md §3.2 rules for a segment), at most 200 bytes.
func validFileName(n string) bool {
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
	if !validFileName(x.Name) {
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

// DecodePartIndex decodes a part index payload: deterministic CBOR with
// exactly the fields of FORMAT.md §13.2, re-encoding to the same bytes.
func DecodePartIndex(data []byte) (*PartIndex, error) {
	lim := amp.Limits{MaxMessageSize: len(data) + 1, MaxArrayLen: MaxParts, MaxMapPairs: 16}
	canon, err := lim.Canonical(data)
	if err != nil {
		return nil, fail(ErrMalformed, "part index is not valid cbor").WithCause(err)
	}
	if !bytes.Equal(canon, data) {
		return nil, fail(ErrMalformed, "part index is not in deterministic cbor encoding")
	}
	var x PartIndex
	if err := lim.Unmarshal(data, &x); err != nil {
		return nil, fail(ErrMalformed, "part index has a field of the wrong type").WithCause(err)
	}
	again, err := x.Encode()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, data) {
		return nil, fail(ErrMalformed, "part index lacks a field, has one format %s does not define, or does not re-encode to the same bytes", PartsFormat)
	}
	return &x, nil
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
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fail(ErrTrailingData, "part index file has data after its signed index")
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

// SplitFile cuts the bundle file at path into parts of partSize bytes in
// the folder dir and writes the signed part index there, both named after
// the file. It returns the index file's path and the index.
func SplitFile(path, dir string, partSize int64, keys []ed25519.PrivateKey) (string, *PartIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, fail(ErrIO, "cannot open the bundle").WithCause(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", nil, fail(ErrIO, "the bundle is not a regular file")
	}
	id, version, err := Identify(f)
	if err != nil {
		return "", nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", nil, fail(ErrIO, "cannot read the bundle").WithCause(err)
	}
	name := filepath.Base(path)
	if !validFileName(name) {
		return "", nil, fail(ErrUnsafeKey, "the file name %q cannot be used for parts: rename it to [A-Za-z0-9._-], not starting with . or -", name)
	}
	if partSize < MinPartSize {
		return "", nil, fail(ErrInconsistent, "a part is at least %d bytes", MinPartSize)
	}
	size := st.Size()
	if size == 0 {
		return "", nil, fail(ErrTruncated, "the bundle file is empty")
	}
	n := int((size + partSize - 1) / partSize)
	if n > MaxParts {
		return "", nil, fail(ErrTooLarge, "%d parts of %d bytes; a split has at most %d parts (choose a larger --size)", n, partSize, MaxParts)
	}
	x := &PartIndex{Format: PartsFormat, BundleID: id, Version: version, Name: name, Size: uint64(size)}
	whole := sha256.New()
	buf := make([]byte, 256<<10)
	var written []string
	cleanup := func() {
		for _, w := range written {
			os.Remove(w)
		}
	}
	for i := 1; i <= n; i++ {
		pn := PartName(name, i, n)
		want := partSize
		if rest := size - int64(i-1)*partSize; rest < want {
			want = rest
		}
		sum, err := writePart(filepath.Join(dir, pn), io.TeeReader(io.LimitReader(f, want), whole), want, buf)
		if err != nil {
			cleanup()
			return "", nil, err
		}
		written = append(written, filepath.Join(dir, pn))
		x.Parts = append(x.Parts, PartEntry{Name: pn, Size: uint64(want), SHA256: sum})
	}
	x.SHA256 = whole.Sum(nil)
	payload, err := x.Encode()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	signed, err := signCOSE(MediaTypePartIndex, payload, keys)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	ip := filepath.Join(dir, IndexName(name))
	if err := writeFileAtomic(ip, signed); err != nil {
		cleanup()
		return "", nil, err
	}
	return ip, x, nil
}

// writePart writes exactly want bytes of r to path (atomically: a
// temporary file renamed into place) and returns their SHA-256.
func writePart(path string, r io.Reader, want int64, buf []byte) ([]byte, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".ampbundle-part-*.tmp")
	if err != nil {
		return nil, fail(ErrIO, "cannot create part %s", filepath.Base(path)).WithCause(err)
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(f, h), r, buf)
	if err == nil && n != want {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return nil, fail(ErrIO, "cannot write part %s", filepath.Base(path)).WithCause(err)
	}
	return h.Sum(nil), nil
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".ampbundle-parts-*.tmp")
	if err != nil {
		return fail(ErrIO, "cannot create %s", filepath.Base(path)).WithCause(err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fail(ErrIO, "cannot write %s", filepath.Base(path)).WithCause(err)
	}
	return nil
}

// LocateParts finds the part files of x among paths: files, or folders
// whose entries are searched (one level, by exact file name). Files whose
// names the index does not list are ignored. Every part must be found
// exactly once (else ErrPartMissing naming all missing parts, or
// ErrPartDuplicate) and have the size the index says (else
// ErrPartMismatch naming it). It returns the path of each part, in index
// order. No part's bytes are read.
func LocateParts(x *PartIndex, paths []string) ([]string, error) {
	want := make(map[string]int, len(x.Parts))
	for i, p := range x.Parts {
		want[p.Name] = i
	}
	found := make([]string, len(x.Parts))
	add := func(path string) error {
		i, ok := want[filepath.Base(path)]
		if !ok {
			return nil
		}
		if found[i] != "" && !sameFile(found[i], path) {
			return fail(ErrPartDuplicate, "part %d (%s) is given twice: %s and %s; give one", i+1, x.Parts[i].Name, found[i], path)
		}
		found[i] = path
		return nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fail(ErrIO, "cannot read %s", p).WithCause(err)
		}
		if !st.IsDir() {
			if err := add(p); err != nil {
				return nil, err
			}
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fail(ErrIO, "cannot read the folder %s", p).WithCause(err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				if err := add(filepath.Join(p, e.Name())); err != nil {
					return nil, err
				}
			}
		}
	}
	var missing []string
	for i, f := range found {
		if f == "" {
			missing = append(missing, fmt.Sprintf("%d (%s)", i+1, x.Parts[i].Name))
		}
	}
	if len(missing) > 0 {
		return nil, fail(ErrPartMissing, "missing part %s of %d", strings.Join(missing, ", "), len(x.Parts))
	}
	for i, f := range found {
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			return nil, fail(ErrIO, "cannot read part %d (%s)", i+1, f)
		}
		if uint64(st.Size()) != x.Parts[i].Size {
			return nil, fail(ErrPartMismatch, "part %d (%s) has %d bytes, the index says %d (truncated or from another split)", i+1, f, st.Size(), x.Parts[i].Size)
		}
	}
	return found, nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// PartsReader reads the parts of a split in index order as one stream,
// checking each part's size and SHA-256 when it ends, and the whole's
// SHA-256 before it reports the end. It never holds more than its read
// buffer: the whole file is never assembled. After a failed read, Err
// names the part that was bad.
type PartsReader struct {
	x     *PartIndex
	paths []string
	i     int // current part
	f     *os.File
	n     uint64 // bytes read of the current part
	h     hash.Hash
	whole hash.Hash
	err   error
	// OnPart, when set, is called after each part verified (1-based).
	OnPart func(i int)
}

// NewPartsReader returns a reader over the parts at paths (from
// LocateParts), in index order.
func NewPartsReader(x *PartIndex, paths []string) *PartsReader {
	return &PartsReader{x: x, paths: paths, whole: sha256.New()}
}

// Err returns the part error that stopped the stream, if any.
func (p *PartsReader) Err() error { return p.err }

// Read implements io.Reader.
func (p *PartsReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	orig := b
	for {
		if p.i == len(p.x.Parts) {
			return 0, io.EOF
		}
		if p.f == nil {
			f, err := os.Open(p.paths[p.i])
			if err != nil {
				p.err = fail(ErrIO, "cannot open part %d (%s)", p.i+1, p.paths[p.i]).WithCause(err)
				return 0, p.err
			}
			p.f, p.n, p.h = f, 0, sha256.New()
		}
		e := p.x.Parts[p.i]
		if rest := e.Size - p.n; uint64(len(b)) > rest {
			b = b[:rest]
		}
		if len(b) > 0 {
			n, err := p.f.Read(b)
			p.h.Write(b[:n])
			p.whole.Write(b[:n])
			p.n += uint64(n)
			if n > 0 {
				return n, nil
			}
			if err == io.EOF {
				p.err = fail(ErrPartMismatch, "part %d (%s) ends after %d bytes, the index says %d (truncated)", p.i+1, p.paths[p.i], p.n, e.Size)
				return 0, p.err
			}
			if err != nil {
				p.err = fail(ErrIO, "cannot read part %d (%s)", p.i+1, p.paths[p.i]).WithCause(err)
				return 0, p.err
			}
			continue
		}
		// The part is complete: nothing may follow, and it must hash right.
		var one [1]byte
		if n, _ := p.f.Read(one[:]); n > 0 {
			p.err = fail(ErrPartMismatch, "part %d (%s) is longer than the index says", p.i+1, p.paths[p.i])
			return 0, p.err
		}
		p.f.Close()
		p.f = nil
		if subtle.ConstantTimeCompare(p.h.Sum(nil), e.SHA256) != 1 {
			p.err = fail(ErrPartMismatch, "part %d (%s) does not match its sha256 in the index (altered, or a part of another split)", p.i+1, p.paths[p.i])
			return 0, p.err
		}
		p.i++
		if p.OnPart != nil {
			p.OnPart(p.i)
		}
		if p.i == len(p.x.Parts) && subtle.ConstantTimeCompare(p.whole.Sum(nil), p.x.SHA256) != 1 {
			p.err = fail(ErrPartMismatch, "the joined parts do not match the sha256 of the whole in the index")
			return 0, p.err
		}
		b = orig
	}
}

// Explain returns the part error behind err, a failure of whoever read
// the stream: the part error that stopped the stream if there was one;
// else, when a part was being read, its remaining bytes are hashed and a
// part that does not match its index entry is named (so that a swapped
// or altered part is reported as such, not only as the bundle error it
// caused); else err itself.
func (p *PartsReader) Explain(err error) error {
	if p.err != nil {
		return p.err
	}
	if err == nil || p.f == nil || p.i >= len(p.x.Parts) {
		return err
	}
	buf := make([]byte, 64<<10)
	for p.err == nil && p.f != nil {
		if _, rerr := p.Read(buf); rerr != nil {
			break
		}
	}
	if p.err != nil {
		return p.err
	}
	return err
}

// Close closes the open part, if any.
func (p *PartsReader) Close() error {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	return nil
}
