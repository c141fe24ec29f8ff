package resolver

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
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

// statementLimits are trust.DefaultStatementLimits (tests lower them).
var statementLimits = trust.DefaultStatementLimits

// kStatementChargesCounted is the meta key whose presence says the
// statement charges are counted (statementChargeKey): every statement
// kept before this build charged once, to its account
// (trust.State.KeptStatementAccount).
const kStatementChargesCounted = "statement_charges_counted"

// statementChargeKey is the meta key of the number of kept statements
// charged to account.
func statementChargeKey(account string) []byte { return key2("statement_charge", account) }

// countStatementCharges writes, once per store, the charge counters of
// the statements kept before they were counted, and the
// kStatementChargesCounted marker (one decode and at most one signature
// check per signature of each kept statement, once). A statement that
// charges no account still counts towards MaxStatements, which is the
// number kept.
func (s *Store) countStatementCharges(tx *bolt.Tx) error {
	meta := bucket(tx, bMeta)
	if meta.Get([]byte(kStatementChargesCounted)) != nil {
		return nil
	}
	st, err := s.loadState(tx, selTrust)
	if err != nil {
		return err
	}
	p, n := st.Policy(), map[string]int{}
	c := bucket(tx, bStatements).Cursor()
	for k, v := c.Seek([]byte{'s'}); k != nil && k[0] == 's'; k, v = c.Next() {
		if len(k) != 9 {
			continue
		}
		if a := st.KeptStatementAccount(p, v); a != "" {
			n[a]++
		}
	}
	for a, c := range n {
		if err := meta.Put(statementChargeKey(a), u64(uint64(c))); err != nil {
			return err
		}
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
		counted = bucket(tx, bMeta).Get([]byte(kStatementChargesCounted)) != nil || bucket(tx, bStatements).Sequence() == 0
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
// one of its accounts (trust.ChargeStatement), before anything of e is
// written: refused statement_share_exhausted, the transaction writes
// nothing. A statement the store keeps already (the same bytes) is not
// charged again.
func (s *Store) chargeStatement(tx *bolt.Tx, e *trust.Effects) error {
	if e.Statement == nil {
		return nil
	}
	sb := bucket(tx, bStatements)
	if sb.Get(statementHashKey(sha256sum(e.Statement))) != nil {
		return nil
	}
	if err := s.countStatementCharges(tx); err != nil {
		return err
	}
	meta, charged := bucket(tx, bMeta), map[string]int{}
	for _, a := range e.StatementAccounts {
		charged[a] = chargeCount(meta.Get(statementChargeKey(a)), statementLimits.Share)
	}
	a, err := trust.ChargeStatement(e.StatementAccounts, charged, int(sb.Sequence()), statementLimits)
	if err != nil {
		return err
	}
	return meta.Put(statementChargeKey(a), u64(uint64(charged[a])+1))
}
