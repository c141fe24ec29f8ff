package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// fakeGroup is a group as a caller could write it inside a reply: a
// running record for k, with every checksum right, in the format f (a
// version 1 group, or a version 2 group under a key the caller guessed).
func fakeGroup(f *walFormat, k Key, expires int64, seq uint64) []byte {
	g, _ := appendWALRecord(make([]byte, f.headerSize()), stateRunning, k, expires, nil)
	f.putGroupHeader(g, seq)
	return g
}

// TestCallerBytesInAReplyCannotPassForAGroup: a caller whose reply holds
// well-formed groups (checksums right: one without a tag as version 1
// had, one under a guessed key) gets that reply recorded; a power cut then
// tears the group holding the reply after those bytes reached the disk.
// Reopened, the log must see a torn tail and truncate it (the reply was
// never acknowledged: the entry is running, an outcome unknown), never a
// damaged file with intact groups after it (threat: any caller able to
// stop the agent from starting again after a power cut, ledger_corrupt).
func TestCallerBytesInAReplyCannotPassForAGroup(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c, WALOptions{})
	victim := Key{Sender: "did:key:z6MkCaller", ID: [16]byte{9}}
	expires := c.Now().Add(time.Hour)
	if err := s.MarkRunning(victim, expires); err != nil {
		t.Fatal(err)
	}
	before := s.FileSize()
	other := Key{Sender: "did:key:z6MkOther", ID: [16]byte{7}}
	var reply []byte
	reply = append(reply, "result: "...)
	for seq := uint64(0); seq < 4; seq++ {
		reply = append(reply, fakeGroup(newWALFormat(nil), other, expires.UnixMilli(), seq)...)
		reply = append(reply, fakeGroup(newWALFormat(bytes.Repeat([]byte{byte(seq)}, walKeySize)), other, expires.UnixMilli(), seq)...)
	}
	fakesEnd := len(reply)
	reply = append(reply, bytes.Repeat([]byte("tail of the reply "), 8)...)
	if err := s.Finish(victim, reply); err != nil {
		t.Fatal(err)
	}
	s.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The group holding the reply starts at before: its header, the
	// record's fixed part and sender, then the reply. Cut after the fake
	// groups, and leave the reserve's zeros after the cut.
	replyAt := int(before) + walGroupHeader + walRecordFixed + len(victim.Sender)
	if !bytes.Equal(file[replyAt:replyAt+len(reply)], reply) {
		t.Fatal("the reply is not where the test expects it")
	}
	cut := replyAt + fakesEnd + 5
	torn := append(append([]byte{}, file[:cut]...), make([]byte, 4096)...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = OpenWAL(path, WALOptions{Now: c.Now})
	if err != nil {
		t.Fatalf("a torn group holding a caller's bytes: open failed: %v", err)
	}
	defer s.Close()
	rec, ok, err := s.Lookup(victim)
	if err != nil || !ok || rec.Reply != nil {
		t.Fatalf("the victim's entry after the cut: %+v %v %v, want running (outcome unknown)", rec, ok, err)
	}
	if _, ok, _ := s.Lookup(other); ok {
		t.Fatal("a record from inside a reply was read as the log's")
	}
	if s.FileSize() != before {
		t.Fatalf("size %d after recovery, want %d (the torn group truncated)", s.FileSize(), before)
	}
}

// TestVersion1LedgerIsReadThenRewrittenWithAKey: a log written by an
// agent before group keys (version 1) opens with every entry, and is
// rewritten at once as version 2 with a key drawn from the store's
// randomness, which then reopens the same (threat: an upgrade losing the
// idempotency records of invocations still retryable, so that a retry ran
// a handler a second time).
func TestVersion1LedgerIsReadThenRewrittenWithAKey(t *testing.T) {
	c := newClock()
	expires := c.Now().Add(time.Hour).UnixMilli()
	v1 := newWALFormat(nil)
	running := Key{Sender: "did:key:z6MkA", ID: [16]byte{1}}
	done := Key{Sender: "did:key:z6MkB", ID: [16]byte{2}}
	g1, _ := appendWALRecord(make([]byte, walGroupHeaderV1), stateRunning, running, expires, nil)
	v1.putGroupHeader(g1, 1)
	g2, _ := appendWALRecord(make([]byte, walGroupHeaderV1), stateDone, done, expires, []byte("the reply"))
	v1.putGroupHeader(g2, 2)
	path := filepath.Join(t.TempDir(), "l.wal")
	if err := os.WriteFile(path, append(append([]byte(walFormatV1), g1...), g2...), 0o600); err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte{0x42}, walKeySize)
	check := func(s *WALStore) {
		t.Helper()
		if rec, ok, _ := s.Lookup(running); !ok || rec.Reply != nil {
			t.Fatalf("running entry: %+v %v", rec, ok)
		}
		if rec, ok, _ := s.Lookup(done); !ok || string(rec.Reply) != "the reply" {
			t.Fatalf("done entry: %+v %v", rec, ok)
		}
	}
	s, err := OpenWAL(path, WALOptions{Now: c.Now, Rand: bytes.NewReader(key)})
	if err != nil {
		t.Fatal(err)
	}
	check(s)
	s.Close()
	file, _ := os.ReadFile(path)
	if !bytes.HasPrefix(file, append([]byte(WALFormatID), key...)) {
		t.Fatalf("the log was not rewritten as version 2 with the drawn key: %q", file[:min(len(file), walFileHeader)])
	}
	s, err = OpenWAL(path, WALOptions{Now: c.Now, Rand: bytes.NewReader(nil)})
	if err != nil {
		t.Fatalf("reopening the rewritten log: %v", err)
	}
	check(s)
	s.Close()
}

// TestDamagedKeyIsRefusedNotTruncated: a bit flipped in the file's group
// key makes every group's tag fail; read as damage of the last group
// only, the whole log would be truncated as a torn tail and acknowledged
// replies lost, so that their retries ran handlers a second time. The
// key's checksum catches it: the open fails with ledger_corrupt and the
// file is left as it was; so it does when the first line is damaged into
// version 1's, which has no key.
func TestDamagedKeyIsRefusedNotTruncated(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c, WALOptions{})
	k := Key{Sender: "did:key:z6MkCaller", ID: [16]byte{3}}
	if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, []byte("the acknowledged reply")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len(WALFormatID), len(WALFormatID) + walKeySize - 1, walFileHeader - 1, -1} {
		damaged := append([]byte{}, file...)
		if at < 0 {
			// The first line damaged into version 1's ("/2" → "/1"):
			// its groups would all read as torn.
			at = len(WALFormatID) - 2
			damaged[at] = '1'
		} else {
			damaged[at] ^= 0x10
		}
		if err := os.WriteFile(path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenWAL(path, WALOptions{Now: c.Now}); amp.NameOf(err) != ErrLedgerCorrupt {
			t.Fatalf("a bit flipped at byte %d of the header: %v, want %s", at, err, ErrLedgerCorrupt)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
			t.Fatalf("a refused open changed the file (byte %d flipped)", at)
		}
	}
}
