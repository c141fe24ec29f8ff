package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// Part files on disk (docs/FORMAT.md §13): SplitFile cuts a bundle file
// into parts and writes their signed index (bundle.PartIndex, encoded and
// signed by bundle); LocateParts and PartsReader find the parts of an
// index and read them back as one stream, checked part by part.

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
func SplitFile(path, dir string, partSize int64, keys []ed25519.PrivateKey) (string, *bundle.PartIndex, error) {
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
// Without Force nothing in dir is ever replaced, also a file that
// appeared there while the bundle was split (commitNew).
func SplitFileWith(path, dir string, partSize int64, keys []ed25519.PrivateKey, o SplitOptions) (string, *bundle.PartIndex, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	// Examined before it is opened, as a part is (regfile.Open): a FIFO
	// or a device given as the bundle is refused without being opened.
	f, st, err := regfile.Open(path, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return "", nil, fail(bundle.ErrIO, "the bundle is not a regular file")
	}
	if err != nil {
		return "", nil, fail(bundle.ErrIO, "cannot open the bundle").WithCause(err)
	}
	defer f.Close()
	// One read serves both the identity and the parts (BUNDLE-15): the
	// bytes Identify consumed are kept and cut into the parts first, so
	// the index names the bundle whose bytes it hashes, even when the file
	// is rewritten during the split.
	var head bytes.Buffer
	id, version, err := bundle.Identify(io.TeeReader(f, &head))
	if err != nil {
		return "", nil, err
	}
	src := io.MultiReader(&head, f)
	name := filepath.Base(path)
	if !bundle.ValidFileName(name) {
		return "", nil, fail(bundle.ErrUnsafeKey, "the file name %q cannot be used for parts: rename it to [A-Za-z0-9._-], not starting with . or -", name)
	}
	if partSize < bundle.MinPartSize {
		return "", nil, fail(bundle.ErrInconsistent, "a part is at least %d bytes", bundle.MinPartSize)
	}
	size := st.Size()
	if size == 0 {
		return "", nil, fail(bundle.ErrTruncated, "the bundle file is empty")
	}
	x, names, err := splitPlan(id, version, name, size, partSize)
	if err != nil {
		return "", nil, err
	}
	n := len(x.Parts)
	// Every check comes before the first side effect: the keys are
	// those the index can be signed with, then no output is there to be
	// replaced unasked; only then are leftovers removed and parts written.
	if err := checkSplitKeys(x, keys); err != nil {
		return "", nil, err
	}
	for _, nm := range names {
		if err := splitTarget(filepath.Join(dir, nm), o.Force); err != nil {
			return "", nil, err
		}
	}
	RemoveStaleTemps(dir, o.Now())
	stage, lock, err := MkdirTemp(dir, "split")
	if err != nil {
		return "", nil, fail(bundle.ErrIO, "cannot create a temporary folder in %s", dir).WithCause(err)
	}
	defer lock.Close()
	defer os.RemoveAll(stage) // empty after a commit
	whole := sha256.New()
	buf := make([]byte, 256<<10)
	var done int64
	for i := range x.Parts {
		want := int64(x.Parts[i].Size)
		r := io.TeeReader(io.LimitReader(src, want), whole)
		sum, err := writePart(filepath.Join(stage, names[i]), r, want, buf, func(k int64) {
			if o.Progress != nil {
				o.Progress(done + k)
			}
		})
		if err != nil {
			return "", nil, err
		}
		done += want
		x.Parts[i].SHA256 = sum
	}
	// The file grew since it was examined: its parts would be a prefix.
	if n, _ := src.Read(make([]byte, 1)); n > 0 {
		return "", nil, fail(bundle.ErrIO, "the bundle file changed while it was split (longer than the %d bytes it had)", size)
	}
	x.SHA256 = whole.Sum(nil)
	signed, err := bundle.SignPartIndex(x, keys)
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
	if !o.Force {
		if err := commitNew(stage, dir, names); err != nil {
			return "", nil, err
		}
		syncFolder(dir)
		return ip, x, nil
	}
	if err := commitForce(stage, dir, ip, names); err != nil {
		return "", nil, err
	}
	return ip, x, nil
}

// commitForce moves the staged files names (the parts, then the index)
// from stage into dir with Force: the old index is removed first, then
// each is renamed over its name. Every name is judged again just before
// (splitTarget: a node put at a name since the check before staging, a
// device, a FIFO, a socket, a folder, is ErrIO and never removed nor
// replaced; docs/SPEC-DECISIONS.md CLI-105): all of them before the
// index is removed, and each again just before its rename.
func commitForce(stage, dir, ip string, names []string) error {
	for _, nm := range names {
		if err := splitTarget(filepath.Join(dir, nm), true); err != nil {
			return err
		}
	}
	if err := os.Remove(ip); err != nil && !os.IsNotExist(err) {
		return fail(bundle.ErrIO, "cannot replace %s", ip).WithCause(err)
	}
	syncFolder(dir)
	for _, nm := range names {
		to := filepath.Join(dir, nm)
		if err := splitTarget(to, true); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(stage, nm), to); err != nil {
			return fail(bundle.ErrIO, "cannot move %s into place", nm).WithCause(err)
		}
	}
	syncFolder(dir)
	return nil
}

