package bundlebuild

import (
	"cmp"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/strictjson"
)

// Source folder layout (FORMAT.md §8).
const (
	bundleFile     = "bundle.json"
	capabilityFile = "capability.json"
	bridgeFile     = "bridge.json"
	inputSchema    = "input.schema.json"
	outputSchema   = "output.schema.json"
	// maxSourceFile bounds one source file: sources are JSON documents,
	// read into memory to be checked.
	maxSourceFile = 16 << 20
	// maxSchemaFile bounds one schema file: a larger schema document is
	// over a compile limit and can never be built (BUILD-5).
	maxSchemaFile = offlineschema.MaxCompileBytes
	// maxSourceKept bounds the bytes the walk reads and keeps together:
	// bundle.json, the capability.json files, bridges and DID documents
	// (schemas are streamed, never kept: P8).
	maxSourceKept = 64 << 20
	// maxSourceFiles bounds the files of a source folder: one more than the
	// artifacts and descriptors a manifest can list, so that no source
	// that could be built is refused.
	maxSourceFiles = bundle.MaxArtifacts + bundle.MaxCapabilities + 1
)

// SourceOptions configures LoadSource.
type SourceOptions struct {
	// HashAlg is "sha-256" (default) or "sha-512".
	HashAlg string
	// CreatedAt is the bundle's created_at.
	CreatedAt time.Time
	// Signer is the public key that will sign: the default publisher is
	// its did:key, and a did:key publisher must be it.
	Signer ed25519.PublicKey
	// Progress, when set, is told how far each phase of the checks is:
	// "indexing schemas" (each read, hashed, parsed and checked quickly
	// once) and "checking schemas" (references resolved; compiled offline
	// where the quick check cannot vouch), in bytes of schema files.
	Progress func(phase string, done, total int64)
	// FullSchemaCheck compiles every schema with the JSON Schema library,
	// instead of the linear check (offlineschema.QuickCheck) that compiles
	// only what it cannot vouch for and refuses exactly the same schemas
	// (docs/SPEC-DECISIONS.md, SCHEMA-2). It is slower: the library's
	// compile time grows with the square of the number of subschemas of a
	// document.
	FullSchemaCheck bool
	// Workers is how many schemas are read, hashed, parsed and checked at
	// once (0: GOMAXPROCS). The heap of the schemas in flight is bounded
	// by a budget of 4 × the largest schema × Workers plus 16 MiB, each
	// schema charged a bound of its parse tree and compile before they are
	// allocated (one charged more than the whole budget runs alone); the
	// bundle, and the first error, are the same whatever the number
	// (docs/PERFORMANCE.md, P8; docs/SPEC-DECISIONS.md, BUILD-2, BUILD-8).
	Workers int
	// LimitMemory lowers the process's soft memory limit
	// (runtime/debug.SetMemoryLimit) to the P8 target (64 MiB + 4 × the
	// largest schema × Workers) less 16 MiB while the schemas are
	// checked, raised while one schema charged more than the whole budget
	// runs alone (BUILD-8): without it the garbage collector lets the
	// heap grow to about twice the parse trees in flight. The limit is the
	// process's, so it is held in one place for every build of the process
	// (docs/SPEC-DECISIONS.md BUILD-10): while several builds with
	// LimitMemory run at once the limit is the sum of what each would set
	// alone; it is never set above the limit in force before the first of
	// them began, which is put back when the last returns (a panic on the
	// calling goroutine included). A limit the embedder sets while builds
	// run is the limit in force from then on: the builds stay under it and
	// leave it in place.
	LimitMemory bool
}

// bundleConfig is bundle.json.
type bundleConfig struct {
	BundleID  string            `json:"bundle_id"`
	Version   uint64            `json:"version"`
	Publisher string            `json:"publisher,omitempty"`
	ExpiresAt string            `json:"expires_at,omitempty"`
	Aliases   map[string]string `json:"aliases,omitempty"`
}

// srcErr is a source problem naming the file (a path below the source
// folder), shown by shownName.
func srcErr(file, format string, args ...any) *amp.Error {
	e := fail(bundle.ErrSource, format, args...)
	e.Message = shownName(file) + ": " + e.Message
	return e
}

