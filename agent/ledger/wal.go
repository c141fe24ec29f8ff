package ledger

import (
	"bufio"
	"cmp"
	"container/heap"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// ErrLedgerCorrupt: the ledger file is damaged before its last group (not
// a torn write of the last group, which is truncated on open); the
// operator must decide (5002).
const ErrLedgerCorrupt amp.ErrName = "ledger_corrupt"

// WALOptions configures OpenWAL.
type WALOptions struct {
	Limits
	// Now is the clock for reclaiming expired entries (required). An
	// entry is reclaimed once its expiry has passed on Now and as much
	// time as it had left when it was written (or when the log was
	// opened) has elapsed on Elapsed, so that a wall clock stepped
	// forward and back never reclaims an entry early (docs/SPEC-DECISIONS.md
	// AGENT-18), and no sooner than its message's expiry less its ts
	// (Ledger.StartSent), which a clock already ahead when it was
	// written cannot shorten (AGENT-29). On open, an entry expired on Now but not at the file's
	// modification time (its last write) is set aside, not dropped
	// (AGENT-22); while such entries remain, the log's modification time
	// is kept on the clock they are judged by (AGENT-27).
	Now func() time.Time
	// Elapsed is the time elapsed on a clock that is never stepped, from
	// any origin (default: the monotonic readings of Now's times, which
	// time.Now carries; with times that carry none, such as
	// time.Now().UTC()'s, Now's wall time, and no protection).
	Elapsed func() time.Duration
	// LockTimeout bounds the wait for the file lock (default 1 s).
	LockTimeout time.Duration
	// Slack is how many bytes of dead records (superseded or expired) the
	// file may hold before it is compacted (default max(Budget/8, 1 MiB)).
	// The file never exceeds Budget + Slack + 71 bytes of log, plus the
	// zeros the writer keeps after it: every running entry's reservation
	// and 1 MiB (docs/FORMAT.md). (On a full disk a compaction that cannot
	// be written is put off, and the log grows past the slack meanwhile.)
	Slack int64
	// Rand is the source of each file's group key (default crypto/rand).
	Rand io.Reader
	// Room, when set, is asked before the log takes more of the disk: with
	// the bytes about to be added (zeros extending the file, a compaction's
	// new file), before they are written. An error is handled exactly as
	// the same error from the write itself (syscall.ENOSPC: the disk is
	// full). It is the seam through which tests simulate a full disk; nil
	// leaves the decision to the file system alone.
	Room func(add int64) error

	// readFile, when set (by this package's tests only), is what the open
	// reads the log through, given the file: the seam through which tests
	// fail a read (a bad sector) where they choose.
	readFile func(*os.File) io.ReaderAt
}

// WALStore is a durable Store: an append-only write-ahead log in a file
// of its own (by convention the registry's file name + ".ledger.wal"),
// with an in-memory index rebuilt by replaying the log on open.
//
// Writes go through a leader-based group committer: the first writer to
// find no commit running appends everything queued as one checksummed
// group and calls fdatasync once for it; writers arriving meanwhile wait
// and form the next group. When the dead records in the file exceed the
// slack, the leader first rewrites the live entries into a new file and
// renames it over the old one. A separate lock file (path + ".lock",
// flock) keeps a second process out.
type WALStore struct {
	path string
	lock *os.File
	// realLock is the lock at the name a link given as the log's name
	// leads to (followLink), held beside lock; lockTimeout is how long
	// either is waited for.
	realLock    *os.File
	lockTimeout time.Duration
	acct        *accounts
	now         func() time.Time
	// base and elapsed measure the time elapsed since the log was opened
	// (since); elapsed0 is elapsed's reading then.
	base     time.Time
	elapsed  func() time.Duration
	elapsed0 time.Duration
	slack    int64
	sync     func(*os.File) error // fdatasync; replaced by tests to count
	// fsync makes the file durable whole, its times included (fdatasync
	// need not flush a change of times alone): keepLastWrite's sync.
	// Replaced by tests to model what each sync leaves after a crash.
	fsync   func(*os.File) error
	syncDir func(string) error // a directory's sync after a rename; replaced by tests to fail
	rand    io.Reader
	room    func(add int64) error // WALOptions.Room
	// readFile is WALOptions.readFile (nil: the open reads the file).
	readFile func(*os.File) io.ReaderAt

	// idx guards the index, the file handle and its size: Lookup reads
	// them shared; the leader changes them exclusively.
	idx   sync.RWMutex
	f     *os.File
	size  int64      // the end of the last group
	alloc int64      // the file's length: size plus the zero reserve after it
	wf    *walFormat // the file's format and key
	seq   uint64     // the last group's sequence number
	m     map[Key]walEntry
	exp   expiryHeap
	// wait holds the entries expired on the wall clock whose lifetime has
	// not elapsed (a clock stepped forward), ordered by walEntry.after
	// (in expiryItem.expires): reclaim takes them aside so that they hold
	// up no other entry.
	wait expiryHeap
	// spare holds the entries the wall clock already called expired when
	// the log was opened but which had time left after the log's last
	// write (a clock ahead at boot, or a real downtime: nothing tells the
	// two apart), ordered by walEntry.after: charged to no quota, counted
	// in Usage (spareBytes, spareN), reclaimed once that time has elapsed
	// or, oldest first, whenever the budget needs their room (AGENT-22).
	spare      expiryHeap
	spareBytes int64
	spareN     int
	// ref is the wall time (Unix ms) the open set entries aside by: the
	// log's last write, or the open's clock if earlier (AGENT-22).
	ref int64
	// asideN counts the entries set aside at open still in the index
	// (walEntry.aside, spare or not): while there are any, each group
	// stamps the log with its time on ref's clock (stampLastWrite).
	asideN   int
	liveDisk int64 // bytes of the live entries' records
	broken   error // a failed fdatasync: the file's state is unknown

	// The leader's alone (changed only in run, apply and compact): the
	// disk reserved for the reply of each entry this process marked
	// running and has not finished, and their sum. The file always holds
	// at least reserved zero bytes after the log (alloc >= size +
	// reserved), so recording a reply within its reservation never needs
	// the file to grow.
	resv     map[Key]int64
	reserved int64
	// compactAfter: a compaction that could not be written (a full disk)
	// is not tried again before the log reaches this size.
	compactAfter int64

	gc *groupCommit[*walOp]
	// scratch holds the leader's reused buffers.
	scratch struct {
		group  []byte
		at     []int
		writes []*walOp
	}

	groups, compactions atomic.Int64
}

type walEntry struct {
	expires int64 // Unix ms
	// after is the elapsed time (since, ms) before which the entry is not
	// reclaimed, whatever Now says: its expiry less the wall time when it
	// was written (or the log opened), or the hold its message gave it
	// (its expiry less its ts, AGENT-29) when that is longer, counted from
	// the elapsed time then.
	after int64
	off   int64 // file offset of the reply (done)
	// n is the reply's length (done), or the reservation of the reply
	// (running: MarkRunningWithin's; 0 for an entry an earlier process
	// left running, see reserve).
	n    uint32
	done bool
	// spare: set aside at open (WALStore.spare), charged to no quota.
	spare bool
	// aside: set aside at open, spare or since finished (asideN).
	aside bool
}

// reserve is the reservation of a running entry's reply. An entry an
// earlier process left running (its record does not carry the
// reservation it had) has MinReplyReserve: its one reply is the Lost
// ticket's outcome_unknown answer, a small error result, which always
// fits. Charged the default reservation instead, such entries of a
// capability with a small largest result would count up to 256 times
// what they did before a restart, past their caller's share and the
// budget (AGENT-24).
func (e walEntry) reserve() int64 {
	if e.n == 0 {
		return MinReplyReserve
	}
	return int64(e.n)
}

func (e walEntry) disk(k Key) int64 {
	if !e.done {
		return walRecordSize(k.Sender, 0)
	}
	return walRecordSize(k.Sender, int(e.n))
}

// OpenWAL opens or creates the write-ahead log ledger at path. A torn last
// group (a crash during its write) is truncated; damage before it fails
// with ErrLedgerCorrupt, and so does a reply larger than one caller's
// share (AGENT-42). A read the file system fails, a file that is not
// regular, and (on unix) a file another user than the process's or root
// owns, or that group or others may write, fail with ErrLedgerIO, the
// file unchanged (docs/SPEC-DECISIONS.md AGENT-40, AGENT-41); so do such
// a lock file, or one reached through a link (AGENT-43), and (on unix)
// a folder another user owns or that group or others may write without
// the sticky bit, before anything is made in it (AGENT-44), or a folder
// below one (AGENT-48). A log whose name is a link is compacted where the
// link leads (AGENT-45).
func OpenWAL(path string, opts WALOptions) (*WALStore, error) {
	return openWAL(path, opts, fdatasync)
}

func openWAL(path string, opts WALOptions, syncFn func(*os.File) error) (*WALStore, error) {
	return openWALSyncs(path, opts, syncFn, (*os.File).Sync)
}

// openWALSyncs is openWAL with the fsync of the open's own writes
// (keepLastWrite) given too.
func openWALSyncs(path string, opts WALOptions, syncFn, fsyncFn func(*os.File) error) (*WALStore, error) {
	if opts.Now == nil {
		return nil, amp.Named(0, "misconfigured", "the ledger needs a clock")
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	s := &WALStore{path: path, acct: newAccounts(opts.Limits), now: opts.Now, sync: syncFn, fsync: fsyncFn, rand: opts.Rand, room: opts.Room,
		m: map[Key]walEntry{}, resv: map[Key]int64{}, elapsed: opts.Elapsed, syncDir: regfile.SyncDir, readFile: opts.readFile,
		lockTimeout: opts.LockTimeout}
	s.slack = opts.Slack
	if s.slack <= 0 {
		s.slack = max(s.acct.lim.Budget/8, 1<<20)
	}
	s.gc = newGroupCommit(takeWALGroup, s.run)
	lock, err := lockFile(path+".lock", opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if err := s.load(); err != nil {
		if s.f != nil {
			s.f.Close()
		}
		if s.realLock != nil {
			unlockFile(s.realLock)
		}
		unlockFile(lock)
		return nil, err
	}
	return s, nil
}

func walIOError(msg string, err error) *amp.Error {
	return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "%s", msg).WithCause(err)
}

// openLog opens the log file into s.f (creating an empty log where there
// is none) and returns its fstat. Before anything is written, a name that
// leads to something other than a regular file is refused without being
// opened (a device's driver never runs), and the file opened is refused
// when another user may write it (logWriters, AGENT-41).
func (s *WALStore) openLog() (os.FileInfo, error) {
	if st, err := os.Stat(s.path); err == nil && !st.Mode().IsRegular() {
		return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is not a regular file (%s)", st.Mode().Type())
	}
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if err := s.create(s.path); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(s.path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, walIOError("cannot open the ledger file", err)
	}
	s.f = f
	st, err := f.Stat()
	if err != nil {
		return nil, walIOError("cannot open the ledger file", err)
	}
	if !st.Mode().IsRegular() {
		return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is not a regular file (%s)", st.Mode().Type())
	}
	if err := logWriters(st, "the ledger file"); err != nil {
		return nil, err
	}
	if err := s.followLink(st); err != nil {
		return nil, err
	}
	// The lock on the file itself, after the locks by name (their
	// order in every agent: no two wait on each other): another name
	// of this file took another lock file (AGENT-50).
	if err := lockLog(f, s.lockTimeout); err != nil {
		return nil, err
	}
	os.Remove(s.path + ".compact") // a compaction that did not finish
	return st, nil
}

// followLink makes s.path the name a link given as the log's name leads
// to (st: the opened log's fstat), so that a compaction writes its new
// file beside the log and renames it over the log itself: over the link,
// it replaced the link with a file in the link's folder, and left the file
// the operator keeps (on another disk, say) without any group written
// since, to be read again if the link is made again (docs/SPEC-DECISIONS.md
// AGENT-45). That name's folder is judged as the link's is (logFolder),
// and it must lead to the file opened. The lock at that name is taken
// too, beside the one at the link's: an agent given the file's own name
// takes only that one, and the two, each locking its own name, both ran
// the same log, so a message's handler could run once in each
// (AGENT-45 amended).
func (s *WALStore) followLink(st os.FileInfo) error {
	if li, err := os.Lstat(s.path); err != nil || li.Mode()&os.ModeSymlink == 0 {
		return nil // opened by its own name (a failed look: the open's)
	}
	real, err := filepath.EvalSymlinks(s.path)
	if err != nil {
		return walIOError("cannot follow the link to the ledger file", err)
	}
	if err := logFolder(filepath.Dir(real)); err != nil {
		return err
	}
	if ri, err := os.Stat(real); err != nil || !os.SameFile(ri, st) {
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the link to the ledger file was changed while it was opened; start again")
	}
	lock, err := lockFile(real+".lock", s.lockTimeout)
	if err != nil {
		return err
	}
	s.realLock, s.path = lock, real
	return nil
}

// load opens (or creates) the file and replays it into the index.
func (s *WALStore) load() error {
	st, err := s.openLog()
	if err != nil {
		return err
	}
	f := s.f
	// ref is the latest wall time the log itself recorded: the file's
	// mtime, stamped by the kernel from the same wall clock at its last
	// write (older after a crash, never newer). An entry expired on the
	// wall clock now but not at ref may still be live if the clock is
	// ahead; it is set aside (AGENT-22). A clock behind the stamp (ref
	// after now) keeps today's rule: what expired by now is dropped.
	now := s.now().UnixMilli()
	ref := min(st.ModTime().UnixMilli(), now)
	s.ref = ref
	var rd io.ReaderAt = f
	if s.readFile != nil {
		rd = s.readFile(f)
	}
	end, err := s.replay(rd, st.Size(), ref)
	if err != nil {
		return err
	}
	if end < st.Size() { // a torn last group: never acknowledged, drop it
		// (or the writer's reserve of zeros, which every log has)
		if err := f.Truncate(end); err != nil {
			return walIOError("cannot truncate the ledger file's torn tail", err)
		}
		if err := s.keepLastWrite(st.ModTime()); err != nil {
			return err
		}
	}
	s.size, s.alloc = end, end
	if s.wf.key == nil {
		// A version 1 file: rewritten at once as version 2 (with a key).
		if err := s.compact(); err != nil {
			return err
		}
		if err := s.keepLastWrite(st.ModTime()); err != nil {
			return err
		}
	}
	s.base = s.now()
	if s.elapsed != nil {
		s.elapsed0 = s.elapsed()
	}
	now = s.base.UnixMilli()
	// Every entry replay kept expires at ref or later (it drops the
	// records expired before it as it reads them).
	for k, e := range s.m {
		switch {
		case e.expires < now:
			// Its time left after the log's last write, counted from
			// now on the clock that is never stepped.
			e.spare, e.aside, e.after = true, true, e.expires-ref
			s.asideN++
			s.spareBytes += e.cost(k)
			s.spareN++
			s.spare = append(s.spare, expiryItem{e.after, k})
		default:
			e.after = afterOf(0, e.expires, now)
			s.acct.charge(k.Sender, e.cost(k), true)
			s.exp = append(s.exp, expiryItem{e.expires, k})
		}
		s.m[k] = e
		s.liveDisk += e.disk(k)
	}
	heap.Init(&s.exp)
	heap.Init(&s.spare)
	return nil
}

// keepLastWrite gives the log back mtime, the time of its last write,
// after a write of the open's own, which records nothing (a torn tail or
// the writer's reserve truncated, a version 1 file rewritten), and makes
// that time durable before the open returns. Stamped with the open's
// clock instead, the log would tell the next open that the entries set
// aside by this one (AGENT-22) had expired at its last write, and a
// second restart before the wall clock came back would drop them
// (docs/SPEC-DECISIONS.md AGENT-27). The sync is an fsync: fdatasync
// flushes the data and what reading it back needs (the size), and need
// not flush a change of the file's times alone, so after a crash the
// truncation's stamp, from the clock that may be ahead, could be what the
// disk holds. One fsync per open that wrote, never per group.
func (s *WALStore) keepLastWrite(mtime time.Time) error {
	if err := os.Chtimes(s.path, time.Time{}, mtime); err != nil {
		return walIOError("cannot keep the ledger file's time of last write", err)
	}
	if err := s.fsync(s.f); err != nil {
		return walIOError("cannot sync the ledger file", err)
	}
	return nil
}

// cost is what the entry counts in the accounts (as recordCost).
func (e walEntry) cost(k Key) int64 {
	if !e.done {
		return entryCost(k, e.reserve())
	}
	return entryCost(k, int64(e.n))
}

// newFileHeader returns the header of a new file (with a new key) and its
// format.
func (s *WALStore) newFileHeader() ([]byte, *walFormat, error) {
	h := make([]byte, walFileHeader)
	copy(h, WALFormatID)
	key := h[len(WALFormatID) : len(WALFormatID)+walKeySize]
	if _, err := io.ReadFull(s.rand, key); err != nil {
		return nil, nil, err
	}
	binary.BigEndian.PutUint32(h[walFileHeader-4:], walKeyCRC(h))
	return h, newWALFormat(key), nil
}

// newTemp creates the temporary file at path that will be renamed over
// the log: a new file, mode 0600, never one already there (O_EXCL: not a
// file another user made in a shared folder, which would become the log
// and stay theirs to write, nor the target of a link planted there, which
// would be truncated; AGENT-41). The caller removes a stale one first.
// The file is locked (tryLockLog) before it can take the log's name, so
// that an agent given another name of the log finds the new file held
// once a compaction has renamed it over the log (lockLog, AGENT-50); it
// was made just now, so no one else holds it.
func newTemp(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if held, err := tryLockLog(f); err != nil || held {
		f.Close()
		os.Remove(path)
		return nil, cmp.Or(err, errors.New("the new file is locked by another process"))
	}
	return f, nil
}

// create writes an empty log at path atomically (header only).
func (s *WALStore) create(path string) error {
	h, _, err := s.newFileHeader()
	if err != nil {
		return walIOError("cannot create the ledger file: no randomness for its key", err)
	}
	tmp := path + ".compact"
	os.Remove(tmp) // left by a crash; never opened whatever it is (newTemp)
	f, err := newTemp(tmp)
	if err != nil {
		return walIOError("cannot create the ledger file", err)
	}
	_, err = f.Write(h)
	if err == nil {
		err = s.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = s.syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return walIOError("cannot create the ledger file", err)
	}
	return nil
}

// replay reads the log into s.m and returns the end of its last intact
// group. Records expired before cutoff (Unix ms) are dropped; a reply
// over one caller's share fails it (index, AGENT-42). A read the
// file system fails (an I/O error, not bytes that do not check) fails the
// open with ErrLedgerIO: what the unread bytes hold is unknown, so they
// are neither truncated as a torn tail nor judged damaged
// (docs/SPEC-DECISIONS.md AGENT-40).
func (s *WALStore) replay(f io.ReaderAt, size, cutoff int64) (int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<16)
	head := make([]byte, walFileHeader)
	_, err := io.ReadFull(r, head[:len(WALFormatID)])
	switch {
	case err == nil && string(head[:len(WALFormatID)]) == walFormatV1:
		// A version 2 header whose line was damaged into version 1's (two
		// bits of one byte) would read as a log of torn groups and be
		// truncated: its key's checksum still checks against the version 2
		// line, so it is refused instead.
		n, rerr := f.ReadAt(head, 0)
		if n == len(head) {
			rerr = nil // all read: an io.EOF with it says no more
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			// A read error is no damage (AGENT-40): a version 2 header the
			// device fails to read must not be taken for version 1's.
			return 0, readFault(0, rerr)
		}
		if rerr == nil && walHeaderChecks(head) {
			return 0, amp.Named(amp.CodeUnavailable, ErrLedgerCorrupt,
				"the ledger file's first line is damaged (it reads version 1 before a version 2 key); move it aside only if no invocation it records may be retried")
		}
		s.wf = newWALFormat(nil)
	case err == nil && string(head[:len(WALFormatID)]) == WALFormatID:
		if _, err = io.ReadFull(r, head[len(WALFormatID):]); err == nil {
			if !walHeaderChecks(head) {
				// Every group's tag depends on the key: a damaged key
				// would make the whole log look like a torn tail, and
				// truncating it would lose acknowledged records.
				return 0, amp.Named(amp.CodeUnavailable, ErrLedgerCorrupt,
					"the ledger file's header (its group key) is damaged; move it aside only if no invocation it records may be retried")
			}
			s.wf = newWALFormat(head[len(WALFormatID) : len(WALFormatID)+walKeySize])
		}
	default:
		err = errors.New("unknown header")
	}
	if err != nil {
		return 0, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is not a write-ahead log ledger (%q)", WALFormatID[:len(WALFormatID)-1])
	}
	off := int64(s.wf.fileHeaderSize())
	first := true
	hs := s.wf.headerSize()
	gh := make([]byte, hs)
	// Entries expired at cutoff are dropped as they are read (the last
	// record of a key decides, so dropping early changes nothing), and
	// the index holds no more entries than the budget could account for
	// (each costs at least entryCost of a 1-byte sender and no reply),
	// plus the dead records the slack lets the log keep before it is
	// compacted (each at least a running record of a 1-byte sender):
	// entries the writer reclaimed read as unexpired again when the wall
	// clock at open is behind their expiry. A log under the same budget
	// and slack never holds more (AGENT-20, AGENT-21): cutoff is at most
	// the wall time of its last write, when its live entries fitted.
	// (The dead bytes may reach slack + walFileHeader: 2 records more
	// than slack/32, and no sum a large Slack could overflow.)
	maxEntries := s.acct.lim.Budget/entryCost(Key{Sender: "x"}, 0) +
		s.slack/walRecordSize("x", 0) + 2
	overBudget := func() error {
		return amp.Named(amp.CodeUnavailable, ErrLedgerCorrupt,
			"the ledger file holds more unexpired entries than its budget (%d bytes) and slack (%d bytes) can account for (at most %d); it is not this agent's log, or the budget was lowered: raise it, or move the file aside only if no invocation it records may be retried", s.acct.lim.Budget, s.slack, maxEntries)
	}
	// One group holds at most maxGroup records (a commit) or one per
	// entry of the index (a compaction).
	sc := walScanner{max: int(min(max(maxEntries, maxGroup), 1<<31-1))}
	var recs []walRecord
	for off < size {
		var n uint32
		var seq uint64
		var crc uint32
		_, err := io.ReadFull(r, gh)
		if err == nil {
			n, seq, crc, err = s.wf.parseGroupHeader(gh)
		}
		if err == nil && int64(n) > size-off-int64(hs) {
			err = io.ErrUnexpectedEOF
		}
		if err == nil && !first && seq != s.seq+1 {
			err = fmt.Errorf("%w %d after %d", errWALSeq, seq, s.seq)
		}
		if err == nil {
			recs, err = sc.payload(r, int64(n), crc, recs)
		}
		if errors.Is(err, errWALTooMany) {
			return 0, overBudget()
		}
		if unreadable(err) {
			return 0, readFault(off, err)
		}
		if err != nil {
			return off, s.tornOrCorrupt(f, off, size, sc.max, err)
		}
		base := off + int64(hs)
		err = s.index(recs, off, base, cutoff)
		clear(recs) // their senders are not kept alive by the buffer
		if err != nil {
			return 0, err
		}
		if int64(len(s.m)) > maxEntries {
			return 0, overBudget()
		}
		s.seq, first = seq, false
		off = base + int64(n)
	}
	return off, nil
}

// index applies the records of the intact group at off, whose payload
// starts at base, to s.m. Records expired before cutoff (Unix ms) are
// dropped. A done record kept whose entry would cost more than one
// caller's share (Limits.PerCaller), or whose reply is over maxReply,
// fails the open (ErrLedgerCorrupt): no writer under these limits records
// one (a reply fits its reservation, which fits the share), and every
// Lookup of it, and a compaction, would allocate the whole reply
// (docs/SPEC-DECISIONS.md AGENT-42).
func (s *WALStore) index(recs []walRecord, off, base, cutoff int64) error {
	for _, rec := range recs {
		if rec.expires < cutoff {
			delete(s.m, rec.key)
			continue
		}
		e := walEntry{expires: rec.expires, done: rec.typ == stateDone}
		if e.done {
			if n := rec.replyLen; n > maxReply || entryCost(rec.key, n) > s.acct.lim.PerCaller {
				return amp.Named(amp.CodeUnavailable, ErrLedgerCorrupt,
					"the ledger file records a reply of %d bytes (in the group at byte %d), more than one caller's share (%d bytes) can hold; it is not this agent's log, or the share was lowered: raise it, or move the file aside only if no invocation it records may be retried", n, off, s.acct.lim.PerCaller)
			}
			e.off, e.n = base+rec.replyAt, uint32(rec.replyLen)
		}
		s.m[rec.key] = e
	}
	return nil
}

// unreadable reports whether err, met reading the log, is the file
// system's (an I/O error) rather than bytes that do not check: a length,
// checksum, tag, sequence number or record that is wrong, or the end of
// the file within a group.
func unreadable(err error) bool {
	if err == nil {
		return false
	}
	for _, damage := range []error{io.EOF, io.ErrUnexpectedEOF, errWALHeader, errWALPayload, errWALRecord, errWALSeq, errWALTooMany} {
		if errors.Is(err, damage) {
			return false
		}
	}
	return true
}

// readFault is the refusal of a log the open could not read at or after
// byte off: nothing is truncated or changed (AGENT-40).
func readFault(off int64, err error) error {
	return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
		"cannot read the ledger file after byte %d (nothing was changed); check the disk, then start again", off).WithCause(err)
}

