package ocitransport

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// Bounds of the pre-check of a layout (docs/FORMAT.md, "Bundles in OCI
// registries and layouts"): oras-go reads index.json whole and every
// manifest reachable from it, once per index.json entry, when it opens a
// layout; nothing of it is read before these bounds passed.
const (
	// MaxLayoutReadBytes bounds the bytes of manifests opening a layout
	// reads, a manifest counted once per index.json entry it is reachable
	// from.
	MaxLayoutReadBytes = 16 * DefaultMaxManifestSize
	// MaxLayoutTarEntries bounds the entries of a layout tar.
	MaxLayoutTarEntries = 100000
	// maxOCILayoutFileSize bounds the oci-layout file.
	maxOCILayoutFileSize = 64 << 10
	// maxRefsPerDocument bounds the descriptors of one index or manifest.
	maxRefsPerDocument = max(MaxLayers, DefaultMaxTags)
)

// layoutFiles is what the pre-check reads of a layout: a folder or a tar.
type layoutFiles interface {
	// size is the size of the regular file name (slash-separated,
	// relative): fs.ErrNotExist when missing, a named error when it is
	// something else (a symbolic link among them).
	size(name string) (int64, error)
	// read returns the n bytes of name.
	read(name string, n int64) ([]byte, error)
}

// readByOras says whether oras-go reads a node of media type mt when it
// indexes a layout (content.Successors): the manifests and indexes.
func readByOras(mt string) bool {
	switch mt {
	case ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		"application/vnd.docker.distribution.manifest.v2+json",
		"application/vnd.docker.distribution.manifest.list.v2+json",
		"application/vnd.oci.artifact.manifest.v1+json":
		return true
	}
	return false
}

// layoutCheck walks what oras-go will read of a layout, bounded.
type layoutCheck struct {
	files layoutFiles
	o     *Options
	nodes map[digest.Digest]*layoutNode
	bytes int64 // read by oras-go, repeats counted
	walks int
}

// layoutNode is a manifest of the layout, read once: its size and the
// descriptors in it that oras-go reads in turn (nil node: missing).
type layoutNode struct {
	size     int64
	children []ocispec.Descriptor
}

