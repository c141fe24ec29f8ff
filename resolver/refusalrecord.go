package resolver

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// The record of recent refusals (docs/SPEC-DECISIONS.md MIRROR-11): for each
// file the store refused lately, by the file's SHA-256, the verdict, the
// store generation at which it was last refused and the time it was last
// audited. A refusal of the same file with the same verdict audited less
// than RefusalReauditInterval ago (store clock) is not audited again, so a
// sync run that offers the same refused files on every timer tick adds
// nothing to the chained, never-trimmed audit log; a lasting refusal is
// still audited once a RefusalReauditInterval. Sync asks RefusedAt before
// downloading a listed file.
const (
	// RefusalReauditInterval is how long an audited refusal is not
	// audited again when the same file is refused with the same verdict.
	RefusalReauditInterval = 24 * time.Hour
	// MaxRefusalRecords bounds the record of recent refusals: about three
	// times the most files one mirror index lists of each kind. Past it,
	// the records audited longer than RefusalReauditInterval ago go, and
	// then the oldest, down to seven eighths of it.
	MaxRefusalRecords = 32768
)

// StatementCopy is the verdict RefusedAt answers for a trust or
// revocation statement file the store verified and found to be another
// file of a statement it keeps (the same payload under other signatures:
// docs/SPEC-DECISIONS.md TRUST-19). Nothing was refused or audited: the
// store keeps such a copy's SHA-256 in the record of recent refusals so
// that sync, which asks before downloading a listed file, reports it
// current without downloading it again; HasStatement knows only the files
// the store keeps (docs/SPEC-DECISIONS.md MIRROR-13). It holds at any
// generation and open (a kept statement is never dropped), for
// RefusalReauditInterval after the copy was last applied.
const StatementCopy = "statement_copy"

// recordStatementCopy records, in tx, the statement file of SHA-256 sum
// as a copy of a statement the store keeps (StatementCopy), unless it is
// recorded so less than RefusalReauditInterval ago. Called by the
// transaction that applied the copy (saveEffects).
func recordStatementCopy(tx *bolt.Tx, sum []byte, now time.Time) error {
	r, existed := readRefusal(tx, sum)
	if existed && r.fresh(StatementCopy, now) {
		return nil
	}
	meta := bucket(tx, bMeta)
	if !existed {
		if err := countRefusalRecord(meta, now); err != nil {
			return err
		}
	}
	r = refusalRecord{Verdict: StatementCopy, Generation: txGeneration(tx), AuditedAt: now.Unix(), Count: r.Count + 1}
	return meta.Put(refusalKey(sum), encode(r))
}

// kRefusalCount is the meta key of the number of refusal records
// (refusalKey); a count found wrong is set right by the next pruning.
const kRefusalCount = "refusal_count"

// refusalKey is the meta key of the refusal record of the file whose
// SHA-256 is sum.
func refusalKey(sum []byte) []byte { return key2("refusal", string(sum)) }

// refusalRecord is the value of a refusalKey.
type refusalRecord struct {
	Verdict    string `cbor:"verdict"`
	Generation uint64 `cbor:"generation"` // the store generation of the last refusal
	AuditedAt  int64  `cbor:"audited_at"` // unix seconds, store clock, of the last audit
	Count      uint64 `cbor:"count"`      // refusals recorded (those that wrote the record)
	Epoch      uint64 `cbor:"epoch"`      // the Store.epoch of the open that recorded it (refusalEpoch)
}