// tornOrCorrupt decides what an unreadable group at off is. If no intact
// group follows it, it is the torn tail of a write that was never
// acknowledged (nil: the caller truncates). If one does, records that
// were acknowledged lie beyond the damage: the open fails. A candidate
// group of more than maxRecs records counts as intact (it is not read:
// the file is refused, never truncated). So does a read the file system
// fails (readFault): an intact group could lie in what it could not read.
//
// The candidates' payloads are read within a budget of twice the bytes
// searched: the payloads of a log's own groups behind the damage never
// overlap, so they take at most once that. Groups without a tag (version
// 1) can be written by a caller inside a reply, each claiming the rest
// of the file, and read one by one they made the search quadratic in the
// file's length; a candidate that cannot be judged within the budget
// fails the open (ErrLedgerCorrupt), nothing truncated
// (docs/SPEC-DECISIONS.md AGENT-46).
func (s *WALStore) tornOrCorrupt(f io.ReaderAt, off, size int64, maxRecs int, cause error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(f, off+1, size-off-1), 1<<16)
	var win []byte
	buf := make([]byte, 1<<16)
	sc := walScanner{max: maxRecs}
	var pr *bufio.Reader
	pos := off + 1 // file offset of win[0]
	left := 2 * (size - off)
	for {
		n, err := r.Read(buf)
		win = append(win, buf[:n]...)
		hs := s.wf.headerSize()
		for len(win) >= hs {
			if plen, _, crc, herr := s.wf.parseGroupHeader(win); herr == nil && int64(plen) <= size-pos-int64(hs) {
				// Streamed: a candidate header claiming gigabytes
				// allocates nothing ahead (AGENT-20).
				cut := int64(plen) > left
				sr := io.NewSectionReader(f, pos+int64(hs), min(int64(plen), left))
				if pr == nil {
					pr = bufio.NewReaderSize(sr, 1<<16)
				} else {
					pr.Reset(sr)
				}
				_, perr := sc.payload(pr, int64(plen), crc, nil)
				read, _ := sr.Seek(0, io.SeekCurrent) // what the search read of it
				left -= read
				switch {
				case perr == nil || errors.Is(perr, errWALTooMany):
					return amp.Named(amp.CodeUnavailable, ErrLedgerCorrupt,
						"the ledger file is damaged at byte %d (%v) and intact records follow at byte %d; move it aside only if no invocation it records may be retried", off, cause, pos)
				case unreadable(perr):
					return readFault(pos, perr)
				case cut && (errors.Is(perr, io.ErrUnexpectedEOF) || errors.Is(perr, io.EOF)):
					// Cut short by the budget: what follows cannot be told
					// torn or intact.
					return amp.Named(amp.CodeUnavailable, ErrLedgerCorrupt,
						"the ledger file is damaged at byte %d (%v), and the groups that seem to follow it claim more bytes than the search for intact ones reads (%d); move it aside only if no invocation it records may be retried", off, cause, 2*(size-off))
				}
			}
			win, pos = win[1:], pos+1
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return readFault(pos, err)
		}
		win = append(win[:0:0], win...) // keep the window small
	}
}

