package resolver

import (
	"bytes"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// Statement is a signed trust or revocation statement the store has
// applied, kept byte for byte as it was applied (docs/FORMAT.md §21, §22)
// so that a mirror can serve it and another store can verify it again.
type Statement struct {
	Seq         uint64 `json:"seq"`          // application order, from 1
	ContentType string `json:"content_type"` // bundle.MediaTypeRevocation or bundle.MediaTypeRotation
	SHA256      []byte `json:"sha256"`       // of Data
	Data        []byte `json:"data"`         // the exact signed bytes (at most bundle.MaxRevocationSize)
}

func statementSeqKey(seq uint64) []byte  { return append([]byte{'s'}, u64(seq)...) }
func statementHashKey(sum []byte) []byte { return append([]byte{'h'}, sum...) }

// statementIDKey is the key of a kept statement's identity, the SHA-256
// of its payload (trust.Effects.StatementID), whose value is its sequence
// (statementSeqKey): a file of the same payload under other signatures is
// that statement, kept and charged once (docs/SPEC-DECISIONS.md TRUST-19).
// Statements kept before are indexed once (countStatementCharges).
func statementIDKey(id []byte) []byte { return append([]byte{'p'}, id...) }

// keepsStatement reports whether the store keeps the statement of file
// SHA-256 sum or, when id is not nil, of identity id.
func keepsStatement(b *bolt.Bucket, sum, id []byte) bool {
	return b.Get(statementHashKey(sum)) != nil || id != nil && b.Get(statementIDKey(id)) != nil
}

// copyOfKeptStatement reports whether the statement file of SHA-256 sum
// and identity id is another file of a statement the store keeps (its
// payload is kept, under a file other than this one). Applied, such a
// copy that changes nothing writes no audit entry: the statement's first
// application was audited, and anyone can make any number of copies
// (docs/SPEC-DECISIONS.md TRUST-19), so an entry per copy offered would
// let a peer grow the audit log at will.
func copyOfKeptStatement(b *bolt.Bucket, sum, id []byte) bool {
	return id != nil && b.Get(statementHashKey(sum)) == nil && b.Get(statementIDKey(id)) != nil
}

// heartbeatDataKey holds the bytes of the heartbeat kept for a line (the
// record itself is in bHeartbeat). Builds before it kept no bytes, and
// one that applies a heartbeat without keeping them leaves bytes of an
// older one here: Heartbeats serves the bytes only when their SHA-256 is
// the record's.
func heartbeatDataKey(bundleID string) []byte { return append([]byte{'b'}, bundleID...) }

// KeptHeartbeat is the heartbeat a store keeps for one bundle line
// (docs/FORMAT.md §23, "Newest only"), as a mirror serves it.
type KeptHeartbeat struct {
	BundleID  string `json:"bundle_id"`
	Version   uint64 `json:"version"`
	CreatedAt string `json:"created_at"`
	SHA256    []byte `json:"sha256"`
	// Counts reports whether it still vouches for its line (its signers,
	// trusted now, reach the line's threshold: FORMAT.md §23): only then
	// does it hold back an older heartbeat.
	Counts bool `json:"counts"`
	// Data is the signed file, byte for byte as applied (at most
	// bundle.MaxHeartbeatSize); nil when the store does not have it (kept
	// by a build that did not keep the bytes).
	Data []byte `json:"data,omitempty"`
}

// HoldsBack reports whether a store keeping h refuses, or leaves
// unchanged, a heartbeat of the same line at version and createdAt (RFC
// 3339 UTC, whole seconds, as §23 has them): h counts and the other is
// not newer (a lower version or an earlier time, or the same of both).
func (h *KeptHeartbeat) HoldsBack(version uint64, createdAt string) bool {
	return h.Counts && (version < h.Version || createdAt < h.CreatedAt || version == h.Version && createdAt == h.CreatedAt)
}

// Heartbeats returns the heartbeat kept for each bundle line, by
// bundle_id (a record that does not decode is left out).
func (s *Store) Heartbeats() ([]KeptHeartbeat, error) {
	out := []KeptHeartbeat{}
	err := s.db.View(func(tx *bolt.Tx) error {
		st, err := s.loadState(tx, selection{all: true, heartbeats: true})
		if err != nil {
			return err
		}
		// One policy, its did:keys encoded once, for every heartbeat
		// (docs/SPEC-DECISIONS.md SCALE-24).
		p, data := trust.Prepare(st), bucket(tx, bStatements)
		// A record that does not decode is left out (its line's bundle
		// fails closed as stale: ls and check show it), and one whose
		// line's manifest does not decode counts for nothing; the others
		// are still listed.
		for _, id := range slices.Sorted(maps.Keys(st.Heartbeats)) {
			r := st.Heartbeats[id]
			if r.Unreadable {
				continue
			}
			line, err := st.LineOf(id)
			h := KeptHeartbeat{BundleID: id, Version: r.Version, CreatedAt: r.CreatedAt, SHA256: bytes.Clone(r.StatementSHA256),
				Counts: err == nil && p.Vouches(&r, line)}
			if d := data.Get(heartbeatDataKey(id)); d != nil && bytes.Equal(sha256sum(d), r.StatementSHA256) {
				h.Data = bytes.Clone(d)
			}
			out = append(out, h)
		}
		return nil
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// recordStatement keeps data, an applied statement of hash sum and
// identity id (its payload's SHA-256), in the transaction that applied it;
// a statement already kept (the same file, or the same payload under
// other signatures) is not kept twice. The size is bounded by the parsers
// (bundle.MaxRevocationSize), which ran before.
func recordStatement(tx *bolt.Tx, data, sum, id []byte) error {
	b := bucket(tx, bStatements)
	if keepsStatement(b, sum, id) {
		return nil
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	if err := b.Put(statementSeqKey(seq), bytes.Clone(data)); err != nil {
		return err
	}
	if id != nil {
		if err := b.Put(statementIDKey(id), u64(seq)); err != nil {
			return err
		}
		// The index stays complete: move its marker along, unless a
		// statement kept unindexed before left it behind (the next
		// statement then has them all counted again).
		meta := bucket(tx, bMeta)
		if v := meta.Get([]byte(kStatementIDsIndexed)); len(v) == 8 && getU64(v) == seq-1 {
			if err := meta.Put([]byte(kStatementIDsIndexed), u64(seq)); err != nil {
				return err
			}
		}
	}
	return b.Put(statementHashKey(sum), u64(seq))
}

// Statements returns every trust and revocation statement the store has
// applied since it began keeping them, in the order they were applied:
// applying them in this order to a store with the same starting trust
// reproduces the same trust and revocations.
func (s *Store) Statements() ([]Statement, error) {
	out := []Statement{}
	err := s.db.View(func(tx *bolt.Tx) error {
		c := bucket(tx, bStatements).Cursor()
		for k, v := c.Seek([]byte{'s'}); k != nil && k[0] == 's'; k, v = c.Next() {
			if len(k) != 9 {
				continue
			}
			out = append(out, Statement{Seq: getU64(k[1:]), ContentType: bundle.ContentType(v), SHA256: sha256sum(v), Data: bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, fail(ErrStoreIO, "cannot read the applied statements").WithCause(err)
	}
	return out, nil
}

// HasStatement reports whether the store has applied (and kept) the
// statement file whose SHA-256 is sum. A file holding a kept statement's
// payload under other signatures is the same statement (TRUST-19) but is
// not found here: its SHA-256 says nothing of its payload, and the store
// indexes only the file it kept (indexing every copy offered would let
// anyone grow the index). Applied, such a file is not kept again.
func (s *Store) HasStatement(sum []byte) (bool, error) {
	var has bool
	err := s.db.View(func(tx *bolt.Tx) error {
		has = bucket(tx, bStatements).Get(statementHashKey(sum)) != nil
		return nil
	})
	if err != nil {
		return false, fail(ErrStoreIO, "cannot read the applied statements").WithCause(err)
	}
	return has, nil
}

// beginStatement takes the store's write lock to apply the signed
// statement data (a revocation, trust statement or heartbeat) and returns
// the SHA-256 of the file and the function that ends it: it audits a
// refusal (import_refused, with the file's hash; the same file refused
// with the same verdict once a day: auditRefusalOnce) and releases the
// lock. Holding the lock, the statement registers with Close (enter),
// which waits for its audit before it closes the database; after Close
// began it is refused store_io. A refusal whose audit entry could not be
// written is answered store_io, never as a refusal the log does not hold.
func (s *Store) beginStatement(data []byte) (sum []byte, end func(*error), err error) {
	if err := s.writable(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	t, err := s.enter()
	if err != nil {
		s.mu.Unlock()
		return nil, nil, err
	}
	sum = sha256sum(data)
	return sum, func(errp *error) {
		if *errp != nil {
			if aerr := s.auditRefusal(*errp, nil, sum); aerr != nil {
				*errp = aerr
			}
		}
		t.leave()
		s.mu.Unlock()
	}, nil
}
