package resolver

import (
	"crypto/subtle"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// Resolve returns the bytes of a schema reference from the local store
// only, after checking them against the reference's hash (RFC 004 §5.3,
// docs/ARCHITECTURE.md, invariants 1 and 2). Every failure is 5002 UNAVAILABLE, with a
// name saying which:
//
//   - no_local_locator: the reference has no bundle_id and artifact_key
//     (a uri alone is never fetched);
//   - bundle_missing, bundle_expired (unless Options.AllowExpired);
//   - artifact_missing: the bundle has no such artifact;
//   - blob_unreadable: the index points at bytes that are not there;
//   - hash_mismatch: the bytes do not match the reference's hash.
//
// The bytes are a copy; the caller may keep them.
func (s *Store) Resolve(ref capability.SchemaRef) ([]byte, error) {
	if ref.BundleID == "" || ref.ArtifactKey == "" {
		return nil, unavailable(ErrNoLocalLocator, "schema reference has no bundle_id and artifact_key: nothing is fetched from a uri")
	}
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		data, _, err := s.artifact(tx, ref.BundleID, ref.ArtifactKey)
		if err != nil {
			return err
		}
		if err := checkHash(data, ref.HashAlg, ref.Hash, ref.BundleID, ref.ArtifactKey); err != nil {
			return err
		}
		out = clone(data)
		return nil
	})
	if err != nil {
		return nil, amp.AsError(err)
	}
	return out, nil
}

// artifact finds the stored bytes of (bundleID, key) inside tx, enforcing
// bundle expiry. The bytes are valid only inside tx and are NOT verified:
// callers check them with checkHash before any use.
func (s *Store) artifact(tx *bolt.Tx, bundleID, key string) ([]byte, indexRecord, error) {
	raw := bucket(tx, bBundles).Get([]byte(bundleID))
	if raw == nil {
		return nil, indexRecord{}, unavailable(ErrBundleMissing, "bundle %s is not installed in the local store", bundleID)
	}
	// The record is read without its signed manifest (listedRecord), which
	// nothing here needs: a copy of it at every call made resolving each
	// schema of a bundle of many capabilities quadratic (SCALE-1).
	var lr listedRecord
	if err := decode(raw, &lr); err != nil {
		return nil, indexRecord{}, unavailable(ErrBlobUnreadable, "the record of bundle %s is unreadable", bundleID).WithCause(err)
	}
	rec := &lr.bundleRecord
	if rec.Revoked != "" {
		return nil, indexRecord{}, unavailable(ErrBundleRevoked, "bundle %s version %d is revoked: %s", bundleID, rec.Version, rec.Revoked)
	}
	// Its staleness and floor are judged from one load of its line
	// (judge.staleExpired; docs/SPEC-DECISIONS.md TRUST-36).
	exp, ok := expiry(*rec)
	why, expired := s.judge(tx).staleExpired(bundleID, rec, exp, ok && !s.opts.AllowExpired)
	if why != "" {
		return nil, indexRecord{}, unavailable(ErrBundleStale, "bundle %s is stale: %s; import a newer version", bundleID, why)
	}
	if expired {
		return nil, indexRecord{}, unavailable(ErrBundleExpired, "bundle %s expired at %s", bundleID, rec.ExpiresAt)
	}
	raw = bucket(tx, bIndex).Get(key2(bundleID, key))
	if raw == nil {
		return nil, indexRecord{}, unavailable(ErrArtifactMissing, "bundle %s has no artifact %s", bundleID, key)
	}
	var ir indexRecord
	if err := decode(raw, &ir); err != nil {
		return nil, indexRecord{}, unavailable(ErrBlobUnreadable, "the index entry of %s in bundle %s is unreadable", key, bundleID).WithCause(err)
	}
	data := getBlob(tx, []byte(ir.Blob))
	if data == nil {
		return nil, indexRecord{}, unavailable(ErrBlobUnreadable, "the bytes of %s in bundle %s are missing from the store", key, bundleID)
	}
	return data, ir, nil
}