// Lookup implements Store.
func (s *WALStore) Lookup(k Key) (Record, bool, error) {
	s.idx.RLock()
	defer s.idx.RUnlock()
	e, ok := s.m[k]
	if !ok {
		return Record{}, false, nil
	}
	rec := Record{Expires: time.UnixMilli(e.expires)}
	if e.done {
		rec.Reply = make([]byte, e.n)
		if _, err := s.f.ReadAt(rec.Reply, e.off); err != nil {
			return Record{}, false, walIOError("the idempotency ledger is unavailable", err)
		}
	}
	return rec, true, nil
}

// MarkRunning implements Store.
func (s *WALStore) MarkRunning(k Key, expires time.Time) error {
	return s.MarkRunningWithin(k, expires, 0)
}

// Limits implements ReservingStore.
func (s *WALStore) Limits() Limits { return s.acct.lim }

// MarkRunningWithin implements ReservingStore: the reservation is charged
// to the quotas, and set aside on disk, before the running record is
// written.
func (s *WALStore) MarkRunningWithin(k Key, expires time.Time, reserve int64) error {
	return s.markRunningHeld(k, expires, reserve, 0)
}

// markRunningHeld implements holdingStore: MarkRunningWithin, and the
// entry is not reclaimed before hold has elapsed since its write on the
// clock that is never stepped, whatever the wall clock says (AGENT-29).
func (s *WALStore) markRunningHeld(k Key, expires time.Time, reserve int64, hold time.Duration) error {
	if len(k.Sender) == 0 || len(k.Sender) > maxWALSender {
		return amp.Named(amp.CodeInternalError, ErrLedgerIO, "the sender cannot be recorded in the ledger")
	}
	s.idx.RLock()
	_, exists := s.m[k]
	s.idx.RUnlock()
	if exists {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry already exists")
	}
	reserve = s.acct.lim.reserveOf(reserve)
	cost := entryCost(k, reserve)
	if err := s.acct.reserve(k.Sender, cost, true); err != nil {
		return err
	}
	op := &walOp{kind: stateRunning, k: k, expires: expires.UnixMilli(), within: reserve, hold: max(hold.Milliseconds(), 0)}
	if err := s.commit(op); err != nil {
		s.acct.release(k.Sender, cost)
		return err
	}
	return nil
}

