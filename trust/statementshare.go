package trust

import (
	"slices"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// The signed statements a store applies (revocations, trust statements)
// it keeps for good, and a mirror lists every one of them in its index,
// which holds at most MaxStatements (mirror.MaxIndexStatements): a store
// past it gets no new snapshot. So that no one authority can bring that
// about for every other, each kept statement is charged to an account
// (State.Account: the operator-trusted key its signers' trust descends
// from), and an account has a share of StatementShare
// (docs/SPEC-DECISIONS.md TRUST-18).
const (
	// StatementShare is each account's share of the statements a store
	// keeps. MaxStatements / StatementShare accounts fill the store: an
	// operator trusting more authorities than that, each using its whole
	// share, meets MaxStatements first (the sum rule).
	StatementShare = 1_000
	// MaxStatements is the most statements a store keeps: what a mirror
	// index lists (mirror.MaxIndexStatements, which a mirror test holds
	// equal), so that a store is never past what its mirror can serve.
	MaxStatements = 10_000
)

// StatementLimits are the bounds ChargeStatement applies: Share per
// account, Total per store.
type StatementLimits struct {
	Share, Total int
}

// DefaultStatementLimits are StatementShare and MaxStatements.
var DefaultStatementLimits = StatementLimits{Share: StatementShare, Total: MaxStatements}

// statementAccounts returns the accounts of the keys that counted for a
// statement (Account), sorted and unique: those a statement may be
// charged to (ChargeStatement), and whose least is the origin of the keys
// a trust statement adds (TRUST-17).
func (s *State) statementAccounts(signers []bundle.TrustedKey) []string {
	out := make([]string, 0, len(signers))
	for _, k := range signers {
		out = append(out, s.Account(amp.DIDKey(k.Key)))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ChargeStatement returns the account a statement the store does not keep
// yet is charged to: the least of accounts (Effects.StatementAccounts, the
// accounts of its signers) charged fewer than lim.Share kept statements
// (charged: per account; absent is none). It is refused
// statement_share_exhausted, and nothing is to be kept, when every one of
// them has had its share, or when the store already keeps lim.Total
// statements (kept). A statement the store already keeps (the same bytes)
// is never charged again: the caller does not ask. It is
// ChargeStatementAs for a statement charged as one.
func ChargeStatement(accounts []string, charged map[string]int, kept int, lim StatementLimits) (string, error) {
	return ChargeStatementAs(accounts, charged, kept, 1, lim)
}

// ChargeStatementAs is ChargeStatement for a statement charged as units
// kept statements (Effects.StatementCharge; less than 1 is 1): the least
// of accounts with room for all of them, charged[a]+units at most
// lim.Share. A revocation that lengthens the records of many keys that
// stay trusted, or a trust statement trusting keys whose revocations
// hold many scopes, costs its authority as many, so that no authority
// grows what every load of the store reads past its own share, and none
// spends another's (docs/SPEC-DECISIONS.md TRUST-33).
func ChargeStatementAs(accounts []string, charged map[string]int, kept, units int, lim StatementLimits) (string, error) {
	units = max(1, units)
	out := LeastUnderShare(accounts, charged, lim.Share-units+1)
	switch {
	case out == "" && units > 1:
		return "", fail(ErrStatementShare, "this statement is charged as %d signed statements, one for each revocation scope it leaves on keys this store still trusts (a revocation of keys trusted only for other scopes, or a trust statement trusting keys revoked for other scopes), which every load of the store reads; no authority its signers descend from (%s) has that many left of its share of %d, so nothing was applied: name fewer such keys (their own scopes' owners revoke them free of this charge), or trust other keys",
			units, strings.Join(accounts, ", "), lim.Share)
	case out == "":
		return "", fail(ErrStatementShare, "each authority this statement's signers descend from (%s) has had its share of %d signed statements kept by this store, so that no one authority fills the %d a mirror index lists; nothing was applied, and its keys' statements are refused from now on (a key the operator trusts itself, trust add, is an authority of its own)",
			strings.Join(accounts, ", "), lim.Share, lim.Total)
	case kept >= lim.Total:
		return "", fail(ErrStatementShare, "this store keeps %d signed statements, the most a mirror index lists (%d authorities of %d each fill it: the operator trusts more authorities than a mirror serves the statements of); nothing was applied",
			kept, lim.Total/max(lim.Share, 1), lim.Share)
	}
	return out, nil
}

// KeptStatementAccount returns the account a statement kept before
// charges were recorded is charged to, once (data, its bytes): the least
// account of the keys p (the store's Policy) trusts whose signatures on it
// verify, or, when none does, of the keys named by the kids whose
// signatures verify (a key since removed is its own account); "" when it
// does not decode or no signature verifies (it is then charged to none).
// A signature that does not verify, whoever's kid it carries, charges
// nobody.
func (s *State) KeptStatementAccount(p *bundle.Policy, data []byte) string {
	ct := bundle.ContentType(data)
	if ct != bundle.MediaTypeRevocation && ct != bundle.MediaTypeRotation {
		return ""
	}
	obj, err := bundle.DecodeObject(data, ct)
	if err != nil {
		return ""
	}
	signers, err := obj.Verify(p)
	if err != nil || len(signers) == 0 {
		signers = signers[:0]
		for _, sg := range obj.Signatures {
			pub, ok := bundle.KeyFromKID(sg.KID)
			if !ok {
				continue
			}
			one := &bundle.Policy{Keys: []bundle.TrustedKey{{Name: "signer", Key: pub, Scopes: []string{"*"}}}}
			if ks, err := obj.Verify(one); err == nil && len(ks) == 1 {
				signers = append(signers, ks[0])
			}
		}
	}
	if accounts := s.statementAccounts(signers); len(accounts) > 0 {
		return accounts[0]
	}
	return ""
}
