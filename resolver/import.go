package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// ImportOptions configures one import.
type ImportOptions struct {
	// AllowDowngrade accepts a version not greater than the highest ever
	// imported for the bundle_id (a rollback). It is audited as a
	// downgrade. Use it only to back out a bad release deliberately.
	AllowDowngrade bool
	// Progress, when set, is called with the artifact bytes read so far.
	Progress func(done int64)
	// SkipBaseRehash, for a delta bundle, takes the artifacts it omits
	// from the base's blobs after checking only their content address and
	// size, not re-hashing their bytes (DID documents are always
	// re-hashed). The blobs were hashed when the base was imported and
	// 'ampbundle check' re-hashes them; without this option every one is
	// re-hashed, so a delta import reads the whole base.
	SkipBaseRehash bool
	// FileSHA256, when set, is the SHA-256 of the whole file as the
	// caller hashed it. A refusal's audit entry records it (the store
	// stops reading a refused file, so it cannot hash it); an accepted
	// import records the hash of the bytes the store itself read.
	FileSHA256 []byte
	// Source, when set, says where the file came from (the URL of the
	// mirror file for 'ampbundle sync'). The audit entry of the import,
	// accepted, unchanged or refused, records it as "source". At most
	// MaxSourceBytes of printable ASCII, else the import is refused
	// (bad_source) before the file is read.
	Source string
}

// MaxSourceBytes bounds ImportOptions.Source.
const MaxSourceBytes = 2048

// ErrBadSource names an ImportOptions.Source that is too long or holds a
// byte outside printable ASCII.
const ErrBadSource amp.ErrName = "bad_source"

// checkSource validates ImportOptions.Source.
func checkSource(s string) error {
	if len(s) > MaxSourceBytes {
		return amp.Named(0, ErrBadSource, "the import source is longer than %d bytes", MaxSourceBytes)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return amp.Named(0, ErrBadSource, "the import source must be printable ascii without spaces (a url)")
		}
	}
	return nil
}

// ImportResult describes a completed import.
type ImportResult struct {
	BundleID        string   `json:"bundle_id"`
	Version         uint64   `json:"version"`
	PreviousVersion uint64   `json:"previous_version,omitempty"` // 0 when the bundle_id was not installed
	Downgrade       bool     `json:"downgrade"`
	Unchanged       bool     `json:"unchanged"`          // the same release (manifest payload) was already installed: nothing changed
	Replaced        bool     `json:"replaced,omitempty"` // the same release replaced the installed file, which was revoked or carried a signature that does not verify (PreviousVersion is Version; BUNDLE-8, TRUST-20)
	Signers         []string `json:"signers"`
	Artifacts       int      `json:"artifacts"`
	NewBlobs        int      `json:"new_blobs"` // blobs the import added (the others were shared)
	Capabilities    []string `json:"capabilities"`
	Generation      uint64   `json:"generation"`
	// Delta is set when the file was a delta bundle: the base it applied
	// to and how much it took from it.
	Delta *DeltaResult `json:"delta,omitempty"`
	// signerKeys are the did:keys of the signers that counted.
	signerKeys []string
	// counted are the signers that counted, with their scopes (an alias
	// claim conflicts within what they all speak for: claimsConflict).
	counted []bundle.TrustedKey
}

// DeltaResult describes what a delta import took from its base.
type DeltaResult struct {
	Base          string `json:"base"` // "bundle_id version N (manifest sha256 …)"
	BaseVersion   uint64 `json:"base_version"`
	FromBase      int    `json:"from_base"`       // artifacts taken from the base
	FromBaseBytes uint64 `json:"from_base_bytes"` // their total size
	Rehashed      bool   `json:"rehashed"`        // whether their bytes were re-hashed
}

// staged is one verified artifact on its way into the store.
type staged struct {
	entry    bundle.ArtifactEntry
	blob     string
	schemaID string // top-level $id of a schema artifact
	did      string // DID of a DID document artifact
}

// Import verifies the bundle in r against the store's trust keys and
// installs it, all or nothing (docs/ARCHITECTURE.md, invariant 3).
//
// The bundle is verified by bundle.Reader: signature and trust scope before
// any artifact, then each artifact's size and hash as it streams. Then it is
// checked against the store: rollback (a version not greater than the
// highest ever imported for its bundle_id), capability ids, aliases or DIDs
// another bundle provides. Verified artifacts are staged as
// content-addressed blobs in batches of a few MiB, each batch in its own
// transaction recorded in the pending journal; one final transaction then
// makes the import visible (index, descriptors, aliases, DIDs, bundle
// record, high-water mark, generation, audit entry) and clears the journal.
// Memory stays bounded by the largest artifact plus one batch, not the
// bundle. Staged blobs are unreferenced until that final commit, so readers
// see the old state or the new one, never a mix; a failure, and the next
// Open after a crash, delete them again, leaving the store exactly as it was.
//
// A newer version of an installed bundle_id replaces the older one in the
// same final transaction; blobs nothing references any more are deleted.
// Importing the release that is installed is a no-op (Unchanged): the very
// file, or its manifest payload under another signature list that meets
// the store's policy (sameRelease); the installed file is kept, unless it
// is revoked (failed closed for its signers) or carries a signature that
// does not verify (kept by an earlier build, TRUST-20): then the copy,
// which meets the policy now, replaces it, audited as an import of the
// same version. Over an install that fails closed as expired or stale the
// copy is refused (expired, bundle_stale; BUNDLE-8).
//
// Every outcome is audited with the actor and the file's SHA-256: an
// accepted import ("import" or "downgrade"), an unchanged one
// ("import_unchanged") and a refusal ("import_refused", its verdict the
// error name; bundle id, version and signers only when the manifest
// verified), except failures of the store itself (store_io) and of the
// stream (a read error that is not its end: a cut connection, a disk
// error), which abort the import without a verdict on the file
// (io_error, not audited, like a cancel).
//
// After a refusal the rest of r is read, without the store's write lock,
// to hash the whole file (auditImportRefusal). When that reading gives up
// (ctx done, Close, the minimum data rate not kept) Import returns while
// one Read of r may still be in flight; nothing reads r after it returns.
// A refusal whose audit entry the store could not write is answered
// store_io, never as a refusal the audit log does not hold. Close
// cancels an Import in flight and waits for it once it holds the write
// lock (beginImport), but for one inside its Progress callback; an
// Import that takes the lock after Close began answers store_io. A
// cancelled Import reads r for at most cancelGrace more, then nothing
// (importStream).
func (s *Store) Import(ctx context.Context, r io.Reader, opts ImportOptions) (_ *ImportResult, err error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	if err := checkSource(opts.Source); err != nil {
		return nil, err
	}
	s.mu.Lock()
	run := &importRun{s: s, locked: true}
	defer run.unlock()
	// Registered with Close only now that it holds s.mu (Store.Close).
	ctx, progress, end, err := s.beginImport(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	opts.Progress = progress
	defer end() // after the refusal's audit, deferred below
	run.ctx, run.opts, run.fileHash = ctx, opts, sha256.New()
	run.stream = newImportStream(ctx, io.TeeReader(r, run.fileHash))
	defer run.stream.close() // after the refusal's drain, deferred below
	// Deferred after the unlock above, so run before it (and after the
	// rollback of a staged import, deferred in stageAndCommit).
	defer func() { err = run.outcome(err) }()
	return run.verifyAndInstall()
}

// importRun is one Import once it holds the store's write lock: its
// context (beginImport's), options (their Progress beginImport's), the
// stream it reads and the hash of the whole file, the result once the
// manifest verified, and whether it still holds the lock.
type importRun struct {
	s        *Store
	ctx      context.Context
	opts     ImportOptions
	stream   *importStream
	fileHash hash.Hash
	verified *ImportResult // set once the manifest verified
	locked   bool
}

// unlock releases the write lock unless outcome did.
func (run *importRun) unlock() {
	if run.locked {
		run.s.mu.Unlock()
	}
}

// outcome is what Import answers for err, the error of its steps: a
// cancel or a failed stream stops the import without a verdict on the
// file; any other error is a refusal, audited (auditImportRefusal) once
// the write lock is released.
func (run *importRun) outcome(err error) error {
	s, ctx := run.s, run.ctx
	switch {
	case err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || streamCut(err)):
		// Cancelled, and the stream stopped with it (importStream
		// stops within cancelGrace; a caller that goes away both
		// cancels and cuts the body: an agent's HTTP server
		// does): stopped, not refused; not audited, not called
		// truncated. Any other refusal (a signature, a hash) is
		// audited even when the caller went away after it.
		err = fail(ErrStoreIO, "import canceled").WithCause(ctx.Err())
	case err != nil && run.stream.broke(err):
		// The stream failed (a read error that is not its end: a
		// connection cut, a body read too slowly, a disk error):
		// the import is aborted, which says nothing of the file.
		// Not a refusal: not audited, not drained, never recorded
		// as refused (docs/SPEC-DECISIONS.md MIRROR-13).
		err = fail(bundle.ErrIO, "the import was aborted: its stream could not be read").WithCause(run.stream.failure())
	case err != nil:
		// The refusal was judged at this generation; the drain
		// of the rest of the stream runs without the write lock,
		// which a caller's stream must not hold (MIRROR-13).
		gen := s.gen.Load()
		run.locked = false
		s.mu.Unlock()
		if aerr := s.auditImportRefusal(ctx, err, run.verified, run.stream, run.fileHash, run.opts, gen); aerr != nil {
			err = aerr
		}
	}
	return err
}