// shownName renders a path below the source folder for an error message:
// as it is when it is a safe artifact key (bundle.ValidateKey: ASCII
// letters, digits and ._-/), else as strictjson.QuoteName shows a member
// name (quoted in ASCII, every control, bidi, non-ASCII rune and invalid
// byte escaped, cut to 64 bytes). Whoever can write in the folder names
// its files, so a name never reaches a log or a terminal raw (BUILD-6).
func shownName(file string) string {
	if bundle.ValidateKey(file) == nil {
		return file
	}
	return strictjson.QuoteName(file)
}

// diskLoader serves the schema files of a source folder to the offline
// compiler, read from disk when asked: a source's schemas are never all in
// memory at once (docs/PERFORMANCE.md, P8).
type diskLoader struct {
	dir    *sourceDir
	files  map[string]string // artifact key -> its slash path below the source folder (the key itself)
	ids    map[string]string
	alg    string
	hashes map[string]string // artifact key -> hash of the bytes first read
}

// Load reads a schema file, at most the size the walk saw (a file that has
// grown since is refused); once its hash is known, bytes that differ from
// the first read are refused, so that what is compiled is what was indexed.
func (l *diskLoader) Load(key string) ([]byte, error) {
	p, ok := l.files[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	data, err := l.dir.readListed(p, maxSchemaFile)
	if errors.Is(err, errSourceGrew) {
		return nil, srcErr(key, "changed while the bundle was being built").WithCause(err)
	}
	if err != nil {
		return nil, err
	}
	if want, ok := l.hashes[key]; ok {
		h, _ := bundle.NewHash(l.alg)
		h.Write(data)
		if hex.EncodeToString(h.Sum(nil)) != want {
			return nil, srcErr(key, "changed while the bundle was being built")
		}
	}
	return data, nil
}

// bridgeLoader serves the schemas of a diskLoader and, to the
// compatibility checks only, the bridge documents read in memory: a schema
// can never load a bridge as a schema.
type bridgeLoader struct {
	*diskLoader
	bridges map[string][]byte
}

func (l bridgeLoader) Load(key string) ([]byte, error) {
	if b, ok := l.bridges[key]; ok {
		return b, nil
	}
	return l.diskLoader.Load(key)
}

func (l *diskLoader) KeyForID(id string) (string, bool) {
	k, ok := l.ids[id]
	return k, ok
}

// LoadSource reads a source folder (FORMAT.md §8) and checks everything
// about it: layout, keys, JSON Schemas (each compiles, every $ref resolves
// inside the bundle), DID documents, descriptors. The error names the file.
func LoadSource(dir string, opts SourceOptions) (*bundle.Draft, error) {
	return loadSource(dir, opts, buildHooks{})
}

// loadSource is LoadSource with the test hooks. The steps run in this
// order, so that the first error is the same as ever: the walk, bundle.json,
// the layout, the schemas, the DID documents, the descriptors, the claims.
func loadSource(dir string, opts SourceOptions, hooks buildHooks) (*bundle.Draft, error) {
	alg := opts.HashAlg
	if alg == "" {
		alg = capability.HashSHA256
	}
	if _, err := bundle.NewHash(alg); err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	src, err := walkSource(dir, cmp.Or(hooks.maxFiles, maxSourceFiles))
	if err != nil {
		return nil, err
	}
	d, err := readBundleConfig(src.files, opts, alg)
	if err != nil {
		return nil, err
	}
	lay, err := classify(d, src, alg)
	if err != nil {
		return nil, err
	}
	if err := checkSourceSchemas(d, src, lay.schemas, opts, hooks, progress); err != nil {
		return nil, err
	}
	if err := checkDIDs(src.files, lay.dids); err != nil {
		return nil, err
	}
	hashes := lay.schemas.hashes
	for k, b := range lay.bridges {
		h, _ := bundle.NewHash(alg)
		h.Write(b)
		hashes[k] = hex.EncodeToString(h.Sum(nil))
	}
	return describe(d, src, lay, alg)
}

// sourceFiles is what the walk of a source folder found.
type sourceFiles struct {
	dir       *sourceDir        // where every file is read from
	files     map[string][]byte // small files (configs, DID documents, bridges) by slash path
	onDisk    map[string]string // schema files: slash path -> itself, read from dir
	sizes     map[string]int64  // schema files: slash path -> size
	misplaced map[string]bool   // files the layout has no place for, never read (classify refuses the first)
}

// walkSource lists a source folder: no link, no hidden folder, nothing but
// regular files with safe keys that differ in more than letter case. Each
// file is placed (placeSource) and sized against its kind's limit from
// what the walk saw, before anything is read: a file too large for its
// kind is refused unread, a misplaced one is listed unread for classify to
// refuse. Small files are read, at most maxSourceKept bytes together;
// schemas are only sized (read when checked and when written, never
// kept); the walk lists at most maxFiles files (maxSourceFiles) and at
// most twice that many entries, folders counted (empty folders, wide or
// deep, cost the walk as much as files), each folder read in batches and
// refused as soon as they pass that bound, never read whole first
// (walkListed, BUILD-11). A file with another name (a hard
// link, on Unix) is refused: its other name may be outside the folder
// (BUILD-9). Every file is read beneath the folder, and only when it is
// still the file listed (sourceDir). An empty dir names no folder
// (filepath.Abs would make it the working folder).
func walkSource(dir string, maxFiles int) (*sourceFiles, error) {
	if dir == "" {
		return nil, fail(bundle.ErrIO, "cannot read the source folder: no folder is named")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // a later read opens the folder again, whatever the working folder is then
	}
	sd := &sourceDir{path: dir, seen: map[string]fs.FileInfo{}}
	src := &sourceFiles{dir: sd, files: map[string][]byte{}, onDisk: map[string]string{}, sizes: map[string]int64{},
		misplaced: map[string]bool{}}
	folded := map[string]string{}
	var kept int64
	err := walkListed(dir, 2*maxFiles, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			return folderError(rel, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return srcErr(rel, "symbolic links are not allowed in a source folder")
		}
		if rel == "." {
			info, err := d.Info()
			if err != nil {
				return fail(bundle.ErrIO, "cannot read the source folder").WithCause(err)
			}
			sd.folder = info
		}
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return srcErr(rel, "hidden folders are not allowed in a source folder")
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return srcErr(rel, "only regular files are allowed in a source folder")
		}
		if len(sd.seen) >= maxFiles {
			return fail(bundle.ErrTooLarge, "the source folder holds more than %d files", maxFiles)
		}
		if err := bundle.ValidateKey(rel); err != nil {
			return srcErr(rel, "%s", err.(*amp.Error).Message)
		}
		if other, ok := folded[strings.ToLower(rel)]; ok {
			return srcErr(rel, "differs from %s only in letter case", other)
		}
		folded[strings.ToLower(rel)] = rel
		info, err := d.Info()
		if err != nil {
			return srcErr(rel, "cannot be read").WithCause(err)
		}
		if hasOtherNames(info) {
			return srcErr(rel, "has another name (a hard link, maybe to a file outside the source folder): hard links are not allowed in a source folder, copy the file")
		}
		sd.seen[rel] = info
		kind, limit := placeSource(rel)
		switch {
		case kind == sourceMisplaced:
			src.misplaced[rel] = true
			return nil
		case info.Size() > limit:
			return srcErr(rel, "cannot be read").WithCause(tooLarge(limit))
		case kind == sourceSchema:
			src.onDisk[rel], src.sizes[rel] = rel, info.Size()
			return nil
		}
		if kept+info.Size() > maxSourceKept {
			return srcErr(rel, "cannot be read").WithCause(errSourceKept)
		}
		data, err := sd.read(rel, limit)
		if err != nil {
			return srcErr(rel, "cannot be read").WithCause(err)
		}
		if kept += int64(len(data)); kept > maxSourceKept {
			return srcErr(rel, "cannot be read").WithCause(errSourceKept)
		}
		src.files[rel] = data
		return nil
	})
	if errors.Is(err, errWalkBound) {
		return nil, fail(bundle.ErrTooLarge, "the source folder holds more than %d files and folders", 2*maxFiles)
	}
	if err != nil {
		return nil, err
	}
	return src, nil
}