// splitTarget refuses the name p of a part or of the index before
// anything is written: a name that leads to something else than a
// regular file or nothing (regfile.JudgeOutput, links followed: a
// device, a FIFO, a folder, a socket, a descriptor's name, /dev/null) is
// ErrIO, also with force, since renaming a part
// over it would replace the node by a regular file, and writing a part
// into it would leave an index naming a part no join can read
// (docs/SPEC-DECISIONS.md CLI-102); an existing regular file is
// ErrFileExists without force.
func splitTarget(p string, force bool) error {
	k, err := regfile.JudgeOutput(p)
	if err == nil && k != regfile.OutputFile {
		err = regfile.ErrNotRegular
	}
	if errors.Is(err, regfile.ErrNotRegular) {
		return fail(bundle.ErrIO, "%s is not a regular file; split never replaces it, also with --force", p)
	}
	if err != nil {
		return fail(bundle.ErrIO, "cannot examine %s", p).WithCause(err)
	}
	if _, err := os.Lstat(p); err == nil && !force {
		return fail(ErrFileExists, "%s exists; split replaces it only with --force", p)
	}
	return nil
}

// commitNew moves the staged files names (the parts, then the index)
// from stage into dir without Force: each is placed only where nothing
// is (regfile.LinkNew), so a name taken since the check before staging
// is ErrFileExists, never replaced; the files this split placed before
// it are then removed again (each only while it is still the file
// placed), so a refused split leaves nothing, and no index is placed
// unless all its parts are (docs/SPEC-DECISIONS.md BUILD-15).
func commitNew(stage, dir string, names []string) error {
	placed := make([]os.FileInfo, 0, len(names))
	for _, nm := range names {
		from, to := filepath.Join(stage, nm), filepath.Join(dir, nm)
		st, err := os.Lstat(from)
		if err == nil {
			err = regfile.LinkNew(from, to)
		}
		if err == nil {
			placed = append(placed, st)
			continue
		}
		for i, was := range placed {
			p := filepath.Join(dir, names[i])
			if now, err := os.Lstat(p); err == nil && os.SameFile(was, now) {
				os.Remove(p)
			}
		}
		if errors.Is(err, fs.ErrExist) {
			return fail(ErrFileExists, "%s appeared while the bundle was split; split replaces it only with --force", to)
		}
		return fail(bundle.ErrIO, "cannot move %s into place", nm).WithCause(err)
	}
	return nil
}