// checkLayout refuses a layout whose index.json or manifests are over the
// bounds before oras-go reads any of it. It returns the index.json it
// checked (nil when there is none), which oras-go is then given in place
// of the file (dirFiles.index): an index.json put in its place after the
// check, naming a manifest of a terabyte oras-go would allocate whole, is
// never read (docs/SPEC-DECISIONS.md OCI-21).
func checkLayout(files layoutFiles, o *Options) ([]byte, error) {
	if n, err := files.size(ocispec.ImageLayoutFile); err == nil && n > maxOCILayoutFileSize {
		return nil, fail(ErrLayout, "the layout's oci-layout file is larger than %d bytes", maxOCILayoutFileSize)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	n, err := files.size(ocispec.ImageIndexFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a new layout, or oras-go says what is missing
	}
	if err != nil {
		return nil, err
	}
	if n > o.MaxManifestSize {
		return nil, fail(ErrManifestTooBig, "the layout's index.json is larger than %d bytes", o.MaxManifestSize)
	}
	data, err := files.read(ocispec.ImageIndexFile, n)
	if err != nil {
		return nil, err
	}
	roots, err := decodeRefs(data, o.MaxTags, false)
	if err != nil {
		return nil, err
	}
	c := &layoutCheck{files: files, o: o, nodes: map[digest.Digest]*layoutNode{}}
	for _, r := range roots {
		if err := c.walk(r, map[digest.Digest]bool{}); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// walk follows d as oras-go indexes it: each node once per root.
func (c *layoutCheck) walk(d ocispec.Descriptor, seen map[digest.Digest]bool) error {
	if !readByOras(d.MediaType) || seen[d.Digest] {
		return nil
	}
	seen[d.Digest] = true
	if c.walks++; c.walks > 4*c.o.MaxTags {
		return fail(ErrTooMany, "opening the layout would read more than %d manifests", 4*c.o.MaxTags)
	}
	n, err := c.node(d)
	if err != nil || n == nil {
		return err
	}
	if c.bytes += n.size; c.bytes > MaxLayoutReadBytes {
		return fail(ErrTooMany, "opening the layout would read more than %d bytes of manifests", MaxLayoutReadBytes)
	}
	for _, ch := range n.children {
		if err := c.walk(ch, seen); err != nil {
			return err
		}
	}
	return nil
}

// node reads the manifest d names once, bounded (nil when missing:
// oras-go skips it too).
func (c *layoutCheck) node(d ocispec.Descriptor) (*layoutNode, error) {
	if n, ok := c.nodes[d.Digest]; ok {
		return n, nil
	}
	if d.Digest.Validate() != nil || d.Digest.Algorithm() != digest.SHA256 {
		return nil, fail(ErrLayout, "the layout names a manifest by an invalid or non-sha256 digest")
	}
	if d.Size <= 0 || d.Size > c.o.MaxManifestSize {
		return nil, fail(ErrManifestTooBig, "the layout names a manifest of more than %d bytes (or of no size)", c.o.MaxManifestSize)
	}
	name := "blobs/sha256/" + d.Digest.Encoded()
	size, err := c.files.size(name)
	if errors.Is(err, fs.ErrNotExist) {
		c.nodes[d.Digest] = nil
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if size != d.Size {
		return nil, fail(ErrSize, "a manifest of the layout is not the size its descriptor says")
	}
	data, err := c.files.read(name, size)
	if err != nil {
		return nil, err
	}
	// What is stored under a digest's name is that digest's only once
	// hashed: the walk, and so the bounds, follow these bytes, never
	// others than oras-go is then given (OCI-24).
	if digest.SHA256.FromBytes(data) != d.Digest {
		return nil, fail(ErrDigest, "a manifest of the layout does not match its digest")
	}
	children, err := decodeRefs(data, maxRefsPerDocument, true)
	if err != nil {
		return nil, err
	}
	n := &layoutNode{size: size}
	for _, ch := range children {
		if readByOras(ch.MediaType) {
			n.children = append(n.children, ch)
		}
	}
	c.nodes[d.Digest] = n
	return n, nil
}

// refMembers are the members of an index or manifest that hold
// descriptors: a list, or one.
var refMembers = map[string]bool{"manifests": true, "layers": true, "blobs": true, "config": false, "subject": false}

// decodeRefs reads the descriptors of an index or manifest (its
// manifests, layers, blobs, config and subject; only manifests when
// !all) one at a time, at most max of them, without decoding the rest:
// a member is matched case-insensitively as encoding/json does, and one
// given twice is refused (encoding/json would keep the last).
func decodeRefs(data []byte, maxRefs int, all bool) ([]ocispec.Descriptor, error) {
	bad := func() error {
		return fail(ErrLayout, "an index or manifest of the layout is not one JSON object of its schema")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, bad()
	}
	var out []ocispec.Descriptor
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, bad()
		}
		member := ""
		for m := range refMembers {
			if strings.EqualFold(key, m) && (all || m == "manifests") {
				member = m
			}
		}
		if member == "" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, bad()
			}
			continue
		}
		if seen[member] {
			return nil, fail(ErrLayout, "an index or manifest of the layout gives a member twice")
		}
		seen[member] = true
		if out, err = decodeMember(dec, out, refMembers[member], maxRefs); err != nil {
			return nil, err
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, bad()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad()
	}
	return out, nil
}

// decodeMember appends to out the descriptor (or list of them, or null)
// dec is at.
func decodeMember(dec *json.Decoder, out []ocispec.Descriptor, list bool, maxRefs int) ([]ocispec.Descriptor, error) {
	bad := fail(ErrLayout, "an index or manifest of the layout is not one JSON object of its schema")
	one := func() error {
		if len(out) >= maxRefs {
			return fail(ErrTooMany, "an index or manifest of the layout has more than %d descriptors", maxRefs)
		}
		var d ocispec.Descriptor
		if err := dec.Decode(&d); err != nil {
			return bad
		}
		out = append(out, d)
		return nil
	}
	if !list {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, bad
		}
		if string(raw) == "null" {
			return out, nil
		}
		if len(out) >= maxRefs {
			return nil, fail(ErrTooMany, "an index or manifest of the layout has more than %d descriptors", maxRefs)
		}
		var d ocispec.Descriptor
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, bad
		}
		return append(out, d), nil
	}
	t, err := dec.Token()
	if err != nil {
		return nil, bad
	}
	if t == nil {
		return out, nil // null
	}
	if t != json.Delim('[') {
		return nil, bad
	}
	for dec.More() {
		if err := one(); err != nil {
			return nil, err
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim(']') {
		return nil, bad
	}
	return out, nil
}

// dirFiles is a layout folder, read without following a symbolic link
// below its root. It is also the fs.FS oras-go reads a layout folder
// through (Open): a file that is a symbolic link or not a regular file (a
// FIFO, whose open would wait for a writer forever, a device) is refused
// at its open, oci_layout_error, even when it was put there after
// checkLayoutDir (docs/SPEC-DECISIONS.md OCI-15, amended in review 76);
// so is a folder on the way (blobs, blobs/sha256) that is a symbolic link
// or not a folder (layoutDir.sub, OCI-21).
//
// Its folders are those the endpoint opened once (layoutFolders). When
// pinned, index.json is not read from the folder: it is index, the bytes
// checkLayout checked (missing when nil).
type dirFiles struct {
	lf     *layoutFolders
	pinned bool
	index  []byte
}

// Open implements fs.FS: name, slash-separated and relative, opened in
// its folder (layoutFolders.dir) as a regular file that is no link.
func (d dirFiles) Open(name string) (fs.File, error) {
	if d.pinned && name == ocispec.ImageIndexFile {
		if d.index == nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return &tarEntryFile{io.NewSectionReader(bytes.NewReader(d.index), 0, int64(len(d.index))), name}, nil
	}
	dir, base, err := splitLayoutName(name)
	if err != nil {
		return nil, err
	}
	ld, done, err := d.lf.dir(dir)
	if err != nil {
		return nil, layoutOpenError(err)
	}
	defer done()
	f, err := ld.open(base)
	if err != nil {
		return nil, layoutOpenError(err)
	}
	return f, nil
}

// layoutOpenError is the error of a layout file that could not be opened:
// a missing one stays fs.ErrNotExist (oras-go says what is missing), a
// named refusal is kept, anything else is oci_layout_error.
func layoutOpenError(err error) error {
	var ae *amp.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return err
	case errors.As(err, &ae):
		return err
	}
	return fail(ErrLayout, "a file of the OCI layout is a symbolic link or not a regular file").WithCause(err)
}

