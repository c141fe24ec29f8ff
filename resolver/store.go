package resolver

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/trust"
)

// SchemaVersion is the layout version of the store, written at creation and
// checked on every open. Version 2 stores each blob in a bucket of its own
// (blobs.go); version 1, never released, stored them as plain values and
// is refused as store_version. Version 3 says every protection this build
// records in the meta bucket (removed keys, key origins, heartbeat and
// statement charges, pinned floors and the keys they rest on) is written
// and kept up to date: a build before it refuses such a store instead of
// opening it without them (docs/SPEC-DECISIONS.md TSTATE-5). This build
// opens a version 2 store too: read-only as it is, and at its first
// writable open it upgrades it to 4 (upgradeStore). Version 4 lets an
// alias record hold claims of several namespaces (aliasRecord.More,
// docs/SPEC-DECISIONS.md BUNDLE-9), which a build of version 3 would read
// as the first claim alone; a record of versions 2 and 3 is one claim, so
// a version 3 store is read as it is and upgraded by setting the version
// (upgradeAliasClaims).
const SchemaVersion = 4

// schemaVersionOneClaimAliases is the last schema version whose alias
// records hold one claim.
const schemaVersionOneClaimAliases = 3

// minSchemaVersion is the oldest schema version this build opens.
const minSchemaVersion = 2

// Bucket names (docs/ARCHITECTURE.md, "The store"). All are created when a store is created, so
// that no operation ever adds or removes one of them (the per-blob buckets
// inside bBlobs come and go with their blobs).
const (
	bMeta        = "meta"        // schema_version, generation, audit head
	bTrust       = "trust"       // name -> trustRecord
	bBundles     = "bundles"     // bundle_id -> bundleRecord
	bBlobs       = "blobs"       // "<alg>:<hex>" -> bucket {"d": bytes} (blobs.go)
	bBlobRefs    = "blobrefs"    // "<alg>:<hex>" -> uint64 number of index entries
	bIndex       = "index"       // bundle_id \x00 artifact_key -> indexRecord
	bDescriptors = "descriptors" // name \x00 version -> descRecord
	bAliases     = "aliases"     // legacy type -> aliasRecord
	bDIDs        = "dids"        // did -> didRecord
	bSchemaIDs   = "schemaids"   // bundle_id \x00 $id -> artifact key
	bHighwater   = "highwater"   // bundle_id -> uint64 highest version ever imported
	bAudit       = "audit"       // uint64 seq -> audit entry (CBOR)
	bPending     = "pending"     // bundle_id -> pendingRecord (staged, uncommitted import)
	bTrustPolicy = "trustpolicy" // scope -> uint64 threshold (truststate.go)
	bTrustChain  = "trustchain"  // scope \x00 uint64 sequence -> trust statement (truststate.go)
	bRevoked     = "revoked"     // "k" \x00 did:key, "b" \x00 bundle_id \x00 uint64 version -> revokedRecord (truststate.go)
	bStatements  = "statements"  // "s" uint64 seq -> signed statement bytes, "h" sha256 -> uint64 seq, "p" payload sha256 -> uint64 seq (TRUST-19), "b" bundle_id -> the kept heartbeat's bytes (statements.go)
	bHeartbeat   = "heartbeat"   // bundle_id -> heartbeatRecord, the newest heartbeat of the line (truststate.go)
	bFreshness   = "freshness"   // scope -> freshnessRecord, the operator's staleness bound (truststate.go)
)

func allBuckets() []string {
	return []string{bMeta, bTrust, bBundles, bBlobs, bBlobRefs, bIndex, bDescriptors, bAliases, bDIDs,
		bSchemaIDs, bHighwater, bAudit, bPending, bTrustPolicy, bRevoked, bTrustChain, bStatements, bHeartbeat, bFreshness}
}

// bucket returns a bucket of the store (they always exist after Open).
func bucket(tx *bolt.Tx, name string) *bolt.Bucket { return tx.Bucket([]byte(name)) }

