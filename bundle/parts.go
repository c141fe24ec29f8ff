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
	"time"

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

// SplitOptions are the choices of SplitFileWith.
type SplitOptions struct {
	// Force replaces parts and an index of the same names already in the
	// folder; without it their presence is ErrFileExists, naming one, and
	// nothing is written.
	Force bool
	// Progress, when set, is called with the bytes of the file staged so
	// far.
	Progress func(done int64)
	// Now is the clock that tells a killed run's leftovers from a live
	// one's (RemoveStaleTemps); nil: time.Now.
	Now func() time.Time
}

// ErrFileExists names an output that is already there and is not
// replaced without being asked to (--force).
const ErrFileExists amp.ErrName = "file_exists"

// SplitFile is SplitFileWith without options: it refuses to replace
// existing parts or an index.
func SplitFile(path, dir string, partSize int64, keys []ed25519.PrivateKey) (string, *PartIndex, error) {
	return SplitFileWith(path, dir, partSize, keys, SplitOptions{})
}

// SplitFileWith cuts the bundle file at path into parts of partSize bytes
// in the folder dir and writes the signed part index there, both named
// after the file. It returns the index file's path and the index.
//
// It is all or nothing, also across a kill: every part and the index are
// first written and synced in a temporary folder inside dir (left by a
// killed run, it is removed by the next one: RemoveStaleTemps); then an
// index of the same name already there is removed (with Force), the parts
// are renamed into place and the index last. An index in dir therefore
// always names a complete set of its own parts: a kill before the end
// leaves no index, or the old one only when no part was replaced yet.
func SplitFileWith(path, dir string, partSize int64, keys []ed25519.PrivateKey, o SplitOptions) (string, *PartIndex, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
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
	names := make([]string, 0, n+1)
	for i := 1; i <= n; i++ {
		names = append(names, PartName(name, i, n))
	}
	names = append(names, IndexName(name))
	RemoveStaleTemps(dir, o.Now())
	if !o.Force {
		for _, nm := range names {
			if _, err := os.Lstat(filepath.Join(dir, nm)); err == nil {
				return "", nil, fail(ErrFileExists, "%s exists; split replaces it only with --force", filepath.Join(dir, nm))
			}
		}
	}
	stage, lock, err := MkdirTemp(dir, "split")
	if err != nil {
		return "", nil, fail(ErrIO, "cannot create a temporary folder in %s", dir).WithCause(err)
	}
	defer lock.Close()
	defer os.RemoveAll(stage) // empty after a commit
	x := &PartIndex{Format: PartsFormat, BundleID: id, Version: version, Name: name, Size: uint64(size)}
	whole := sha256.New()
	buf := make([]byte, 256<<10)
	var done int64
	for i := 1; i <= n; i++ {
		want := partSize
		if rest := size - int64(i-1)*partSize; rest < want {
			want = rest
		}
		r := io.TeeReader(io.LimitReader(f, want), whole)
		sum, err := writePart(filepath.Join(stage, names[i-1]), r, want, buf, func(k int64) {
			if o.Progress != nil {
				o.Progress(done + k)
			}
		})
		if err != nil {
			return "", nil, err
		}
		done += want
		x.Parts = append(x.Parts, PartEntry{Name: names[i-1], Size: uint64(want), SHA256: sum})
	}
	x.SHA256 = whole.Sum(nil)
	payload, err := x.Encode()
	if err != nil {
		return "", nil, err
	}
	signed, err := signCOSE(MediaTypePartIndex, payload, keys)
	if err != nil {
		return "", nil, err
	}
	if err := writeSynced(filepath.Join(stage, names[n]), signed); err != nil {
		return "", nil, err
	}
	syncFolder(stage)
	// Commit: no index may name parts of another split, so an old index
	// goes first and the new one comes last.
	ip := filepath.Join(dir, names[n])
	if o.Force {
		if err := os.Remove(ip); err != nil && !os.IsNotExist(err) {
			return "", nil, fail(ErrIO, "cannot replace %s", ip).WithCause(err)
		}
		syncFolder(dir)
	}
	for _, nm := range names {
		if err := os.Rename(filepath.Join(stage, nm), filepath.Join(dir, nm)); err != nil {
			return "", nil, fail(ErrIO, "cannot move %s into place", nm).WithCause(err)
		}
	}
	syncFolder(dir)
	return ip, x, nil
}

// writePart writes exactly want bytes of r to path, syncs it, and returns
// their SHA-256; progress gets the bytes written so far.
func writePart(path string, r io.Reader, want int64, buf []byte, progress func(int64)) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fail(ErrIO, "cannot create part %s", filepath.Base(path)).WithCause(err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(&countWriter{w: io.MultiWriter(f, h), progress: progress}, r, buf)
	if err == nil && n != want {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fail(ErrIO, "cannot write part %s", filepath.Base(path)).WithCause(err)
	}
	return h.Sum(nil), nil
}

// countWriter reports the bytes written through it.
type countWriter struct {
	w        io.Writer
	n        int64
	progress func(int64)
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.progress(c.n)
	return n, err
}

// writeSynced writes data to the new file path and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(ErrIO, "cannot create %s", filepath.Base(path)).WithCause(err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(ErrIO, "cannot write %s", filepath.Base(path)).WithCause(err)
	}
	return nil
}

// syncFolder makes renames in dir durable where the system allows it; a
// failure is not an error (the files themselves are complete).
func syncFolder(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
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