// verifyAndInstall is the import's checks before any side effect: the bundle's
// signatures and trust scope (bundle.NewReader), its expiry by its keys'
// floor, then the store's checks before staging (checkBeforeStaging). The
// release that is installed ends there (importUnchanged); any other is
// installed (stageAndCommit).
func (run *importRun) verifyAndInstall() (*ImportResult, error) {
	s := run.s
	policy, err := s.policy()
	if err != nil {
		return nil, err
	}
	if err := s.fault("verify"); err != nil {
		return nil, err
	}
	br, err := bundle.NewReader(run.stream, bundle.ReaderOptions{Policy: policy, Now: s.opts.Now,
		MaxArtifactSize: s.opts.MaxArtifactSize, Progress: run.opts.Progress, AllowDelta: true})
	if err != nil {
		return nil, err
	}
	m := br.Manifest()
	res := importResultOf(br)
	run.verified = res

	// The reader judged expiry by the local clock; the bundle's floor (the
	// latest time enough of its keys signed, clock.go) can only make it
	// expire sooner.
	if err := s.checkFloorExpiry(m); err != nil {
		return nil, err
	}
	unchanged, base, err := s.checkBeforeStaging(br, run.opts, res)
	if err != nil {
		return nil, err
	}
	if unchanged {
		return s.importUnchanged(br, res, run.fileHash.Sum, run.opts.Source)
	}
	return run.stageAndCommit(br, res, base)
}

// stageAndCommit stages the verified bundle's artifacts (each batch in its own
// transaction, recorded in the pending journal), checks what needs them
// all (schemas compile offline, claims), then makes the import visible in
// one final transaction (commitImport). Until that commit succeeds a
// failure rolls the staged blobs back.
func (run *importRun) stageAndCommit(br *bundle.Reader, res *ImportResult, base *deltaBase) (*ImportResult, error) {
	s, m := run.s, br.Manifest()
	pending := &pendingRecord{BundleID: m.BundleID, Version: m.Version, Started: formatTime(s.opts.Now())}
	ok := false
	defer func() {
		if !ok {
			s.rollback(pending)
		}
	}()
	arts, err := s.stage(run.ctx, br, pending, base, run.opts.SkipBaseRehash)
	if err != nil {
		return nil, err
	}
	// Every schema must compile offline from this bundle alone, as build
	// requires: else the bundle would install, check would call the store
	// sound, and only a caller would find out (as a 5002).
	if err := s.checkSchemasCompile(arts); err != nil {
		return nil, err
	}
	res.NewBlobs = len(pending.Blobs)
	if err := s.checkClaims(m, arts); err != nil {
		return nil, err
	}
	if err := s.fault("commit"); err != nil {
		return nil, err
	}
	gen, floor, err := s.commitImport(br, arts, base, res, run.opts, run.fileHash.Sum(nil))
	if err != nil {
		return nil, err
	}
	ok = true
	s.gen.Store(gen)
	if floor > s.floor.Load() {
		s.floor.Store(floor)
	}
	res.Generation = gen
	return res, nil
}

// importStream is an Import's stream (hashed as it is read). Once the
// Import's context is done (a cancel, Store.Close) it reads for at most
// cancelGrace more, then every Read returns the context's error: a
// stream that keeps its rate stops within a Read of that, not after a
// whole artifact (up to MaxArtifactSize at the minimum data rate: hours)
// or a whole signed manifest. The grace lets what the caller had sent
// before it went away, at hand in a buffer or a file, still be judged:
// a refusal is audited even when its caller went away after sending
// (docs/SPEC-DECISIONS.md MIRROR-13). It also keeps the first read error
// that is not the stream's end (a failure of the stream, not of the
// file: broke). Its Reads may come from the refusal's drain goroutine
// (drainRefused), hence the atomics.
type importStream struct {
	ctx     context.Context
	r       io.Reader
	stopped atomic.Bool // cancelGrace after ctx was done
	failed  atomic.Pointer[error]
	unwatch func() bool
	grace   *time.Timer
}

// cancelGrace is how long an Import's stream is still read after its
// context is done (importStream): bytes at hand (in a socket's buffer,
// a file) read in far less, and Close waits for no more.
const cancelGrace = 500 * time.Millisecond

// newImportStream reads r for an Import whose context is ctx.
func newImportStream(ctx context.Context, r io.Reader) *importStream {
	st := &importStream{ctx: ctx, r: r}
	st.grace = time.AfterFunc(time.Duration(math.MaxInt64), func() { st.stopped.Store(true) })
	st.unwatch = context.AfterFunc(ctx, func() { st.grace.Reset(cancelGrace) })
	return st
}

// close ends the watch of the Import's context once the Import ends.
func (st *importStream) close() {
	st.unwatch()
	st.grace.Stop()
}

// Read reads the stream unless the Import's context has been done for
// cancelGrace.
func (st *importStream) Read(p []byte) (int, error) {
	if st.stopped.Load() {
		return 0, st.ctx.Err()
	}
	n, err := st.r.Read(p)
	if err != nil && err != io.EOF && !fileVerdict(err) {
		st.failed.CompareAndSwap(nil, &err)
		return n, &streamFailure{err}
	}
	return n, err
}

// streamFailure marks a read error of an Import's stream (importStream):
// Import tells it from a verdict by its type (errors.As), never by
// comparing errors (a caller's error may hold a value == panics on).
type streamFailure struct{ err error }

func (f *streamFailure) Error() string { return f.err.Error() }
func (f *streamFailure) Unwrap() error { return f.err }

// fileVerdict reports whether a read error of an Import's stream is a
// verdict on the file rather than a fault of the transfer: a split's part
// that does not match its signed index (bundlebuild.PartsReader), whose
// import stays an audited refusal (docs/SPEC-DECISIONS.md MIRROR-13).
func fileVerdict(err error) bool {
	var e *amp.Error
	if !errors.As(err, &e) {
		return false
	}
	switch amp.NameOf(e) {
	case bundle.ErrPartMismatch, bundle.ErrPartMissing, bundle.ErrPartDuplicate:
		return true
	}
	return false
}