// folderError is the walk's refusal of a folder of the source it cannot
// read (rel, a slash path below the source folder; "." for the folder
// itself): io_error, with the system's error as the cause. Below the
// folder, that error's path, which holds the names of the folders on the
// way raw, is replaced by rel as a source error shows a file's name
// (shownName): whoever can write in the source folder names them, and a
// folder made unreadable, or nested past the system's path limit, had
// them reach the log or terminal of whoever prints the error
// (docs/SPEC-DECISIONS.md BUILD-16; BUILD-6 for a file's name). The
// folder itself keeps the path the caller gave.
func folderError(rel string, err error) *amp.Error {
	var pe *fs.PathError
	if rel != "." && errors.As(err, &pe) {
		err = &fs.PathError{Op: pe.Op, Path: shownName(rel), Err: pe.Err}
	}
	return fail(bundle.ErrIO, "cannot read the source folder").WithCause(err)
}

// errSourceKept: the files a walk keeps in memory are over maxSourceKept.
var errSourceKept = errors.New("bundle.json, the capability.json files, bridges and did documents of a source are at most 64 MiB together")

// readBundleConfig takes bundle.json out of files and starts the draft
// from it: bundle_id, version, expiry, aliases, and the publisher (by
// default the signer's did:key, which a did:key publisher must be).
func readBundleConfig(files map[string][]byte, opts SourceOptions, alg string) (*bundle.Draft, error) {
	cfgData, ok := files[bundleFile]
	if !ok {
		return nil, srcErr(bundleFile, "is missing")
	}
	delete(files, bundleFile)
	var cfg bundleConfig
	if err := strictJSON(cfgData, &cfg); err != nil {
		return nil, srcErr(bundleFile, "is not valid: %s", err)
	}
	d := &bundle.Draft{BundleID: cfg.BundleID, Version: cfg.Version, CreatedAt: opts.CreatedAt, Publisher: cfg.Publisher, HashAlg: alg, Aliases: cfg.Aliases}
	if err := bundle.ValidateBundleID(d.BundleID); err != nil {
		return nil, srcErr(bundleFile, "bundle_id must be a reverse-domain name of at least two labels")
	}
	if d.Version == 0 {
		return nil, srcErr(bundleFile, "version must be a whole number of at least 1")
	}
	if cfg.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, cfg.ExpiresAt)
		if err != nil {
			return nil, srcErr(bundleFile, "expires_at must be an rfc 3339 time")
		}
		t = t.UTC().Truncate(time.Second)
		d.ExpiresAt = &t
	}
	signerDID := ""
	if len(opts.Signer) == ed25519.PublicKeySize {
		signerDID = amp.DIDKey(opts.Signer)
	}
	switch {
	case d.Publisher == "":
		d.Publisher = signerDID
	case !amp.ValidDID(d.Publisher) || amp.BareDID(d.Publisher) != d.Publisher:
		return nil, srcErr(bundleFile, "publisher must be a did")
	case strings.HasPrefix(d.Publisher, "did:key:") && signerDID != "" && d.Publisher != signerDID:
		return nil, srcErr(bundleFile, "publisher is a did:key that is not the signing key")
	}
	return d, nil
}

