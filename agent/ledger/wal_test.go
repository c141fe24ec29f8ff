package ledger

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

func replyFor(i int) []byte { return []byte(fmt.Sprintf("reply-%d-%s", i, strings.Repeat("x", i%50))) }

func openTestWAL(t *testing.T, path string, c *clock, opts WALOptions) *WALStore {
	t.Helper()
	opts.Now = c.Now
	s, err := OpenWAL(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// walHistory is a log written one operation (one group) at a time, with
// what had been acknowledged when the file had each size.
type walHistory struct {
	data    []byte // the log
	reserve int    // the zeros the writer left after it
	marks   []walMark
	keys    int
}

type walMark struct {
	size    int64
	running map[int]bool // Running acknowledged, no reply yet
	done    map[int]bool // reply acknowledged
}

func writeHistory(t *testing.T, c *clock) walHistory {
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c, WALOptions{})
	l, _ := New(s, Options{Now: c.Now})
	cur := walMark{size: s.FileSize(), running: map[int]bool{}, done: map[int]bool{}}
	h := walHistory{marks: []walMark{cur}, keys: 6}
	tickets := map[int]*Ticket{}
	// Running of k as +k, its reply as -k-1. Key 3 stays running (the
	// handler of a crashed process); key 5 is never written.
	for _, op := range []int{+0, +1, -1, +2, -2, -3, +3, +4, -5} {
		cur = walMark{running: map[int]bool{}, done: map[int]bool{}}
		for k := range h.marks[len(h.marks)-1].running {
			cur.running[k] = true
		}
		for k := range h.marks[len(h.marks)-1].done {
			cur.done[k] = true
		}
		if op >= 0 {
			st, err := l.Start("did:key:zCrash", id(op), c.Now().Add(time.Hour))
			if err != nil || st.State != Fresh {
				t.Fatal(st.State, err)
			}
			if err := st.Ticket.Running(); err != nil {
				t.Fatal(err)
			}
			tickets[op] = st.Ticket
			cur.running[op] = true
		} else {
			k := -op - 1
			if err := tickets[k].Finish(replyFor(k)); err != nil {
				t.Fatal(err)
			}
			delete(cur.running, k)
			cur.done[k] = true
		}
		cur.size = s.FileSize()
		h.marks = append(h.marks, cur)
	}
	s.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The log, then the writer's reserve: zeros only, at most 1 MiB
	// past the reservations of the entries running at once (at most 6).
	rsv := 6 * s.reservation(Key{Sender: "did:key:zCrash"})
	if int64(len(file)) < cur.size || int64(len(file)) > cur.size+rsv+walReserve+walGroupHeader+int64(len(replyFor(4)))+200 {
		t.Fatalf("file of %d bytes, store says %d", len(file), cur.size)
	}
	if bytes.ContainsFunc(file[cur.size:], func(r rune) bool { return r != 0 }) {
		t.Fatal("the bytes after the log are not zeros")
	}
	h.data, h.reserve = file[:cur.size], len(file)-int(cur.size)
	return h
}

// checkRecovered opens bytes as a log and checks that every key is in the
// state m acknowledged: a reply acknowledged is replayed byte for byte, a
// Running acknowledged is Lost (never Fresh: the handler must not run
// twice), anything else is Fresh.
func checkRecovered(t *testing.T, c *clock, path string, m walMark, keys int) {
	t.Helper()
	s, err := OpenWAL(path, WALOptions{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.FileSize() != m.size {
		t.Fatalf("recovered a log of %d bytes, want %d (the last acknowledged group's end)", s.FileSize(), m.size)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != m.size {
		t.Fatalf("the torn tail is still on disk: %v %v", fi.Size(), err)
	}
	l, _ := New(s, Options{Now: c.Now})
	for k := 0; k < keys; k++ {
		st, err := l.Start("did:key:zCrash", id(k), c.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		want := Fresh
		switch {
		case m.done[k]:
			want = Done
		case m.running[k]:
			want = Lost
		}
		if st.State != want {
			t.Fatalf("key %d: %s, want %s", k, st.State, want)
		}
		if want == Done && !bytes.Equal(st.Reply, replyFor(k)) {
			t.Fatalf("key %d replayed %q", k, st.Reply)
		}
		if st.Ticket != nil {
			st.Ticket.Abandon()
		}
	}
}

// TestWALCrashAtAnyByteKeepsWhatWasAcknowledged: a process killed while
// it appends leaves any prefix of the log on disk, followed by the zeros
// the writer reserved (or by nothing, when it died before reserving).
// Reopened at every byte (group boundaries and mid-record alike), the log
// recovers exactly what was acknowledged before the cut: replies replay
// byte for byte, a Running whose reply was not recorded is Lost (outcome
// unknown, never a second run), and the torn tail is truncated, not
// misread.
func TestWALCrashAtAnyByteKeepsWhatWasAcknowledged(t *testing.T) {
	c := newClock()
	h := writeHistory(t, c)
	path := filepath.Join(t.TempDir(), "cut.wal")
	// The header and key are written whole (a new file is renamed into
	// place once synced): every cut after them.
	for cut := walFileHeader; cut <= len(h.data); cut++ {
		m := h.marks[0]
		for _, mk := range h.marks {
			if mk.size <= int64(cut) {
				m = mk
			}
		}
		for _, zeros := range []int{0, 8 << 10} {
			if err := os.WriteFile(path, append(bytes.Clone(h.data[:cut]), make([]byte, zeros)...), 0o600); err != nil {
				t.Fatal(err)
			}
			want := m
			if zeros > 0 {
				// The reserve's zeros complete a group whose missing bytes
				// were zeros: it is on disk whole, and recovered (as after a
				// crash between its write and its sync's return).
				for _, mk := range h.marks {
					if mk.size > int64(cut) && !bytes.ContainsFunc(h.data[cut:mk.size], func(r rune) bool { return r != 0 }) {
						want = mk
					}
				}
			}
			t.Run(strconv.Itoa(cut)+"+"+strconv.Itoa(zeros), func(t *testing.T) { checkRecovered(t, c, path, want, h.keys) })
			if t.Failed() {
				return
			}
		}
	}
}

// TestWALDamageIsTornTailOrRefused: damage confined to the last group
// (a torn write, zeros the file system left, junk) is truncated; damage
// anywhere before an intact group fails the open with ledger_corrupt and
// leaves the file as it was.
func TestWALDamageIsTornTailOrRefused(t *testing.T) {
	c := newClock()
	h := writeHistory(t, c)
	last := h.marks[len(h.marks)-1]
	beforeLast := h.marks[len(h.marks)-2]
	flip := func(at int64) []byte {
		b := bytes.Clone(h.data)
		b[at] ^= 0x40
		return b
	}
	cases := []struct {
		name    string
		data    []byte
		corrupt bool
		want    walMark
	}{
		{"zeros after the last group", append(bytes.Clone(h.data), make([]byte, 4096)...), false, last},
		{"the writer's whole reserve after the last group", append(bytes.Clone(h.data), make([]byte, h.reserve)...), false, last},
		{"junk after the last group", append(bytes.Clone(h.data), []byte("\x00\x00\x00\x30junk that is no group")...), false, last},
		{"last group's payload damaged", flip(last.size - 3), false, beforeLast},
		{"last group's header damaged", flip(beforeLast.size + 5), false, beforeLast},
		{"first group's header damaged", flip(h.marks[0].size + 1), true, walMark{}},
		{"first group's payload damaged", flip(h.marks[0].size + walGroupHeader + 12), true, walMark{}},
		{"a middle group's checksum damaged", flip(h.marks[4].size + 13), true, walMark{}},
		{"a middle group dropped", append(bytes.Clone(h.data[:h.marks[3].size]), h.data[h.marks[4].size:]...), true, walMark{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.wal")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if !tc.corrupt {
				checkRecovered(t, c, path, tc.want, h.keys)
				return
			}
			_, err := OpenWAL(path, WALOptions{Now: c.Now})
			if amp.NameOf(err) != ErrLedgerCorrupt {
				t.Fatalf("open: %v, want ledger_corrupt", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tc.data) {
				t.Fatal("a refused file was changed")
			}
		})
	}
}

// TestWALRefusesWhatIsNotALog: a file of another kind (the bbolt ledger,
// an empty file) is refused, not overwritten.
func TestWALRefusesWhatIsNotALog(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	bolt := filepath.Join(dir, "bolt")
	writeBoltLedger(t, bolt, []boltRow{{Key{Sender: "did:key:zA", ID: id(1)}, Record{Expires: c.Now().Add(time.Hour), Reply: []byte("r")}}})
	boltBytes, _ := os.ReadFile(bolt)
	for name, data := range map[string][]byte{"bbolt ledger": boltBytes, "empty": {}, "other version": []byte("ampbundle-ledger-wal/2\n")} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.wal")
			os.WriteFile(path, data, 0o600)
			if _, err := OpenWAL(path, WALOptions{Now: c.Now}); amp.NameOf(err) != ErrLedgerIO {
				t.Fatalf("open: %v", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("the file was changed")
			}
		})
	}
}

// TestWALSecondOpenIsRefused: two agents sharing one log would both
// append; the second open fails while the first holds it, and succeeds
// once it is closed.
func TestWALSecondOpenIsRefused(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c, WALOptions{})
	_, err := OpenWAL(path, WALOptions{Now: c.Now, LockTimeout: 50 * time.Millisecond})
	if amp.NameOf(err) != ErrLedgerIO || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open: %v", err)
	}
	s.Close()
	s2 := openTestWAL(t, path, c, WALOptions{})
	s2.Close()
}

// TestWALSyncsOnceBeforeAcknowledgingEachGroup: the speed comes from
// sharing fdatasync, not from skipping it. While the first group's sync is
// held, 63 more writers queue; they form one second group: two syncs for
// 64 writes, and no write is visible or acknowledged before its sync.
func TestWALSyncsOnceBeforeAcknowledgingEachGroup(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	var syncs atomic.Int64
	entered, gate := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	var s *WALStore
	var visibleEarly atomic.Int64
	s, err := openWAL(path, WALOptions{Now: c.Now}, func(f *os.File) error {
		syncs.Add(1)
		if s != nil {
			// The held sync is key 0's group; any later one, 1..63's.
			from, to := 1, 64
			if hold.Load() {
				from, to = 0, 1
			}
			for i := from; i < to; i++ {
				if _, ok, _ := s.Lookup(Key{Sender: "did:key:zS", ID: id(i)}); ok {
					visibleEarly.Add(1)
				}
			}
		}
		if hold.CompareAndSwap(true, false) {
			close(entered)
			<-gate
		}
		return fdatasync(f)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := syncs.Load()
	hold.Store(true)
	var acked atomic.Int64
	var wg sync.WaitGroup
	write := func(i int) {
		defer wg.Done()
		if err := s.MarkRunning(Key{Sender: "did:key:zS", ID: id(i)}, c.Now().Add(time.Hour)); err != nil {
			t.Error(err)
			return
		}
		acked.Add(1)
	}
	wg.Add(1)
	go write(0)
	<-entered
	for i := 1; i < 64; i++ {
		wg.Add(1)
		go write(i)
	}
	for queued := 0; queued < 63; {
		time.Sleep(time.Millisecond)
		s.gc.mu.Lock()
		queued = len(s.gc.queue)
		s.gc.mu.Unlock()
	}
	if acked.Load() != 0 {
		t.Fatal("a write was acknowledged before its group was synced")
	}
	close(gate)
	wg.Wait()
	if n := syncs.Load() - base; n != 2 || s.groups.Load() != 2 {
		t.Fatalf("%d syncs and %d groups for 64 writes, want 2 and 2", n, s.groups.Load())
	}
	if visibleEarly.Load() != 0 {
		t.Fatalf("%d entries were visible before their group was synced", visibleEarly.Load())
	}
	if acked.Load() != 64 || s.Usage().Entries != 64 {
		t.Fatalf("%d acknowledged, %d entries", acked.Load(), s.Usage().Entries)
	}
}

// TestWALFailedSyncRefusesEverythingAfter: after a failed fdatasync the
// file's state is unknown; the write is refused (retryable), nothing is
// recorded in the index, and every later write is refused too until the
// log is opened again.
func TestWALFailedSyncRefusesEverythingAfter(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	var fail atomic.Bool
	s, err := openWAL(path, WALOptions{Now: c.Now}, func(f *os.File) error {
		if fail.Load() {
			return fmt.Errorf("injected: EIO")
		}
		return fdatasync(f)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fail.Store(true)
	k := Key{Sender: "did:key:zS", ID: id(1)}
	if err := s.MarkRunning(k, c.Now().Add(time.Hour)); amp.NameOf(err) != ErrLedgerIO || !amp.CodeOf(err).Retryable() {
		t.Fatalf("running with a failing sync: %v", err)
	}
	if _, ok, _ := s.Lookup(k); ok || s.Usage().Entries != 0 || s.Usage().Bytes != 0 {
		t.Fatalf("an unsynced write was recorded: %+v", s.Usage())
	}
	fail.Store(false)
	if err := s.MarkRunning(Key{Sender: "did:key:zS", ID: id(2)}, c.Now().Add(time.Hour)); amp.NameOf(err) != ErrLedgerIO {
		t.Fatalf("a write after a failed sync: %v", err)
	}
}

// TestWALCompactionUnderLoadKeepsEveryLiveEntry: 8 writers and a reader
// run while a small slack forces many compactions; every reply that was
// acknowledged and has not expired is found, during the load, after it and
// after a reopen; expired ones are dropped.
func TestWALCompactionUnderLoadKeepsEveryLiveEntry(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	opts := WALOptions{Slack: 16 << 10}
	s := openTestWAL(t, path, c, opts)
	l, _ := New(s, Options{Now: c.Now})
	const writers, each = 8, 150
	var finished sync.Map // key index -> struct{} once the reply is acknowledged
	var wg sync.WaitGroup
	var bad atomic.Int64
	stop := make(chan struct{})
	go func() { // reader: acknowledged long-lived replies stay readable
		for {
			select {
			case <-stop:
				return
			default:
			}
			finished.Range(func(k, _ any) bool {
				i := k.(int)
				rec, ok, err := s.Lookup(Key{Sender: fmt.Sprintf("did:key:z%d", i%writers), ID: id(i)})
				if err != nil || !ok || !bytes.Equal(rec.Reply, replyFor(i)) {
					bad.Add(1)
				}
				return true
			})
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := 0; j < each; j++ {
				i := j*writers + w
				ttl := time.Hour
				if i%2 == 1 {
					ttl = 100 * time.Millisecond // expires during the load: dead bytes
				}
				st, err := l.Start(fmt.Sprintf("did:key:z%d", w), id(i), c.Now().Add(ttl))
				if err != nil || st.State != Fresh {
					t.Error(st.State, err)
					return
				}
				if err := st.Ticket.Running(); err != nil {
					t.Error(err)
					return
				}
				if err := st.Ticket.Finish(replyFor(i)); err != nil {
					t.Error(err)
					return
				}
				c.Add(time.Millisecond)
				if i%2 == 0 {
					finished.Store(i, struct{}{})
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	if bad.Load() != 0 {
		t.Fatalf("%d lookups of live replies failed during compaction", bad.Load())
	}
	if s.compactions.Load() == 0 {
		t.Fatal("the load did not compact: the test proves nothing")
	}
	check := func(s *WALStore) {
		t.Helper()
		for i := 0; i < writers*each; i++ {
			rec, ok, err := s.Lookup(Key{Sender: fmt.Sprintf("did:key:z%d", i%writers), ID: id(i)})
			if i%2 == 0 && (err != nil || !ok || !bytes.Equal(rec.Reply, replyFor(i))) {
				t.Fatalf("live key %d: %v %v %q", i, ok, err, rec.Reply)
			}
		}
		if u := s.Usage(); u.Entries < writers*each/2 || u.Entries > writers*each/2+150 {
			t.Fatalf("%d entries live, want about %d", u.Entries, writers*each/2)
		}
		if lim := s.acct.lim.Budget + s.slack + 1<<10; s.FileSize() > lim {
			t.Fatalf("file of %d bytes over %d", s.FileSize(), lim)
		}
	}
	s.Sweep(c.Now(), 0)
	check(s)
	s.Close()
	s2 := openTestWAL(t, path, c, opts)
	defer s2.Close()
	check(s2)
}

// TestWALFileStaysWithinBudgetPlusSlack: a churn of many callers with
// mixed lifetimes against a small budget: the accounted bytes never pass
// the budget, refusals are the retryable ledger_full or
// caller_quota_exceeded, the log never passes Budget + Slack (+ the
// 23-byte file header and one group header), and the file on disk never
// passes that plus the writer's 1 MiB reserve of zeros.
func TestWALFileStaysWithinBudgetPlusSlack(t *testing.T) {
	c := newClock()
	lim := Limits{Budget: 96 << 10, PerCaller: 24 << 10}
	opts := WALOptions{Limits: lim, Slack: 12 << 10}
	s := openTestWAL(t, filepath.Join(t.TempDir(), "l.wal"), c, opts)
	defer s.Close()
	l, _ := New(s, Options{Now: c.Now})
	rng := rand.New(rand.NewPCG(1, 2))
	refused := map[amp.ErrName]int{}
	bound := lim.Budget + opts.Slack + int64(walFileHeader) + walGroupHeader
	for i := 0; i < 3000; i++ {
		c.Add(5 * time.Millisecond)
		ttl := time.Duration(1+rng.IntN(2000)) * time.Millisecond
		st, err := l.Start(fmt.Sprintf("did:key:z%02d", rng.IntN(12)), id(i), c.Now().Add(ttl))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Ticket.Running(); err != nil {
			if n := amp.NameOf(err); (n != ErrFull && n != ErrCallerFull) || !amp.CodeOf(err).Retryable() {
				t.Fatalf("refusal %v", err)
			}
			refused[amp.NameOf(err)]++
			st.Ticket.Abandon()
			continue
		}
		if err := st.Ticket.Finish(bytes.Repeat([]byte{3}, rng.IntN(3000))); err != nil {
			if n := amp.NameOf(err); n != ErrFull && n != ErrCallerFull {
				t.Fatal(err)
			}
			if err := st.Ticket.Finish([]byte("small")); err != nil {
				t.Fatalf("a reply within the reservation was refused: %v", err)
			}
		}
		if u := s.Usage(); u.Bytes > lim.Budget {
			t.Fatalf("accounted %d over the budget", u.Bytes)
		}
		if s.FileSize() > bound {
			t.Fatalf("op %d: log of %d bytes over %d", i, s.FileSize(), bound)
		}
		if fi, err := os.Stat(s.path); err != nil || fi.Size() > bound+walReserve {
			t.Fatalf("op %d: file of %d bytes over %d (%v)", i, fi.Size(), bound+walReserve, err)
		}
	}
	if refused[ErrFull]+refused[ErrCallerFull] == 0 || s.compactions.Load() == 0 {
		t.Fatalf("refused %v, %d compactions: the churn did not reach the limits", refused, s.compactions.Load())
	}
}

// TestWALKilledProcessNeverRunsTwice: a real process appending from 8
// goroutines is killed (SIGKILL) mid-load. Reopened, every key whose
// Running was acknowledged is Lost or Done, never Fresh (a second run),
// and every acknowledged reply replays byte for byte.
func TestWALKilledProcessNeverRunsTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "l.wal")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALHelperProcess$")
	cmd.Env = append(os.Environ(), "LEDGER_WAL_HELPER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running, done := map[int]bool{}, map[int]bool{}
	sc := bufio.NewScanner(out)
	for lines := 0; lines < 400 && sc.Scan(); lines++ {
		var kind string
		var i int
		if _, err := fmt.Sscanf(sc.Text(), "%s %d", &kind, &i); err != nil {
			continue
		}
		if kind == "R" {
			running[i] = true
		} else if kind == "D" {
			done[i] = true
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if len(done) == 0 {
		t.Fatal("the helper acknowledged nothing before it was killed")
	}
	c := newClock()
	s := openTestWAL(t, path, c, WALOptions{})
	defer s.Close()
	l, _ := New(s, Options{Now: c.Now})
	for i := range running {
		st, err := l.Start("did:key:zKill", id(i), c.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.State == Fresh:
			t.Fatalf("key %d was acknowledged running and is fresh again: it would run twice", i)
		case done[i] && (st.State != Done || !bytes.Equal(st.Reply, replyFor(i))):
			t.Fatalf("key %d: acknowledged reply lost (%s %q)", i, st.State, st.Reply)
		}
		if st.Ticket != nil {
			st.Ticket.Abandon()
		}
	}
}

// TestWALHelperProcess is the process TestWALKilledProcessNeverRunsTwice
// kills; it does nothing in a normal run.
func TestWALHelperProcess(t *testing.T) {
	path := os.Getenv("LEDGER_WAL_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	c := newClock()
	s := openTestWAL(t, path, c, WALOptions{Slack: 8 << 10})
	l, _ := New(s, Options{Now: c.Now})
	var mu sync.Mutex
	say := func(kind string, i int) {
		mu.Lock()
		fmt.Printf("%s %d\n", kind, i)
		mu.Unlock()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := int(next.Add(1))
				st, err := l.Start("did:key:zKill", id(i), c.Now().Add(time.Hour))
				if err != nil || st.Ticket.Running() != nil {
					return
				}
				say("R", i)
				if st.Ticket.Finish(replyFor(i)) != nil {
					return
				}
				say("D", i)
			}
		}()
	}
	wg.Wait()
}