// splitPlan is the index of a split of the file name (size bytes, the
// bundle id at version) into parts of partSize bytes, every part named
// and sized, its hashes still zero, and the names of the parts then of
// the index: what split writes, known before anything is written.
func splitPlan(id string, version uint64, name string, size, partSize int64) (*bundle.PartIndex, []string, error) {
	// Rounded up without size + partSize, which overflows for a part
	// size near math.MaxInt64.
	parts := size / partSize
	if size%partSize != 0 {
		parts++
	}
	if parts > bundle.MaxParts {
		return nil, nil, fail(bundle.ErrTooLarge, "%d parts of %d bytes; a split has at most %d parts (choose a larger --size)", parts, partSize, bundle.MaxParts)
	}
	n := int(parts)
	x := &bundle.PartIndex{Format: bundle.PartsFormat, BundleID: id, Version: version, Name: name, Size: uint64(size), SHA256: make([]byte, sha256.Size)}
	names := make([]string, 0, n+1)
	for i := 1; i <= n; i++ {
		names = append(names, bundle.PartName(name, i, n))
		want := min(partSize, size-int64(i-1)*partSize)
		x.Parts = append(x.Parts, bundle.PartEntry{Name: names[i-1], Size: uint64(want), SHA256: make([]byte, sha256.Size)})
	}
	names = append(names, bundle.IndexName(name))
	return x, names, nil
}

// checkSplitKeys refuses, before anything is written, keys that could
// not sign the index x at the end (docs/SPEC-DECISIONS.md BUILD-14): x,
// its hashes still zero, is signed as it will be, so the index's own rules
// and bundle.CheckSigningKeys (1 to bundle.MaxSignatures Ed25519 keys,
// each whole and once) refuse here what they would refuse after the last
// part.
func checkSplitKeys(x *bundle.PartIndex, keys []ed25519.PrivateKey) error {
	_, err := bundle.SignPartIndex(x, keys)
	return err
}

// writePart writes exactly want bytes of r to path, syncs it, and returns
// their SHA-256; progress gets the bytes written so far.
func writePart(path string, r io.Reader, want int64, buf []byte, progress func(int64)) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fail(bundle.ErrIO, "cannot create part %s", filepath.Base(path)).WithCause(err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(&CountingWriter{W: io.MultiWriter(f, h), Progress: progress}, r, buf)
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
		return nil, fail(bundle.ErrIO, "cannot write part %s", filepath.Base(path)).WithCause(err)
	}
	return h.Sum(nil), nil
}

// CountingWriter passes what is written to W and counts in N the bytes W
// took; Progress, when set, is called with N after each write. Every
// writer of bundle files counts through it (split here; build, export,
// join and the demo's build in cmd/ampbundle and cmd/ampagent), with W an
// io.MultiWriter where a hash is taken on the way.
type CountingWriter struct {
	W        io.Writer
	N        int64
	Progress func(written int64)
}

// Write writes b to W, adds the bytes W took to N and reports N.
func (c *CountingWriter) Write(b []byte) (int, error) {
	n, err := c.W.Write(b)
	c.N += int64(n)
	if c.Progress != nil {
		c.Progress(c.N)
	}
	return n, err
}

// writeSynced writes data to the new file path and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(bundle.ErrIO, "cannot create %s", filepath.Base(path)).WithCause(err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(bundle.ErrIO, "cannot write %s", filepath.Base(path)).WithCause(err)
	}
	return nil
}

// syncFolder makes renames in dir durable where the system allows it
// (regfile.SyncDir: the folder is opened only as a folder, so a FIFO or a
// device put in its place is never opened); a failure is not an error
// (the files themselves are complete).
func syncFolder(dir string) { _ = regfile.SyncDir(dir) }