func (d dirFiles) size(name string) (int64, error) {
	dir, base, err := splitLayoutName(name)
	if err != nil {
		return 0, fail(ErrLayout, "cannot read the OCI layout").WithCause(err)
	}
	ld, done, err := d.lf.dir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fs.ErrNotExist
		}
		return 0, layoutReadError(err)
	}
	defer done()
	st, err := ld.lstat(base)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fs.ErrNotExist
		}
		return 0, layoutReadError(err)
	}
	if !st.Mode().IsRegular() {
		return 0, fail(ErrLayout, "a file of the OCI layout is a symbolic link or not a regular file")
	}
	return st.Size(), nil
}

// layoutReadError keeps a named refusal, else names err oci_layout_error.
func layoutReadError(err error) error {
	var ae *amp.Error
	if errors.As(err, &ae) {
		return err
	}
	return fail(ErrLayout, "cannot read the OCI layout").WithCause(err)
}

func (d dirFiles) read(name string, n int64) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, layoutReadError(err)
	}
	defer f.Close()
	return readExactly(f, n)
}

func readExactly(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fail(ErrLayout, "a file of the OCI layout is shorter than it was").WithCause(err)
	}
	return buf, nil
}

// checkLayoutDir refuses a layout folder, opened as lf, whose index.json,
// oci-layout, ingest or any blob is a symbolic link or not a regular file
// or folder (blobs and blobs/sha256 were refused so by the open), then
// checks its bounds (checkLayout); it returns the index.json checked
// (nil: none).
func checkLayoutDir(lf *layoutFolders, o *Options) ([]byte, error) {
	st, err := lf.top.lstat("ingest")
	if err == nil && !st.IsDir() {
		return nil, fail(ErrLayout, "the layout's ingest is a symbolic link or not a folder")
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, layoutReadError(err)
	}
	files := dirFiles{lf: lf}
	for _, f := range []string{ocispec.ImageLayoutFile, ocispec.ImageIndexFile} {
		if _, err := files.size(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := checkBlobFiles(lf); err != nil {
		return nil, err
	}
	return checkLayout(files, o)
}

// checkBlobFiles refuses a blob that is not a regular file.
func checkBlobFiles(lf *layoutFolders) error {
	if lf.blobs == nil {
		return nil
	}
	f, err := lf.blobs.list()
	if err != nil {
		return layoutReadError(err)
	}
	defer f.Close()
	for e, err := range dirEntries(f) {
		if err != nil {
			return fail(ErrLayout, "cannot read the OCI layout").WithCause(err)
		}
		if !e.Type().IsRegular() {
			return fail(ErrLayout, "a blob of the layout is a symbolic link or not a regular file")
		}
	}
	return nil
}

// tarFiles is a layout tar: its entries' headers, read once, and the
// descriptor they were read through. It is also the fs.FS oras-go reads
// the tar through (Open): every entry is read from that descriptor, never
// from the tar's name opened again, as oras-go's own tar reader does for
// each blob (a FIFO renamed over the name since would hang that open
// forever; docs/SPEC-DECISIONS.md OCI-20).
type tarFiles struct {
	f       *os.File
	entries map[string]tarEntry
}

type tarEntry struct {
	off, size int64
	reg       bool
}

// openTarFiles reads the headers of the layout tar at p (at most
// MaxLayoutTarEntries; a name given twice is refused, which oras-go would
// take the last of). p must be a regular file (regfile.Open: a FIFO or a
// device there is oci_layout_error at once, never waited on).
func openTarFiles(p string) (*tarFiles, error) {
	f, _, err := regfile.Open(p, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, fail(ErrLayout, "the OCI layout tar is not a regular file")
	}
	if err != nil {
		return nil, fail(ErrLayout, "cannot read the OCI layout tar").WithCause(err)
	}
	t := &tarFiles{f: f, entries: map[string]tarEntry{}}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			f.Close()
			return nil, fail(ErrLayout, "the OCI layout tar is malformed").WithCause(err)
		}
		if len(t.entries) >= MaxLayoutTarEntries {
			f.Close()
			return nil, fail(ErrTooMany, "the OCI layout tar has more than %d entries", MaxLayoutTarEntries)
		}
		pos, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			f.Close()
			return nil, fail(ErrLayout, "cannot read the OCI layout tar").WithCause(err)
		}
		name := path.Clean(h.Name)
		if _, dup := t.entries[name]; dup {
			f.Close()
			return nil, fail(ErrLayout, "the OCI layout tar names one entry twice")
		}
		t.entries[name] = tarEntry{off: pos, size: h.Size, reg: h.Typeflag == tar.TypeReg}
	}
}