// Finish implements Store.
func (s *WALStore) Finish(k Key, reply []byte) error {
	if int64(len(reply)) > maxReply {
		return amp.Named(amp.CodeOverloaded, ErrReplyTooLarge, "the reply is too large for the idempotency ledger")
	}
	s.idx.RLock()
	e, ok := s.m[k]
	s.idx.RUnlock()
	if !ok {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry is not running")
	}
	cost := entryCost(k, int64(len(reply)))
	if err := overReserve(cost-e.cost(k), e.reserve()); err != nil {
		return err
	}
	// The refund of what of the reservation the reply does not use is
	// made when the record is applied, to the entry it replaces (apply):
	// made before, it would be counted twice if the leader reclaimed the
	// entry meanwhile, and every reservation of the caller checked in
	// between could pass its share by it (AGENT-23).
	op := &walOp{kind: stateDone, k: k, expires: e.expires, reply: reply}
	if e.spare {
		// Set aside at open, charged to no quota (AGENT-22): the entry
		// becomes an ordinary one, its reply charged in full, within
		// the quotas like a new entry.
		op.delta, op.spare = cost, true
		if err := s.acct.reserve(k.Sender, op.delta, true); err != nil {
			return err
		}
	}
	if err := s.commit(op); err != nil {
		if op.spare {
			s.acct.release(k.Sender, op.delta)
		}
		return err
	}
	if op.gone {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry is not running")
	}
	return nil
}