// layout is a source's files sorted by what they are.
type layout struct {
	keys    []string          // every file but bundle.json, sorted
	caps    map[string]string // capability folder -> its capability.json key
	schemas *diskLoader
	dids    []string
	bridges map[string][]byte
}

// classify sorts the files of src into capability configs, bridges,
// schemas and DID documents (in key order, the first misplaced file
// refused), adding each artifact to d.
func classify(d *bundle.Draft, src *sourceFiles, alg string) (*layout, error) {
	lay := &layout{caps: map[string]string{}, bridges: map[string][]byte{},
		schemas: &diskLoader{dir: src.dir, files: map[string]string{}, ids: map[string]string{}, alg: alg, hashes: map[string]string{}}}
	for k := range src.files {
		lay.keys = append(lay.keys, k)
	}
	for k := range src.onDisk {
		lay.keys = append(lay.keys, k)
	}
	for k := range src.misplaced {
		lay.keys = append(lay.keys, k)
	}
	sort.Strings(lay.keys)
	for _, k := range lay.keys {
		kind, _ := placeSource(k)
		switch kind {
		case sourceCapability:
			lay.caps[path.Dir(k)] = k
		case sourceBridge:
			if _, err := compat.ParseBridge(src.files[k]); err != nil {
				return nil, srcErr(k, "is not a valid bridge: %s", amp.SafeMessage(err)).WithCause(err)
			}
			lay.bridges[k] = src.files[k]
			d.Artifacts = append(d.Artifacts, bundle.BytesSource(k, bundle.MediaTypeBridge, src.files[k]))
		case sourceSchema:
			lay.schemas.files[k] = src.onDisk[k]
			d.Artifacts = append(d.Artifacts, fileSource(src.dir, k, bundle.MediaTypeSchema, src.sizes[k]))
		case sourceDID:
			lay.dids = append(lay.dids, k)
			d.Artifacts = append(d.Artifacts, bundle.BytesSource(k, bundle.MediaTypeDID, src.files[k]))
		default:
			return nil, srcErr(k, "is not part of the source layout (bundle.json, capabilities/<name>/<version>/*.json, schemas/**/*.json, dids/*.json)")
		}
	}
	return lay, nil
}

