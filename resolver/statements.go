package resolver

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// Statement is a signed trust or revocation statement the store has
// applied, kept byte for byte as it was applied (docs/FORMAT.md §21, §22)
// so that a mirror can serve it and another store can verify it again.
type Statement struct {
	Seq         uint64 // application order, from 1
	ContentType string // bundle.MediaTypeRevocation or bundle.MediaTypeRotation
	SHA256      []byte // of Data
	Data        []byte // the exact signed bytes (at most bundle.MaxRevocationSize)
}

func statementSeqKey(seq uint64) []byte  { return append([]byte{'s'}, u64(seq)...) }
func statementHashKey(sum []byte) []byte { return append([]byte{'h'}, sum...) }

// recordStatement keeps data, an applied statement of hash sum, in the
// transaction that applied it; a statement already kept is not kept twice.
// The size is bounded by the parsers (bundle.MaxRevocationSize), which ran
// before.
func recordStatement(tx *bolt.Tx, data, sum []byte) error {
	b := bucket(tx, bStatements)
	if b.Get(statementHashKey(sum)) != nil {
		return nil
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	if err := b.Put(statementSeqKey(seq), bytes.Clone(data)); err != nil {
		return err
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
// statement whose SHA-256 is sum.
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
// refusal (import_refused, with the file's hash) and releases the lock.
func (s *Store) beginStatement(data []byte) (sum []byte, end func(*error), err error) {
	if err := s.writable(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	sum = sha256sum(data)
	return sum, func(errp *error) {
		if *errp != nil {
			s.auditRefusal(*errp, nil, sum)
		}
		s.mu.Unlock()
	}, nil
}