// Sweep implements Store. It runs in the commit pipeline, like every
// change of the index.
func (s *WALStore) Sweep(now time.Time, max int) (int, error) {
	if max <= 0 {
		max = 1 << 30
	}
	op := &walOp{kind: opSweep, expires: now.UnixMilli(), max: max}
	err := s.commit(op)
	return op.swept, err
}

// releaseReservation implements reservationReleaser: k's ticket ended
// without a reply. It runs in the commit pipeline, which alone changes the
// reservations.
func (s *WALStore) releaseReservation(k Key) {
	s.commit(&walOp{kind: opRelease, k: k})
}

// since is the time elapsed since the log was opened, at wall (Now's time)
// in milliseconds, rounded down: Elapsed's, or wall's monotonic reading
// (its wall time when it has none).
func (s *WALStore) since(wall time.Time) int64 {
	d := wall.Sub(s.base)
	if s.elapsed != nil {
		d = s.elapsed() - s.elapsed0
	}
	ms := d.Milliseconds()
	if d < 0 && d%time.Millisecond != 0 {
		ms--
	}
	return ms
}

// afterOf is walEntry.after of an entry expiring at expires written at
// now (Unix ms), el (since) then.
func afterOf(el, expires, now int64) int64 {
	if expires <= now {
		return el
	}
	return el + (expires - now)
}

// reservation is the disk a running entry of k reserves for its reply by
// default: its done record with a reply of Limits.ReplyReserve bytes,
// alone in a group.
func (s *WALStore) reservation(k Key) int64 {
	return s.reservationOf(k, s.acct.lim.ReplyReserve)
}

// reservationOf is the disk a running entry of k reserves for a reply of
// at most reserve bytes: its done record with such a reply, alone in a
// group.
func (s *WALStore) reservationOf(k Key, reserve int64) int64 {
	return walRecordSize(k.Sender, int(reserve)) + walGroupHeader
}

// unreserve gives back k's reservation, if it has one.
func (s *WALStore) unreserve(k Key) {
	if r, ok := s.resv[k]; ok {
		delete(s.resv, k)
		s.reserved -= r
	}
}

// setActive implements activeSetter.
func (s *WALStore) setActive(active func() int) { s.gc.active = active }

// Usage implements Store. It counts the entries set aside at open
// (charged to no quota, AGENT-22) with the others, read under the index
// lock so that an entry promoted meanwhile (apply) is counted once.
func (s *WALStore) Usage() Usage {
	s.idx.RLock()
	defer s.idx.RUnlock()
	u := s.acct.usage()
	u.Entries += s.spareN
	u.Bytes += s.spareBytes
	return u
}

// SetPrincipal implements PrincipalStore.
func (s *WALStore) SetPrincipal(principal func(sender string) string) {
	s.acct.setPrincipal(principal)
}

// Groups returns how many groups the log has made durable since it was
// opened (each one write and one fdatasync).
func (s *WALStore) Groups() int64 { return s.groups.Load() }

