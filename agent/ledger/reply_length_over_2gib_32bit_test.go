package ledger

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// zeroReader reads as endless zeros.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRecordClaimingAReplyOver2GiBIsRefusedOn32BitSystems: a done record
// may claim a reply of up to 4 GiB - 1 (its length is a uint32). The
// scanner kept that length, and the reply's offset in its payload, in an
// int, which on GOARCH=386 and arm (the project cross-builds them) is 32
// bits: a length of 2 GiB or more read as negative, so the open's check
// of a reply over maxReply or one caller's share (AGENT-42) passed it,
// and the entry kept the length as a uint32 again: the first Lookup of
// it asked make for gigabytes (a panic on those systems), and a retry of
// the message got no answer. What should happen (docs/SPEC-DECISIONS.md
// AGENT-49): the length is read as the number the file holds on every
// system, and the open refuses such a record (ledger_corrupt), as it
// does on 64-bit systems. (Before the change this fails only under
// GOARCH=386 or arm.)
func TestRecordClaimingAReplyOver2GiBIsRefusedOn32BitSystems(t *testing.T) {
	k := Key{Sender: "did:key:zBig", ID: id(1)}
	for _, rlen := range []int64{1 << 31, 1<<32 - 1} {
		rec, _ := appendWALRecord(nil, stateDone, k, t0.Add(time.Hour).UnixMilli(), nil)
		binary.BigEndian.PutUint32(rec[len(rec)-4:], uint32(rlen))
		n := int64(len(rec)) + rlen
		r := io.MultiReader(bytes.NewReader(rec), io.LimitReader(zeroReader{}, rlen))
		var sc walScanner
		recs, err := sc.records(r, n, nil, nil)
		if err != nil || len(recs) != 1 {
			t.Fatalf("a record of a %d-byte reply: %d records, %v", rlen, len(recs), err)
		}
		if got := int64(recs[0].replyLen); got != rlen {
			t.Fatalf("a %d-byte reply read as %d bytes", rlen, got)
		}
		s := &WALStore{acct: newAccounts(Limits{}), m: map[Key]walEntry{}}
		if err := s.index(recs, 0, int64(walGroupHeader), 0); amp.NameOf(err) != ErrLedgerCorrupt {
			t.Fatalf("a record of a %d-byte reply indexed: %v, want %s", rlen, err, ErrLedgerCorrupt)
		}
		if len(s.m) != 0 {
			t.Fatalf("a record of a %d-byte reply was kept", rlen)
		}
	}
}