// failure is the stream's first read error that is not its end (nil:
// none).
func (st *importStream) failure() error {
	if p := st.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// broke reports whether err, which ended an Import, is the stream's
// failure rather than a verdict on the file: the stream failed, and err
// is that failure or what the bundle reader makes of a failed read
// (streamCut). A verdict the reader reached on bytes that came before
// the failure (a hash, a signature) stays a refusal.
func (st *importStream) broke(err error) bool {
	var sf *streamFailure
	return st.failure() != nil && (errors.As(err, &sf) || streamCut(err))
}

// streamCut reports whether err is how the bundle reader reports a
// stream that stopped: inside an item (truncated, which a file that
// ends early gets too) or at its end (io_error).
func streamCut(err error) bool {
	switch amp.NameOf(err) {
	case bundle.ErrTruncated, bundle.ErrIO:
		return true
	}
	return false
}

// importResultOf is what an import reports of a bundle whose manifest
// verified: its id, version, signers (names and did:keys), capability
// ids and artifact count; the rest is filled in as the import proceeds.
func importResultOf(br *bundle.Reader) *ImportResult {
	m := br.Manifest()
	res := &ImportResult{BundleID: m.BundleID, Version: m.Version}
	res.counted = br.Signers()
	for _, k := range res.counted {
		res.Signers = append(res.Signers, k.Name)
		res.signerKeys = append(res.signerKeys, amp.DIDKey(k.Key))
	}
	for _, d := range m.Capabilities {
		res.Capabilities = append(res.Capabilities, d.ID().String())
	}
	res.Artifacts = len(m.Artifacts)
	return res
}

// checkBeforeStaging makes the cheap refusals before any artifact is
// read (repeated in the final transaction): whether the store takes this
// version (checkAgainstStore), and whether it is the release
// installed (unchanged). For a delta it records what comes from the base
// and, unless unchanged, loads that base (base).
func (s *Store) checkBeforeStaging(br *bundle.Reader, opts ImportOptions, res *ImportResult) (unchanged bool, base *deltaBase, err error) {
	m, signed := br.Manifest(), br.SignedManifest()
	err = s.db.View(func(tx *bolt.Tx) error {
		var err error
		unchanged, err = s.checkAgainstStore(tx, m, signed, opts.AllowDowngrade, res)
		return err
	})
	if err != nil {
		return false, nil, wrapTx(err)
	}
	d := br.Delta()
	if d == nil {
		return unchanged, nil, nil
	}
	n, size := br.Omitted()
	res.Delta = &DeltaResult{Base: d.Base.String(), BaseVersion: d.Base.Version, FromBase: n, FromBaseBytes: size, Rehashed: !opts.SkipBaseRehash}
	if unchanged {
		return true, nil, nil
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		base, err = loadDeltaBase(tx, br)
		return err
	}); err != nil {
		return false, nil, amp.AsError(err)
	}
	// The base named is the copy the bytes come from, which may be
	// another file of the release than the header names (BUNDLE-21).
	res.Delta.Base = base.ref.String()
	return false, base, nil
}

