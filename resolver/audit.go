package resolver

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math"
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

// auditActions are the values of an audit entry's action (docs/FORMAT.md
// §20.1), each the one the store writes for one kind of change.
func auditActions() []string {
	return []string{"import", "downgrade", "import_unchanged", "import_refused", "remove",
		"trust_add", "trust_remove", "trust_threshold", "revoke", "fail_closed", "rotate",
		"heartbeat", "trust_freshness", "heartbeat_reset"}
}

// KnownAuditAction reports whether action is one of docs/FORMAT.md §20.1.
func KnownAuditAction(action string) bool {
	for _, a := range auditActions() {
		if a == action {
			return true
		}
	}
	return false
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

// appendAudit appends an entry inside a write transaction. An audit
// sequence of the wrong size is store_io and the act is refused: read as
// 0, each act would write over the oldest entries of the log
// (docs/SPEC-DECISIONS.md TSTATE-6). So is a sequence, missing, rolled
// back or at its largest value, whose next number the log already holds
// or that wraps: the act would write over an entry of the log
// (docs/SPEC-DECISIONS.md AUDIT-1).
func appendAudit(tx *bolt.Tx, now time.Time, e AuditEntry) error {
	meta, log := bucket(tx, bMeta), bucket(tx, bAudit)
	if v := meta.Get([]byte(kAuditSeq)); v != nil {
		seq, err := strictU64(v, kAuditSeq)
		if err != nil {
			return err
		}
		e.Seq = seq
	}
	if err := auditSeqFree(log, e.Seq); err != nil {
		return err
	}
	e.Seq++
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

// auditSeqFree checks that entry seq+1 can be written: the log holds no
// entry under that number (it would be written over) and seq+1 does not
// wrap to 0 (no entry of docs/FORMAT.md §20.1). One key is looked up.
func auditSeqFree(log *bolt.Bucket, seq uint64) error {
	if seq == math.MaxUint64 {
		return fail(ErrStoreIO, "the store's %s is at its largest value: the store is damaged (ampbundle check)", kAuditSeq)
	}
	if log.Get(u64(seq+1)) != nil {
		return fail(ErrStoreIO, "the store's %s is %d but the audit log already holds entry %d: it would be written over; the store is damaged (ampbundle check)", kAuditSeq, seq, seq+1)
	}
	return nil
}

// Audit returns the audit log, oldest first.
func (s *Store) Audit() ([]AuditEntry, error) { return s.AuditFirst(math.MaxUint64) }

// AuditFirst returns the first n entries of the audit log, oldest first
// (fewer when it holds fewer), decoding none after them: the entries of
// an AuditSnapshot taken earlier, since the log only grows.
func (s *Store) AuditFirst(n uint64) ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		out, err = auditEntries(tx, n)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return out, nil
}

// AuditCount is the number of entries the audit log holds, read from its
// last key alone (O(log n), nothing decoded): the log's keys are its
// sequence numbers from 1 (VerifyAudit holds them so). A caller that
// would refuse a request for more entries than the log holds asks this
// first, so the refusal costs no decoding (docs/SPEC-DECISIONS.md
// ADMIN-6). A damaged key (not 8 bytes) is store_io.
func (s *Store) AuditCount() (uint64, error) {
	var n uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		k, _ := bucket(tx, bAudit).Cursor().Last()
		if k == nil {
			return nil
		}
		var err error
		n, err = strictU64(k, "audit key")
		return err
	})
	if err != nil {
		return 0, amp.AsError(wrapTx(err))
	}
	return n, nil
}