// checkSourceSchemas checks the schemas: one read each to hash it, index
// its $id and check it quickly (offlineschema.QuickCheck: parsed once, then
// dropped); then every schema's references are resolved, and a schema the
// quick check cannot vouch for is compiled offline, its $refs read again
// (docs/PERFORMANCE.md, P8). With FullSchemaCheck every schema is
// compiled. Both phases run on opts.Workers workers with the bytes in
// flight bounded, their results taken in key order (parallel.go). The
// draft's schema artifacts get the size and hash of the bytes checked.
func checkSourceSchemas(d *bundle.Draft, src *sourceFiles, schemas *diskLoader, opts SourceOptions, hooks buildHooks,
	progress func(string, int64, int64)) error {
	schemaKeys := slices.Sorted(maps.Keys(schemas.files))
	workers := buildWorkers(opts.Workers)
	var largest int64
	for _, k := range schemaKeys {
		largest = max(largest, src.sizes[k])
	}
	budget, target := inFlightBudget(workers, largest)
	if hooks.budget > 0 {
		budget = hooks.budget
	}
	newBudget := func() *byteBudget { return newByteBudget(budget, hooks.inFlight) }
	if opts.LimitMemory {
		m := holdMemoryLimit(budget, target)
		defer m.restore()
		newBudget = func() *byteBudget {
			b := newByteBudget(budget, hooks.inFlight)
			b.follow = m.follow
			return b
		}
	}
	quick := offlineschema.NewQuickCheck()
	checked, err := indexSchemas(schemaKeys, schemas, src.sizes, quick, workers, newBudget(), progress)
	if err != nil {
		return err
	}
	if err := checkSchemas(schemaKeys, schemas, src.sizes, quick, opts.FullSchemaCheck, workers, newBudget(), progress); err != nil {
		return err
	}
	for i, a := range d.Artifacts {
		if c, ok := checked[a.Key]; ok {
			d.Artifacts[i].Size, d.Artifacts[i].Hash = c.Size, c.Hash
		}
	}
	return nil
}

// checkDIDs parses every DID document; no two may document one DID.
func checkDIDs(files map[string][]byte, dids []string) error {
	seenDID := map[string]string{}
	for _, k := range dids {
		doc, err := amp.ParseDIDDocument(files[k])
		if err != nil {
			return srcErr(k, "is not a valid did document: %s", amp.SafeMessage(err))
		}
		if other, dup := seenDID[doc.ID]; dup {
			return srcErr(k, "documents the same did as %s", other)
		}
		seenDID[doc.ID] = k
	}
	return nil
}