// refusalEpoch returns the Store.epoch of a store opened with opts (its
// defaults applied): a digest of what a refusal's verdict may depend on
// besides the store's contents (which the generation counts), so that a
// refusal is answered by every open that would judge the file the same
// way, and by no other (docs/SPEC-DECISIONS.md MIRROR-13): the options an
// import reads (MaxArtifactSize, which also sets the drain's bound; the
// rest are the clock, the lock, the staging batch and the actor, none of
// which decides a verdict) and the build that judges (a new build may
// accept a file an older one refused). Never 0, the epoch of a record
// written before epochs were kept, which no open matches.
func refusalEpoch(opts Options) uint64 {
	h := sha256.New()
	h.Write([]byte("ampbundle refusal epoch 1\x00"))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(opts.MaxArtifactSize)))
	if bi, ok := debug.ReadBuildInfo(); ok {
		h.Write([]byte(bi.Main.Path + "\x00" + bi.Main.Version + "\x00" + bi.GoVersion + "\x00"))
		for _, kv := range bi.Settings {
			if strings.HasPrefix(kv.Key, "vcs.") {
				h.Write([]byte(kv.Key + "=" + kv.Value + "\x00"))
			}
		}
	}
	return max(binary.BigEndian.Uint64(h.Sum(nil)), 1)
}

// fresh reports whether r was audited with verdict less than
// RefusalReauditInterval before now (a clock set back since makes it not
// fresh: audited again).
func (r *refusalRecord) fresh(verdict string, now time.Time) bool {
	t := now.Unix()
	return r.Verdict == verdict && r.AuditedAt <= t && t < r.AuditedAt+int64(RefusalReauditInterval/time.Second)
}

// readRefusal returns the record of the file sum (false when none, or it
// does not decode: treated as none, and rewritten by the next refusal).
func readRefusal(tx *bolt.Tx, sum []byte) (refusalRecord, bool) {
	var r refusalRecord
	raw := bucket(tx, bMeta).Get(refusalKey(sum))
	if raw == nil || decode(raw, &r) != nil {
		return refusalRecord{}, false
	}
	return r, true
}

// refusalWrite is what a refusal of the file sum with verdict writes:
// nothing (audited lately, at this generation), the record alone (audited
// lately, at another generation or open: RefusedAt must answer for this one), or
// the audit entry and the record.
type refusalWrite int

const (
	refusalNothing refusalWrite = iota
	refusalRecordOnly
	refusalAudit
)

// refusalNeeds returns the record of the file sum (and whether there is
// one) and what a refusal of it with verdict at now must write.
func refusalNeeds(tx *bolt.Tx, sum []byte, verdict string, now time.Time, epoch uint64) (refusalRecord, bool, refusalWrite) {
	r, ok := readRefusal(tx, sum)
	switch {
	case !ok || !r.fresh(verdict, now):
		return r, ok, refusalAudit
	case r.Generation != txGeneration(tx) || r.Epoch != epoch:
		return r, ok, refusalRecordOnly
	}
	return r, ok, refusalNothing
}

// auditRefusalOnce appends e, the audit entry of a refusal of the file
// whose SHA-256 is sum, unless the record of recent refusals says the
// same refusal was audited lately (refusalRecord.fresh); it keeps the
// record. A repeat refusal at the same generation writes nothing: it is
// decided in a read transaction. gen is the generation the refusal was
// judged at: an import drains its stream without the write lock
// (auditImportRefusal), and a refusal judged before a change that moved
// the generation (a key trusted meanwhile) is audited but not recorded
// at the new one, where RefusedAt would answer it. It returns the error
// of the store (store_io) when what the refusal must write could not be
// written: an Import or a statement then answers store_io, not the
// refusal; Close does not close the database under an Import or a
// statement in flight (Store.enter).
func (s *Store) auditRefusalOnce(e AuditEntry, sum []byte, gen uint64) error {
	if err := s.fault("refusal-audit"); err != nil {
		return err
	}
	now := s.opts.Now()
	if amp.ErrName(e.Verdict) == bundle.ErrTruncated || len(sum) != sha256.Size {
		// The stream was cut (a caller that went away): a fault of the
		// transfer, not of the file, so nothing is recorded that would
		// have sync skip the file; audited each time, as before. So
		// is a refusal of a stream the store did not read whole (no
		// sum: auditImportRefusal).
		if err := s.db.Update(func(tx *bolt.Tx) error { return appendAudit(tx, now, e) }); err != nil {
			return wrapTx(err)
		}
		return nil
	}
	var need refusalWrite
	if err := s.db.View(func(tx *bolt.Tx) error {
		_, _, need = refusalNeeds(tx, sum, e.Verdict, now, s.epoch)
		return nil
	}); err != nil {
		return wrapTx(err)
	}
	if need == refusalNothing {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if txGeneration(tx) != gen {
			return appendAudit(tx, now, e) // judged on a state since changed
		}
		r, existed, need := refusalNeeds(tx, sum, e.Verdict, now, s.epoch)
		if need == refusalNothing {
			return nil
		}
		if need == refusalAudit {
			if err := appendAudit(tx, now, e); err != nil {
				return err
			}
			r.Verdict, r.AuditedAt = e.Verdict, now.Unix()
		}
		r.Generation, r.Epoch = txGeneration(tx), s.epoch
		r.Count++
		meta := bucket(tx, bMeta)
		if !existed {
			if err := countRefusalRecord(meta, now); err != nil {
				return err
			}
		}
		return meta.Put(refusalKey(sum), encode(r))
	})
	if err != nil {
		return wrapTx(err)
	}
	return nil
}