// importUnchanged ends the import of the release that is installed (the
// very file, or its manifest payload under other signatures, sameRelease):
// it still reads it all (a file that matches the installed manifest but
// carries altered artifacts is refused, not reported as fine) and audits
// it as import_unchanged: the SHA-256 of the installed signed manifest,
// the file that was kept, and of the whole file offered (BUNDLE-8).
func (s *Store) importUnchanged(br *bundle.Reader, res *ImportResult, fileSum func([]byte) []byte, source string) (*ImportResult, error) {
	res.Unchanged = true
	if err := br.VerifyRest(); err != nil {
		return nil, err
	}
	m := br.Manifest()
	err := s.db.Update(func(tx *bolt.Tx) error {
		kept, err := installedRecord(tx, m.BundleID)
		if err != nil {
			return err
		}
		return appendAudit(tx, s.opts.Now(), AuditEntry{Action: "import_unchanged", Actor: s.actor(), Verdict: "unchanged",
			BundleID: m.BundleID, Version: m.Version, Signers: res.Signers, ManifestSHA256: sha256sum(kept.Signed), FileSHA256: fileSum(nil), Source: source})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	res.Generation = s.gen.Load()
	return res, nil
}

// commitImport makes a staged import visible in one transaction: the
// store's rules again (checkAgainstStore), the base of a delta still
// installed, the previous version uninstalled, the new one installed and
// audited, its signers' time floors raised, orphaned blobs deleted and the
// pending journal cleared. It returns the new generation and time floor.
func (s *Store) commitImport(br *bundle.Reader, arts []staged, base *deltaBase, res *ImportResult, opts ImportOptions, fileSum []byte) (gen uint64, floor int64, err error) {
	m, signed := br.Manifest(), br.SignedManifest()
	err = s.db.Update(func(tx *bolt.Tx) error {
		if _, err := s.checkAgainstStore(tx, m, signed, opts.AllowDowngrade, res); err != nil {
			return err
		}
		if base != nil {
			if err := checkBaseStill(tx, base.ref); err != nil {
				return err
			}
		}
		if err := s.fault("commit-inside"); err != nil {
			return err
		}
		var orphans []string
		if res.PreviousVersion != 0 {
			var err error
			if orphans, err = uninstall(tx, m.BundleID); err != nil {
				return err
			}
		}
		entry := AuditEntry{Actor: s.actor(), FileSHA256: fileSum, Source: opts.Source}
		if err := install(tx, m, signed, arts, res, s.opts.Now(), entry, s.lim.heartbeats); err != nil {
			return err
		}
		if floor, err = s.raiseFloors(tx, m.CreatedAt, res.signerKeys); err != nil {
			return err
		}
		if err := deleteOrphans(tx, orphans); err != nil {
			return err
		}
		if err := bucket(tx, bPending).Delete([]byte(m.BundleID)); err != nil {
			return err
		}
		if err := s.fault("commit-end"); err != nil {
			return err
		}
		var err error
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return 0, 0, amp.AsError(wrapTx(err))
	}
	return gen, floor, nil
}

// stagedLoader resolves schemas among the artifacts of the bundle being
// imported: its staged (or shared, or base) blobs, all verified by the
// reader, looked up by artifact key and by top-level $id.
type stagedLoader struct {
	tx    *bolt.Tx
	byKey map[string]staged
	ids   map[string]string
	// bridges lets Load serve bridge artifacts too (the compatibility
	// re-check only; a schema never loads a bridge as a schema).
	bridges bool
}

func (l *stagedLoader) Load(key string) ([]byte, error) {
	st, ok := l.byKey[key]
	if !ok || (st.entry.MediaType != bundle.MediaTypeSchema && !(l.bridges && st.entry.MediaType == bundle.MediaTypeBridge)) {
		return nil, fail(ErrArtifactMissing, "no schema artifact %s in the bundle", key)
	}
	b := getBlob(l.tx, []byte(st.blob))
	if b == nil {
		return nil, fail(ErrBlobUnreadable, "artifact %s is not staged", key)
	}
	return clone(b), nil
}

func (l *stagedLoader) KeyForID(id string) (string, bool) {
	k, ok := l.ids[id]
	return k, ok
}

// checkSchemasCompile checks that every schema artifact of arts compiles
// offline: offlineschema.QuickCheck, which compiles each schema it cannot
// vouch for with one linear pass and gives the compiler's verdict
// (docs/SPEC-DECISIONS.md, SCHEMA-2). A document over
// offlineschema.MaxCompileBytes is not parsed for the pass (it could
// never be vouched for): its compile refuses it from its size (STORE-7).
func (s *Store) checkSchemasCompile(arts []staged) error {
	l := &stagedLoader{byKey: map[string]staged{}, ids: map[string]string{}}
	var keys []string
	for _, a := range arts {
		if a.entry.MediaType != bundle.MediaTypeSchema {
			continue
		}
		l.byKey[a.entry.Key] = a
		keys = append(keys, a.entry.Key)
		if a.schemaID != "" {
			l.ids[a.schemaID] = a.entry.Key
		}
	}
	sort.Strings(keys)
	return s.db.View(func(tx *bolt.Tx) error {
		l.tx = tx
		notOffline := func(k string, err error) error {
			return fail(ErrSchemaNotOffline, "schema %s does not compile offline from the bundle: %s", k, amp.SafeMessage(err)).WithCause(err)
		}
		q := offlineschema.NewQuickCheck()
		for _, k := range keys {
			if l.byKey[k].entry.Size > offlineschema.MaxCompileBytes {
				// Never added (parsed): Check compiles it, and the
				// compile refuses it from its size (STORE-7).
				continue
			}
			data, err := l.Load(k)
			if err != nil {
				return notOffline(k, err)
			}
			_, _ = q.Add(k, data) // a document Add refuses is compiled by Check
		}
		for _, k := range keys {
			if err := q.Check(l, k, offlineschema.Options{}); err != nil {
				return notOffline(k, err)
			}
		}
		return nil
	})
}

// wrapTx keeps *amp.Error values and labels anything else as a store I/O
// failure.
func wrapTx(err error) error {
	if _, isAMP := err.(*amp.Error); isAMP {
		return err
	}
	return fail(ErrStoreIO, "store transaction failed").WithCause(err)
}

// stage reads every artifact (verified by the reader) and writes new blobs
// in batches, journaling them in pending.
//
// For a delta (base set), the artifacts it omits are the base's blobs,
// checked by fromBase; nothing is staged for them.
func (s *Store) stage(ctx context.Context, br *bundle.Reader, pending *pendingRecord, base *deltaBase, skipRehash bool) ([]staged, error) {
	var arts []staged
	b := &blobBatch{s: s, pending: pending, seen: map[string]bool{}}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fail(ErrStoreIO, "import canceled").WithCause(err)
		}
		a, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if a.FromBase {
			if base == nil {
				return nil, fail(bundle.ErrDeltaBaseMissing, "a delta artifact without a base")
			}
			st, err := s.fromBase(br, a, base, skipRehash)
			if err != nil {
				return nil, err
			}
			arts = append(arts, st)
			continue
		}
		st, err := stagedOf(a)
		if err != nil {
			return nil, err
		}
		arts = append(arts, st)
		if err := b.add(a, st.blob); err != nil {
			return nil, err
		}
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	if err := uniqueSchemaIDs(arts); err != nil {
		return nil, err
	}
	return arts, nil
}

// stagedOf is the staged record of a verified artifact the file carries:
// its blob key, the $id of a schema (for the index that lets compiled
// schemas resolve absolute $refs inside their bundle) and the id of a DID
// document, which must parse.
func stagedOf(a *bundle.Artifact) (staged, error) {
	st := staged{entry: a.ArtifactEntry, blob: BlobKey(a.HashAlg, a.Hash)}
	switch a.MediaType {
	case bundle.MediaTypeSchema:
		// The bytes are verified (Next). SchemaID refuses a document
		// over offlineschema.MaxCompileBytes unparsed, so such an import
		// is refused (checkSchemasCompile) without its $id
		// (docs/SPEC-DECISIONS.md STORE-7, SCHEMA-12).
		if id, err := offlineschema.SchemaID(a.Data); err == nil {
			st.schemaID = id
		}
	case bundle.MediaTypeDID:
		doc, err := amp.ParseDIDDocument(a.Data)
		if err != nil {
			return staged{}, fail(bundle.ErrInconsistent, "artifact %s is not a valid did document", a.Key).WithCause(err)
		}
		st.did = doc.ID
	}
	return st, nil
}

// uniqueSchemaIDs refuses two schemas of one bundle with the same $id,
// which would make $ref resolution ambiguous.
func uniqueSchemaIDs(arts []staged) error {
	ids := map[string]bool{}
	for _, a := range arts {
		if a.schemaID == "" {
			continue
		}
		if ids[a.schemaID] {
			return fail(bundle.ErrInconsistent, "two schema artifacts declare the same $id")
		}
		ids[a.schemaID] = true
	}
	return nil
}

// blobBatch gathers the new blobs of an import and writes them a few MiB
// at a time (Options.StageBatchBytes), each batch in its own transaction
// that also records them in the pending journal, so that memory holds
// one batch, not the bundle. A blob is added once (seen), however many
// artifacts share it.
type blobBatch struct {
	s       *Store
	pending *pendingRecord
	batch   []*bundle.Artifact
	bytes   int
	seen    map[string]bool
}

// add queues a's blob (key blob) unless already queued, and writes the
// batch once it holds StageBatchBytes.
func (b *blobBatch) add(a *bundle.Artifact, blob string) error {
	if b.seen[blob] {
		return nil
	}
	b.seen[blob] = true
	b.batch = append(b.batch, a)
	b.bytes += len(a.Data)
	if b.bytes >= b.s.opts.StageBatchBytes {
		return b.flush()
	}
	return nil
}

// flush writes the queued blobs the store does not hold yet (a blob
// shared with an installed bundle is not written again) and the journal
// naming them, in one transaction.
func (b *blobBatch) flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	if err := b.s.fault("stage"); err != nil {
		return err
	}
	batch, pending := b.batch, b.pending
	err := b.s.db.Update(func(tx *bolt.Tx) error {
		// Sorted keys keep bbolt fast: random inserts slow a large
		// transaction down by an order of magnitude.
		sort.Slice(batch, func(i, j int) bool {
			return BlobKey(batch[i].HashAlg, batch[i].Hash) < BlobKey(batch[j].HashAlg, batch[j].Hash)
		})
		for _, a := range batch {
			k := BlobKey(a.HashAlg, a.Hash)
			if hasBlob(tx, []byte(k)) {
				continue // shared with an installed bundle
			}
			if err := putBlob(tx, []byte(k), a.Data); err != nil {
				return err
			}
			pending.Blobs = append(pending.Blobs, k)
		}
		return bucket(tx, bPending).Put([]byte(pending.BundleID), encode(pending))
	})
	b.batch, b.bytes = b.batch[:0], 0
	if err != nil {
		return wrapTx(err)
	}
	return nil
}

// rollback deletes the blobs a failed import staged (those nothing
// references) and its journal entry.
func (s *Store) rollback(p *pendingRecord) {
	_ = s.db.Update(func(tx *bolt.Tx) error { _, err := rollbackPending(tx, p); return err })
}

// rollbackPending deletes what the import p staged and nothing references,
// and its journal entry; deleted is the number of blobs deleted.
func rollbackPending(tx *bolt.Tx, p *pendingRecord) (deleted int, err error) {
	refs := bucket(tx, bBlobRefs)
	for _, k := range p.Blobs {
		if refs.Get([]byte(k)) == nil {
			if err := deleteBlob(tx, []byte(k)); err != nil {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, bucket(tx, bPending).Delete([]byte(p.BundleID))
}

// recoverPending rolls back imports that a crash interrupted.
func (s *Store) recoverPending() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		var ps []*pendingRecord
		err := bucket(tx, bPending).ForEach(func(_, v []byte) error {
			var p pendingRecord
			if err := decode(v, &p); err != nil {
				return err
			}
			ps = append(ps, &p)
			return nil
		})
		if err != nil {
			return err
		}
		rec := Recovery{Imports: len(ps)}
		for _, p := range ps {
			n, err := rollbackPending(tx, p)
			if err != nil {
				return err
			}
			rec.Blobs += n
		}
		s.recovered = rec
		return nil
	})
	if err != nil {
		s.recovered = Recovery{}
		return fail(ErrStoreIO, "cannot recover an interrupted import").WithCause(err)
	}
	return nil
}

// checkAgainstStore applies the store's rules to a verified manifest:
// rollback protection and conflicts with other bundles. It fills
// res.PreviousVersion and res.Downgrade, and reports whether the same
// release is already installed (sameRelease). The same release over an
// installed file that failed closed for its signers (revoked) is not
// unchanged: the copy, which stands on the signers that counted for it
// now, replaces that file, without being a rollback (BUNDLE-8), and so it
// does over an installed file whose signatures do not all verify (a forged
// co-signature an earlier build kept, TRUST-20). Over an installed file
// that fails closed as expired or stale the copy, which carries the same
// expiry and line, is refused by that name (failsClosedAsInstalled), not
// answered unchanged.
func (s *Store) checkAgainstStore(tx *bolt.Tx, m *bundle.Manifest, signed []byte, allowDowngrade bool, res *ImportResult) (bool, error) {
	res.PreviousVersion, res.Downgrade, res.Replaced = 0, false, false
	if versionRevoked(tx, m.BundleID, m.Version) {
		return false, fail(ErrRevoked, "bundle %s version %d is revoked (a revocation statement this store applied); import a newer version", m.BundleID, m.Version)
	}
	replacing := false // the installed release, failed closed, replaced by a copy that stands
	if raw := bucket(tx, bBundles).Get([]byte(m.BundleID)); raw != nil {
		var cur bundleRecord
		if err := decode(raw, &cur); err != nil {
			return false, err
		}
		if cur.Version == m.Version && sameRelease(cur.Signed, signed) {
			if cur.Revoked == "" && verifyStoredSignatures(cur.Signed) == nil {
				return true, s.failsClosedAsInstalled(tx, &cur)
			}
			replacing, res.Replaced = true, true
		}
		res.PreviousVersion = cur.Version
	}
	high, err := highwaterOf(tx, m.BundleID)
	if err != nil {
		return false, err
	}
	if m.Version <= high && !replacing {
		if !allowDowngrade {
			return false, fail(ErrRollback, "bundle %s version %d is not newer than version %d, the highest ever imported (rollback refused; --allow-downgrade overrides, audited)", m.BundleID, m.Version, high)
		}
		res.Downgrade = true
	}
	// A floor pinned for this very version (an act narrowing trust kept
	// it; it outlives Remove) expires it as it would installed: refused
	// here rather than accepted and then refused by every lookup.
	f, _, err := pinnedFloor(tx, m.BundleID, m.Version)
	if err != nil {
		return false, err
	}
	if m.ExpiresAt != nil && f >= m.ExpiresAt.Unix() {
		return false, fail(bundle.ErrExpired, "bundle %s version %d expired at %s: keys trusted for it had signed a later time (%s), kept for this version when trust was narrowed",
			m.BundleID, m.Version, m.ExpiresAt.UTC().Format(time.RFC3339), time.Unix(f, 0).UTC().Format(time.RFC3339))
	}
	descs := bucket(tx, bDescriptors)
	for _, d := range m.Capabilities {
		if raw := descs.Get(key2(d.Name, d.Version.String())); raw != nil {
			var dr descRecord
			if err := decode(raw, &dr); err != nil {
				return false, err
			}
			if dr.BundleID != m.BundleID {
				return false, fail(ErrCapConflict, "capability %s is already provided by bundle %s", d.ID(), dr.BundleID)
			}
		}
	}
	return false, s.checkAliasClaims(tx, m, res.counted)
}

// failsClosedAsInstalled refuses a copy of the installed release when
// the installed file fails closed as expired (by the clock, its floor or
// a pinned floor: expired, as an expired file's import is) or as stale
// (bundle_stale): the copy carries the same version, expiry and line, so
// it cannot make the release served, and `unchanged`, a success, would
// say all is well (docs/SPEC-DECISIONS.md BUNDLE-8). A store opened with
// AllowExpired serves an expired bundle, and answers unchanged.
func (s *Store) failsClosedAsInstalled(tx *bolt.Tx, cur *bundleRecord) error {
	// Expired by the clock needs no line; else its floor and staleness are
	// judged from one load of it (judge.staleExpired; TRUST-36).
	exp, ok := expiry(*cur)
	expires := ok && !s.opts.AllowExpired
	why, expired := "", expires && !s.opts.Now().Before(exp)
	if !expired {
		why, expired = s.judge(tx).staleExpired(cur.BundleID, cur, exp, expires)
	}
	if expired {
		return fail(bundle.ErrExpired, "bundle %s version %d is installed and expired at %s: a copy of it cannot make it valid (its expiry is signed); import a newer version",
			cur.BundleID, cur.Version, cur.ExpiresAt)
	}
	if why != "" {
		return fail(ErrBundleStale, "bundle %s version %d is installed and stale (%s): a copy of it cannot refresh it; apply a newer heartbeat of its line, or import a newer version",
			cur.BundleID, cur.Version, why)
	}
	return nil
}

// checkAliasClaims refuses, alias_conflict, a legacy type of m that an
// installed bundle of the same authority claims for another name
// (claimsConflict, docs/SPEC-DECISIONS.md BUNDLE-9): claims of different
// authorities are kept side by side (the type then resolves as
// ambiguous). signers are the keys that counted for m. Claims owned only
// by m's own bundle_id are left out: the installed version is replaced
// in the same transaction (uninstall), as its descriptors are. Each
// owner's record is read once, whatever the number of m's aliases. It
// refuses, too_many_alias_owners, m's claims that would hold more than
// MaxAliasClaimOwners owners together, as soon as they do.
func (s *Store) checkAliasClaims(tx *bolt.Tx, m *bundle.Manifest, signers []bundle.TrustedKey) error {
	aliases := bucket(tx, bAliases)
	var policy *bundle.Policy          // loaded at the first claim to judge
	counted := map[string]ownerClaim{} // owner -> what judges its claims
	owners := 0                        // of m's claims once installed (tooManyAliasOwners)
	for typ, name := range m.Aliases {
		raw := aliases.Get([]byte(typ))
		if raw == nil {
			if owners++; owners > s.lim.aliasOwners {
				return tooManyAliasOwners(m, s.lim.aliasOwners)
			}
			continue
		}
		var ar aliasRecord
		if err := decode(raw, &ar); err != nil {
			return err
		}
		if owners += ownersOnceInstalled(ar.claims(), name, m.BundleID); owners > s.lim.aliasOwners {
			return tooManyAliasOwners(m, s.lim.aliasOwners)
		}
		for _, c := range ar.claims() {
			// A claim of another namespace conflicts only when m's
			// signers all speak for its namespace (claimsConflict),
			// whoever owns it: its owners are read only then, so the
			// cost of the judgment is not the store's
			// (docs/SPEC-DECISIONS.md SCALE-23).
			if c.Name == name || !oneNamespace(c.Name, name) && !speakFor(signers, c.Name) {
				continue
			}
			for _, owner := range c.Owners {
				if owner == m.BundleID {
					continue
				}
				if policy == nil {
					st, err := s.loadState(tx, selTrust)
					if err != nil {
						return err
					}
					policy = st.Policy()
				}
				oc, ok := counted[owner]
				if !ok {
					var err error
					if oc, err = countedAtImport(tx, owner); err != nil {
						return err
					}
					counted[owner] = oc
				}
				if oc.dead {
					continue // its version is revoked: it can never be served again
				}
				if claimsConflict(c.Name, claimSigners(policy, oc.dids, c.Name), name, signers) {
					return fail(ErrAliasConflict, "legacy type %q already names %s", typ, c.Name)
				}
			}
		}
	}
	return nil
}

// MaxAliasClaimOwners bounds the owners an import's alias claims hold
// once it is installed, summed over its legacy types: each claim it
// joins counts its owners, the importing bundle_id once. An alias record
// keeps a claim's owners inline, so installing, replacing or removing one
// owner rewrites every record of its types whole; without a bound one
// authority's bundles sharing their types made each next import write
// more, the square of its bundles in all (docs/SPEC-DECISIONS.md
// STORE-1). 65,536 names of at most bundle.MaxBundleIDLen bytes are
// about bundle.DefaultMaxManifestSize, the largest manifest an import
// carries. Only the namespace of a claim's name can add owners to it (an
// alias names a capability its bundle carries), so the bound never
// refuses one authority for another's claims.
const MaxAliasClaimOwners = 1 << 16

// ownersOnceInstalled is how many owners the claim of name among cs holds
// once bundleID is installed: the claim's owners other than bundleID,
// plus bundleID.
func ownersOnceInstalled(cs []aliasClaim, name, bundleID string) int {
	n := 1
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		for _, o := range c.Owners {
			if o != bundleID {
				n++
			}
		}
	}
	return n
}

