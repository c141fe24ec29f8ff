package resolver

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestAuditSnapshotIsOneMomentAndAnUndecodableEntryIsItsVerdict: the
// snapshot the admin socket answers (docs/SPEC-DECISIONS.md ADMIN-3)
// gives the number of entries, the head and the verdict of one read; its
// head is the one AuditHead gives and AuditFirst gives the same entries
// as Audit's first ones. An entry that does not decode is the snapshot's
// verdict (audit_broken, as VerifyAudit says) when the entries are not
// asked for, where a count by decoding the log failed the whole answer;
// asked for, the read fails as Audit fails.
func TestAuditSnapshotIsOneMomentAndAnUndecodableEntryIsItsVerdict(t *testing.T) {
	s := storeAt(t)
	defer s.Close()
	all, err := s.Audit()
	if err != nil || len(all) < 2 {
		t.Fatalf("precondition: a store with an audit log: %d %v", len(all), err)
	}
	snap, err := s.AuditSnapshot(false)
	if err != nil || snap.Verdict != nil || snap.Entries != nil || snap.Count != uint64(len(all)) {
		t.Fatalf("snapshot without entries: %+v %v; want %d entries counted, a sound chain", snap, err, len(all))
	}
	if head, _ := s.AuditHead(); !bytes.Equal(head, snap.Head) {
		t.Fatalf("snapshot head %x, AuditHead %x", snap.Head, head)
	}
	first, err := s.AuditFirst(1)
	if err != nil || len(first) != 1 || first[0].Seq != all[0].Seq {
		t.Fatalf("AuditFirst(1): %v %v", first, err)
	}
	if more, err := s.AuditFirst(1 << 62); err != nil || len(more) != len(all) {
		t.Fatalf("AuditFirst past the log: %d entries, %v; want its %d", len(more), err, len(all))
	}

	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bAudit).Put(u64(1), []byte{0xff})
	}); err != nil {
		t.Fatal(err)
	}
	snap, err = s.AuditSnapshot(false)
	if err != nil || snap.Count != uint64(len(all)) {
		t.Fatalf("snapshot of a log with an undecodable entry: %+v %v", snap, err)
	}
	expectName(t, snap.Verdict, ErrAuditBroken)
	expectName(t, s.VerifyAudit(), ErrAuditBroken)
	if _, err := s.AuditSnapshot(true); err == nil {
		t.Fatal("snapshot with the entries of a log with an undecodable entry: no error")
	}
}