// FileSize returns the size of the log in bytes (the file holds the
// writer's reserve of zeros beyond it).
func (s *WALStore) FileSize() int64 {
	s.idx.RLock()
	defer s.idx.RUnlock()
	return s.size
}

// Close implements Store. Writers still queued fail.
func (s *WALStore) Close() error {
	s.gc.close()
	s.idx.Lock()
	defer s.idx.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if s.realLock != nil {
		if uerr := unlockFile(s.realLock); err == nil {
			err = uerr
		}
	}
	if uerr := unlockFile(s.lock); err == nil {
		err = uerr
	}
	return err
}

// Group commit.

const (
	opSweep   byte = 0xff
	opRelease byte = 0xfe // give back a reservation; writes nothing
)

type walOp struct {
	kind    byte // stateRunning, stateDone, opSweep or opRelease
	k       Key
	expires int64
	reply   []byte
	delta   int64 // Finish of a set-aside entry: its reply's cost, charged up front
	max     int   // sweep
	swept   int
	gone    bool  // Finish: the entry was reclaimed before it was applied
	spare   bool  // Finish of a set-aside entry: delta is charged as a new entry's
	insert  bool  // migration: a done record inserts its entry; a running one reserves no disk (no handler of this process runs it)
	rsv     int64 // running: the disk reserved for its reply (0: k has one already)
	within  int64 // running: the reservation of its reply (MarkRunningWithin)
	hold    int64 // running: the least time (ms) the entry is kept from its write on the never-stepped clock (markRunningHeld)
	err     error
}

// maxGroup bounds one group; maxGroupBytes ends a group early (a group
// always holds one record); reclaimPerOp is how many expired entries each
// write reclaims, so that reclamation keeps pace with insertion.
const (
	maxGroup      = 1024
	maxGroupBytes = 4 << 20
	reclaimPerOp  = 2
)

func (s *WALStore) commit(op *walOp) error {
	if !s.gc.do(op) {
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the idempotency ledger is closed")
	}
	return op.err
}

// takeWALGroup: at most maxGroup ops, and no more once maxGroupBytes is
// reached.
func takeWALGroup(q []*walOp) int {
	n, bytes := 0, 0
	for n < len(q) && n < maxGroup && bytes < maxGroupBytes {
		bytes += len(q[n].reply) + len(q[n].k.Sender) + walRecordFixed
		n++
	}
	return n
}

// run appends batch as one group, durably, and applies it to the index.
// Only the leader changes the index, the file and its size, each change
// under s.idx; it reads them without the lock, and holds the lock neither
// while it writes nor while it syncs, so lookups go on meanwhile.
func (s *WALStore) run(batch []*walOp) {
	fail := func(ops []*walOp, err error) {
		for _, o := range ops {
			o.err = err
		}
	}
	if s.broken != nil {
		fail(batch, walIOError("the idempotency ledger is unavailable after a failed write; restart the agent", s.broken))
		return
	}
	wall := s.now()
	now, el := wall.UnixMilli(), s.since(wall)
	s.idx.Lock()
	for _, o := range batch {
		switch o.kind {
		case opSweep:
			o.swept = s.reclaim(o.expires, el, o.max)
		case opRelease:
			s.unreserve(o.k)
		}
	}
	s.reclaim(now, el, reclaimPerOp*len(batch))
	s.makeRoom(maxGroup)
	s.idx.Unlock()
	// The group's ops, bytes and record offsets are built in buffers the
	// leader reuses (one group at a time); a group's reply bytes are read
	// back from the file, never from the buffer.
	writes := s.scratch.writes[:0]
	defer func() {
		clear(writes) // the ops and their replies are not kept alive
		s.scratch.writes = writes[:0]
	}()
	payload, grow := 0, int64(0)
	for _, o := range batch {
		if o.kind == opSweep || o.kind == opRelease {
			continue
		}
		o.rsv = 0
		if _, ok := s.resv[o.k]; !ok && o.kind == stateRunning && !o.insert {
			o.rsv = s.reservationOf(o.k, s.acct.lim.reserveOf(o.within))
		}
		writes = append(writes, o)
		payload += int(walRecordSize(o.k.Sender, len(o.reply)))
		grow += walRecordSize(o.k.Sender, len(o.reply))
		if e, ok := s.m[o.k]; ok && o.kind == stateDone {
			grow -= e.disk(o.k)
		}
	}
	if len(writes) == 0 {
		return
	}
	// Whatever touches the file from here on is stamped on the clock the
	// set-aside entries are judged by, a failed write too (the zeros of
	// extend, a group whose fdatasync failed, its zeroing): else the
	// kernel's stamp of a clock ahead would be the log's last write at the
	// restart that follows, which would drop them (AGENT-27).
	defer s.stampLastWrite(wall)
	// Dead bytes after this group: compact first if they would exceed
	// the slack. A compaction that cannot be written (a full disk) is put
	// off: the current file holds every reservation, so the replies of
	// running entries are still recorded.
	if s.size+int64(walGroupHeader+payload)-(s.liveDisk+grow) > s.slack+int64(walFileHeader) && s.size >= s.compactAfter {
		if err := s.compact(); err != nil {
			if s.broken != nil {
				fail(batch, walIOError("the idempotency ledger is unavailable after a failed write; restart the agent", s.broken))
				return
			}
			s.compactAfter = s.size + walReserve
		}
	}
	writes = s.secure(writes)
	if len(writes) == 0 {
		return
	}
	g := append(s.scratch.group[:0], make([]byte, walGroupHeader)...)
	at := append(s.scratch.at[:0], make([]int, len(writes))...)
	defer func() {
		if cap(g) <= maxGroupBytes+walGroupHeader {
			s.scratch.group = g[:0]
		}
		s.scratch.at = at[:0]
	}()
	for i, o := range writes {
		g, at[i] = appendWALRecord(g, o.kind, o.k, o.expires, o.reply)
	}
	s.wf.putGroupHeader(g, s.seq+1)
	if _, err := s.f.WriteAt(g, s.size); err != nil {
		// Within the zeros already written: only an I/O error of the
		// disk gets here. What of the group was written is zeroed again
		// (else a later, shorter group could leave it looking intact
		// after the log); failing that, nothing more is written.
		if _, zerr := s.f.WriteAt(make([]byte, len(g)), s.size); zerr != nil {
			s.broken = err
		}
		fail(writes, walIOError("cannot write the idempotency ledger", err))
		return
	}
	if err := s.sync(s.f); err != nil {
		// After a failed fdatasync the page cache may not match the
		// disk: refuse everything until the file is read again.
		s.broken = err
		fail(writes, walIOError("cannot sync the idempotency ledger", err))
		return
	}
	s.apply(writes, at, len(g), wall)
}

