package resolver

import (
	"bytes"
	"crypto/sha256"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// AuditEntry is one record of the audit log: an import (accepted,
// unchanged or refused), a downgrade, a removal or a trust change
// (docs/FORMAT.md §20 lists the fields). Entries are chained: each carries the SHA-256
// of the previous entry's encoding (32 zero bytes for the first), and the
// store keeps the hash of the last, so that editing, removing or reordering
// entries breaks the chain (VerifyAudit). The chain is tamper-evident, not
// tamper-proof: someone who can rewrite the store file can rewrite the whole
// chain, so operators who need more record the head (AuditHead) elsewhere.
type AuditEntry struct {
	Seq             uint64   `cbor:"seq" json:"seq"`
	At              string   `cbor:"at" json:"at"`
	Action          string   `cbor:"action" json:"action"` // import, downgrade, import_refused, remove, trust_add, trust_remove, trust_threshold, ...
	BundleID        string   `cbor:"bundle_id,omitempty" json:"bundle_id,omitempty"`
	Version         uint64   `cbor:"version,omitempty" json:"version,omitempty"`
	PreviousVersion uint64   `cbor:"previous_version,omitempty" json:"previous_version,omitempty"`
	Signers         []string `cbor:"signers,omitempty" json:"signers,omitempty"`
	ManifestSHA256  []byte   `cbor:"manifest_sha256,omitempty" json:"manifest_sha256,omitempty"`
	TrustName       string   `cbor:"trust_name,omitempty" json:"trust_name,omitempty"`
	Key             string   `cbor:"key,omitempty" json:"key,omitempty"` // did:key
	Scopes          []string `cbor:"scopes,omitempty" json:"scopes,omitempty"`
	Threshold       uint64   `cbor:"threshold,omitempty" json:"threshold,omitempty"`
	// RevokedKeys are the did:keys a revocation names; RevokedBundles the
	// bundle versions it names and the installed bundles it (or trust rm
	// --fail-closed) failed closed, as bundle_id@version.
	RevokedKeys []string `cbor:"revoked_keys,omitempty" json:"revoked_keys,omitempty"`
	// Sequence, AddedKeys and RetiredKeys describe an applied trust
	// statement (a rotation): its number in the scope's chain, and the
	// did:keys it added and retired.
	Sequence       uint64   `cbor:"sequence,omitempty" json:"sequence,omitempty"`
	AddedKeys      []string `cbor:"added_keys,omitempty" json:"added_keys,omitempty"`
	RetiredKeys    []string `cbor:"retired_keys,omitempty" json:"retired_keys,omitempty"`
	RevokedBundles []string `cbor:"revoked_bundles,omitempty" json:"revoked_bundles,omitempty"`
	// Actor is who did it: the operating-system user and host of the
	// process that changed the store (Options.Actor).
	Actor *Actor `cbor:"actor,omitempty" json:"actor,omitempty"`
	// FileSHA256 is the SHA-256 of the whole file an import read (or, for
	// a refusal, of the file as the caller hashed it).
	FileSHA256 []byte `cbor:"file_sha256,omitempty" json:"file_sha256,omitempty"`
	// Source is where an imported file came from, when the importer said
	// (ImportOptions.Source: the mirror file's URL for 'ampbundle sync').
	Source string `cbor:"source,omitempty" json:"source,omitempty"`
	// Verdict is "accepted" for what took effect, "unchanged" for an
	// import of the bundle already installed, else the error name of the
	// refusal.
	Verdict string `cbor:"verdict,omitempty" json:"verdict,omitempty"`
	Prev    []byte `cbor:"prev" json:"prev"`
}

// Actor identifies who changed a store: the numeric user id and the host
// name of the process (-1 for a uid where the system has none).
type Actor struct {
	UID  int64  `cbor:"uid" json:"uid"`
	Host string `cbor:"host" json:"host"`
}

// ProcessActor is who this process is, for the audit log: its user id
// and host name (empty when the system does not say).
func ProcessActor() *Actor {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return &Actor{UID: int64(os.Getuid()), Host: host}
}

// actor returns the configured actor (nil when none is).
func (s *Store) actor() *Actor {
	if s.opts.Actor == nil {
		return nil
	}
	a := *s.opts.Actor
	return &a
}

// appendAudit appends an entry inside a write transaction.
func appendAudit(tx *bolt.Tx, now time.Time, e AuditEntry) error {
	meta, log := bucket(tx, bMeta), bucket(tx, bAudit)
	e.Seq = getU64(meta.Get([]byte(kAuditSeq))) + 1
	e.At = formatTime(now)
	e.Prev = clone(meta.Get([]byte(kAuditHead)))
	if e.Prev == nil {
		e.Prev = make([]byte, sha256.Size)
	}
	enc := encode(e)
	sum := sha256.Sum256(enc)
	if err := log.Put(u64(e.Seq), enc); err != nil {
		return err
	}
	if err := meta.Put([]byte(kAuditSeq), u64(e.Seq)); err != nil {
		return err
	}
	return meta.Put([]byte(kAuditHead), sum[:])
}

// Audit returns the audit log, oldest first.
func (s *Store) Audit() ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bAudit).ForEach(func(_, v []byte) error {
			var e AuditEntry
			if err := decode(v, &e); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// AuditHead returns the hash of the last audit entry (nil for an empty log).
func (s *Store) AuditHead() ([]byte, error) {
	var head []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		head = clone(bucket(tx, bMeta).Get([]byte(kAuditHead)))
		return nil
	})
	return head, err
}

// VerifyAudit checks the chain: consecutive sequence numbers from 1, each
// entry's prev equal to the hash of the one before, and the last hash equal
// to the stored head. A break is ErrAuditBroken naming the first bad entry.
func (s *Store) VerifyAudit() error {
	return s.db.View(func(tx *bolt.Tx) error { return verifyAudit(tx) })
}

func verifyAudit(tx *bolt.Tx) error {
	prev := make([]byte, sha256.Size)
	var seq uint64
	err := bucket(tx, bAudit).ForEach(func(k, v []byte) error {
		seq++
		var e AuditEntry
		if err := decode(v, &e); err != nil {
			return fail(ErrAuditBroken, "audit entry %d does not decode", seq)
		}
		if getU64(k) != seq || e.Seq != seq {
			return fail(ErrAuditBroken, "audit entry %d is missing or out of order", seq)
		}
		if !bytes.Equal(e.Prev, prev) {
			return fail(ErrAuditBroken, "audit entry %d does not chain to the entry before it", seq)
		}
		if !bytes.Equal(encode(e), v) {
			return fail(ErrAuditBroken, "audit entry %d is not in its canonical encoding", seq)
		}
		sum := sha256.Sum256(v)
		prev = sum[:]
		return nil
	})
	if err != nil {
		return err
	}
	meta := bucket(tx, bMeta)
	if getU64(meta.Get([]byte(kAuditSeq))) != seq {
		return fail(ErrAuditBroken, "audit log has %d entries, the store records %d", seq, getU64(meta.Get([]byte(kAuditSeq))))
	}
	head := meta.Get([]byte(kAuditHead))
	if seq == 0 && head == nil {
		return nil
	}
	if !bytes.Equal(head, prev) {
		return fail(ErrAuditBroken, "the last audit entry does not match the stored head")
	}
	return nil
}