func (t *tarFiles) size(name string) (int64, error) {
	e, ok := t.entries[name]
	if !ok {
		return 0, fs.ErrNotExist
	}
	if !e.reg {
		return 0, fail(ErrLayout, "an entry of the OCI layout tar is not a regular file")
	}
	return e.size, nil
}

func (t *tarFiles) read(name string, n int64) ([]byte, error) {
	e := t.entries[name]
	return readExactly(io.NewSectionReader(t.f, e.off, min(n, e.size)), min(n, e.size))
}

// Open implements fs.FS: the regular entry name, read through the tar's
// descriptor (ReadAt: readers at once do not share an offset). Closing
// the entry leaves the tar open; the Endpoint closes it.
func (t *tarFiles) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	n, err := t.size(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, err
	}
	return &tarEntryFile{io.NewSectionReader(t.f, t.entries[name].off, n), path.Base(name)}, nil
}

// tarEntryFile is an entry of a layout tar opened by tarFiles.Open.
type tarEntryFile struct {
	*io.SectionReader
	name string
}

func (f *tarEntryFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *tarEntryFile) Close() error               { return nil }

// The fs.FileInfo of the entry: a read-only regular file.
func (f *tarEntryFile) Name() string       { return f.name }
func (f *tarEntryFile) Mode() fs.FileMode  { return 0o444 }
func (f *tarEntryFile) ModTime() time.Time { return time.Time{} }
func (f *tarEntryFile) IsDir() bool        { return false }
func (f *tarEntryFile) Sys() any           { return nil }