// stampLastWrite gives the log, after a group written at wall, the time
// of that write on the clock its entries set aside at open are judged by
// (ref, and the time elapsed since the open: they are reclaimed once it
// passes their expiry), while any is in the index and that time is
// before the wall clock's (a clock ahead, or a downtime). Stamped by the
// kernel with the wall clock instead, the log would tell the next open
// that they had expired at its last write, and a second restart before a
// clock ahead came back would drop them (AGENT-27). Best effort, and not
// synced (an fsync per group would double its cost while entries are set
// aside, for up to their lifetime): a failure, or a crash before the
// file system commits the stamp (fdatasync need not), leaves the
// kernel's (the rule before). run stamps every group that touched the
// file once, at its end: a failed one too (review 114), and one that
// compacted the log first (the new file is stamped with the group).
func (s *WALStore) stampLastWrite(wall time.Time) {
	if s.asideN == 0 {
		return
	}
	if at := s.ref + s.since(wall); at < wall.UnixMilli() {
		os.Chtimes(s.path, time.Time{}, time.UnixMilli(at))
	}
}

// secure makes sure the group of writes, and every reservation it leaves,
// fit in the zeros after the log, writing more zeros when they do not.
// When the disk has no room for them, the writes that need room of their
// own fail (retryably, nothing written): new running entries, whose
// handler has not run, and replies without a reservation (the outcome of
// an entry an earlier process left running). The replies of entries with
// a reservation always fit: it is their room. It returns the writes to
// append.
func (s *WALStore) secure(writes []*walOp) []*walOp {
	need := func(ops []*walOp) int64 {
		n := s.size + walGroupHeader + s.reserved
		for _, o := range ops {
			n += walRecordSize(o.k.Sender, len(o.reply)) + o.rsv
			if o.kind == stateDone {
				n -= s.resv[o.k]
			}
		}
		return n
	}
	n := need(writes)
	if n <= s.alloc {
		return writes
	}
	err := s.extend(n + walReserve)
	if err != nil && s.broken == nil {
		err = s.extend(n) // no room for the spare reserve: just enough
	}
	if err == nil {
		return writes
	}
	refusal := walIOError("cannot write the idempotency ledger", err)
	if isNoSpace(err) {
		refusal = amp.Named(amp.CodeOverloaded, ErrNoSpace,
			"the idempotency ledger's disk has no room for this invocation's result; retry later").WithCause(err)
	}
	if s.broken != nil {
		refusal = walIOError("the idempotency ledger is unavailable after a failed write; restart the agent", s.broken)
	}
	kept := writes[:0:0]
	for _, o := range writes {
		if _, reserved := s.resv[o.k]; s.broken == nil && o.kind == stateDone && reserved {
			kept = append(kept, o)
		} else {
			o.err = refusal
		}
	}
	if need(kept) > s.alloc { // cannot be: each reply is within its reservation
		for _, o := range kept {
			o.err = refusal
		}
		return nil
	}
	return kept
}

// apply records a durable group of n bytes, written at the end of the
// log, in the index: writes are its records, at their replies' offsets
// within it; wall is the time the group was made.
func (s *WALStore) apply(writes []*walOp, at []int, n int, wall time.Time) {
	s.groups.Add(1)
	el, now := s.since(wall), wall.UnixMilli()
	s.idx.Lock()
	defer s.idx.Unlock()
	base := s.size
	s.size += int64(n)
	s.seq++
	for i, o := range writes {
		switch o.kind {
		case stateRunning:
			if o.rsv > 0 {
				s.resv[o.k] = o.rsv
				s.reserved += o.rsv
			}
			// Kept until its time left on the wall clock has elapsed,
			// and no sooner than the hold its message gave it (AGENT-29).
			e := walEntry{expires: o.expires, after: max(afterOf(el, o.expires, now), el+o.hold), n: uint32(o.within)}
			s.m[o.k] = e
			s.liveDisk += e.disk(o.k)
			heap.Push(&s.exp, expiryItem{o.expires, o.k})
		case stateDone:
			s.unreserve(o.k)
			e, ok := s.m[o.k]
			inserted := !ok && o.insert
			if inserted {
				e, ok = walEntry{expires: o.expires, after: afterOf(el, o.expires, now)}, true
				s.liveDisk += e.disk(o.k)
				heap.Push(&s.exp, expiryItem{o.expires, o.k})
			}
			if !ok { // reclaimed meanwhile (expired): the record is dead
				o.gone = true
				if o.spare {
					s.acct.release(o.k.Sender, o.delta)
				}
				continue
			}
			// The reply's cost replaces the entry's charge: o.delta,
			// charged in full up front (a set-aside entry), or the
			// difference, a refund, charged now.
			switch {
			case inserted:
				// A migrated entry, charged to nothing: the quotas are
				// recomputed when the migrated log is opened.
			case o.spare && !e.spare:
				// Finished meanwhile by another caller of the store (a
				// Ledger's ticket is one per key).
				s.acct.release(o.k.Sender, e.cost(o.k))
			case !o.spare:
				// Not set aside when Finish read it, so not now either:
				// entries are set aside only at open.
				s.acct.lock()
				s.acct.charge(o.k.Sender, entryCost(o.k, int64(len(o.reply)))-e.cost(o.k), false)
				s.acct.unlock()
			}
			if e.spare {
				// Set aside at open: now charged like any entry, and
				// reclaimed as one (its after is kept).
				s.unspare(o.k, e)
				e.spare = false
				heap.Push(&s.exp, expiryItem{e.expires, o.k})
			}
			s.liveDisk -= e.disk(o.k)
			e.done, e.off, e.n = true, base+int64(at[i]), uint32(len(o.reply))
			s.m[o.k] = e
			s.liveDisk += e.disk(o.k)
		}
	}
}

// walReserve is how many zero bytes the writer keeps after the last group
// beyond the reservations of running entries (docs/FORMAT.md): a group is
// written over bytes that are already part of the file, so its fdatasync
// flushes the data and need not record a new file size (on ext4 that
// halves its time and its CPU: no journal commit). The zeros are written
// in the same fdatasync as the group that first needs them.
const walReserve = 1 << 20

// extend makes the file target bytes long, all zeros beyond what it had
// (the next fdatasync makes them durable with the group written over
// them). On failure it truncates what of them it wrote: the file is as
// it was.
func (s *WALStore) extend(target int64) error {
	if target <= s.alloc {
		return nil
	}
	if s.room != nil {
		if err := s.room(target - s.alloc); err != nil {
			return err
		}
	}
	zeros := make([]byte, min(64<<10, target-s.alloc))
	for off := s.alloc; off < target; {
		n := min(int64(len(zeros)), target-off)
		if _, err := s.f.WriteAt(zeros[:n], off); err != nil {
			if terr := s.f.Truncate(s.alloc); terr != nil {
				s.broken = terr
			}
			return err
		}
		off += n
	}
	s.alloc = target
	return nil
}

