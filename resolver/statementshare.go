package resolver

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// ErrStatementShare refuses a statement whose signers' authorities have
// each had their share of kept statements (StatementShare), or one a
// store keeping MaxStatements would keep (trust.ChargeStatement): nothing
// is applied.
const ErrStatementShare = trust.ErrStatementShare

// Each account (trust.State.Account: an operator-trusted key, which the
// keys a trust statement adds descend from) has a share of the signed
// statements the store keeps, and the store keeps at most what a mirror
// index lists (docs/SPEC-DECISIONS.md TRUST-18).
const (
	// StatementShare is each account's share of kept statements.
	StatementShare = trust.StatementShare
	// MaxStatements is the most statements a store keeps.
	MaxStatements = trust.MaxStatements
)

// kStatementChargesCounted is the meta key whose presence says the
// statement charges are counted (statementChargeKey): every statement
// kept before this build charged once, to its account
// (trust.State.KeptStatementAccount).
const kStatementChargesCounted = "statement_charges_counted"

// kStatementIDsIndexed is the meta key that says the kept statements are
// indexed by identity (statementIDKey) and their charges counted once per
// payload, up to the statement sequence it holds: a store counted by a
// build that told statements by their bytes may have charged copies of
// one statement under other signatures (docs/SPEC-DECISIONS.md TRUST-19),
// and is counted again; so is one whose statements bucket has a sequence
// past it, a statement kept by a build that did not index it (a build of
// schema 3 from before the index, rolled back to: TSTATE-5). This build
// moves it with each statement it keeps and indexes (recordStatement).
const kStatementIDsIndexed = "statement_ids_indexed"

// statementsIndexed reports whether the statements kept are charged and
// indexed by identity (kStatementChargesCounted, and kStatementIDsIndexed
// at the statements bucket's sequence).
func statementsIndexed(meta, sb *bolt.Bucket) bool {
	v := meta.Get([]byte(kStatementIDsIndexed))
	return meta.Get([]byte(kStatementChargesCounted)) != nil && len(v) == 8 && getU64(v) == sb.Sequence()
}

// statementChargeKey is the meta key of the number of kept statements
// charged to account.
func statementChargeKey(account string) []byte { return key2("statement_charge", account) }

// keptStatement is one kept statement as countStatementCharges reads it.
type keptStatement struct {
	seq     uint64
	id      []byte // its payload's SHA-256; nil when it does not decode
	account string // trust.State.KeptStatementAccount
}

// countStatementCharges writes, once per store, the charge counters of
// the statements kept before they were counted, the identity index of
// those kept before it existed (statementIDKey), and the markers
// kStatementChargesCounted and kStatementIDsIndexed (one decode and at
// most one signature check per signature of each kept statement, once).
// A payload kept under several files (copies kept by a build before
// TRUST-19) is charged once, for the first file kept; the others stay
// kept and listed (and count towards MaxStatements, which is the number
// kept). A statement that charges no account still counts towards
// MaxStatements. Charges counted before are counted again from scratch.
func (s *Store) countStatementCharges(tx *bolt.Tx) error {
	meta, sb := bucket(tx, bMeta), bucket(tx, bStatements)
	if statementsIndexed(meta, sb) {
		return nil
	}
	st, err := s.loadState(tx, selTrust)
	if err != nil {
		return err
	}
	p := st.Policy()
	var kept []keptStatement
	c := sb.Cursor()
	for k, v := c.Seek([]byte{'s'}); k != nil && k[0] == 's'; k, v = c.Next() {
		if len(k) != 9 {
			continue
		}
		ks := keptStatement{seq: getU64(k[1:]), account: st.KeptStatementAccount(p, v)}
		if obj, err := bundle.DecodeObject(v, bundle.ContentType(v)); err == nil {
			ks.id = obj.PayloadSHA256()
		}
		kept = append(kept, ks)
	}
	if err := deletePrefix(meta, statementChargeKey("")); err != nil {
		return err
	}
	n, seen := map[string]int{}, map[string]bool{}
	for _, ks := range kept { // in the order kept
		if ks.id != nil {
			if seen[string(ks.id)] {
				continue // a copy of a statement kept before it: charged once
			}
			seen[string(ks.id)] = true
			if err := sb.Put(statementIDKey(ks.id), u64(ks.seq)); err != nil {
				return err
			}
		}
		if ks.account != "" {
			n[ks.account]++
		}
	}
	for a, c := range n {
		if err := meta.Put(statementChargeKey(a), u64(uint64(c))); err != nil {
			return err
		}
	}
	if err := meta.Put([]byte(kStatementIDsIndexed), u64(sb.Sequence())); err != nil {
		return err
	}
	return meta.Put([]byte(kStatementChargesCounted), u64(1))
}

// statementChargesCounted has the statements kept before charges were
// recorded counted (countStatementCharges), once, in a transaction of its
// own: a statement refused after it does not have the next one count them
// again. A store counted already, or keeping none, is only read. Called
// under the write lock.
func (s *Store) statementChargesCounted() error {
	var counted bool
	err := s.db.View(func(tx *bolt.Tx) error {
		// A store that keeps none has none to count: the first statement
		// it keeps writes the marker (chargeStatement), so that a refused
		// one leaves a new store as it was.
		sb := bucket(tx, bStatements)
		counted = statementsIndexed(bucket(tx, bMeta), sb) || sb.Sequence() == 0
		return nil
	})
	if err == nil && !counted {
		err = s.db.Update(s.countStatementCharges)
	}
	if err != nil {
		return amp.AsError(wrapTx(err))
	}
	return nil
}

// chargeStatement charges the statement e keeps (Effects.Statement) to
// one of its accounts, as e.StatementCharge kept statements
// (trust.ChargeStatementAs; docs/SPEC-DECISIONS.md TRUST-33), before
// anything of e is written: refused statement_share_exhausted, the
// transaction writes nothing. A statement the store keeps already (the
// same file, or the same payload under other signatures: TRUST-19) is not
// charged again.
func (s *Store) chargeStatement(tx *bolt.Tx, e *trust.Effects) error {
	if e.Statement == nil {
		return nil
	}
	if err := s.countStatementCharges(tx); err != nil {
		return err
	}
	sb := bucket(tx, bStatements)
	if keepsStatement(sb, sha256sum(e.Statement), e.StatementID) {
		return nil
	}
	meta, charged := bucket(tx, bMeta), map[string]int{}
	for _, a := range e.StatementAccounts {
		charged[a] = chargeCount(meta.Get(statementChargeKey(a)), s.lim.statements.Share)
	}
	units := max(1, e.StatementCharge)
	a, err := trust.ChargeStatementAs(e.StatementAccounts, charged, int(sb.Sequence()), units, s.lim.statements)
	if err != nil {
		return err
	}
	return meta.Put(statementChargeKey(a), u64(uint64(charged[a]+units)))
}
