package resolver

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// cosignedByNobody is st with one more signature, by a key of seed n that
// no store trusts: bundle.CosignStatement, which anyone can run. Unknown
// kids are ignored by verification (FORMAT.md §2), so the copy verifies
// as st does, but its bytes differ.
func cosignedByNobody(t *testing.T, st []byte, n byte) []byte {
	t.Helper()
	out, err := bundle.CosignStatement(st, testKeyN(n))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCopiesOfAStatementReSignedByAnyoneAreNotChargedToItsAuthority
// (review 10, finding 1): acme signs one revocation R. Anyone who has R (a
// mirror lists it) co-signs it with throwaway keys nobody trusts: each
// copy is a new file whose only trusted signer is acme. Kept and charged
// by its bytes, the copies spent acme's whole share (TRUST-18) with no
// key, and acme's next genuine revocation was refused
// statement_share_exhausted for good. A statement is its payload
// (TRUST-19): the copies are R, kept and charged once; acme's next
// revocation applies.
func TestCopiesOfAStatementReSignedByAnyoneAreNotChargedToItsAuthority(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 3, 100)
	acme := sampleKey(t, "acme-publisher")
	r := strangerRevocationOf(t, "com.acme", 70, acme)
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := s.ApplyRevocation(cosignedByNobody(t, r, byte(200+i)))
		if err != nil || !res.Unchanged {
			t.Fatalf("copy %d of an applied revocation: %+v %v, want unchanged", i+1, res, err)
		}
	}
	if n := statementChargeOf(t, s, acme); n != 1 {
		t.Errorf("acme is charged %d kept statements after signing one: copies re-signed by keys nobody trusts were charged to it", n)
	}
	if n := keptStatements(t, s); n != 1 {
		t.Errorf("%d statements kept, want 1: copies of one statement were kept", n)
	}
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 71, acme)); err != nil {
		t.Fatalf("acme's second genuine revocation was refused after a third party replayed copies of its first: %v", err)
	}
}

// TestAStatementWithItsSignaturesReorderedIsNotKeptAgain (review 10,
// finding 2): a statement co-signed by acme and other is re-emitted with
// its two COSE_Signatures swapped. The decoder checks each item's
// encoding, not the kid order CosignStatement writes (FORMAT.md §2 does
// not require it: TRUST-19), so the swapped copy decodes and verifies
// with the same signers. It is the same payload: unchanged, not kept, not
// charged.
func TestAStatementWithItsSignaturesReorderedIsNotKeptAgain(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 10, 100)
	acme := sampleKey(t, "acme-publisher")
	other := testKeyN(210)
	if err := s.TrustAdd("other", pub(other), []string{"com.acme"}); err != nil {
		t.Fatal(err)
	}
	r := strangerRevocationOf(t, "com.acme", 72, acme, other)
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	before, charged := keptStatements(t, s), statementChargeOf(t, s, acme)+statementChargeOf(t, s, other)
	swapped := swapSignatures(t, r)
	if bytes.Equal(swapped, r) {
		t.Fatal("test setup: swapping did not change the bytes")
	}
	res, err := s.ApplyRevocation(swapped)
	if err != nil || !res.Unchanged {
		t.Fatalf("the statement with its signatures reordered: %+v %v, want unchanged", res, err)
	}
	if n := keptStatements(t, s); n != before {
		t.Fatalf("the same statement with its signatures reordered was kept again (%d -> %d)", before, n)
	}
	if n := statementChargeOf(t, s, acme) + statementChargeOf(t, s, other); n != charged {
		t.Fatalf("the same statement with its signatures reordered was charged again (%d -> %d)", charged, n)
	}
}

// TestCopiesKeptBeforeThisBuildAreChargedOnce: a store written by a build
// that told statements by their bytes keeps R and two copies of it
// re-signed by keys nobody trusts, all three charged to acme, and no
// identity index. Its next statement counts the kept ones again, once
// per payload: acme is charged 1, and a fourth copy is not kept.
func TestCopiesKeptBeforeThisBuildAreChargedOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(p, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	lowerStatementLimits(s, 3, 100)
	acme := sampleKey(t, "acme-publisher")
	if err := s.TrustAdd("acme", pub(acme), []string{"com.acme"}); err != nil {
		t.Fatal(err)
	}
	r := strangerRevocationOf(t, "com.acme", 73, acme)
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	// As the build before left it: the copies kept by their bytes, acme
	// charged 3, no identity index, both markers written.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for i := range 2 {
			cp := cosignedByNobody(t, r, byte(230+i))
			if err := recordStatement(tx, cp, sha256sum(cp), nil); err != nil {
				return err
			}
		}
		sb, meta := bucket(tx, bStatements), bucket(tx, bMeta)
		if err := deletePrefix(sb, []byte{'p'}); err != nil {
			return err
		}
		if err := meta.Delete([]byte(kStatementIDsIndexed)); err != nil {
			return err
		}
		return meta.Put(statementChargeKey(didOfPriv(acme)), u64(3))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(p, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lowerStatementLimits(s, 3, 100)
	if n := keptStatements(t, s); n != 3 {
		t.Fatalf("%d statements listed, want the 3 kept", n)
	}
	if _, err := s.ApplyRevocation(cosignedByNobody(t, r, 240)); err != nil {
		t.Fatal(err)
	}
	if n := keptStatements(t, s); n != 3 {
		t.Fatalf("%d statements kept after a fourth copy, want 3", n)
	}
	if n := statementChargeOf(t, s, acme); n != 1 {
		t.Fatalf("acme charged %d after the recount, want 1: copies kept before were charged again", n)
	}
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 74, acme)); err != nil {
		t.Fatalf("acme's next revocation after the recount: %v", err)
	}
}