// describe adds the descriptors to d, every capability folder with its
// capability.json, then the compatibility claims derived from the schemas
// (signed with the manifest; a policy they contradict is refused,
// docs/FORMAT.md), and checks that every alias points at a capability.
func describe(d *bundle.Draft, src *sourceFiles, lay *layout, alg string) (*bundle.Draft, error) {
	for _, dirKey := range slices.Sorted(maps.Keys(lay.caps)) {
		desc, err := loadDescriptor(dirKey, src.files, lay.schemas.hashes, d.BundleID, alg)
		if err != nil {
			return nil, err
		}
		d.Capabilities = append(d.Capabilities, desc)
	}
	for _, k := range lay.keys {
		segs := strings.Split(k, "/")
		if segs[0] == "capabilities" && len(segs) == 4 {
			if _, ok := lay.caps[path.Dir(k)]; !ok {
				return nil, srcErr(path.Dir(k), "has no %s", capabilityFile)
			}
		}
	}
	annotated, err := compat.Annotate(d.Capabilities, compat.NewSource(bridgeLoader{lay.schemas, lay.bridges}))
	if err != nil {
		return nil, err
	}
	d.Capabilities = annotated
	if len(d.Aliases) > 0 {
		names := map[string]bool{}
		for _, c := range d.Capabilities {
			names[c.Name] = true
		}
		for typ, target := range d.Aliases {
			if !names[target] {
				return nil, srcErr(bundleFile, "alias %q points at a capability the bundle does not carry", typ)
			}
		}
	}
	return d, nil
}