// Meta keys.
const (
	kSchemaVersion = "schema_version"
	kGeneration    = "generation"
	kAuditHead     = "audit_head"
	kAuditSeq      = "audit_seq"
)

// Error names of the registry. Resolution failures carry AMP code 5002;
// the others (import, trust, store) carry none.
const (
	ErrStoreInUse        amp.ErrName = "store_in_use"
	ErrStoreMissing      amp.ErrName = "store_missing"
	ErrStoreVersion      amp.ErrName = "store_version"
	ErrStoreIO           amp.ErrName = "store_io"
	ErrReadOnly          amp.ErrName = "read_only"
	ErrRollback          amp.ErrName = "rollback"
	ErrCapConflict       amp.ErrName = "capability_conflict"
	ErrAliasConflict     amp.ErrName = "alias_conflict"
	ErrDIDConflict       amp.ErrName = "did_conflict"
	ErrUnknownBundle     amp.ErrName = "unknown_bundle"
	ErrTrustExists                   = trust.ErrTrustExists
	ErrUnknownTrust                  = trust.ErrUnknownTrust
	ErrInvalidTrust                  = trust.ErrInvalidTrust
	ErrNoLocalLocator    amp.ErrName = "no_local_locator"
	ErrBundleMissing     amp.ErrName = "bundle_missing"
	ErrArtifactMissing   amp.ErrName = "artifact_missing"
	ErrBlobUnreadable    amp.ErrName = "blob_unreadable"
	ErrHashMismatch      amp.ErrName = "hash_mismatch"
	ErrBundleExpired     amp.ErrName = "bundle_expired"
	ErrSchemaUnavailable amp.ErrName = "schema_unavailable"
	ErrAuditBroken       amp.ErrName = "audit_broken"
	// ErrTooManyAliasOwners: an import whose alias claims would hold
	// more than MaxAliasClaimOwners owners together.
	ErrTooManyAliasOwners amp.ErrName = "too_many_alias_owners"
	// ErrUnsupported: the store as reached (the admin socket of an agent
	// older than the caller) does not offer the operation.
	ErrUnsupported amp.ErrName = "unsupported"
	// ErrSchemaNotOffline: a bundle's schema does not compile from the
	// bundle alone (a dangling or remote $ref, a remote $schema, a $ref
	// cycle the compiler rejects); import refuses it as build does.
	ErrSchemaNotOffline amp.ErrName = "schema_not_offline"
	ErrBundleRevoked    amp.ErrName = "bundle_revoked"         // 5002: an installed bundle that a revocation or trust rm --fail-closed failed closed
	ErrRevoked          amp.ErrName = "revoked"                // import of a revoked bundle version
	ErrKeyRevoked                   = trust.ErrKeyRevoked      // trust add of a revoked key
	ErrRevocationScope              = trust.ErrRevocationScope // a revocation of a key trusted beyond the statement's scope
	ErrBundleStale      amp.ErrName = "bundle_stale"           // 5002: an installed bundle older than the freshness policy allows (trust.Stale)
	ErrHeartbeatOlder               = trust.ErrHeartbeatOlder  // a heartbeat older than the newest this store holds for the line
	ErrHeartbeatTooFar              = trust.ErrHeartbeatTooFar // a heartbeat more than bundle.MaxHeartbeatJump versions above what the store knows of the line
	ErrNoHeartbeat                  = trust.ErrNoHeartbeat     // a heartbeat reset of a line without one
	ErrRotationGap                  = trust.ErrRotationGap     // a trust statement after a missing one
	ErrRotationFork                 = trust.ErrRotationFork    // a trust statement that is not the one this store applied, or chains to another
)

func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}

// unavailable is a resolution failure: always 5002 (RFC 004 §5.3).
func unavailable(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(amp.CodeUnavailable, name, format, args...)
}