// openLayoutTar opens the layout tar at p and checks its bounds
// (checkLayout); the caller closes t.f.
func openLayoutTar(p string, o *Options) (*tarFiles, error) {
	t, err := openTarFiles(p)
	if err != nil {
		return nil, err
	}
	if _, err := checkLayout(t, o); err != nil {
		t.f.Close()
		return nil, err
	}
	return t, nil
}

// prepareLayoutDir creates what is missing of a destination layout
// folder lf (checked by checkLayoutDir first): blobs/sha256, each folder
// made in the one held before it, never through a link, and oci-layout
// and an empty index.json with O_EXCL, which refuses a symbolic link put
// there since. What it creates is durable before it is used: each file
// synced, then each folder that gained a name (blobs/sha256, blobs, the
// root), so that a power loss cannot keep blobs or an index.json that
// names them in a layout that lost its oci-layout, or its blobs folder
// (docs/SPEC-DECISIONS.md OCI-25).
func prepareLayoutDir(lf *layoutFolders, o *Options) error {
	made := lf.blobs == nil
	if err := lf.openBlobs(true); err != nil {
		return layoutWriteError(err)
	}
	if made {
		o.traced("made:blobs")
		o.traced("made:blobs/sha256")
		if err := syncLayoutBlobsFolders(lf, o); err != nil {
			return fail(ErrIO, "cannot create the OCI layout").WithCause(err)
		}
	}
	for _, f := range []struct{ name, body string }{
		{ocispec.ImageLayoutFile, `{"imageLayoutVersion":"1.0.0"}`},
		{ocispec.ImageIndexFile, `{"schemaVersion":2,"manifests":[]}`},
	} {
		fh, err := lf.top.create(f.name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			made = true
			o.traced("made:" + f.name)
			_, err = fh.WriteString(f.body)
			if err == nil {
				err = fh.Sync()
				o.traced("synced:" + f.name)
			}
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fail(ErrIO, "cannot create the OCI layout").WithCause(err)
		}
	}
	if made {
		if err := lf.top.sync(); err != nil {
			return fail(ErrIO, "cannot create the OCI layout").WithCause(err)
		}
		o.traced("synced:.")
	}
	return nil
}

// syncLayoutBlobsFolders syncs blobs/sha256 and blobs, just made (the
// root, which holds blobs, is synced by the caller).
func syncLayoutBlobsFolders(lf *layoutFolders, o *Options) error {
	if err := lf.blobs.sync(); err != nil {
		return err
	}
	o.traced("synced:blobs/sha256")
	b, err := lf.top.sub("blobs", false)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.sync(); err != nil {
		return err
	}
	o.traced("synced:blobs")
	return nil
}

// makeLayoutRoot makes the layout folder root and each missing folder
// above it, outermost first, syncing the folder that holds each after it
// is made: the root's own name is durable before anything is written in
// it (docs/SPEC-DECISIONS.md OCI-25). A folder made by another meanwhile
// is taken, as os.MkdirAll does.
func makeLayoutRoot(root string, o *Options) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	var missing []string
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		o.traced("made:" + relToRoot(abs, p))
		if err := regfile.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
		o.traced("synced:" + relToRoot(abs, filepath.Dir(p)))
	}
	return nil
}

// relToRoot is p relative to the layout's root abs, slash-separated, for
// the trace.
func relToRoot(abs, p string) string {
	rel, err := filepath.Rel(abs, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}