// loadDescriptor builds the descriptor of capabilities/<name>/<version>.
func loadDescriptor(dirKey string, files map[string][]byte, hashes map[string]string, bundleID, alg string) (capability.Descriptor, error) {
	cfgKey := dirKey + "/" + capabilityFile
	segs := strings.Split(dirKey, "/")
	name, version := segs[1], segs[2]
	if err := capability.ValidateName(name); err != nil {
		return capability.Descriptor{}, srcErr(dirKey, "folder name is not a capability name: %s", amp.SafeMessage(err))
	}
	if _, err := capability.ParseVersion(version); err != nil {
		return capability.Descriptor{}, srcErr(dirKey, "folder name is not a semver version: %s", amp.SafeMessage(err))
	}
	var obj map[string]json.RawMessage
	if err := strictJSON(files[cfgKey], &obj); err != nil {
		return capability.Descriptor{}, srcErr(cfgKey, "is not a json object: %s", err)
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	for field, want := range map[string]string{"name": name, "version": version} {
		if raw, ok := obj[field]; ok {
			var got string
			if json.Unmarshal(raw, &got) != nil || got != want {
				return capability.Descriptor{}, srcErr(cfgKey, "%s does not match the folder name", field)
			}
		}
	}
	if _, ok := obj["id"]; ok {
		return capability.Descriptor{}, srcErr(cfgKey, "id is computed from the folder names; remove it")
	}
	if _, ok := obj["compat_claims"]; ok {
		return capability.Descriptor{}, srcErr(cfgKey, "compat_claims are computed by the builder; remove them")
	}
	obj["name"], _ = json.Marshal(name)
	obj["version"], _ = json.Marshal(version)
	obj["id"], _ = json.Marshal(name + ":" + version)
	for field, file := range map[string]string{"input_schema": inputSchema, "output_schema": outputSchema} {
		key := dirKey + "/" + file
		sum, ok := hashes[key]
		if !ok {
			return capability.Descriptor{}, srcErr(key, "is missing")
		}
		ref := map[string]json.RawMessage{}
		if raw, ok := obj[field]; ok {
			if err := strictJSON(raw, &ref); err != nil || ref == nil {
				return capability.Descriptor{}, srcErr(cfgKey, "%s must be an object", field)
			}
			for _, computed := range []string{"bundle_id", "artifact_key", "hash_alg", "hash", "media_type"} {
				if _, ok := ref[computed]; ok {
					return capability.Descriptor{}, srcErr(cfgKey, "%s.%s is computed by the builder; remove it", field, computed)
				}
			}
		}
		for k, v := range map[string]string{"bundle_id": bundleID, "artifact_key": key, "hash_alg": alg,
			"hash": sum, "media_type": bundle.MediaTypeSchema} {
			ref[k], _ = json.Marshal(v)
		}
		obj[field], _ = json.Marshal(ref)
	}
	bridgeKey := dirKey + "/" + bridgeFile
	if _, ok := obj["bridge"]; ok {
		return capability.Descriptor{}, srcErr(cfgKey, "bridge is computed from %s; remove it", bridgeFile)
	}
	if sum, ok := hashes[bridgeKey]; ok {
		obj["bridge"], _ = json.Marshal(map[string]string{"bundle_id": bundleID, "artifact_key": bridgeKey,
			"hash_alg": alg, "hash": sum, "media_type": bundle.MediaTypeBridge})
	}
	full, _ := json.Marshal(obj)
	desc, err := capability.DecodeDescriptorJSON(full)
	if err != nil {
		return capability.Descriptor{}, srcErr(cfgKey, "is not a valid capability descriptor: %s", amp.SafeMessage(err))
	}
	if err := desc.Validate(capability.ProfileOffline); err != nil {
		return capability.Descriptor{}, srcErr(cfgKey, "is not a valid capability descriptor: %s", amp.SafeMessage(err))
	}
	return desc, nil
}

// sourceKind is what a file of a source folder is, by its path.
type sourceKind int

const (
	sourceMisplaced  sourceKind = iota // no place in the layout
	sourceConfig                       // bundle.json
	sourceCapability                   // capabilities/<name>/<version>/capability.json
	sourceBridge                       // capabilities/<name>/<version>/bridge.json
	sourceSchema                       // schemas/**/*.json, the other json files of a capability folder
	sourceDID                          // dids/*.json
)

// placeSource places a source path in the layout (docs/FORMAT.md §8) and
// says how many bytes a file of its kind may have: a bridge
// compat.MaxBridgeSize, a DID document amp.MaxDIDDocumentSize, a schema
// maxSchemaFile (a larger schema document can never be compiled, so it is
// refused unread rather than read, parsed and then refused: BUILD-5), any
// other maxSourceFile. The walk sizes each file against it before reading
// it and classify sorts by it: one place for the layout's rules.
func placeSource(rel string) (sourceKind, int64) {
	segs := strings.Split(rel, "/")
	isJSON := strings.HasSuffix(rel, ".json")
	switch {
	case rel == bundleFile:
		return sourceConfig, maxSourceFile
	case segs[0] == "capabilities" && len(segs) == 4 && segs[3] == capabilityFile:
		return sourceCapability, maxSourceFile
	case segs[0] == "capabilities" && len(segs) == 4 && segs[3] == bridgeFile:
		return sourceBridge, compat.MaxBridgeSize
	case isJSON && (segs[0] == "capabilities" && len(segs) == 4 || segs[0] == "schemas" && len(segs) >= 2):
		return sourceSchema, maxSchemaFile
	case isJSON && segs[0] == "dids" && len(segs) == 2:
		return sourceDID, amp.MaxDIDDocumentSize
	}
	return sourceMisplaced, 0
}

// fileSource is a Source over the schema file key of dir, opened when
// Write copies it (only while it is still the file the walk listed).
// LoadSource sets its Size and Hash to those of the bytes it checked, and
// Write refuses bytes that do not match them: what is written is what was
// checked.
func fileSource(dir *sourceDir, key, mediaType string, size int64) bundle.Source {
	return bundle.Source{Key: key, MediaType: mediaType, Size: size, Open: func() (io.ReadCloser, error) {
		f, err := dir.open(key)
		if err != nil {
			return nil, fail(bundle.ErrIO, "cannot read %s", key).WithCause(err)
		}
		return f, nil
	}}
}

// maxSourceJSONDepth bounds the nesting of bundle.json and a
// capability.json: a deeper value has no place in a manifest, whose CBOR
// nests at most amp.DefaultMaxDepth deep (nor in a descriptor, which
// capability reads as deep at most).
const maxSourceJSONDepth = amp.DefaultMaxDepth

// strictJSON decodes bundle.json, a capability.json or a part of one as
// every reader reads it (strictjson.Decode): one JSON value, no trailing
// data, no member twice, no member name differing from a field's only in
// letter case (encoding/json would take "VERSION" for "version", a case-
// sensitive reader of the same text would not), no string encoding/json
// reads with replacement (invalid UTF-8, a lone surrogate escape), no
// member v has no field for. A text two readers read differently is
// refused, never signed one way (docs/SPEC-DECISIONS.md BUILD-12). Its
// error text never holds the input but a member name quoted in ASCII and
// cut (strictjson.QuoteName).
func strictJSON(data []byte, v any) error {
	return strictjson.Decode(data, v, maxSourceJSONDepth)
}