// TestACopyWithAForgedCoSignatureIsNotTheFileAStoreRelays: a store keeps
// one file per statement, the first it applies (TRUST-19), and its
// mirror relays that file. A copy of acme's revocation R carrying a
// signature under the kid of a key this store does not trust (z), whose
// bytes are forged, verifies here (z is ignored) but is refused as
// tampered at every store that trusts z. Applied first and kept, it
// would be the only file of R this store relays. It is refused
// (bad_signature), and R, applied after, is the file kept.
func TestACopyWithAForgedCoSignatureIsNotTheFileAStoreRelays(t *testing.T) {
	s := newStore(t)
	acme, z := sampleKey(t, "acme-publisher"), testKeyN(250)
	r := strangerRevocationOf(t, "com.acme", 75, acme)
	forged := cosignedByNobody(t, r, 250)
	obj, err := bundle.DecodeObject(forged, bundle.MediaTypeRevocation)
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range obj.Signatures {
		if sg.KID == didOfPriv(z) {
			i := bytes.Index(forged, sg.Sig)
			if i < 0 {
				t.Fatal("test setup: z's signature not found")
			}
			forged[i] ^= 1
		}
	}
	if bytes.Equal(forged, cosignedByNobody(t, r, 250)) {
		t.Fatal("test setup: nothing was forged")
	}
	_, err = s.ApplyRevocation(forged)
	expectName(t, err, bundle.ErrBadSignature)
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	sts, err := s.Statements()
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || !bytes.Equal(sts[0].Data, r) {
		t.Fatalf("the store keeps %d statements, want R itself", len(sts))
	}
}

// swapSignatures returns st (a COSE_Sign with two signatures) with its
// signatures in the other order, each item as it was.
func swapSignatures(t *testing.T, st []byte) []byte {
	t.Helper()
	// COSE_Sign: tag 98 (0xd8 0x62), array of 4 (0x84), protected bstr,
	// unprotected {} (0xa0), payload bstr, array of signatures.
	if len(st) < 3 || st[0] != 0xd8 || st[1] != 0x62 || st[2] != 0x84 {
		t.Fatal("not a COSE_Sign")
	}
	p := 3
	p = skipItem(t, st, p) // protected
	p = skipItem(t, st, p) // unprotected
	p = skipItem(t, st, p) // payload
	if st[p] != 0x82 {
		t.Fatalf("want two signatures, header byte %#x", st[p])
	}
	a0 := p + 1
	a1 := skipItem(t, st, a0)
	end := skipItem(t, st, a1)
	out := append([]byte{}, st[:a0]...)
	out = append(out, st[a1:end]...)
	out = append(out, st[a0:a1]...)
	return append(out, st[end:]...)
}

// skipItem returns the offset after the CBOR item at p (definite lengths
// only: deterministic CBOR).
func skipItem(t *testing.T, b []byte, p int) int {
	t.Helper()
	major, info := b[p]>>5, b[p]&0x1f
	p++
	var n uint64
	switch {
	case info < 24:
		n = uint64(info)
	case info == 24:
		n = uint64(b[p])
		p++
	case info == 25:
		n = uint64(b[p])<<8 | uint64(b[p+1])
		p += 2
	case info == 26:
		n = uint64(b[p])<<24 | uint64(b[p+1])<<16 | uint64(b[p+2])<<8 | uint64(b[p+3])
		p += 4
	default:
		t.Fatalf("unexpected cbor header %#x", b[p-1])
	}
	switch major {
	case 0, 1:
		return p
	case 2, 3:
		return p + int(n)
	case 4:
		for range n {
			p = skipItem(t, b, p)
		}
		return p
	case 5:
		for range 2 * n {
			p = skipItem(t, b, p)
		}
		return p
	case 6:
		return skipItem(t, b, p)
	}
	t.Fatalf("unexpected cbor major type %d", major)
	return p
}