// Options configures Open.
type Options struct {
	// Now is the clock (expiry, audit times). Default time.Now.
	Now func() time.Time
	// ReadOnly opens the store with a shared lock; writes fail.
	ReadOnly bool
	// Create creates the store file when it does not exist. Without it a
	// missing store is ErrStoreMissing (commands that only read never
	// create an empty store by mistake).
	Create bool
	// LockTimeout bounds the wait for the file lock held by another
	// process (an agent, for example). Default 250 ms: a command never
	// hangs on a store in use.
	LockTimeout time.Duration
	// AllowExpired serves schemas of expired bundles. Off by default:
	// resolution fails closed with 5002 bundle_expired.
	AllowExpired bool
	// MaxArtifactSize caps one artifact at import. Default 256 MiB.
	MaxArtifactSize int64
	// StageBatchBytes is how many artifact bytes an import stages per
	// transaction. Default 4 MiB.
	StageBatchBytes int
	// Actor, when set, is recorded in every audit entry this store
	// writes: who changed the store (the CLI sets its uid and host).
	Actor *Actor
}

// Store is the local registry: a bbolt file (docs/ARCHITECTURE.md, "The store"). It is safe for
// concurrent use; writes are serialized.
type Store struct {
	db   *bolt.DB
	opts Options
	path string

	// mu serializes every write of this process (imports, removals, trust
	// changes); bbolt's file lock keeps other processes out.
	mu sync.Mutex

	// gen mirrors meta/generation for lock-free cache checks.
	gen atomic.Uint64
	// floor mirrors meta/time_floor (clock.go).
	floor atomic.Int64

	schemas *schemaCache
	catalog catalogCache
	didDocs didCache
	judged  judgedCache

	// auditRead counts the audit entries removedFromAudit has decoded,
	// for the tests that bound them.
	auditRead atomic.Int64
	// baseChecked counts the base blobs fromBase has checked (size, hash
	// unless skipped, DID scope and parse: delta.go), all imports
	// together, for the tests that bound them.
	baseChecked atomic.Int64

	// faults is nil in every Store this package's API makes: only the
	// package's own tests set it (export_test.go), to fail an import or a
	// removal at a named step. No option or exported name reaches it.
	faults func(step string) error
	// decoded is nil in every Store this package's API makes: only the
	// package's own tests set it (export_test.go), to count the revoked
	// and DID records a trust decision decodes (truststate.go).
	decoded func(bucket string)

	// epoch is the digest of the options (and build) a refusal's verdict
	// may depend on (refusalEpoch), kept in the record of recent
	// refusals: a refusal recorded under other options (MaxArtifactSize
	// since raised) is not answered by RefusedAt; one recorded by an
	// earlier open with the same options is (refusalrecord.go).
	epoch uint64

	// recovered is what opening the store read-write rolled back
	// (Recovered); set once, before Open returns.
	recovered Recovery

	// upgradeErr is why the writable open of a version 2 store left it
	// at version 2 (UpgradeError); set once, before Open returns.
	upgradeErr error

	// closeMu guards closed and inflight, the writes in flight that
	// Close waits for: an Import, counted once it holds mu (beginImport)
	// until its refusal's drain without mu (auditImportRefusal) and audit
	// are done, and a signed statement, counted while it holds mu
	// (beginStatement). Close sets closed (a later write is refused),
	// cancels closeCtx (every Import in flight is cancelled: a drain
	// stops at once, staging stops at the next artifact), waits until
	// inflight is 0 (idle, signalled under closeMu), every audit write
	// done, and only then closes the database. Counting a write only once
	// it holds mu is what keeps Close from waiting for a write that waits
	// for mu (review 31): see Close.
	closeMu  sync.Mutex
	closed   bool
	inflight int
	idle     *sync.Cond
	closeCtx context.Context
	closeNow context.CancelFunc

	// drainSlots bounds the refused imports draining their streams at
	// once (MaxRefusalDrains): a refusal that finds no slot is audited at
	// once, unhashed and recorded nowhere, as a drain that gives up is
	// (auditImportRefusal).
	drainSlots chan struct{}

	// lim are the bounds of this store's writes, which open sets
	// (storeLimits); only the package's own tests lower them, on their
	// own store (export_test.go).
	lim storeLimits
}

