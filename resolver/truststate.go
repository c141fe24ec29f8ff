package resolver

import (
	"bytes"
	"crypto/ed25519"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// The store's trust state is package trust's State: this file loads it
// from the buckets inside a transaction (loadState) and writes the
// Effects of a change back in the same transaction (saveEffects). Every
// decision is trust's; nothing here decides.

// revokedRecord is what the store keeps of one revoked key or bundle
// version (trust.Revocation).
type revokedRecord struct {
	StatementSHA256 []byte   `cbor:"statement_sha256,omitempty"` // empty for trust rm --fail-closed
	At              string   `cbor:"at"`
	Scopes          []string `cbor:"scopes,omitempty"` // keys only; absent in records written before they were kept: "*"
}

// heartbeatRecord is the newest heartbeat a store applied for one bundle
// line (trust.Heartbeat, docs/FORMAT.md §23).
type heartbeatRecord struct {
	Version         uint64   `cbor:"version"`
	CreatedAt       string   `cbor:"created_at"`
	StatementSHA256 []byte   `cbor:"statement_sha256"`
	At              string   `cbor:"at"`
	Signers         []string `cbor:"signers,omitempty"`
	// Threshold and LineSHA256: what it was judged against when applied
	// (trust.Heartbeat); absent in records kept before they were.
	Threshold  uint64 `cbor:"threshold,omitempty"`
	LineSHA256 []byte `cbor:"line_sha256,omitempty"`
	// Charged: the account charged for it (trust.Heartbeat.Charged);
	// absent when none was, or in records kept before it was recorded.
	Charged string `cbor:"charged,omitempty"`
}

// freshnessRecord is the operator's staleness bound for a scope
// (trust.Freshness).
type freshnessRecord struct {
	MaxVersions   uint64 `cbor:"max_versions"`
	MaxAgeSeconds uint64 `cbor:"max_age_seconds,omitempty"`
}

func revokedKeyKey(did string) []byte { return key2("k", did) }

func revokedBundleKey(id string, version uint64) []byte {
	return append(key2("b", id), append([]byte{0}, u64(version)...)...)
}

func chainKey(scope string, seq uint64) []byte { return append(key2(scope, ""), u64(seq)...) }

// kTimeFloor is the meta key of the newest signed time any key vouched for
// (informative, and a cheap upper bound of every bundle's floor);
// keyFloorKey that of one key's (docs/SPEC-DECISIONS.md TRUST-5, TRUST-8).
const kTimeFloor = "time_floor"

func keyFloorKey(did string) []byte { return key2("key_floor", did) }

// bundleFloorKey is the meta key of the floor an act narrowing trust
// pinned for the installed bundle id (trust.Installed.Floor): its value
// is the version it was pinned for and the floor (8 bytes each), then the
// did:keys the pin rests on (trust.Installed.FloorKeys), each followed by
// a newline (none in a value written before they were kept: 16 bytes); a
// version other than the installed one's is ignored.
func bundleFloorKey(id string) []byte { return key2("bundle_floor", id) }

// kRemovedMigrated is the meta key whose presence says removedFromAudit
// has run and its removed_key records are written: the audit log is
// never read for them again (docs/SPEC-DECISIONS.md TSTATE-4) but by the
// upgrade of a version 2 store (upgradeStore, TSTATE-5), which a build
// that does not write removed_key records may have written since. Its
// value is the audit sequence number read up to (informative).
const kRemovedMigrated = "removed_keys_migrated"

// removedFromAudit adds to st.RemovedKeys the keys trust rm removed
// before this build kept a removed_key record of them
// (docs/SPEC-DECISIONS.md TSTATE-4): every did:key whose last trust_remove
// in the audit log has no trust_add after it. An entry of these two
// actions without a verdict counts as accepted: builds before verdicts
// were audited wrote them only for what took effect. It is a one-time
// migration: run only while the store has no kRemovedMigrated marker, by
// the act that reads the records (a policy file, selection.removed), in
// its write transaction, it writes the records it found and the marker
// there, so that they are kept only when that act commits (one refused
// reads the log again next time); every later act reads the records
// alone, so no act's cost grows with the log. This build writes each
// record with its audit entry. Its memory is one entry per key the log
// names in those entries; an entry that does not decode is skipped
// (VerifyAudit reports it).
func removedFromAudit(tx *bolt.Tx, st *trust.State, read *atomic.Int64) error {
	meta := bucket(tx, bMeta)
	if meta.Get([]byte(kRemovedMigrated)) != nil {
		return nil
	}
	last := map[string]string{} // did:key -> the name trust rm removed; "": trusted again since
	if err := bucket(tx, bAudit).ForEach(func(_, v []byte) error {
		read.Add(1)
		var e AuditEntry
		if decode(v, &e) != nil || e.Key == "" || (e.Verdict != "accepted" && e.Verdict != "") {
			return nil
		}
		switch e.Action {
		case "trust_remove":
			last[trust.KeyID(e.Key)] = e.TrustName
		case "trust_add":
			last[trust.KeyID(e.Key)] = ""
		}
		return nil
	}); err != nil {
		return err
	}
	for did, name := range last {
		if _, ok := st.RemovedKeys[did]; ok || name == "" {
			continue
		}
		st.RemovedKeys[did] = name
		if tx.Writable() {
			if err := meta.Put(removedKeyKey(did), []byte(name)); err != nil {
				return err
			}
		}
	}
	if !tx.Writable() {
		return nil
	}
	return meta.Put([]byte(kRemovedMigrated), u64(getU64(meta.Get([]byte(kAuditSeq)))))
}

// pinnedFloor returns the floor pinned for version of bundle id and the
// did:keys it rests on (bundleFloorKey; 0: none; nil keys: not recorded,
// or none readable — the keys are then derived as for an older pin).
// The pin outlives Store.Remove, as the high-water mark does: an import of
// that version again reads it (checkAgainstStore). A value shorter than
// its 16 bytes is store_io (TSTATE-6), never "no pin".
func pinnedFloor(tx *bolt.Tx, id string, version uint64) (int64, []string, error) {
	v := bucket(tx, bMeta).Get(bundleFloorKey(id))
	if v == nil {
		return 0, nil, nil
	}
	if len(v) < 16 {
		return 0, nil, fail(ErrStoreIO, "the store's bundle_floor value of a bundle has %d bytes, fewer than 16: the store is damaged (ampbundle check)", len(v))
	}
	if getU64(v[:8]) != version {
		return 0, nil, nil
	}
	var keys []string
	for rest := v[16:]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		keys = append(keys, string(rest[:i]))
		rest = rest[i+1:]
	}
	return int64(getU64(v[8:16])), keys, nil
}