// tooManyAliasOwners is the refusal of m by MaxAliasClaimOwners (bound:
// the store's).
func tooManyAliasOwners(m *bundle.Manifest, bound int) error {
	return fail(ErrTooManyAliasOwners, "bundle %s: its alias claims would hold more than %d owners together (each install, replacement or removal of an owner rewrites them); carry the legacy types in fewer bundles",
		m.BundleID, bound)
}

// ownerClaim is what judges the claims of one installed bundle: the
// did:keys of the signers that counted at its import, and whether its
// version is revoked (dead: no copy can ever be served again, so its
// claims block no one; a bundle that failed closed otherwise — stale,
// expired, its key revoked — may be served again and stays judged).
type ownerClaim struct {
	dids []string
	dead bool
}

// countedAtImport returns what judges the installed bundle owner's claims
// (ownerClaim): the keys whose signatures it carries, for a record that
// keeps no counted signers. An owner that is not installed is a damaged
// store (store_io, which `check` names), not a verdict on the file being
// imported.
func countedAtImport(tx *bolt.Tx, owner string) (ownerClaim, error) {
	rec, err := installedRecord(tx, owner)
	if errors.Is(err, ErrUnknownBundle) {
		return ownerClaim{}, fail(ErrStoreIO, "an alias record names a bundle that is not installed (ampbundle check)")
	}
	if err != nil {
		return ownerClaim{}, err
	}
	oc := ownerClaim{dids: rec.SignerKeys, dead: versionRevoked(tx, owner, rec.Version)}
	if len(oc.dids) > 0 {
		return oc, nil
	}
	obj, err := bundle.DecodeObject(rec.Signed, bundle.MediaTypeManifest)
	if err != nil {
		return ownerClaim{}, err
	}
	for _, sg := range obj.Signatures {
		oc.dids = append(oc.dids, amp.BareDID(sg.KID))
	}
	return oc, nil
}