// LocateParts finds the part files of x among paths: files, or folders
// whose entries are searched (one level, by exact file name). Files whose
// names the index does not list are ignored. Every part must be found
// exactly once (else ErrPartMissing naming all missing parts, or
// ErrPartDuplicate) and have the size the index says (else
// ErrPartMismatch naming it). It returns the path of each part, in index
// order. No part's bytes are read. A folder is read in batches of
// locateBatch entries, never whole, and at most MaxLocateEntries entries
// are examined over all the folders given; beyond them the search is
// refused as limit_exceeded (docs/SPEC-DECISIONS.md BUNDLE-16).
func LocateParts(x *bundle.PartIndex, paths []string) ([]string, error) {
	return locateParts(x, paths, MaxLocateEntries)
}

// locateParts is LocateParts examining at most limit folder entries
// (MaxLocateEntries; the package's tests pass less).
func locateParts(x *bundle.PartIndex, paths []string, limit int) ([]string, error) {
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
			return fail(bundle.ErrPartDuplicate, "part %d (%s) is given twice: %s and %s; give one", i+1, x.Parts[i].Name, found[i], path)
		}
		found[i] = path
		return nil
	}
	examined := 0
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fail(bundle.ErrIO, "cannot read %s", p).WithCause(err)
		}
		if !st.IsDir() {
			if err := add(p); err != nil {
				return nil, err
			}
			continue
		}
		if err := locateIn(p, add, &examined, limit); err != nil {
			return nil, err
		}
	}
	var missing []string
	for i, f := range found {
		if f == "" {
			missing = append(missing, fmt.Sprintf("%d (%s)", i+1, x.Parts[i].Name))
		}
	}
	if len(missing) > 0 {
		return nil, fail(bundle.ErrPartMissing, "missing part %s of %d", strings.Join(missing, ", "), len(x.Parts))
	}
	for i, f := range found {
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			return nil, fail(bundle.ErrIO, "cannot read part %d (%s)", i+1, f)
		}
		if uint64(st.Size()) != x.Parts[i].Size {
			return nil, fail(bundle.ErrPartMismatch, "part %d (%s) has %d bytes, the index says %d (truncated or from another split)", i+1, f, st.Size(), x.Parts[i].Size)
		}
	}
	return found, nil
}

// MaxLocateEntries bounds the folder entries LocateParts examines, over
// all the folders it is given: a hundred splits of the largest size side by
// side, while a folder of millions of other files is refused in seconds
// rather than read for minutes.
const MaxLocateEntries = 1 << 20

// locateBatch is how many entries LocateParts reads from a folder at once.
const locateBatch = 1024