// storeLimits are the bounds a Store carries rather than reads from
// package state, so that a test lowers them on its own store alone.
type storeLimits struct {
	heartbeats  int                   // MaxHeartbeatsNotInstalled
	aliasOwners int                   // MaxAliasClaimOwners
	statements  trust.StatementLimits // trust.DefaultStatementLimits
	drainRate   int64                 // admission.MinDataRate (drainRefused)
	drainGrace  time.Duration         // admission.FrameGrace (drainRefused)
}

// defaultLimits are the bounds of every Store this package's API opens.
func defaultLimits() storeLimits {
	return storeLimits{
		heartbeats:  MaxHeartbeatsNotInstalled,
		aliasOwners: MaxAliasClaimOwners,
		statements:  trust.DefaultStatementLimits,
		drainRate:   admission.MinDataRate,
		drainGrace:  admission.FrameGrace,
	}
}

// Recovery is what opening a store read-write rolled back of imports a
// crash or a kill interrupted: the imports, and the staged blobs that no
// installed bundle shares (deleted with them).
type Recovery struct {
	Imports int `json:"imports"`
	Blobs   int `json:"blobs"`
}

// Recovered returns what opening the store rolled back of interrupted
// imports (zero for a store opened read-only, or that had none), so that
// 'ampbundle check --repair' can say what it removed.
func (s *Store) Recovered() Recovery { return s.recovered }

// Open opens (or, with Create, creates) the store at path. It checks the
// schema version (SchemaVersion; a version 2 store opened writable is
// upgraded first, all or nothing), and, when writable, rolls back an import that a crash
// interrupted (FORMAT: the pending journal), so that the store is exactly as
// it was before that import.
func Open(path string, opts Options) (*Store, error) { return open(path, opts, nil) }

// open is Open with the fault hook faults (nil but in this package's
// tests, which fail the upgrade of a version 2 store with it).
func open(path string, opts Options, faults func(step string) error) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	limit.Default(&opts.LockTimeout, 250*time.Millisecond)
	limit.Default(&opts.MaxArtifactSize, 256<<20)
	limit.Default(&opts.StageBatchBytes, 4<<20)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && (!opts.Create || opts.ReadOnly):
		return nil, fail(ErrStoreMissing, "store does not exist").WithCause(err)
	case err == nil && !st.Mode().IsRegular():
		return nil, fail(ErrStoreIO, "store path is not a regular file")
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fail(ErrStoreIO, "cannot stat the store").WithCause(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      opts.LockTimeout,
		ReadOnly:     opts.ReadOnly,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fail(ErrStoreInUse, "store is locked by another process (a running agent?)").WithCause(err)
		}
		return nil, fail(ErrStoreIO, "cannot open the store").WithCause(err)
	}
	s := &Store{db: db, opts: opts, path: path, schemas: newSchemaCache(), faults: faults, epoch: refusalEpoch(opts),
		drainSlots: make(chan struct{}, MaxRefusalDrains), lim: defaultLimits()}
	s.closeCtx, s.closeNow = context.WithCancel(context.Background())
	s.idle = sync.NewCond(&s.closeMu)
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// init creates the buckets of a new store, checks the version of an
// existing one, recovers an interrupted import and loads the generation.
func (s *Store) init() error {
	if !s.opts.ReadOnly {
		err := s.db.Update(func(tx *bolt.Tx) error {
			meta := bucket(tx, bMeta)
			if meta == nil {
				for _, b := range allBuckets() {
					if _, err := tx.CreateBucket([]byte(b)); err != nil {
						return err
					}
				}
				meta = bucket(tx, bMeta)
				if err := meta.Put([]byte(kSchemaVersion), u64(SchemaVersion)); err != nil {
					return err
				}
				return meta.Put([]byte(kGeneration), u64(0))
			}
			// A store of this schema version written before a bucket
			// was added gets it, empty, the first time it is opened
			// writable (trust thresholds, revocations); one of version 2
			// is upgraded, all or nothing.
			switch getU64(meta.Get([]byte(kSchemaVersion))) {
			case SchemaVersion:
				return createBuckets(tx)
			case schemaVersionOneClaimAliases:
				return upgradeAliasClaims(tx)
			case minSchemaVersion:
				return s.upgradeStore(tx)
			}
			return nil
		})
		var damaged *amp.Error
		if errors.As(err, &damaged) && damaged.Name == ErrStoreIO && damaged.Err == nil {
			// A damaged value the upgrade read strictly (strictU64,
			// pinnedFloor: a store_io of its own, with no cause; TSTATE-6),
			// not an error of the file or a fault wrapped as its cause:
			// the store stays of version 2,
			// opened as it is, so that it serves; every act reading that
			// value is store_io, as at version 3, and the next writable
			// open tries the upgrade again (TSTATE-5, UpgradeError).
			s.upgradeErr, err = damaged, nil
		}
		if err != nil {
			var e *amp.Error
			if errors.As(err, &e) {
				return e // a damaged value the upgrade read, or its fault
			}
			return fail(ErrStoreIO, "cannot initialize the store").WithCause(err)
		}
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := bucket(tx, bMeta)
		if meta == nil {
			return fail(ErrStoreVersion, "file is not an ampbundle store")
		}
		if v := getU64(meta.Get([]byte(kSchemaVersion))); v < minSchemaVersion || v > SchemaVersion {
			return fail(ErrStoreVersion, "store schema version %d is not supported (this build supports %d to %d)", v, minSchemaVersion, SchemaVersion)
		}
		for _, b := range allBuckets() {
			if bucket(tx, b) == nil {
				return fail(ErrStoreVersion, "store lacks bucket %s (open it once with a command that writes, such as trust add, to add it)", b)
			}
		}
		s.gen.Store(getU64(meta.Get([]byte(kGeneration))))
		s.loadFloor(tx)
		return nil
	})
	if err != nil {
		return amp.AsError(err)
	}
	if !s.opts.ReadOnly {
		return s.recoverPending()
	}
	return nil
}

