package resolver

import (
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCheckNamesADamagedTrustRecord: attack (or a torn write): one record
// of the trust bucket that does not decode. loadState returns its decode
// error, so the trust state cannot be read: every trust change and
// heartbeat is refused, and judgedFloor gives every bundle whose expiry
// time_floor passed the largest floor (judged expired). TSTATE-6 accepts
// that outage only because check names the value; checkMetaValues looked
// at floors, charges, thresholds, high-water marks and the audit
// sequence, never at the trust records, so Check reported nothing. It
// now reports the record (kind "meta", naming its key).
func TestCheckNamesADamagedTrustRecord(t *testing.T) {
	s := storeAt(t)
	mustImport(t, s, variant(t, 1, nil))
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bTrust).Put([]byte("torn\xff"), []byte{0xff}) }); err != nil {
		t.Fatal(err)
	}
	// Precondition: the damage stops the trust state from being read.
	err := s.TrustAdd("late", pub(testKeyN(96)), []string{"org.late"})
	if err == nil {
		t.Fatal("test setup: a trust change succeeded over an undecodable trust record")
	}
	ps, cerr := s.Check()
	if cerr != nil {
		t.Fatal(cerr)
	}
	for _, p := range ps {
		if p.Kind == "meta" && strings.Contains(p.Message, `"torn\xff"`) {
			return
		}
	}
	t.Fatalf("a trust record that does not decode refuses every trust change (%v) and judges floor-expired bundles by the largest floor, "+
		"but ampbundle check reports %+v: want kind meta naming the record's key, quoted (TSTATE-6 says check names it)", err, ps)
}