// locateIn passes the regular files of the folder dir to add, reading its
// entries in batches and counting them in examined, which may not pass
// limit (MaxLocateEntries). The folder is opened without waiting and,
// where the system allows, only as a folder (regfile.OpenFolder: a FIFO or
// a device put in its place is not opened), and what was opened must be a
// folder.
func locateIn(dir string, add func(string) error, examined *int, limit int) error {
	d, err := regfile.OpenFolder(dir, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotFolder) {
		return fail(bundle.ErrIO, "cannot read the folder %s (no longer a folder)", dir)
	}
	if err != nil {
		return fail(bundle.ErrIO, "cannot read the folder %s", dir).WithCause(err)
	}
	defer d.Close()
	for {
		batch, err := d.ReadDir(locateBatch)
		for _, e := range batch {
			*examined++
			if *examined > limit {
				return fail(bundle.ErrTooLarge, "the folders given hold more than %d entries; give the folders that hold the parts, or the part files themselves", limit)
			}
			if e.Type().IsRegular() {
				if err := add(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fail(bundle.ErrIO, "cannot read the folder %s", dir).WithCause(err)
		}
	}
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
	x     *bundle.PartIndex
	paths []string
	i     int // current part
	f     *os.File
	n     uint64 // bytes read of the current part
	h     hash.Hash
	whole hash.Hash
	err   error
	// head holds the bytes CheckCarries read (hashed as they passed),
	// returned again by the next Reads and released once they all were;
	// checked says it ran.
	head    []byte
	checked bool
	// OnPart, when set, is called after each part verified (1-based).
	OnPart func(i int)
}

// NewPartsReader returns a reader over the parts at paths (from
// LocateParts), in index order.
func NewPartsReader(x *bundle.PartIndex, paths []string) *PartsReader {
	return &PartsReader{x: x, paths: paths, whole: sha256.New()}
}

// Err returns the part error that stopped the stream, if any.
func (p *PartsReader) Err() error { return p.err }

// CheckCarries checks that the parts carry the bundle the index names
// (docs/FORMAT.md §13.3, docs/SPEC-DECISIONS.md BUNDLE-14): it reads the
// first item of the stream, the signed manifest (or a delta's signed
// header, whose bundle_id and version the bundle reader binds to the
// manifest's), as split named it (bundle.Identify), and refuses a
// bundle_id or version other than the index's as ErrPartMismatch, naming
// both (each a validated bundle id). The bytes it reads are hashed as
// they pass, like any others, and the next Reads return them again, so
// the bundle reader verifies the very bytes checked here; it holds at
// most one manifest item plus a small read buffer. A head
// that is not a bundle's is left to that reader, which refuses those same
// bytes under the same limit with its own error; a part error met on the
// way is returned. The first Read calls it when the caller did not: call
// it before a side effect (an import, an output file) to refuse first.
func (p *PartsReader) CheckCarries() error {
	if p.checked {
		return p.err
	}
	p.checked = true
	var head bytes.Buffer
	id, version, err := bundle.Identify(io.TeeReader(readerFunc(p.read), &head))
	p.head = head.Bytes()
	if p.err != nil {
		return p.err
	}
	if err != nil {
		return nil
	}
	if id != p.x.BundleID || version != p.x.Version {
		err := fail(bundle.ErrPartMismatch, "the part index names %s version %d, but its parts carry %s version %d (an index of another bundle)",
			p.x.BundleID, p.x.Version, id, version)
		// A part swapped in from another split is named as such: the
		// rest of the part the manifest ended in is hashed first.
		if perr := p.Explain(err); perr != err {
			return perr
		}
		p.err = err
		return err
	}
	return nil
}

// readerFunc is a function as an io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// Read implements io.Reader. A Read of an empty buffer returns 0, nil and
// reads nothing. The first Read checks that the parts carry the bundle
// the index names (CheckCarries).
func (p *PartsReader) Read(b []byte) (int, error) {
	if len(b) == 0 && p.err == nil {
		return 0, nil
	}
	if err := p.CheckCarries(); err != nil {
		return 0, err
	}
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		if len(p.head) == 0 {
			p.head = nil // an empty slice of it would keep the buffer (BUNDLE-18)
		}
		return n, nil
	}
	return p.read(b)
}

// read reads the parts themselves, past what CheckCarries kept.
func (p *PartsReader) read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if len(b) == 0 {
		return 0, nil
	}
	orig := b
	for {
		if p.i == len(p.x.Parts) {
			return 0, io.EOF
		}
		if p.f == nil {
			f, err := p.open()
			if err != nil {
				p.err = err
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
				p.err = fail(bundle.ErrPartMismatch, "part %d (%s) ends after %d bytes, the index says %d (truncated)", p.i+1, p.paths[p.i], p.n, e.Size)
				return 0, p.err
			}
			if err != nil {
				p.err = fail(bundle.ErrIO, "cannot read part %d (%s)", p.i+1, p.paths[p.i]).WithCause(err)
				return 0, p.err
			}
			continue
		}
		if err := p.endPart(); err != nil {
			return 0, err
		}
		b = orig
	}
}