// claimSigners returns the keys that speak for an installed bundle's
// claim of name, re-counted under the store's policy p now: the keys of p
// trusted for name's namespace among counted, the did:keys that counted
// at its import (countedAtImport). A key no longer trusted there speaks
// for nothing; a name that does not split has no signer.
func claimSigners(p *bundle.Policy, counted []string, name string) []bundle.TrustedKey {
	ns, _, err := capability.SplitName(name)
	if err != nil {
		return nil
	}
	var out []bundle.TrustedKey
	for _, k := range p.Keys {
		if k.CoversScope(ns) && slices.Contains(counted, amp.DIDKey(k.Key)) {
			out = append(out, k)
		}
	}
	return out
}

// sameRelease reports whether two signed manifests (COSE_Sign items) are
// one release: byte-identical, or carrying the same manifest payload under
// other signature lists (docs/SPEC-DECISIONS.md BUNDLE-8): the list of
// signatures is covered by none of them, so a co-signed, trimmed or
// re-ordered copy of the installed release is that release, as a
// statement is its payload (TRUST-19). The caller has verified signed
// under the store's policy; an installed item that does not decode is
// never the same release.
func sameRelease(installed, signed []byte) bool {
	if bytes.Equal(installed, signed) {
		return true
	}
	a, err := bundle.DecodeObject(installed, bundle.MediaTypeManifest)
	if err != nil {
		return false
	}
	b, err := bundle.DecodeObject(signed, bundle.MediaTypeManifest)
	if err != nil {
		return false
	}
	return bytes.Equal(a.Payload, b.Payload)
}

// claimsConflict reports whether two claims of one legacy type, for the
// names a and b by bundles whose counting signers are sa and sb, are one
// authority's, so that only the first may stand (docs/SPEC-DECISIONS.md
// BUNDLE-9): the names differ and either they lie in one namespace,
// whatever their signers re-count to today (a namespace is one
// authority's, whose keys may since have rotated or been replaced), or
// each side's signers all speak for the other's namespace. A claim whose
// signers do not all speak for the other's namespace is another
// authority's, and both are kept (the type resolves as ambiguous, which
// names no capability). The relation is symmetric: which claim came first
// never decides whether they conflict.
func claimsConflict(a string, sa []bundle.TrustedKey, b string, sb []bundle.TrustedKey) bool {
	if a == b {
		return false
	}
	if oneNamespace(a, b) {
		return true
	}
	return speakFor(sa, b) && speakFor(sb, a)
}

// oneNamespace reports whether the capability names a and b lie in one
// namespace (false when either does not split).
func oneNamespace(a, b string) bool {
	nsA, _, errA := capability.SplitName(a)
	nsB, _, errB := capability.SplitName(b)
	return errA == nil && errB == nil && nsA == nsB
}

// speakFor reports whether signers, at least one, are all trusted for
// the namespace of name. No signer (a kept claim whose keys are no longer
// trusted there) speaks for anything, nor does any for a name that does
// not split (a damaged record): both claims are then kept.
func speakFor(signers []bundle.TrustedKey, name string) bool {
	ns, _, err := capability.SplitName(name)
	if err != nil || len(signers) == 0 {
		return false
	}
	for _, k := range signers {
		if !k.CoversScope(ns) {
			return false
		}
	}
	return true
}

// checkDIDs refuses a DID that another bundle already documents.
func checkDIDs(tx *bolt.Tx, bundleID string, arts []staged) error {
	dids := bucket(tx, bDIDs)
	for _, a := range arts {
		if a.did == "" {
			continue
		}
		if raw := dids.Get([]byte(a.did)); raw != nil {
			var dr didRecord
			if err := decode(raw, &dr); err != nil {
				return err
			}
			if dr.BundleID != bundleID {
				return fail(ErrDIDConflict, "did %s is already documented by bundle %s", a.did, dr.BundleID)
			}
		}
	}
	return nil
}

// install writes everything of a verified bundle whose blobs are staged.
// entry carries the audit fields the caller knows (actor, file hash);
// share is the store's MaxHeartbeatsNotInstalled (unchargeLine).
func install(tx *bolt.Tx, m *bundle.Manifest, signed []byte, arts []staged, res *ImportResult, now time.Time, entry AuditEntry, share int) error {
	if err := checkDIDs(tx, m.BundleID, arts); err != nil {
		return err
	}
	index, refs := bucket(tx, bIndex), bucket(tx, bBlobRefs)
	var total uint64
	for _, a := range arts {
		if !hasBlob(tx, []byte(a.blob)) {
			return fail(ErrStoreIO, "a staged blob is missing")
		}
		if err := index.Put(key2(m.BundleID, a.entry.Key), encode(indexRecord{Blob: a.blob, MediaType: a.entry.MediaType, Size: a.entry.Size})); err != nil {
			return err
		}
		if err := refs.Put([]byte(a.blob), u64(getU64(refs.Get([]byte(a.blob)))+1)); err != nil {
			return err
		}
		total += a.entry.Size
	}
	descs := bucket(tx, bDescriptors)
	for _, d := range m.Capabilities {
		enc, err := d.Encode()
		if err != nil {
			return err
		}
		if err := descs.Put(key2(d.Name, d.Version.String()), encode(descRecord{BundleID: m.BundleID, Descriptor: enc})); err != nil {
			return err
		}
	}
	aliases := bucket(tx, bAliases)
	for typ, name := range m.Aliases {
		var cs []aliasClaim
		if raw := aliases.Get([]byte(typ)); raw != nil {
			var ar aliasRecord
			if err := decode(raw, &ar); err != nil {
				return err
			}
			cs = ar.claims()
		}
		i := slices.IndexFunc(cs, func(c aliasClaim) bool { return c.Name == name })
		if i < 0 {
			cs, i = append(cs, aliasClaim{Name: name}), len(cs)
		}
		cs[i].Owners = addOwner(cs[i].Owners, m.BundleID)
		ar, _ := aliasRecordOf(cs)
		if err := aliases.Put([]byte(typ), encode(ar)); err != nil {
			return err
		}
	}
	dids, sids := bucket(tx, bDIDs), bucket(tx, bSchemaIDs)
	for _, a := range arts {
		if a.did != "" {
			if err := dids.Put([]byte(a.did), encode(didRecord{BundleID: m.BundleID, ArtifactKey: a.entry.Key})); err != nil {
				return err
			}
		}
		if a.schemaID != "" {
			if err := sids.Put(key2(m.BundleID, a.schemaID), []byte(a.entry.Key)); err != nil {
				return err
			}
		}
	}
	rec := bundleRecord{BundleID: m.BundleID, Version: m.Version, Signed: signed, ImportedAt: formatTime(now),
		Signers: res.Signers, SignerKeys: res.signerKeys, Artifacts: uint64(len(arts)), Bytes: total}
	if m.ExpiresAt != nil {
		rec.ExpiresAt = formatTime(*m.ExpiresAt)
	}
	if err := bucket(tx, bBundles).Put([]byte(m.BundleID), encode(rec)); err != nil {
		return err
	}
	if err := unchargeLine(tx, m.BundleID, share); err != nil {
		return err
	}
	high, err := highwaterOf(tx, m.BundleID)
	if err != nil {
		return err
	}
	if m.Version > high {
		if err := bucket(tx, bHighwater).Put([]byte(m.BundleID), u64(m.Version)); err != nil {
			return err
		}
	}
	action := "import"
	if res.Downgrade {
		action = "downgrade"
	}
	entry.Action, entry.Verdict = action, verdictAccepted
	entry.BundleID, entry.Version, entry.PreviousVersion = m.BundleID, m.Version, res.PreviousVersion
	entry.Signers, entry.ManifestSHA256 = res.Signers, sha256sum(signed)
	return appendAudit(tx, now, entry)
}