// createBuckets creates the buckets a store of this build has and lacks.
func createBuckets(tx *bolt.Tx) error {
	for _, b := range allBuckets() {
		if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
			return err
		}
	}
	return nil
}

// strictU64 reads an 8-byte counter, floor or threshold of the store: a
// value of another size (a torn or edited file) is store_io, never read
// as 0, the loosest value each can have (docs/SPEC-DECISIONS.md TSTATE-6).
// what names it in the error.
func strictU64(v []byte, what string) (uint64, error) {
	if len(v) != 8 {
		return 0, fail(ErrStoreIO, "the store's %s value has %d bytes, not 8: the store is damaged (ampbundle check)", what, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Close closes the store. Every Import in flight is cancelled (a refused
// import's drain of its stream stops at once, an import staging its
// artifacts at the next one) and Close waits for each, and for a signed
// statement being applied, to end, its audit entry written, before it
// closes the database; a write begun after Close is refused (store_io).
// A cancelled Import reads its stream for at most cancelGrace more
// (importStream), so one reading a large artifact from a stream that
// keeps its rate stops within that and a Read, not after the whole
// artifact. An Import blocked in a Read of its stream holds Close until
// that Read returns: the caller's stream bounds it (the admin socket
// reads every body at the minimum data rate). A write is counted only once it holds
// the store's write lock: one still waiting for the lock when Close
// begins is not waited for, and is refused store_io once it takes it.
// An Import inside its caller's Progress callback is not waited for
// either (the callback may be what calls Close; it holds the write lock,
// so no write Close waits for can be waiting for it): it finds the
// database closed and answers store_io. Calling Close again is safe.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if !s.closed {
		s.closed = true
		s.closeNow()
	}
	for s.inflight > 0 {
		s.idle.Wait()
	}
	s.closeMu.Unlock()
	return s.db.Close()
}

// closeTurn is a write's registration with Close (enter).
type closeTurn struct {
	s       *Store
	counted bool // counted in s.inflight: Close waits for it
}

// enter registers a write with Close, which waits for its leave before it
// closes the database, so that a refusal judged while the store closes
// is audited on an open database. The caller holds s.mu (see Close: a
// write counted before it holds s.mu could be waited for by a Close that
// the holder of s.mu calls). After Close has begun it refuses the write
// (store_io) and registers nothing.
func (s *Store) enter() (*closeTurn, error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil, fail(ErrStoreIO, "the store is closed")
	}
	s.inflight++
	return &closeTurn{s: s, counted: true}, nil
}

// beginImport registers an Import (which holds s.mu) or a CheckImport
// (which takes no lock of the store) with Close (enter).
// The returned context is ctx, also done once Close begins; progress is
// the caller's Progress callback (nil when none), during which Close
// does not wait for the Import. end is paired with a nil error, once the
// refusal's audit (if any) is written.
func (s *Store) beginImport(ctx context.Context, progress func(int64)) (_ context.Context, _ func(int64), end func(), err error) {
	t, err := s.enter()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closeCtx, cancel)
	if progress != nil {
		caller := progress
		progress = func(n int64) {
			t.leave()
			defer t.reenter()
			caller(n)
		}
	}
	return ctx, progress, func() {
		stop()
		cancel()
		t.leave()
	}, nil
}