// open opens the current part and takes it only when it is a regular
// file of the size the index says (docs/SPEC-DECISIONS.md BUNDLE-12, as
// the source build opens its files: BUILD-4). Nothing else is ever
// opened, since open(2) of a device runs its driver (a watchdog arms, a
// terminal becomes a controlling one, a tape rewinds on close) before
// any check of what was opened could refuse it (BUNDLE-12, amended): the
// links of the path are resolved and the file they lead to is examined
// before it is opened (regfile.Open: on Linux through a descriptor that
// opens nothing, then that very inode is opened, so nothing put in its
// place meanwhile is, BUNDLE-17; elsewhere lstat, then an open that
// follows no link and does not wait); only a regular file is opened, and
// what was opened must be the file examined (fstat, os.SameFile).
func (p *PartsReader) open() (*os.File, error) {
	path, size := p.paths[p.i], p.x.Parts[p.i].Size
	swapped := func() error {
		return fail(bundle.ErrPartMismatch, "part %d (%s) is no longer a regular file of the %d bytes the index says (replaced after the parts were located)", p.i+1, path, size)
	}
	f, st, err := regfile.Open(path, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, swapped()
	}
	if err != nil {
		return nil, fail(bundle.ErrIO, "cannot open part %d (%s)", p.i+1, path).WithCause(err)
	}
	if uint64(st.Size()) != size {
		f.Close()
		return nil, swapped()
	}
	return f, nil
}

// OpenRegular opens the file at path (the operator's links followed) only
// when it is a regular file, as a part is opened: what the path leads to
// is examined before it is opened, and anything else (a FIFO, a device)
// is refused as ErrIO without being opened, so no driver runs and nothing
// waits for a writer (docs/SPEC-DECISIONS.md BUNDLE-12, BUNDLE-17,
// BUNDLE-19). For a part index, which is read before its parts.
func OpenRegular(path string) (*os.File, error) {
	f, _, err := regfile.Open(path, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, fail(bundle.ErrIO, "%s is not a regular file (a FIFO or a device is not opened)", path)
	}
	if err != nil {
		return nil, fail(bundle.ErrIO, "cannot open %s", path).WithCause(err)
	}
	return f, nil
}

// endPart ends the current part, all of whose bytes the index gives were
// read: nothing may follow, and it must hash right; after the last part
// the whole must hash right too. It sets and returns the part error, or
// moves to the next part.
func (p *PartsReader) endPart() error {
	e := p.x.Parts[p.i]
	var one [1]byte
	if n, _ := p.f.Read(one[:]); n > 0 {
		p.err = fail(bundle.ErrPartMismatch, "part %d (%s) is longer than the index says", p.i+1, p.paths[p.i])
		return p.err
	}
	p.f.Close()
	p.f = nil
	if subtle.ConstantTimeCompare(p.h.Sum(nil), e.SHA256) != 1 {
		p.err = fail(bundle.ErrPartMismatch, "part %d (%s) does not match its sha256 in the index (altered, or a part of another split)", p.i+1, p.paths[p.i])
		return p.err
	}
	p.i++
	if p.OnPart != nil {
		p.OnPart(p.i)
	}
	if p.i == len(p.x.Parts) && subtle.ConstantTimeCompare(p.whole.Sum(nil), p.x.SHA256) != 1 {
		p.err = fail(bundle.ErrPartMismatch, "the joined parts do not match the sha256 of the whole in the index")
		return p.err
	}
	return nil
}

// Explain returns the part error behind err, a failure of whoever read
// the stream: the part error that stopped the stream if there was one;
// else, when a part was being read, the rest of that part (and no later
// one) is hashed, and a part that does not match its index entry is
// named (so that a swapped or altered part is reported as such, not only
// as the bundle error it caused); else err itself
// (docs/SPEC-DECISIONS.md BUNDLE-10).
func (p *PartsReader) Explain(err error) error {
	if p.err != nil {
		return p.err
	}
	if err == nil || p.f == nil || p.i >= len(p.x.Parts) {
		return err
	}
	e := p.x.Parts[p.i]
	buf := make([]byte, 64<<10)
	for p.err == nil && p.n < e.Size {
		// Never past the part: read returns as soon as it has bytes.
		if _, rerr := p.read(buf[:min(uint64(len(buf)), e.Size-p.n)]); rerr != nil {
			break
		}
	}
	if p.err == nil && p.n == e.Size {
		p.endPart()
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