// uninstall removes every record of an installed bundle. The high-water
// mark stays. It returns the blobs whose last reference it removed; the
// caller deletes those that are still unreferenced once it is done (a newer
// version installed in the same transaction may share them).
//
// Its cost is the bundle's, not the store's (docs/SPEC-DECISIONS.md
// SCALE-22): its index and $id entries are read by their bundle_id
// prefix, and its descriptor, alias and DID entries, keyed by capability,
// legacy type and DID, are looked up by the keys install wrote: those its
// stored signed manifest names and the ids of its DID documents. Where
// that cannot be done (the manifest or a DID document does not decode)
// or finds an entry missing or another bundle's, the store is damaged
// (ampbundle check names it): that bucket is then read whole, as before.
func uninstall(tx *bolt.Tx, bundleID string) ([]string, error) {
	m := storedManifest(tx, bundleID)
	orphans, didBlobs, err := unindex(tx, bundleID)
	if err != nil {
		return nil, err
	}
	var descKeys, aliasKeys [][]byte
	if m != nil {
		for _, d := range m.Capabilities {
			descKeys = append(descKeys, key2(d.Name, d.Version.String()))
		}
		for typ := range m.Aliases {
			aliasKeys = append(aliasKeys, []byte(typ))
		}
	}
	if err := dropOwned(bucket(tx, bDescriptors), descKeys, m != nil, func(v []byte) (string, error) {
		var dr descRecord
		return dr.BundleID, decode(v, &dr)
	}, bundleID); err != nil {
		return nil, err
	}
	didKeys, ok := didsOf(tx, didBlobs)
	if err := dropOwned(bucket(tx, bDIDs), didKeys, ok, func(v []byte) (string, error) {
		var dr didRecord
		return dr.BundleID, decode(v, &dr)
	}, bundleID); err != nil {
		return nil, err
	}
	if err := dropAliasOwner(tx, bundleID, aliasKeys, m != nil); err != nil {
		return nil, err
	}
	sids := bucket(tx, bSchemaIDs)
	prefix := key2(bundleID, "")
	var drop [][]byte
	c := sids.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		drop = append(drop, clone(k))
	}
	for _, k := range drop {
		if err := sids.Delete(k); err != nil {
			return nil, err
		}
	}
	return orphans, bucket(tx, bBundles).Delete([]byte(bundleID))
}

// storedManifest returns the manifest of the installed bundle bundleID,
// as its record keeps it signed, or nil when it does not decode or is
// not that bundle's (a damaged store).
func storedManifest(tx *bolt.Tx, bundleID string) *bundle.Manifest {
	rec, err := installedRecord(tx, bundleID)
	if err != nil {
		return nil
	}
	obj, err := bundle.DecodeObject(rec.Signed, bundle.MediaTypeManifest)
	if err != nil {
		return nil
	}
	m, err := bundle.DecodeManifest(obj.Payload)
	if err != nil || m.BundleID != bundleID {
		return nil
	}
	return m
}

// unindex deletes the index entries of bundleID and the references they
// hold. It returns the blobs whose last reference it removed (orphans)
// and those of its DID documents.
func unindex(tx *bolt.Tx, bundleID string) (orphans, dids []string, err error) {
	prefix := key2(bundleID, "")
	index, refs := bucket(tx, bIndex), bucket(tx, bBlobRefs)
	var drop [][]byte
	c := index.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var ir indexRecord
		if err := decode(v, &ir); err != nil {
			return nil, nil, err
		}
		if ir.MediaType == bundle.MediaTypeDID {
			dids = append(dids, ir.Blob)
		}
		n := getU64(refs.Get([]byte(ir.Blob)))
		if n <= 1 {
			if err := refs.Delete([]byte(ir.Blob)); err != nil {
				return nil, nil, err
			}
			orphans = append(orphans, ir.Blob)
		} else if err := refs.Put([]byte(ir.Blob), u64(n-1)); err != nil {
			return nil, nil, err
		}
		drop = append(drop, clone(k))
	}
	for _, k := range drop {
		if err := index.Delete(k); err != nil {
			return nil, nil, err
		}
	}
	return orphans, dids, nil
}

// didsOf returns the ids of the DID documents stored as blobs, the keys
// of the DID entries install wrote for them; ok is false when one is
// missing or does not parse (a damaged store).
func didsOf(tx *bolt.Tx, blobs []string) (ids [][]byte, ok bool) {
	for _, b := range blobs {
		data := getBlob(tx, []byte(b))
		if data == nil {
			return nil, false
		}
		doc, err := amp.ParseDIDDocument(data)
		if err != nil {
			return nil, false
		}
		ids = append(ids, []byte(doc.ID))
	}
	return ids, true
}

// dropOwned deletes the entries of b under keys, each of which must be
// bundleID's (owner reads the bundle an entry names). When known is
// false, or one of keys has no entry or another bundle's, it deletes
// every entry of b that is bundleID's instead, reading them all.
func dropOwned(b *bolt.Bucket, keys [][]byte, known bool, owner func(v []byte) (string, error), bundleID string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !known {
			break
		}
		if seen[string(k)] {
			continue // a DID two of the bundle's documents describe
		}
		seen[string(k)] = true
		v := b.Get(k)
		if v == nil {
			known = false
			break
		}
		id, err := owner(v)
		if err != nil {
			return err
		}
		if id != bundleID {
			known = false
			break
		}
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	if known {
		return nil
	}
	return deleteWhere(b, func(v []byte) (bool, error) {
		id, err := owner(v)
		return id == bundleID, err
	})
}

