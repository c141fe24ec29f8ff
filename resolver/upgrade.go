package resolver

import (
	"bytes"
	"cmp"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// upgradeStore upgrades a version 2 store to SchemaVersion inside tx, the
// transaction of its first writable open by this build
// (docs/SPEC-DECISIONS.md TSTATE-5): it runs every one-time migration
// afresh, whatever marker a build before wrote, since a build of version
// 2 may have written the store after that marker (a binary rolled back
// and forward again), and then sets the version. All or nothing: a
// failure, or a kill before the commit, leaves a version 2 store that the
// next writable open upgrades again. In order:
//
//   - key origins (migrateKeyOrigins), which the accounts below read;
//   - removed keys: the whole audit log is read again (removedFromAudit);
//   - heartbeat charges: recounted from the records (recountCharges);
//   - statement charges: recounted from the kept statements
//     (countStatementCharges).
//
// Its cost is one read of the audit log, of the kept heartbeats, of the
// trust chains and of the kept statements (each bounded by its share),
// once per store.
func (s *Store) upgradeStore(tx *bolt.Tx) error {
	if err := createBuckets(tx); err != nil {
		return err
	}
	meta := bucket(tx, bMeta)
	if err := s.migrateKeyOrigins(tx); err != nil {
		return err
	}
	st, err := s.loadState(tx, selTrust)
	if err != nil {
		return err
	}
	if err := meta.Delete([]byte(kRemovedMigrated)); err != nil {
		return err
	}
	if err := removedFromAudit(tx, st, &s.auditRead); err != nil {
		return err
	}
	if err := recountCharges(tx, st); err != nil {
		return err
	}
	if err := deletePrefix(meta, statementChargeKey("")); err != nil {
		return err
	}
	if err := meta.Delete([]byte(kStatementChargesCounted)); err != nil {
		return err
	}
	if err := s.countStatementCharges(tx); err != nil {
		return err
	}
	if err := s.fault("upgrade"); err != nil {
		return err
	}
	return meta.Put([]byte(kSchemaVersion), u64(SchemaVersion))
}

// upgradeAliasClaims upgrades a version 3 store to SchemaVersion inside
// tx, the transaction of its first writable open by this build: its alias
// records, each one claim, are records of version 4 as they are, so only
// the version changes (all or nothing, as upgradeStore).
func upgradeAliasClaims(tx *bolt.Tx) error {
	if err := createBuckets(tx); err != nil {
		return err
	}
	return bucket(tx, bMeta).Put([]byte(kSchemaVersion), u64(SchemaVersion))
}

// UpgradeError reports why this writable open left a version 2 store
// unupgraded: a value of the wrong size the upgrade read (store_io,
// docs/SPEC-DECISIONS.md TSTATE-5 and TSTATE-6), which ampbundle check
// reports (kind "meta"). The store is then open as it is and serves its
// bundles; every act that reads the damaged value is refused store_io.
// It is nil when the store was upgraded, was of this version already or
// was opened read-only.
func (s *Store) UpgradeError() error { return s.upgradeErr }

// migrateKeyOrigins gives each trusted key without an origin that an
// applied trust statement added (same name, same did:key, trusted for
// that statement's scope alone) the origin that statement gives the keys
// it adds: the least account of its signers (trust.ApplyRotation,
// TRUST-17), as the store's policy reads them now
// (trust.State.KeptStatementAccount). A key a statement added before
// origins were kept otherwise counts as an account of its own, with its
// own shares. The statements are read in chain order, scope by scope, so
// that a key added by a key an earlier statement added descends from the
// same account; one that does not decode is skipped. Only a key that
// statement actually added is given it (statementAdded: the audit log
// says the key was not trusted when the statement was applied, and was not
// removed and trusted again since): a statement naming a key the store
// already trusted for its scope is applied as a no-op, and the key (the
// operator's own, say) is never charged to its signers' account
// (docs/SPEC-DECISIONS.md TSTATE-5). A key whose adding statement the
// log does not show keeps no origin, as before the upgrade.
func (s *Store) migrateKeyOrigins(tx *bolt.Tx) error {
	st, err := s.loadState(tx, selection{chains: true})
	if err != nil {
		return err
	}
	adder, err := statementAdded(tx)
	if err != nil {
		return err
	}
	byDID := map[string]string{} // did:key -> name, of the keys without an origin
	for name, k := range st.Keys {
		if k.Origin == "" {
			byDID[k.DID()] = name
		}
	}
	if len(byDID) == 0 {
		return nil
	}
	p, meta := st.Policy(), bucket(tx, bMeta)
	scopes := make([]string, 0, len(st.Chains))
	for sc := range st.Chains {
		scopes = append(scopes, sc)
	}
	slices.Sort(scopes)
	for _, sc := range scopes {
		chain := st.Chains[sc]
		slices.SortFunc(chain, func(a, b trust.ChainEntry) int { return cmp.Compare(a.Seq, b.Seq) })
		for _, c := range chain {
			rot, _, err := bundle.ParseRotation(c.Data)
			if err != nil {
				continue
			}
			origin := ""
			for _, a := range rot.Add {
				pub, ok := bundle.KeyFromKID(a.Key)
				if !ok {
					continue
				}
				did := amp.DIDKey(pub)
				name, ok := byDID[did]
				if !ok || name != a.Name || !slices.Equal(st.Keys[name].Scopes, []string{rot.Scope}) || adder[did] != (chainPos{rot.Scope, c.Seq}) {
					continue
				}
				if origin == "" {
					origin = st.KeptStatementAccount(p, c.Data)
				}
				if origin == "" || origin == did {
					continue
				}
				k := st.Keys[name]
				k.Origin = origin
				st.Keys[name] = k
				delete(byDID, did)
				if err := meta.Put(keyOriginKey(did), []byte(origin)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// chainPos names an applied trust statement: its scope and its sequence
// number in that scope's chain.
type chainPos struct {
	scope string
	seq   uint64
}

// statementAdded reads the audit log, oldest first, for the statement
// that added each did:key as it is trusted now: an accepted rotate entry
// (of one scope) naming it among its added keys while no trust_add
// since its last trust_remove or retirement says the operator trusts
// it. A key the operator trusted (trust add, a policy file), and did not
// remove before, maps to no statement: the statement naming it again was
// a no-op for it. An entry that does not decode is skipped (VerifyAudit
// reports it); an entry without a verdict counts as accepted, as in
// removedFromAudit. Its memory is one entry per key the log names.
func statementAdded(tx *bolt.Tx) (map[string]chainPos, error) {
	operator := chainPos{} // the zero position: trusted by the operator
	state := map[string]chainPos{}
	err := bucket(tx, bAudit).ForEach(func(_, v []byte) error {
		var e AuditEntry
		if decode(v, &e) != nil || (e.Verdict != verdictAccepted && e.Verdict != "") {
			return nil
		}
		switch e.Action {
		case "trust_add":
			if e.Key != "" {
				state[trust.KeyID(e.Key)] = operator
			}
		case "trust_remove":
			if e.Key != "" {
				delete(state, trust.KeyID(e.Key))
			}
		case "rotate":
			for _, k := range e.RetiredKeys {
				delete(state, trust.KeyID(k))
			}
			if len(e.Scopes) != 1 {
				return nil
			}
			for _, k := range e.AddedKeys {
				if _, ok := state[trust.KeyID(k)]; !ok {
					state[trust.KeyID(k)] = chainPos{e.Scopes[0], e.Sequence}
				}
			}
		}
		return nil
	})
	for did, p := range state {
		if p == operator {
			delete(state, did)
		}
	}
	return state, err
}

// recountCharges writes the heartbeat charge counters afresh from the
// kept records (chargesOfRecords through st.Account: a key a statement
// added now counts to its origin), and the kChargesCounted marker.
func recountCharges(tx *bolt.Tx, st *trust.State) error {
	if err := deletePrefix(bucket(tx, bMeta), chargeKey("")); err != nil {
		return err
	}
	return writeCharges(tx, st.Account)
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