// leave counts the write off: Close no longer waits for it.
func (t *closeTurn) leave() {
	t.s.closeMu.Lock()
	defer t.s.closeMu.Unlock()
	if t.counted {
		t.counted = false
		if t.s.inflight--; t.s.inflight == 0 {
			t.s.idle.Broadcast()
		}
	}
}

// reenter counts the Import again after its caller's callback, unless
// Close has begun meanwhile.
func (t *closeTurn) reenter() {
	t.s.closeMu.Lock()
	defer t.s.closeMu.Unlock()
	if !t.s.closed {
		t.counted = true
		t.s.inflight++
	}
}

// beginDrain takes one of the MaxRefusalDrains drain slots for a refused
// import's drain of its stream, without waiting: false when all are taken.
// A true answer is paired with endDrain once the drain ends.
func (s *Store) beginDrain() bool {
	select {
	case s.drainSlots <- struct{}{}:
		return true
	default:
		return false
	}
}

// endDrain gives back the drain slot beginDrain took.
func (s *Store) endDrain() { <-s.drainSlots }

// Path returns the store's file name.
func (s *Store) Path() string { return s.path }

// Generation returns the store generation: it changes with every import,
// removal and trust change, so caches and paging cursors can notice.
func (s *Store) Generation() uint64 { return s.gen.Load() }

func (s *Store) writable() error {
	if s.opts.ReadOnly {
		return fail(ErrReadOnly, "store is open read-only")
	}
	return nil
}

// fault is a named step of an import ("verify", "stage", "commit",
// "commit-inside", "commit-end"), a refusal's audit ("refusal-audit", an
// import's or a statement's), a removal ("remove") or the upgrade of a
// version 2 store ("upgrade") where a test may inject a failure; in
// production it returns nil.
func (s *Store) fault(step string) error {
	if s.faults == nil {
		return nil
	}
	if err := s.faults(step); err != nil {
		return fail(ErrStoreIO, "fault injected at %s", step).WithCause(err)
	}
	return nil
}

// bumpGeneration increments the generation inside a write transaction and
// returns the new value; the in-memory mirror is set after commit.
func bumpGeneration(tx *bolt.Tx) (uint64, error) {
	meta := bucket(tx, bMeta)
	g := getU64(meta.Get([]byte(kGeneration))) + 1
	return g, meta.Put([]byte(kGeneration), u64(g))
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// key2 joins two key parts with a NUL byte (neither part contains one).
func key2(a, b string) []byte {
	k := make([]byte, 0, len(a)+1+len(b))
	k = append(k, a...)
	k = append(k, 0)
	return append(k, b...)
}

// clone copies bytes out of a transaction (bbolt slices are valid only
// inside it).
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
