package resolver

import (
	"crypto/sha256"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestVerifyingALongAuditChainKeepsNothingPerEntry: VerifyAudit (run by
// check, by the admin socket's audit head at every catalog refresh, and
// before every receipt) kept the prev and the hash of every entry of the
// log until the walk ended, to judge the first broken link afterwards:
// some 100 bytes live per entry, and about 260 allocated with the slice's
// growth (a log of a million entries: 100 MB held to answer "the chain
// holds"). The chain is now judged as the log is walked, from the last
// three links: the verification allocates what decoding, re-encoding and
// hashing each entry allocates, and nothing per entry beyond it.
func TestVerifyingALongAuditChainKeepsNothingPerEntry(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	const n = 20000
	s := newStore(t)
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for range n {
			e := AuditEntry{Action: "import_refused", Verdict: "rollback", FileSHA256: make([]byte, sha256.Size), Actor: &Actor{UID: 1000, Host: "airgap-1"}}
			if err := appendAudit(tx, testNow, e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	verify := testalloc.Least(func() {
		if err := s.VerifyAudit(); err != nil {
			t.Fatal(err)
		}
	})
	// What every verification must do for each entry, and nothing else.
	walk := testalloc.Least(func() {
		_ = s.db.View(func(tx *bolt.Tx) error {
			return bucket(tx, bAudit).ForEach(func(_, v []byte) error {
				var e AuditEntry
				if err := decode(v, &e); err != nil {
					return err
				}
				_ = encode(e)
				_ = sha256.Sum256(v)
				return nil
			})
		})
	})
	count, err := s.AuditCount()
	if err != nil || count < n {
		t.Fatalf("precondition: a log of %d entries: %d %v", n, count, err)
	}
	if bound := walk + 16*count + 64<<10; verify > bound {
		t.Fatalf("verifying %d entries allocated %d bytes, %d beyond decoding, re-encoding and hashing them (%d): %.0f bytes an entry for the chain",
			count, verify, verify-walk, walk, float64(verify-walk)/float64(count))
	}
}

// TestAuditChainVerdictsNameTheSameEntryWhateverTheLogsLength: judging the
// chain from a window of three links as the log is walked names the entry,
// and gives the reason, that judging the whole chain at once names
// (firstBadLink over every link, as VerifyAudit did): one or two entries
// altered in place or with their prev edited, and the head edited, at the
// start, in the middle and at the end of logs of one to seven entries.
func TestAuditChainVerdictsNameTheSameEntryWhateverTheLogsLength(t *testing.T) {
	type edit func(links []auditLink, head *[]byte, at int)
	inPlace := func(l []auditLink, _ *[]byte, at int) { l[at].sum[0] ^= 1 }
	prevEdited := func(l []auditLink, _ *[]byte, at int) { l[at].prev, l[at].sum[1] = []byte("edited"), l[at].sum[1]^1 }
	headEdited := func(_ []auditLink, h *[]byte, _ int) { *h = []byte("edited") }
	edits := map[string]edit{"in place": inPlace, "prev": prevEdited, "head": headEdited}
	for n := 1; n <= 7; n++ {
		for a := 0; a < n; a++ {
			for b := a; b < n; b++ {
				for na, ea := range edits {
					for nb, eb := range edits {
						if na == nb && a == b {
							continue // the same edit twice undoes itself
						}
						links := make([]auditLink, n)
						prev := make([]byte, sha256.Size)
						for i := range links {
							links[i] = auditLink{prev: prev, sum: sha256.Sum256([]byte{byte(i)})}
							sum := links[i].sum
							prev = sum[:]
						}
						head := prev
						ea(links, &head, a)
						eb(links, &head, b)
						want, wantMsg := firstBadLink(links, head, true, true, n)
						var w auditWindow
						got, msg := 0, ""
						for _, l := range links {
							if got, msg = w.push(l); got > 0 {
								break
							}
						}
						if got == 0 {
							got, msg = w.end(head, true)
						}
						if got != want || msg != wantMsg || want == 0 {
							t.Errorf("%d entries, %s at %d and %s at %d: entry %d %q, the whole chain names entry %d %q", n, na, a+1, nb, b+1, got, msg, want, wantMsg)
						}
					}
				}
			}
		}
	}
}