// reclaim drops up to max entries expired at now (Unix ms) from the index
// and the accounts, those whose time has also elapsed (el, since): their
// records become dead bytes of the file. An entry the wall clock alone
// says is expired (a clock stepped forward) is set aside in s.wait until
// its time has elapsed, so that it holds up no other entry (at most max
// are set aside per call, which bounds a commit's work).
func (s *WALStore) reclaim(now, el int64, max int) int {
	n, aside := 0, 0
	for n < max && aside < max && len(s.exp) > 0 && s.exp[0].expires < now {
		it := heap.Pop(&s.exp).(expiryItem)
		e, ok := s.m[it.k]
		if !ok || e.expires != it.expires {
			continue
		}
		if e.after > el {
			heap.Push(&s.wait, expiryItem{e.after, it.k})
			aside++
			continue
		}
		s.drop(it.k, e)
		n++
	}
	n = s.reclaimDue(&s.wait, false, now, el, n, max, func(k Key, e walEntry) {
		heap.Push(&s.exp, expiryItem{e.expires, k})
	})
	return s.reclaimDue(&s.spare, true, now, el, n, max, func(k Key, e walEntry) {
		// Taken again once its expiry has passed (expires+1; at
		// expires == now, afterOf(el, expires, now) is el itself: it
		// would be taken again at once, for ever), counted from no
		// earlier than ref, so that a step back of a year re-times it
		// by no more than the time it had left after the log's last
		// write (and it is kept all the same while the wall clock
		// reads before its expiry).
		from := now
		if from < s.ref {
			from = s.ref
		}
		e.after = afterOf(el, e.expires+1, from)
		s.m[k] = e
		heap.Push(&s.spare, expiryItem{e.after, k})
	})
}

// reclaimDue takes the items of h (s.wait, or s.spare when spare: ordered
// by walEntry.after) whose time has elapsed at el, skipping stale ones,
// and drops their entries, until n reaches max; it returns n. An entry
// whose expiry the wall clock (now) has not passed (stepped back
// meanwhile) is kept: handed to requeue.
func (s *WALStore) reclaimDue(h *expiryHeap, spare bool, now, el int64, n, max int, requeue func(Key, walEntry)) int {
	for n < max && len(*h) > 0 && (*h)[0].expires <= el {
		it := heap.Pop(h).(expiryItem)
		e, ok := s.m[it.k]
		if !ok || e.spare != spare || e.after != it.expires {
			continue
		}
		if e.expires >= now {
			requeue(it.k, e)
			continue
		}
		s.drop(it.k, e)
		n++
	}
	return n
}

// makeRoom reclaims up to max set-aside entries (WALStore.spare), oldest
// first, while the accounted bytes and theirs exceed the budget: they hold
// space only while space is free (AGENT-22).
func (s *WALStore) makeRoom(max int) {
	if s.spareN == 0 {
		s.spare = nil // only stale items (promoted entries) are left
		return
	}
	total := s.acct.usage().Bytes
	for n := 0; n < max && len(s.spare) > 0 && total+s.spareBytes > s.acct.lim.Budget; n++ {
		it := heap.Pop(&s.spare).(expiryItem)
		if e, ok := s.m[it.k]; ok && e.spare && e.after == it.expires {
			s.drop(it.k, e)
		}
	}
}

// drop removes k's entry e from the index and the accounts (a set-aside
// entry from the spare counts, charged to no quota).
func (s *WALStore) drop(k Key, e walEntry) {
	delete(s.m, k)
	s.liveDisk -= e.disk(k)
	if e.aside {
		s.asideN--
	}
	if e.spare {
		s.unspare(k, e)
		return
	}
	s.acct.release(k.Sender, e.cost(k))
}

// unspare takes k's set-aside entry e out of the set-aside counts
// (spareBytes, spareN), as it leaves the index or becomes an ordinary
// entry.
func (s *WALStore) unspare(k Key, e walEntry) {
	s.spareBytes -= e.cost(k)
	s.spareN--
}

// compact rewrites the live entries into path + ".compact", makes it
// durable, renames it over the log and switches to it. Called by the
// leader, which alone changes the index: it reads the index unlocked and
// takes s.idx only to switch, so lookups go on while it copies.
func (s *WALStore) compact() error {
	head, wf, err := s.newFileHeader()
	if err != nil {
		return walIOError("cannot compact the idempotency ledger: no randomness for the new file's key", err)
	}
	if s.room != nil {
		// The new file: the live records, their group headers, and the
		// reservations it must hold before it replaces the log.
		if err := s.room(int64(walFileHeader) + s.liveDisk*(walGroupHeader+maxGroupBytes)/maxGroupBytes + walGroupHeader + s.reserved); err != nil {
			return walIOError("cannot compact the idempotency ledger", err)
		}
	}
	tmp := s.path + ".compact"
	os.Remove(tmp)
	nf, err := newTemp(tmp)
	if err != nil {
		return walIOError("cannot compact the idempotency ledger", err)
	}
	fail := func(err error) error {
		nf.Close()
		os.Remove(tmp)
		return walIOError("cannot compact the idempotency ledger", err)
	}
	w := bufio.NewWriterSize(nf, 1<<20)
	w.Write(head)
	size, seq := int64(len(head)), s.seq
	offs := make(map[Key]int64, len(s.m))
	var g []byte
	var keys []Key
	var ats []int
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		seq++
		wf.putGroupHeader(g, seq)
		if _, err := w.Write(g); err != nil {
			return err
		}
		for i, k := range keys {
			if ats[i] >= 0 {
				offs[k] = size + int64(ats[i])
			}
		}
		size += int64(len(g))
		g, keys, ats = g[:0], keys[:0], ats[:0]
		return nil
	}
	var reply []byte
	for k, e := range s.m {
		if len(g) == 0 {
			g = append(g, make([]byte, walGroupHeader)...)
		}
		at := -1
		if e.done {
			if cap(reply) < int(e.n) {
				reply = make([]byte, e.n)
			}
			reply = reply[:e.n]
			if _, err := s.f.ReadAt(reply, e.off); err != nil {
				return fail(err)
			}
			g, at = appendWALRecord(g, stateDone, k, e.expires, reply)
		} else {
			g, _ = appendWALRecord(g, stateRunning, k, e.expires, nil)
		}
		keys, ats = append(keys, k), append(ats, at)
		if len(g) >= maxGroupBytes {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	// The reservations of the running entries move with the log: zeros
	// after its end, made durable with it.
	for zeros, left := make([]byte, min(64<<10, s.reserved)), s.reserved; left > 0; {
		n := min(int64(len(zeros)), left)
		if _, err := w.Write(zeros[:n]); err != nil {
			return fail(err)
		}
		left -= n
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := s.sync(nf); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fail(err)
	}
	// The rename happened; whether it survives a crash is unknown until
	// the directory is synced. A group acknowledged in the new file could
	// be lost with it (the directory naming the old file again), so a
	// failed sync breaks the store like a failed fdatasync: nothing more
	// is written until the file is read again (AGENT-19).
	dirErr := s.syncDir(filepath.Dir(s.path))
	s.idx.Lock()
	for k, off := range offs {
		e := s.m[k]
		e.off = off
		s.m[k] = e
	}
	old := s.f
	s.f, s.size, s.alloc, s.seq, s.wf = nf, size, size+s.reserved, seq, wf
	s.idx.Unlock()
	old.Close()
	s.compactions.Add(1)
	if dirErr != nil {
		s.broken = dirErr
		return walIOError("cannot sync the idempotency ledger's directory after compacting it", dirErr)
	}
	// The new file carries the kernel's stamp: compact runs within a
	// group (run) or an open (load), which stamp the log once when it is
	// written (run's deferred stampLastWrite, load's keepLastWrite).
	return nil
}

// expiryHeap orders keys by expiry (a min-heap); it may hold stale items,
// which reclaim skips.
type expiryItem struct {
	expires int64
	k       Key
}

type expiryHeap []expiryItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