func expiry(rec bundleRecord) (time.Time, bool) {
	if rec.ExpiresAt == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, rec.ExpiresAt)
	if err != nil {
		return time.Unix(0, 0), true // unreadable expiry: treat as expired (fail closed)
	}
	return t, true
}

// checkHash compares data with the expected hash (constant time).
func checkHash(data []byte, alg string, want []byte, bundleID, key string) error {
	h, err := bundle.NewHash(alg)
	if err != nil {
		return unavailable(ErrHashMismatch, "schema reference to %s in bundle %s uses an unsupported hash algorithm", key, bundleID)
	}
	h.Write(data)
	if subtle.ConstantTimeCompare(h.Sum(nil), want) != 1 {
		return unavailable(ErrHashMismatch, "the stored bytes of %s in bundle %s do not match the expected %s hash (a stale reference, or the store was altered)", key, bundleID, alg)
	}
	return nil
}

// checkBlob compares data with the content address it is stored under.
func checkBlob(data []byte, blob, bundleID, key string) error {
	alg, hash, ok := parseBlobKey(blob)
	if !ok {
		return unavailable(ErrBlobUnreadable, "the index entry of %s in bundle %s is unreadable", key, bundleID)
	}
	return checkHash(data, alg, hash, bundleID, key)
}

// Compiled schemas.

// schemaKey identifies a compiled schema: the root's hash and where it
// lives. The location is part of the key because relative and $id
// references resolve against the artifact's own key and its bundle's other
// artifacts: the same bytes elsewhere can be a different schema.
type schemaKey struct {
	alg    string
	hash   string // the reference's hash exactly: one padded or cut short is another key
	bundle string
	key    string
}

type schemaEntry struct {
	schema  *offlineschema.Schema
	gen     atomic.Uint64 // generation at which the entry was last known valid
	deps    []dep         // every artifact the schema used, root included
	expires time.Time     // zero when the bundle does not expire
}

type dep struct{ key, blob string }

type schemaCall struct {
	done  chan struct{}
	entry *schemaEntry
	err   error
}

type schemaCache struct {
	mu       sync.RWMutex
	entries  map[schemaKey]*schemaEntry
	inflight map[schemaKey]*schemaCall
}

func newSchemaCache() *schemaCache {
	return &schemaCache{entries: map[schemaKey]*schemaEntry{}, inflight: map[schemaKey]*schemaCall{}}
}

// Schema returns the compiled JSON Schema of a reference, built only from
// hash-verified bytes of the store (the root checked against the
// reference's hash, every $ref'd artifact against the hash its bundle
// declared) with no network or file access. A verified schema is compiled
// once and cached; a change of the store generation re-checks the cached
// entry against the store on its next use, so a removed or replaced bundle
// fails closed at once. Failures are 5002, like Resolve's, plus
// schema_unavailable for a schema that does not compile offline.
func (s *Store) Schema(ref capability.SchemaRef) (*offlineschema.Schema, error) {
	if ref.BundleID == "" || ref.ArtifactKey == "" {
		return nil, unavailable(ErrNoLocalLocator, "schema reference has no bundle_id and artifact_key: nothing is fetched from a uri")
	}
	if len(ref.Hash) > 64 { // the longest digest bundle.NewHash makes (SHA-512)
		return nil, unavailable(ErrHashMismatch, "schema reference hash is too long")
	}
	k := schemaKey{alg: ref.HashAlg, hash: string(ref.Hash), bundle: ref.BundleID, key: ref.ArtifactKey}
	gen := s.gen.Load()
	c := s.schemas
	c.mu.RLock()
	e := c.entries[k]
	c.mu.RUnlock()
	if e != nil {
		// The bundle's floor was checked when the entry was compiled or
		// last re-checked, and moves only with the generation.
		if !e.expires.IsZero() && !s.opts.AllowExpired && !s.opts.Now().Before(e.expires) {
			return nil, unavailable(ErrBundleExpired, "bundle %s has expired", ref.BundleID)
		}
		if e.gen.Load() == gen || s.stillValid(e, ref.BundleID) {
			e.gen.Store(gen)
			return e.schema, nil
		}
		c.mu.Lock()
		if c.entries[k] == e {
			delete(c.entries, k)
		}
		c.mu.Unlock()
	}
	// Compile once, even when many callers ask at the same time. A caller
	// that missed the cache above may find the entry now: a concurrent
	// compilation can have finished in between.
	c.mu.Lock()
	if e := c.entries[k]; e != nil && e.gen.Load() == gen {
		c.mu.Unlock()
		return e.schema, nil
	}
	if call, ok := c.inflight[k]; ok {
		c.mu.Unlock()
		<-call.done
		if call.err != nil {
			return nil, call.err
		}
		return call.entry.schema, nil
	}
	call := &schemaCall{done: make(chan struct{})}
	c.inflight[k] = call
	c.mu.Unlock()
	call.entry, call.err = s.compile(ref, gen)
	c.mu.Lock()
	delete(c.inflight, k)
	if call.err == nil {
		c.entries[k] = call.entry
	}
	c.mu.Unlock()
	close(call.done)
	if call.err != nil {
		return nil, call.err
	}
	return call.entry.schema, nil
}