// auditEntries decodes the first n of the log's entries in tx (all of
// them when it holds fewer), oldest first.
func auditEntries(tx *bolt.Tx, n uint64) ([]AuditEntry, error) {
	var out []AuditEntry
	c := bucket(tx, bAudit).Cursor()
	for k, v := c.First(); k != nil && uint64(len(out)) < n; k, v = c.Next() {
		var e AuditEntry
		if err := decode(v, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// AuditSnapshot is the audit log at one moment (Store.AuditSnapshot).
type AuditSnapshot struct {
	// Entries is the log, oldest first; nil unless asked for.
	Entries []AuditEntry
	// Count is the number of entries the log holds.
	Count uint64
	// Head is the hash of the last entry (nil for an empty log), as
	// AuditHead returns it.
	Head []byte
	// Verdict is VerifyAudit's: nil when the chain holds.
	Verdict error
}

// AuditSnapshot reads the audit chain's head, its verdict (VerifyAudit's)
// and the number of its entries, with withEntries the entries too, in one
// read transaction: no write lands between them, so the head is the last
// of those entries' hash whatever imports, refusals and trust changes run
// meanwhile (docs/SPEC-DECISIONS.md ADMIN-3). Without withEntries no
// entry is kept: the log is decoded by the verification alone, and its
// entries are counted by their keys. An entry that does not decode fails
// the read with withEntries (as Audit fails); without, it is the verdict
// (audit_broken), as VerifyAudit says.
func (s *Store) AuditSnapshot(withEntries bool) (*AuditSnapshot, error) {
	snap := &AuditSnapshot{}
	err := s.db.View(func(tx *bolt.Tx) error {
		if withEntries {
			var err error
			if snap.Entries, err = auditEntries(tx, math.MaxUint64); err != nil {
				return err
			}
			snap.Count = uint64(len(snap.Entries))
		} else {
			c := bucket(tx, bAudit).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				snap.Count++
			}
		}
		snap.Head = clone(bucket(tx, bMeta).Get([]byte(kAuditHead)))
		snap.Verdict = verifyAudit(tx)
		return nil
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	return snap, nil
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
// to the stored head. A break is ErrAuditBroken naming the first entry that
// is wrong (firstBadLink says which of a broken link's two entries it is).
func (s *Store) VerifyAudit() error {
	return s.db.View(func(tx *bolt.Tx) error { return verifyAudit(tx) })
}

// auditLink is what the chain records of one entry: the prev it stores and
// the SHA-256 of its stored bytes.
type auditLink struct {
	prev []byte
	sum  [sha256.Size]byte
}

// auditWindow is the part of the chain verifyAudit keeps while it walks
// the log: the links of at most three consecutive entries, base the number
// of entries before them. Whether the link from an entry to the next holds,
// and if not which of the two was altered, is known from those three
// (firstBadLink), so a log of any length is verified in constant memory
// (docs/SPEC-DECISIONS.md AUDIT-2).
type auditWindow struct {
	links [3]auditLink
	n     int
	base  int
}

// push adds the next entry's link; once three are held it judges the link
// from the oldest (and, at the log's start, its prev) and returns the
// 1-based number of the entry the chain shows to be wrong (0: it holds,
// and the oldest is let go at the next push).
func (w *auditWindow) push(l auditLink) (int, string) {
	if w.n == len(w.links) {
		w.links[0], w.links[1] = w.links[1], w.links[2]
		w.n--
		w.base++
	}
	w.links[w.n] = l
	w.n++
	if w.n < len(w.links) {
		return 0, ""
	}
	i, msg := firstBadLink(w.links[:], nil, false, w.base == 0, 1)
	if i > 0 {
		i += w.base
	}
	return i, msg
}

// end judges the links still held, the last one's against head (when
// withHead), as firstBadLink does.
func (w *auditWindow) end(head []byte, withHead bool) (int, string) {
	i, msg := firstBadLink(w.links[:w.n], head, withHead, w.base == 0, w.n)
	if i > 0 {
		i += w.base
	}
	return i, msg
}

func verifyAudit(tx *bolt.Tx) error {
	var win auditWindow
	var seq uint64
	// An entry that does not decode, is out of order or is not canonical
	// is wrong by itself; the chain is only looked at before it.
	bad := uint64(0)
	var badErr, linkErr error
	err := bucket(tx, bAudit).ForEach(func(k, v []byte) error {
		seq++
		var e AuditEntry
		switch {
		case decode(v, &e) != nil:
			badErr = fail(ErrAuditBroken, "audit entry %d does not decode", seq)
		case getU64(k) != seq || e.Seq != seq:
			badErr = fail(ErrAuditBroken, "audit entry %d is missing or out of order", seq)
		case !bytes.Equal(encode(e), v):
			badErr = fail(ErrAuditBroken, "audit entry %d is not in its canonical encoding", seq)
		}
		if badErr != nil {
			bad = seq
			return errStopAudit
		}
		if i, msg := win.push(auditLink{prev: e.Prev, sum: sha256.Sum256(v)}); i > 0 {
			linkErr = fail(ErrAuditBroken, "audit entry %d %s", i, msg)
			return errStopAudit
		}
		return nil
	})
	if err != nil && err != errStopAudit {
		return err
	}
	if linkErr != nil {
		return linkErr
	}
	meta := bucket(tx, bMeta)
	head := meta.Get([]byte(kAuditHead))
	if bad == 0 {
		if n := getU64(meta.Get([]byte(kAuditSeq))); n != seq {
			badErr = fail(ErrAuditBroken, "audit log has %d entries, the store records %d", seq, n)
		}
		if seq == 0 && head == nil {
			return badErr
		}
	}
	// The head records the last entry's hash only when no entry is missing
	// or wrong by itself.
	if i, msg := win.end(head, badErr == nil); i > 0 {
		return fail(ErrAuditBroken, "audit entry %d %s", i, msg)
	}
	return badErr
}

// errStopAudit ends the walk over the log at the first entry that is wrong
// by itself, or once the chain shows one to be wrong.
var errStopAudit = errors.New("stop")

// firstBadLink returns the 1-based number (within links) of the first
// entry the chain shows to be wrong, and why (0 when the chain holds).
// links are consecutive entries' links, the first of them entry 1 of the
// log when first; only the links from the first upto of them are judged.
// Entry i's stored hash is recorded by entry i+1's prev (by the head for
// the last entry, when withHead), and entry 1's prev is 32 zero bytes. A
// broken link between entries i and i+1 means one of the two changed:
// when the link after (i+1 to i+2, or to the head) holds, entry i+1's
// prev is as written, so entry i is the one altered; when that link is
// broken too, entry i+1's own bytes (its prev) changed, and it is named.
func firstBadLink(links []auditLink, head []byte, withHead, first bool, upto int) (int, string) {
	n := len(links)
	// recorded(i) is what the chain says entry i (0-based) hashed to.
	recorded := func(i int) ([]byte, bool) {
		if i+1 < n {
			return links[i+1].prev, true
		}
		return head, withHead
	}
	holds := func(i int) bool { // the link from entry i to what follows
		r, ok := recorded(i)
		return !ok || bytes.Equal(r, links[i].sum[:])
	}
	if first && n > 0 && !bytes.Equal(links[0].prev, make([]byte, sha256.Size)) {
		if holds(0) {
			// Entry 1's stored bytes are as the chain recorded them, but
			// they do not start the chain: it is wrong as written.
			return 1, "does not start the chain (its prev is not 32 zero bytes)"
		}
		return 1, "was altered (its prev is not 32 zero bytes and the entry after it does not chain to it)"
	}
	for i := 0; i < upto; i++ {
		if holds(i) {
			continue
		}
		if i+1 < n && !holds(i+1) {
			return i + 2, "was altered (it does not chain to the entry before it, and the entry after it does not chain to it)"
		}
		if i+1 == n {
			return i + 1, "does not match the stored head (the last entry was altered, or the head)"
		}
		return i + 1, "was altered (the entry after it records another hash for it)"
	}
	return 0, ""
}