// countRefusalRecord counts one more refusal record, pruning the record
// first when it holds MaxRefusalRecords.
func countRefusalRecord(meta *bolt.Bucket, now time.Time) error {
	n := getU64(meta.Get([]byte(kRefusalCount)))
	if n >= MaxRefusalRecords {
		var err error
		if n, err = pruneRefusals(meta, now, MaxRefusalRecords*7/8); err != nil {
			return err
		}
	}
	return meta.Put([]byte(kRefusalCount), u64(n+1))
}

// pruneRefusals deletes the refusal records audited longer than
// RefusalReauditInterval ago (and those that do not decode), then the
// oldest until at most keep are left; it returns how many are left.
func pruneRefusals(meta *bolt.Bucket, now time.Time, keep int) (uint64, error) {
	type rec struct {
		key []byte
		at  int64
	}
	var live []rec
	var drop [][]byte
	prefix := refusalKey(nil)
	c := meta.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var r refusalRecord
		if len(k) != len(prefix)+sha256.Size || decode(v, &r) != nil || !r.fresh(r.Verdict, now) {
			drop = append(drop, bytes.Clone(k))
			continue
		}
		live = append(live, rec{bytes.Clone(k), r.AuditedAt})
	}
	if len(live) > keep {
		slices.SortStableFunc(live, func(a, b rec) int { return int(min(max(a.at-b.at, -1), 1)) })
		for _, r := range live[:len(live)-keep] {
			drop = append(drop, r.key)
		}
		live = live[len(live)-keep:]
	}
	for _, k := range drop {
		if err := meta.Delete(k); err != nil {
			return 0, err
		}
	}
	return uint64(len(live)), nil
}

// RefusedAt reports whether the store refused the file whose SHA-256 is
// sum at its current generation, audited less than RefusalReauditInterval
// ago, and with which verdict (an error name). Sync skips such a listed
// file before downloading it: offered again, it would be refused the same
// way, since nothing the store judges by changed (any change moves the
// generation); after RefusalReauditInterval it is tried, and audited,
// again. A refusal recorded by an open of the store with other options
// that a verdict may depend on (MaxArtifactSize), or by another build, is
// not answered (Store.epoch, refusalEpoch); one recorded by an earlier
// open with the same is (a sync run without an agent opens the store
// anew each time). A statement file found to be
// a copy of a kept statement is answered with the verdict StatementCopy.
func (s *Store) RefusedAt(sum []byte) (verdict string, ok bool, err error) {
	if len(sum) != sha256.Size {
		return "", false, nil // no file has such a hash: none was refused
	}
	now := s.opts.Now()
	err = s.db.View(func(tx *bolt.Tx) error {
		r, found := readRefusal(tx, sum)
		current := r.Verdict == StatementCopy || r.Generation == txGeneration(tx) && r.Epoch == s.epoch
		if found && current && r.fresh(r.Verdict, now) {
			verdict, ok = r.Verdict, true
		}
		return nil
	})
	if err != nil {
		return "", false, amp.AsError(wrapTx(err))
	}
	return verdict, ok, nil
}