// stillValid reports whether every artifact a cached schema used is still
// installed with the same bytes.
func (s *Store) stillValid(e *schemaEntry, bundleID string) bool {
	ok := true
	_ = s.db.View(func(tx *bolt.Tx) error {
		for _, d := range e.deps {
			_, ir, err := s.artifact(tx, bundleID, d.key)
			if err != nil || ir.Blob != d.blob {
				ok = false
				return nil
			}
		}
		return nil
	})
	return ok
}

// findUnavailable returns the first 5002 error in err's chain.
func findUnavailable(err error) *amp.Error {
	for ; err != nil; err = errors.Unwrap(err) {
		if e, ok := err.(*amp.Error); ok && e.Code == amp.CodeUnavailable {
			return e
		}
	}
	return nil
}

// storeLoader serves one bundle's artifacts to the offline compiler, each
// checked against the hash its bundle declared before it is handed over.
type storeLoader struct {
	s      *Store
	tx     *bolt.Tx
	bundle string
	deps   []dep
}

func (l *storeLoader) Load(key string) ([]byte, error) {
	data, ir, err := l.s.artifact(l.tx, l.bundle, key)
	if err != nil {
		return nil, err
	}
	if err := checkBlob(data, ir.Blob, l.bundle, key); err != nil {
		return nil, err
	}
	l.deps = append(l.deps, dep{key: key, blob: ir.Blob})
	return clone(data), nil
}

func (l *storeLoader) KeyForID(id string) (string, bool) {
	k := bucket(l.tx, bSchemaIDs).Get(key2(l.bundle, id))
	return string(k), k != nil
}

func (s *Store) compile(ref capability.SchemaRef, gen uint64) (*schemaEntry, error) {
	e := &schemaEntry{}
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := bucket(tx, bBundles).Get([]byte(ref.BundleID))
		if raw != nil {
			var rec listedRecord // its signed manifest left unread (artifact)
			if decode(raw, &rec) == nil {
				if exp, ok := expiry(rec.bundleRecord); ok {
					e.expires = exp
				}
			}
		}
		// The root must match the reference's own hash (the descriptor's
		// claim), whatever the index says.
		data, _, err := s.artifact(tx, ref.BundleID, ref.ArtifactKey)
		if err != nil {
			return err
		}
		if err := checkHash(data, ref.HashAlg, ref.Hash, ref.BundleID, ref.ArtifactKey); err != nil {
			return err
		}
		l := &storeLoader{s: s, tx: tx, bundle: ref.BundleID}
		sch, err := offlineschema.Compile(l, ref.ArtifactKey, offlineschema.Options{})
		if err != nil {
			// A loader failure (missing, tampered) keeps its own 5002 name.
			if inner := findUnavailable(err); inner != nil {
				return inner
			}
			return unavailable(ErrSchemaUnavailable, "schema %s of bundle %s does not compile offline", ref.ArtifactKey, ref.BundleID).WithCause(err)
		}
		e.schema, e.deps = sch, l.deps
		return nil
	})
	if err != nil {
		return nil, amp.AsError(err)
	}
	e.gen.Store(gen)
	return e, nil
}