// keyOriginKey is the meta key of the origin of a key a trust statement
// added (trust.Key.Origin): its value is the did:key of the account its
// heartbeats are charged to. None for a key the operator added.
func keyOriginKey(did string) []byte { return key2("key_origin", did) }

// putOrigins writes the origin of each key put (keyOriginKey), and drops
// that of a key put without one (the operator trusted it again).
func putOrigins(meta *bolt.Bucket, keys map[string]trust.Key) error {
	for _, k := range keys {
		var err error
		if k.Origin != "" {
			err = meta.Put(keyOriginKey(k.DID()), []byte(k.Origin))
		} else {
			err = meta.Delete(keyOriginKey(k.DID()))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removedKeyKey is the meta key of a key trust rm removed
// (trust.State.RemovedKeys): its value is the trust name it had.
func removedKeyKey(did string) []byte { return key2("removed_key", did) }

// selection says what of the installed bundles loadState reads: none, one
// line (line), or all (every installed bundle, with its line's heartbeat);
// heartbeats also reads the heartbeats kept for lines not installed (with
// all: what a mirror lists; nothing else asks, so no judgement grows with
// them); strict refuses an installed record that does not decode (else it
// is left out); chains reads every scope's applied trust statements, chain
// of one scope only the last and the one at chainSeq (what a trust
// statement of that sequence is checked against: trust.ApplyRotation). Revoked versions and DID documents
// are never loaded, nor are the revocations of keys the store does not
// trust: the State's Records looks up those a decision needs (txRecords).
// selFloors loads every installed bundle leniently, for a change that can
// narrow trust and so must keep the floors it would lower (trust's
// pinFloors) without being stopped by one unreadable record.
type selection struct {
	line        string
	all, strict bool
	heartbeats  bool
	chains      bool
	chain       string
	chainSeq    uint64
	removed     bool // also the keys removed before removed_key records were kept (removedFromAudit, once)
}

var (
	selTrust  = selection{}                        // keys, thresholds, revoked keys, removed keys, freshness, floors
	selJudged = selection{all: true, strict: true} // every installed bundle and its heartbeat
	selFloors = selection{all: true}               // every installed bundle, one unreadable left out
)

// loadState reads the store's trust state inside tx. Its cost does not
// grow with the revoked versions, the revocations of keys it does not
// trust or the DID documents the store keeps: the
// State's Records reads those from tx when a decision asks (txRecords), so
// the State must not outlive tx.
func (s *Store) loadState(tx *bolt.Tx, sel selection) (*trust.State, error) {
	st := (&trust.State{}).Clone() // every map made
	st.Records = &txRecords{tx: tx, decoded: s.decoded}
	// Each key's did:key is encoded once, for its origin, its revocation
	// (loadRevokedKeys) and the policy (docs/SPEC-DECISIONS.md TRUST-28).
	st.KeyDIDs = map[string]string{}
	if err := bucket(tx, bTrust).ForEach(func(_, v []byte) error {
		var r trustRecord
		if err := decode(v, &r); err != nil {
			return err
		}
		k := trust.Key{Name: r.Name, Key: ed25519.PublicKey(clone(r.Key)), Scopes: r.Scopes, AddedAt: r.AddedAt}
		did := k.DID()
		st.KeyDIDs[string(k.Key)] = did
		k.Origin = string(bucket(tx, bMeta).Get(keyOriginKey(did)))
		st.Keys[r.Name] = k
		return nil
	}); err != nil {
		return nil, err
	}
	if err := bucket(tx, bTrustPolicy).ForEach(func(k, v []byte) error {
		n, err := strictU64(v, "threshold")
		st.Thresholds[string(k)] = n
		return err
	}); err != nil {
		return nil, err
	}
	s.loadRevokedKeys(tx, st)
	meta := bucket(tx, bMeta)
	removedPrefix := removedKeyKey("")
	rc := meta.Cursor()
	for k, v := rc.Seek(removedPrefix); k != nil && bytes.HasPrefix(k, removedPrefix); k, v = rc.Next() {
		st.RemovedKeys[string(k[len(removedPrefix):])] = string(v)
	}
	if sel.removed {
		if err := removedFromAudit(tx, st, &s.auditRead); err != nil {
			return nil, err
		}
	}
	_ = bucket(tx, bFreshness).ForEach(func(k, v []byte) error {
		var r freshnessRecord
		if decode(v, &r) != nil {
			r = freshnessRecord{} // unreadable: fail closed with the tightest bound
		}
		st.Freshness[string(k)] = trust.Freshness{MaxVersions: r.MaxVersions, MaxAgeSeconds: r.MaxAgeSeconds}
		return nil
	})
	prefix := keyFloorKey("")
	c := meta.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		f, err := strictU64(v, "key_floor")
		if err != nil {
			return nil, err
		}
		st.KeyFloors[string(k[len(prefix):])] = int64(f)
	}
	if v := meta.Get([]byte(kTimeFloor)); v != nil {
		f, err := strictU64(v, "time_floor")
		if err != nil {
			return nil, err
		}
		st.TimeFloor = int64(f)
	}
	if sel.chains {
		_ = bucket(tx, bTrustChain).ForEach(func(k, v []byte) error {
			if i := bytes.IndexByte(k, 0); i > 0 && len(k) == i+9 {
				st.Chains[string(k[:i])] = append(st.Chains[string(k[:i])], trust.ChainEntry{Seq: getU64(k[i+1:]), Data: clone(v)})
			}
			return nil
		})
	} else if sel.chain != "" {
		st.Chains[sel.chain] = chainEnds(tx, sel.chain, sel.chainSeq)
	}
	if sel.all {
		if sel.heartbeats {
			_ = bucket(tx, bHeartbeat).ForEach(func(k, _ []byte) error { loadLine(tx, st, string(k), false); return nil })
		}
		if err := bucket(tx, bBundles).ForEach(func(k, _ []byte) error { return loadLine(tx, st, string(k), sel.strict) }); err != nil {
			return nil, err
		}
	} else if sel.line != "" {
		if err := loadLine(tx, st, sel.line, sel.strict); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// loadRevokedKeys reads the revocations of the keys st trusts (as many
// as its keys, each looked up by key): a revocation may name any did:key,
// and those of keys nobody trusts are looked up when a change asks
// (txRecords.RevokedKey), never loaded (docs/SPEC-DECISIONS.md TSTATE-1).
// Each key's did:key is the one the policy reads (trust.State.DIDOf).
func (s *Store) loadRevokedKeys(tx *bolt.Tx, st *trust.State) {
	b := bucket(tx, bRevoked)
	for _, k := range st.Keys {
		did := st.DIDOf(k)
		if v := b.Get(revokedKeyKey(did)); v != nil {
			st.RevokedKeys[did] = revocationOf(v, s.decoded)
		}
	}
}

// revocationOf decodes a revoked record (one that does not decode is a
// revocation everywhere), telling decoded (when set) of it.
func revocationOf(v []byte, decoded func(bucket string)) trust.Revocation {
	if decoded != nil {
		decoded(bRevoked)
	}
	var r revokedRecord
	if decode(v, &r) != nil {
		r = revokedRecord{} // unreadable: revoked everywhere
	}
	return trust.Revocation{StatementSHA256: r.StatementSHA256, At: r.At, Scopes: r.Scopes}
}

// txRecords is the trust.Records of a State loaded in the transaction tx:
// it reads a revoked version's record by its key, and the DID documents
// once, on the first bundle asked for (the dids bucket is keyed by DID, so
// one scan serves every bundle; one record that does not decode makes
// every bundle's DIDs unreadable, as the store cannot tell whose it is).
// decoded, when set, is told of each record it decodes (tests count them).
type txRecords struct {
	tx      *bolt.Tx
	decoded func(bucket string)

	dids    map[string][][2]string // by bundle id, once read
	didsErr error
	didsRun bool
}

// RevokedVersion implements trust.Records.
func (r *txRecords) RevokedVersion(v bundle.BundleVersion) (trust.Revocation, bool) {
	raw := bucket(r.tx, bRevoked).Get(revokedBundleKey(v.BundleID, v.Version))
	if raw == nil {
		return trust.Revocation{}, false
	}
	return revocationOf(raw, r.decoded), true
}

// RevokedKey implements trust.Records.
func (r *txRecords) RevokedKey(did string) (trust.Revocation, bool) {
	raw := bucket(r.tx, bRevoked).Get(revokedKeyKey(did))
	if raw == nil {
		return trust.Revocation{}, false
	}
	return revocationOf(raw, r.decoded), true
}

// BundleDIDs implements trust.Records.
func (r *txRecords) BundleDIDs(bundleID string) ([][2]string, error) {
	if !r.didsRun {
		r.didsRun, r.dids = true, map[string][][2]string{}
		r.didsErr = bucket(r.tx, bDIDs).ForEach(func(k, v []byte) error {
			if r.decoded != nil {
				r.decoded(bDIDs)
			}
			var dr didRecord
			if err := decode(v, &dr); err != nil {
				return fail(ErrStoreIO, "a DID record of the store does not decode").WithCause(err)
			}
			r.dids[dr.BundleID] = append(r.dids[dr.BundleID], [2]string{string(k), dr.ArtifactKey})
			return nil
		})
	}
	if r.didsErr != nil {
		return nil, r.didsErr
	}
	return r.dids[bundleID], nil
}

// loadLine reads the heartbeat, high-water mark and installed bundle of
// the line id; with strict, an installed record that does not decode is
// an error (else it is left out).
func loadLine(tx *bolt.Tx, st *trust.State, id string, strict bool) error {
	if raw := bucket(tx, bHeartbeat).Get([]byte(id)); raw != nil {
		var r heartbeatRecord
		h := trust.Heartbeat{Unreadable: decode(raw, &r) != nil}
		if !h.Unreadable {
			h = trust.Heartbeat{Version: r.Version, CreatedAt: r.CreatedAt, StatementSHA256: r.StatementSHA256, At: r.At, Signers: r.Signers,
				Threshold: r.Threshold, LineSHA256: r.LineSHA256, Charged: r.Charged}
		}
		st.Heartbeats[id] = h
		if d := bucket(tx, bStatements).Get(heartbeatDataKey(id)); d != nil {
			st.HeartbeatKept[id] = sha256sum(d)
		}
	}
	if hw := bucket(tx, bHighwater).Get([]byte(id)); hw != nil {
		n, err := highwaterOf(tx, id)
		if err != nil {
			return err
		}
		st.Highwater[id] = n
	}
	raw := bucket(tx, bBundles).Get([]byte(id))
	if raw == nil {
		return nil
	}
	var r bundleRecord
	if err := decode(raw, &r); err != nil {
		if strict {
			return err
		}
		st.Installed[id] = trust.Installed{BundleID: id} // no manifest: judged unreadable
		return nil
	}
	// decode copied Signed out of raw, which bbolt owns only while tx is
	// open (amp.Limits.Unmarshal fills a []byte with a copy): a clone of
	// it copied the signed manifest a second time (docs/SPEC-DECISIONS.md
	// TRUST-35).
	in := trust.Installed{BundleID: r.BundleID, Version: r.Version, Signed: r.Signed, Signers: r.SignerKeys, Revoked: r.Revoked}
	var err error
	if in.Floor, in.FloorKeys, err = pinnedFloor(tx, id, r.Version); err != nil {
		return err
	}
	st.Installed[id] = in
	return nil
}

// chainEnds returns, of the chain of scope, the statement at seq (when
// applied) and the last applied, in sequence order: two lookups, however
// long the chain.
func chainEnds(tx *bolt.Tx, scope string, seq uint64) []trust.ChainEntry {
	b, prefix := bucket(tx, bTrustChain), key2(scope, "")
	var out []trust.ChainEntry
	if v := b.Get(chainKey(scope, seq)); v != nil {
		out = append(out, trust.ChainEntry{Seq: seq, Data: clone(v)})
	}
	c := b.Cursor()
	var k, v []byte
	if k, _ = c.Seek(append([]byte(scope), 1)); k == nil { // the first key past the scope's
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		if len(k) != len(prefix)+8 {
			continue
		}
		if last := getU64(k[len(prefix):]); last != seq {
			out = append(out, trust.ChainEntry{Seq: last, Data: clone(v)})
		}
		break
	}
	return out
}

// putAll writes each entry of m into b, under key(k), as val(v).
func putAll[K comparable, V any](b *bolt.Bucket, m map[K]V, key func(K) []byte, val func(V) []byte) error {
	for k, v := range m {
		if err := b.Put(key(k), val(v)); err != nil {
			return err
		}
	}
	return nil
}

// deleteAll deletes the keys key(k) of ks from b.
func deleteAll[K any](b *bolt.Bucket, ks []K, key func(K) []byte) error {
	for _, k := range ks {
		if err := b.Delete(key(k)); err != nil {
			return err
		}
	}
	return nil
}

func bytesOf(s string) []byte { return []byte(s) }

// saveEffects writes the effects of a trust change inside tx, the
// transaction its state was loaded in.
func (s *Store) saveEffects(tx *bolt.Tx, e *trust.Effects, now time.Time) error {
	pb, rb, hb, sb := bucket(tx, bTrustPolicy), bucket(tx, bRevoked), bucket(tx, bHeartbeat), bucket(tx, bStatements)
	set := make(map[string]uint64, len(e.Thresholds))
	var ones []string
	for sc, n := range e.Thresholds {
		if n == 1 {
			ones = append(ones, sc)
		} else {
			set[sc] = n
		}
	}
	// The statement is charged first: refused, nothing is written.
	if err := s.chargeStatement(tx, e); err != nil {
		return err
	}
	copyOfKept := e.Statement != nil && !e.Changed && copyOfKeptStatement(sb, sha256sum(e.Statement), e.StatementID)
	// The writes run in this order (a name deleted and put again ends
	// put); the first error is returned and rolls the transaction back
	// whole, so the writes after it do not matter.
	for _, step := range []error{
		deleteAll(bucket(tx, bTrust), e.DeleteKeys, bytesOf),
		putAll(bucket(tx, bTrust), e.Keys, bytesOf, func(k trust.Key) []byte {
			return encode(trustRecord{Name: k.Name, Key: k.Key, Scopes: k.Scopes, AddedAt: k.AddedAt})
		}),
		putOrigins(bucket(tx, bMeta), e.Keys),
		deleteAll(pb, ones, bytesOf),
		putAll(pb, set, bytesOf, u64),
		putAll(rb, e.RevokeKeys, revokedKeyKey, func(r trust.Revocation) []byte {
			return encode(revokedRecord{StatementSHA256: r.StatementSHA256, At: r.At, Scopes: r.Scopes})
		}),
		putAll(rb, e.RevokeVersions, func(v bundle.BundleVersion) []byte { return revokedBundleKey(v.BundleID, v.Version) }, func(r trust.Revocation) []byte {
			return encode(revokedRecord{StatementSHA256: r.StatementSHA256, At: r.At})
		}),
		putAll(bucket(tx, bFreshness), e.Freshness, bytesOf, func(f trust.Freshness) []byte {
			return encode(freshnessRecord{MaxVersions: f.MaxVersions, MaxAgeSeconds: f.MaxAgeSeconds})
		}),
		failClosed(bucket(tx, bBundles), e.FailClosed),
		saveCharges(tx, e.Heartbeats, e.DeleteHeartbeats, s.lim.heartbeats),
		putAll(hb, e.Heartbeats, bytesOf, func(h trust.Heartbeat) []byte {
			return encode(heartbeatRecord{Version: h.Version, CreatedAt: h.CreatedAt, StatementSHA256: h.StatementSHA256, At: h.At, Signers: h.Signers,
				Threshold: h.Threshold, LineSHA256: h.LineSHA256, Charged: h.Charged})
		}),
		deleteAll(hb, e.DeleteHeartbeats, bytesOf),
		deleteAll(sb, e.DeleteHeartbeats, heartbeatDataKey),
		putAll(sb, e.HeartbeatData, heartbeatDataKey, bytes.Clone),
		saveFloors(tx, e),
	} {
		if step != nil {
			return step
		}
	}
	if e.Chain != nil {
		if err := bucket(tx, bTrustChain).Put(chainKey(e.Chain.Scope, e.Chain.Seq), e.Chain.Data); err != nil {
			return err
		}
	}
	if e.Statement != nil {
		if err := recordStatement(tx, e.Statement, sha256sum(e.Statement), e.StatementID); err != nil {
			return err
		}
	}
	if copyOfKept {
		// Nothing happened: the statement's first application was
		// audited. The copy is recorded so that sync does not download
		// it again (refusalrecord.go, StatementCopy).
		return recordStatementCopy(tx, sha256sum(e.Statement), now)
	}
	for _, ev := range e.Audit {
		if err := appendAudit(tx, now, auditEntry(ev, s.actor())); err != nil {
			return err
		}
	}
	return nil
}

// failClosed sets the reason why each installed bundle of reasons fails
// closed in its record.
func failClosed(bb *bolt.Bucket, reasons map[bundle.BundleVersion]string) error {
	for v, why := range reasons {
		var r bundleRecord
		if err := decode(bb.Get([]byte(v.BundleID)), &r); err != nil {
			return err
		}
		r.Revoked = why
		if err := bb.Put([]byte(v.BundleID), encode(r)); err != nil {
			return err
		}
	}
	return nil
}

// saveFloors writes raised time floors, the floors pinned for installed
// bundles and the keys trust rm removed or trusted again.
func saveFloors(tx *bolt.Tx, e *trust.Effects) error {
	meta := bucket(tx, bMeta)
	for _, step := range []error{
		putAll(meta, e.KeyFloors, keyFloorKey, func(f int64) []byte { return u64(uint64(f)) }),
		putBundleFloors(meta, e.BundleFloors),
		putAll(meta, e.RemovedKeys, removedKeyKey, bytesOf),
		deleteAll(meta, e.DeleteRemovedKeys, removedKeyKey),
	} {
		if step != nil {
			return step
		}
	}
	if e.TimeFloor != 0 {
		return meta.Put([]byte(kTimeFloor), u64(uint64(e.TimeFloor)))
	}
	return nil
}

// putBundleFloors writes the floors pinned for installed bundle versions
// (bundleFloorKey).
func putBundleFloors(meta *bolt.Bucket, floors map[bundle.BundleVersion]trust.Pin) error {
	for v, p := range floors {
		if p.Floor == 0 {
			if err := meta.Delete(bundleFloorKey(v.BundleID)); err != nil {
				return err
			}
			continue
		}
		val := append(u64(v.Version), u64(uint64(p.Floor))...)
		for _, did := range p.Keys {
			val = append(append(val, did...), '\n')
		}
		if err := meta.Put(bundleFloorKey(v.BundleID), val); err != nil {
			return err
		}
	}
	return nil
}

// auditEntry is the audit entry of a trust event, by actor.
func auditEntry(ev trust.Event, actor *Actor) AuditEntry {
	return AuditEntry{Action: ev.Action, Verdict: ev.Verdict, Actor: actor, TrustName: ev.TrustName, Key: ev.Key, Scopes: ev.Scopes,
		Threshold: ev.Threshold, BundleID: ev.BundleID, Version: ev.Version, Signers: ev.Signers, FileSHA256: ev.FileSHA256,
		RevokedKeys: ev.RevokedKeys, RevokedBundles: ev.RevokedBundles, Sequence: ev.Sequence, AddedKeys: ev.AddedKeys, RetiredKeys: ev.RetiredKeys}
}

// changeTrust runs one trust change under s.mu: it loads the state
// (sel) in a write transaction, calls change with it and the store's
// time, saves the effects there, and changes the generation when they
// say so. It returns the store's generation after.
func (s *Store) changeTrust(sel selection, change func(st *trust.State, now time.Time) (*trust.Effects, error)) (uint64, error) {
	var gen uint64
	var floor int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		// The heartbeat charges are counted before the state is read, so
		// that it reads the charge each kept record has (countCharges); a
		// store keeping none has none to count.
		if k, _ := bucket(tx, bHeartbeat).Cursor().First(); k != nil {
			if err := countCharges(tx); err != nil {
				return err
			}
		}
		st, err := s.loadState(tx, sel)
		if err != nil {
			return err
		}
		now := s.opts.Now()
		e, err := change(st, now)
		if err != nil {
			return err
		}
		if err := s.saveEffects(tx, e, now); err != nil {
			return err
		}
		floor = e.TimeFloor
		if e.Changed {
			gen, err = bumpGeneration(tx)
		}
		return err
	})
	if err != nil {
		return 0, amp.AsError(wrapTx(err))
	}
	if gen != 0 {
		s.gen.Store(gen)
	}
	if floor > s.floor.Load() {
		s.floor.Store(floor)
	}
	return s.gen.Load(), nil
}

// updateTrust is changeTrust for an operator's change: refused on a
// read-only store, serialized with every other write.
func (s *Store) updateTrust(sel selection, change func(st *trust.State, now time.Time) (*trust.Effects, error)) (uint64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changeTrust(sel, change)
}

// readState loads the trust state (sel) in a read transaction.
func (s *Store) readState(sel selection) (*trust.State, error) {
	var st *trust.State
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		st, err = s.loadState(tx, sel)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	st.Records = closedRecords{} // the transaction is gone
	return st, nil
}

// closedRecords are the Records of a State read in a transaction since
// closed (readState): nothing can be looked up any more, so every version
// counts as revoked and no bundle's DID documents can be read — fail
// closed. The decisions made on such a State (the policy, a floor) ask
// neither.
type closedRecords struct{}

// RevokedVersion implements trust.Records.
func (closedRecords) RevokedVersion(bundle.BundleVersion) (trust.Revocation, bool) {
	return trust.Revocation{}, true
}

// RevokedKey implements trust.Records.
func (closedRecords) RevokedKey(string) (trust.Revocation, bool) {
	return trust.Revocation{}, true
}

// BundleDIDs implements trust.Records.
func (closedRecords) BundleDIDs(string) ([][2]string, error) {
	return nil, fail(ErrStoreIO, "the trust state was read in a transaction since closed")
}

// applyStatement applies the signed statement data as apply decides,
// holding the store's write lock from before it is parsed: the state it
// loads is sel's (which may depend on the statement), and a refusal is
// audited as import_refused (beginStatement). It returns apply's result
// and the store's generation after.
func applyStatement[R interface{ Base() *trust.Effects }](s *Store, data []byte, sel func() (selection, error),
	apply func(*trust.State, []byte, time.Time) (*trust.State, R, error)) (r R, gen uint64, err error) {
	_, end, err := s.beginStatement(data)
	if err != nil {
		return r, 0, err
	}
	defer end(&err)
	if err := s.statementChargesCounted(); err != nil {
		return r, 0, err
	}
	which, err := sel()
	if err != nil {
		return r, 0, err
	}
	gen, err = s.changeTrust(which, func(st *trust.State, now time.Time) (*trust.Effects, error) {
		_, res, err := apply(st, data, now)
		if err != nil {
			return nil, err
		}
		r = res
		return res.Base(), nil
	})
	return r, gen, err
}

// revocationSel is the selection of a revocation: it may reach any installed
// bundle and reads no trust statement.
func revocationSel() (selection, error) { return selJudged, nil }

// chainOf returns the selection of the trust statement data: every
// installed bundle and, of its own scope's chain, the last statement and
// the one at its sequence (what a statement costs does not grow with any
// chain).
func chainOf(data []byte) func() (selection, error) {
	return func() (selection, error) {
		rot, _, err := bundle.ParseRotation(data)
		if err != nil {
			return selection{}, err
		}
		return selection{all: true, strict: true, chain: rot.Scope, chainSeq: rot.Sequence}, nil
	}
}