// dropAliasOwner removes bundleID from the owners of every alias claim,
// deleting a claim left without owners and a record left without claims:
// those of the legacy types keys when known (each must name it an owner),
// else, or when one does not, those of every record.
func dropAliasOwner(tx *bolt.Tx, bundleID string, keys [][]byte, known bool) error {
	aliases := bucket(tx, bAliases)
	type update struct {
		k    []byte
		ar   aliasRecord
		keep bool
	}
	var updates []update
	unown := func(k, v []byte) (bool, error) {
		var ar aliasRecord
		if err := decode(v, &ar); err != nil {
			return false, err
		}
		cs, changed := ar.claims(), false
		for i := range cs {
			if owners := removeOwner(cs[i].Owners, bundleID); len(owners) != len(cs[i].Owners) {
				cs[i].Owners, changed = owners, true
			}
		}
		if changed {
			next, keep := aliasRecordOf(cs)
			updates = append(updates, update{clone(k), next, keep})
		}
		return changed, nil
	}
	for _, k := range keys {
		if !known {
			break
		}
		v := aliases.Get(k)
		if v == nil {
			known = false
			break
		}
		changed, err := unown(k, v)
		if err != nil {
			return err
		}
		known = changed
	}
	if !known {
		updates = updates[:0]
		if err := aliases.ForEach(func(k, v []byte) error { _, err := unown(k, v); return err }); err != nil {
			return err
		}
	}
	for _, u := range updates {
		var err error
		if !u.keep {
			err = aliases.Delete(u.k)
		} else {
			err = aliases.Put(u.k, encode(u.ar))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteOrphans deletes the listed blobs that no index entry references.
func deleteOrphans(tx *bolt.Tx, blobs []string) error {
	refs := bucket(tx, bBlobRefs)
	sort.Strings(blobs)
	for _, k := range blobs {
		if refs.Get([]byte(k)) == nil {
			if err := deleteBlob(tx, []byte(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteWhere deletes the entries of b whose value matches.
func deleteWhere(b *bolt.Bucket, match func(v []byte) (bool, error)) error {
	var drop [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		ok, err := match(v)
		if err != nil {
			return err
		}
		if ok {
			drop = append(drop, clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func addOwner(owners []string, id string) []string {
	for _, o := range owners {
		if o == id {
			return owners
		}
	}
	owners = append(owners, id)
	sort.Strings(owners)
	return owners
}

func removeOwner(owners []string, id string) []string {
	out := owners[:0:0]
	for _, o := range owners {
		if o != id {
			out = append(out, o)
		}
	}
	return out
}

// Remove uninstalls a bundle in one transaction: its index entries,
// descriptors, aliases and DID documents go, blobs nothing else references
// are deleted, the generation changes and the removal is audited. The
// high-water mark of its bundle_id stays (rollback protection). It
// returns the version removed: 0 when the bundle's record does not decode
// (ProblemBundleUnreadable), which is removed all the same, every entry of
// that bundle found by reading each bucket whole, and audited without a
// version (docs/SPEC-DECISIONS.md STORE-9).
func (s *Store) Remove(bundleID string) (uint64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen, version uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		rec, err := installedRecord(tx, bundleID)
		if errors.Is(err, ErrUnknownBundle) {
			return err
		}
		if err == nil { // else unread, and 0: the version was in the record
			version = rec.Version
		}
		orphans, err := uninstall(tx, bundleID)
		if err != nil {
			return err
		}
		if err := deleteOrphans(tx, orphans); err != nil {
			return err
		}
		if err := s.fault("remove"); err != nil {
			return err
		}
		if err := appendAudit(tx, s.opts.Now(), AuditEntry{Action: "remove", Actor: s.actor(), Verdict: verdictAccepted, BundleID: bundleID, Version: version}); err != nil {
			return err
		}
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return 0, amp.AsError(wrapTx(err))
	}
	s.gen.Store(gen)
	return version, nil
}

// verdictAccepted is the verdict of an audit entry for a change that took
// effect.
const verdictAccepted = "accepted"

func sha256sum(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}

// auditRefusal records a refused signed statement (beginStatement), as
// an import's refusal is recorded. Failures of the store itself are
// not refusals (and an entry could not be written anyway); neither is a
// canceled import. The refusal's verdict is the error name; what the file
// claims is recorded only when its manifest verified (verified non-nil).
//
// A refusal of the same file with the same verdict is audited once a
// RefusalReauditInterval (auditRefusalOnce, keyed by fileSHA256). The
// caller holds s.mu: the refusal was judged at the current generation.
// It returns store_io when the entry could not be written (a statement's
// refusal, beginStatement): the caller answers that, never a refusal the
// audit log does not hold.
func (s *Store) auditRefusal(err error, verified *ImportResult, fileSHA256 []byte) error {
	if werr := s.auditRefusalFrom(err, verified, fileSHA256, "", fileSHA256, s.gen.Load()); werr != nil {
		return fail(ErrStoreIO, "the statement was refused (%s), but the store could not write the refusal's audit entry",
			amp.NameOf(amp.AsError(err))).WithCause(werr)
	}
	return nil
}

// auditRefusalFrom is auditRefusal with the import's source recorded,
// key, the SHA-256 the record of recent refusals knows the file by, and
// gen, the generation the refusal was judged at. It returns the error of
// the audit write (nil for what is not a refusal).
func (s *Store) auditRefusalFrom(err error, verified *ImportResult, fileSHA256 []byte, source string, key []byte, gen uint64) error {
	name := amp.NameOf(amp.AsError(err))
	if name == "" || name == ErrStoreIO || name == ErrReadOnly || name == ErrStoreInUse {
		return nil
	}
	e := AuditEntry{Action: "import_refused", Actor: s.actor(), Verdict: string(name), FileSHA256: clone(fileSHA256), Source: source}
	if verified != nil {
		e.BundleID, e.Version, e.Signers = verified.BundleID, verified.Version, verified.Signers
	}
	return s.auditRefusalOnce(e, key, gen)
}

// MaxRefusalDrain is the most a refused import reads of what is left of
// its stream to hash the whole file (auditImportRefusal): the largest
// bundle file 'ampbundle sync' downloads by default (mirror
// DefaultMaxBundleBytes, 1 GiB), so that every file it offers is read
// whole and its refusal recorded.
const MaxRefusalDrain = 1 << 30

// MaxRefusalDrains bounds the refused imports of one store that drain
// their streams at the same time (auditImportRefusal): each holds a
// goroutine, a buffer and its caller's stream for up to MaxRefusalDrain
// at the minimum data rate. Sync offers one file at a time, so a few
// slots serve it; a refusal beyond them is audited at once, unhashed and
// recorded nowhere, as a drain that gives up is (docs/SPEC-DECISIONS.md
// MIRROR-13).
const MaxRefusalDrains = 4

// auditImportRefusal audits a refused import whose stream r (tee'd into
// fileHash) the store stopped reading at the refusal, judged at
// generation gen; the caller no longer holds s.mu. The record of recent
// refusals, which sync trusts to skip a listed file by its SHA-256,
// names only a file the store read whole (docs/SPEC-DECISIONS.md
// MIRROR-13): what is left of r is drained (drainRefused: at most
// MaxRefusalDrain bytes, or MaxArtifactSize when larger, until ctx is
// done, at the minimum data rate, in one of MaxRefusalDrains slots), and
// when r ended within that the refusal is recorded, and audited, under
// the SHA-256 of all the bytes read (the caller's FileSHA256 when the
// bytes are that file), provided the store is still at gen. Bytes that
// are not the file the caller named (an altered part, a cut stream,
// other bytes under a good file's sum) so never have the good file
// recorded as refused. Otherwise (no slot free, or the drain gave up)
// the refusal is audited each time and recorded nowhere, as before the
// record existed. ctx is done once Close begins (beginImport), which
// stops the drain as a cancel does and waits for the audit write before
// it closes the database. It returns store_io when the audit entry could
// not be written: the caller then answers that, not the refusal.
func (s *Store) auditImportRefusal(ctx context.Context, err error, verified *ImportResult, r io.Reader, fileHash hash.Hash, opts ImportOptions, gen uint64) error {
	name := amp.NameOf(amp.AsError(err))
	switch name {
	case "", ErrStoreIO, ErrReadOnly, ErrStoreInUse:
		return nil // not a refusal: neither audited nor drained
	}
	drained := false
	if s.beginDrain() {
		drained = drainRefused(ctx, r, max(s.opts.MaxArtifactSize, MaxRefusalDrain), s.lim.drainRate, s.lim.drainGrace)
		s.endDrain()
	}
	var werr error
	if drained {
		sum := fileHash.Sum(nil)
		werr = s.auditRefusalFrom(err, verified, sum, opts.Source, sum, gen)
	} else {
		werr = s.auditRefusalFrom(err, verified, opts.FileSHA256, opts.Source, nil, gen)
	}
	if werr != nil {
		return fail(ErrStoreIO, "the import was refused (%s), but the store could not write the refusal's audit entry", name).WithCause(werr)
	}
	return nil
}

// drainRefused reads r to its end and reports whether it ended within
// limit bytes, before ctx was done (a cancel, or Store.Close), and while
// keeping the minimum data rate: after drainGrace, what has arrived
// keeps up with drainRate on average since the drain began, and once
// bytes came the next come within drainGrace (the rate and stall rules
// of transport.RateReader; a local file drains at disk speed). Its times
// are monotonic (durations since the drain began): a wall clock stepped
// back does not hold a stalled stream longer. The reading runs in a
// goroutine so that a Read blocked on a stream its caller keeps open
// cannot hold the import: when the drain gives up, that goroutine ends
// when the Read in flight returns, and reads nothing more.
//
// drainRate and drainGrace are the minimum data rate of the drain: the
// transport bindings' (admission.MinDataRate, admission.FrameGrace), as
// the store carries them (storeLimits).
func drainRefused(ctx context.Context, r io.Reader, limit, drainRate int64, drainGrace time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	var got, last atomic.Int64 // bytes read; time of the last since start, ns
	var stop atomic.Bool
	start := time.Now()
	done := make(chan bool, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for !stop.Load() {
			n, err := r.Read(buf)
			if n > 0 {
				last.Store(int64(time.Since(start)))
				if got.Add(int64(n)) > limit {
					break
				}
			}
			if err != nil {
				done <- err == io.EOF
				return
			}
		}
		done <- false
	}()
	deadline := func() time.Time {
		d := start.Add(admission.DataDeadline(got.Load(), drainRate, drainGrace, 0))
		if s := start.Add(time.Duration(last.Load()) + drainGrace); got.Load() > 0 && s.Before(d) {
			d = s
		}
		return d
	}
	timer := time.NewTimer(time.Until(deadline()))
	defer timer.Stop()
	for {
		select {
		case ok := <-done:
			return ok
		case <-ctx.Done():
			stop.Store(true)
			return false
		case <-timer.C:
			if wait := time.Until(deadline()); wait > 0 {
				timer.Reset(wait)
				continue
			}
			stop.Store(true)
			return false
		}
	}
}

// installedRecord returns the record of the installed bundle bundleID
// (unknown_bundle when none is).
func installedRecord(tx *bolt.Tx, bundleID string) (bundleRecord, error) {
	var rec bundleRecord
	raw := bucket(tx, bBundles).Get([]byte(bundleID))
	if raw == nil {
		return rec, fail(ErrUnknownBundle, "bundle %s is not installed", bundleID)
	}
	return rec, decode(raw, &rec)
}
