package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// KindWAL is the kind of store OpenFile opens: the write-ahead log
// (OpenWAL), the only durable store. (The bbolt store it replaced is
// retired: its files are migrated, see OpenFile.)
const KindWAL = "wal"

// FileOptions configures OpenFile.
type FileOptions struct {
	Limits
	// Now is the clock (required).
	Now func() time.Time
	// LockTimeout bounds the wait for the file lock (default 1 s).
	LockTimeout time.Duration
	// Path is the ledger file. Default: the registry file's name +
	// ".ledger.wal".
	Path string
	// Migrated, when set, is told about a migration from a bbolt ledger:
	// the name the old file is kept under, the log's and the entries
	// copied.
	Migrated func(old, log string, entries int)

	// fault, when set (by this package's tests only), is called at each
	// step of a migration and fails it with the error it returns: the
	// seam through which tests interrupt a migration.
	fault func(step string) error
}

// Migration steps, in order (FileOptions.fault).
const (
	stepRead   = "read"   // the bbolt ledger was read and its entries written to the new log
	stepSync   = "sync"   // the new log was made durable under its temporary name
	stepAside  = "aside"  // the bbolt ledger was kept under its migrated name
	stepPlace  = "place"  // the new log was put in place
	stepRetire = "retire" // the bbolt ledger's original name was given up
)

// OpenFile opens the durable ledger (the write-ahead log) of the agent
// whose registry file is registryPath, and reports its kind (KindWAL).
//
// Migration (one way): the bbolt ledger is retired. When the file to open
// holds one (an explicit Path naming an old bbolt ledger), or, with the
// default path, no log exists yet but registryPath + ".ledger" holds one,
// its entries not expired at its last write (its modification time) are
// converted into a new log, which takes that time as its own, so that the
// entries expired since are set aside as the log's open sets aside its
// own (a clock ahead at the upgrade, AGENT-22): running entries
// stay running (a retry gets "outcome unknown"; nothing runs twice), done
// entries keep their exact reply bytes and expiry, and the quotas are
// recomputed from the log when it opens. The log is written under a
// temporary name and synced; the old file is kept under the name
// OLD.migrated-YYYYMMDD (the day of the migration, UTC; a hard link, or a
// synced copy where the file system has none; never deleted); only then
// is the log renamed into place and the old name given up. A failure at
// any step before the rename removes what the migration wrote and leaves
// the old file where it was, unchanged (ErrLedgerMigration); the next
// open migrates again. A crash after the rename and before the old name is
// given up leaves both names; the next open sees that the old file is
// already kept aside, and gives the old name up. A bbolt ledger migrated
// in place through a link is migrated where the link leads: the link
// stays a link, to the log (AGENT-47).
func OpenFile(registryPath string, o FileOptions) (Store, string, error) {
	wopts := WALOptions{Limits: o.Limits, Now: o.Now, LockTimeout: o.LockTimeout}
	if o.Now == nil {
		return nil, "", amp.Named(0, "misconfigured", "the ledger needs a clock")
	}
	if o.LockTimeout <= 0 {
		wopts.LockTimeout = time.Second
	}
	path, old := o.Path, o.Path
	if path == "" {
		path, old = registryPath+".ledger.wal", registryPath+".ledger"
	}
	// The folder is judged before a migration removes or makes anything
	// in it (AGENT-44); lockFile judges it again for OpenWAL's callers.
	if err := logFolder(filepath.Dir(path)); err != nil {
		return nil, "", err
	}
	if isBoltFile(old) {
		if old != path && exists(path) {
			// Both: a crash between the rename of the log and the
			// retirement of the old name, or an older agent run after the
			// migration (a downgrade, not supported).
			aside, ok := keptAside(old)
			if !ok {
				return nil, "", amp.Named(amp.CodeUnavailable, ErrLedgerMigration,
					"a bbolt ledger and a write-ahead log both exist, and the bbolt ledger was never migrated; move one of them aside")
			}
			if err := retire(old, aside); err != nil {
				return nil, "", err
			}
		} else {
			from, to := old, path
			if old == path {
				// Migrated in place: where a link given as its name
				// leads (AGENT-47).
				real, err := linkLeadsTo(path)
				if err != nil {
					return nil, "", err
				}
				from, to = real, real
			}
			n, aside, err := migrateBolt(from, to, wopts, o.fault)
			if err != nil {
				return nil, "", err
			}
			if o.Migrated != nil {
				o.Migrated(aside, path, n)
			}
		}
	}
	s, err := OpenWAL(path, wopts)
	if err != nil {
		return nil, "", err
	}
	return s, KindWAL, nil
}

// linkLeadsTo returns the name a link at path leads to, or path when it
// is no link. A bbolt ledger migrated in place through a link was
// replaced by the new log beside the link, the link with it: the bbolt
// ledger the link led to stayed there, and a link made again (as an
// entrypoint's ln -sf makes it) had the next open migrate it again over
// the log, every reply recorded since lost (docs/SPEC-DECISIONS.md
// AGENT-47). Migrated at that name, the log takes the bbolt ledger's
// place and the link leads to it, as a compaction keeps it (AGENT-45);
// migrateBolt's lock judges that name's folder (lockFile).
func linkLeadsTo(path string) (string, error) {
	if li, err := os.Lstat(path); err != nil || li.Mode()&os.ModeSymlink == 0 {
		return path, nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "cannot follow the link to the bbolt ledger").WithCause(err)
	}
	return real, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// isBoltFile reports whether path exists and begins like a bbolt file
// (the magic number 0xED0CDAED of its first meta page, at offset 16, in
// the byte order of the machine that wrote it).
func isBoltFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 20)
	if _, err := f.ReadAt(b, 0); err != nil {
		return false
	}
	le, be := binary.LittleEndian.Uint32(b[16:]), binary.BigEndian.Uint32(b[16:])
	return le == 0xED0CDAED || be == 0xED0CDAED
}

// asideName returns the names the old ledger may be kept under on the
// day of now: OLD.migrated-YYYYMMDD, then with .2, .3, … after it.
func asideName(old string, now time.Time, n int) string {
	name := old + ".migrated-" + now.UTC().Format("20060102")
	if n > 1 {
		name += fmt.Sprintf(".%d", n)
	}
	return name
}

// keptAside finds the name old is already kept under (the same file, or a
// byte-identical copy), among the names OLD.migrated-* beside it.
func keptAside(old string) (string, bool) {
	fi, err := os.Stat(old)
	if err != nil {
		return "", false
	}
	dir, prefix := filepath.Dir(old), filepath.Base(old)+".migrated-"
	des, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), prefix) || !de.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, de.Name())
		if ai, err := os.Stat(name); err == nil && (os.SameFile(fi, ai) || (ai.Size() == fi.Size() && sameBytes(old, name))) {
			return name, true
		}
	}
	return "", false
}

// sameBytes reports whether the files a and b have the same contents.
func sameBytes(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return ea == eb || (ea == io.ErrUnexpectedEOF && eb == io.ErrUnexpectedEOF)
		}
	}
}

// keepAside keeps old under a free migrated name (a hard link, or a synced
// copy), made durable, and returns that name and whether this call made it.
func keepAside(old string, now time.Time) (string, bool, error) {
	if name, ok := keptAside(old); ok {
		return name, false, nil
	}
	n := 1
	for exists(asideName(old, now, n)) {
		if n++; n >= 100 {
			return "", false, amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "no free name to keep the bbolt ledger under")
		}
	}
	name := asideName(old, now, n)
	if err := os.Link(old, name); err != nil {
		if err := copyFile(old, name); err != nil {
			return "", false, amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "cannot keep the bbolt ledger aside").WithCause(err)
		}
	}
	if err := regfile.SyncDir(filepath.Dir(old)); err != nil {
		os.Remove(name)
		return "", false, amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "cannot keep the bbolt ledger aside").WithCause(err)
	}
	return name, true, nil
}

// copyFile copies src to a new file dst and syncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// retire gives up the old name of a bbolt ledger already kept as aside.
func retire(old, aside string) error {
	if err := os.Remove(old); err != nil {
		return amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the ledger was migrated, but the bbolt ledger's old name cannot be given up (it is kept as %s)", filepath.Base(aside)).WithCause(err)
	}
	return regfile.SyncDir(filepath.Dir(old))
}

// migrateBolt converts the bbolt ledger at old into a new log at path (see
// OpenFile) and returns how many entries it copied and the name old is
// kept under. The log is written under a temporary name (copyBolt),
// made durable, and renamed into place only once old is kept aside: a
// failure before the rename undoes what this call made and leaves old
// untouched; after it, nothing is undone.
func migrateBolt(old, path string, o WALOptions, fault func(string) error) (copied int, aside string, err error) {
	step := migrationFault(fault)
	// The log's own lock keeps out, while the migration runs, another
	// migration and an agent opening the log.
	lock, err := lockFile(path+".lock", o.LockTimeout)
	if err != nil {
		return 0, "", amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the ledger is in use by another process").WithCause(err)
	}
	defer unlockFile(lock)
	tmp := path + ".migrating"
	for _, stray := range []string{tmp, tmp + ".compact", tmp + ".lock"} {
		os.Remove(stray) // a crash of an earlier migration left it
	}
	// The log is written without a budget: every entry the old ledger
	// held moves; the quotas are recomputed when the log is opened.
	w, err := openWAL(tmp, WALOptions{Limits: Limits{Budget: 1 << 62}, Now: o.Now, LockTimeout: o.LockTimeout}, fdatasync)
	if err != nil {
		return 0, "", amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "cannot write the migrated ledger").WithCause(err)
	}
	var made string // the aside name this call made
	placed := false // the log is in place: nothing is undone
	defer func() {
		if err != nil && !placed {
			w.Close()
			os.Remove(tmp)
			os.Remove(tmp + ".lock")
			if made != "" {
				os.Remove(made) // a link or copy: old itself is untouched
			}
		}
		if err != nil {
			err = amp.AsError(err)
			if amp.NameOf(err) != ErrLedgerMigration {
				err = amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the bbolt ledger was not migrated").WithCause(err)
			}
		}
	}()
	// The old ledger's last write (AGENT-22, docs/SPEC-DECISIONS.md
	// AGENT-26): what expired since is copied, and the log takes that time
	// as its own, so that its open sets those entries aside.
	last, err := lastWrite(old, o.Now())
	if err != nil {
		return 0, "", err
	}
	if copied, err = copyBolt(old, w, o.LockTimeout, last); err == nil {
		err = step(stepRead)
	}
	if err != nil {
		return 0, "", err
	}
	if err = sealMigrated(w, tmp, last, step); err != nil {
		return 0, "", err
	}
	if aside, made, err = keepAsideMade(old, o.Now()); err != nil {
		return 0, "", err
	}
	if err = step(stepAside); err != nil {
		return 0, "", err
	}
	if err = step(stepPlace); err != nil {
		return 0, "", err
	}
	if err = os.Rename(tmp, path); err != nil {
		return 0, "", err
	}
	placed = true // from here on nothing is undone
	os.Remove(tmp + ".lock")
	if serr := regfile.SyncDir(filepath.Dir(path)); serr != nil {
		return 0, "", amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the migrated ledger was put in place but its directory cannot be synced").WithCause(serr)
	}
	if old != path {
		if ferr := step(stepRetire); ferr != nil {
			return 0, "", ferr
		}
		if rerr := retire(old, aside); rerr != nil {
			return 0, "", rerr
		}
	}
	return copied, aside, nil
}

// migrationFault turns the test hook fault (nil in production) into the
// check run at each named step of a migration: a failure injected there
// is reported as ErrLedgerMigration, naming the step.
func migrationFault(fault func(string) error) func(string) error {
	return func(name string) error {
		if fault == nil {
			return nil
		}
		if err := fault(name); err != nil {
			return amp.Named(amp.CodeUnavailable, ErrLedgerMigration, "the bbolt ledger was not migrated (step %s)", name).WithCause(err)
		}
		return nil
	}
}

// lastWrite is the wall time of the bbolt ledger's last write: its
// modification time, stamped by the kernel (older after a crash, the safe
// side), or now if that is earlier (a clock behind the stamp), to the
// millisecond.
func lastWrite(old string, now time.Time) (time.Time, error) {
	fi, err := os.Stat(old)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(min(fi.ModTime().UnixMilli(), now.UnixMilli())), nil
}

// copyBolt writes every entry of the bbolt ledger at old not expired at
// its last write (Unix ms: what a log opened then would keep) into the log
// w, in groups as the log commits them (maxGroup entries or maxGroupBytes
// at most), and returns how many it copied. An entry expired before is
// left behind: any store may reclaim it. One expired since is copied: the
// clock may be ahead (AGENT-22), and the log's open decides.
func copyBolt(old string, w *WALStore, lockTimeout time.Duration, last time.Time) (copied int, err error) {
	cutoff := last.UnixMilli()
	var ops []*walOp
	size := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		w.run(ops)
		for _, op := range ops {
			if op.err != nil {
				return op.err
			}
		}
		ops, size = ops[:0], 0
		return nil
	}
	err = readBolt(old, lockTimeout, func(key Key, rec Record) error {
		exp := rec.Expires.UnixMilli()
		if exp < cutoff {
			return nil // expired: any store may reclaim it
		}
		// A running entry moves Lost: no handler of this process will
		// record its reply, so it reserves no disk for one (insert).
		op := &walOp{kind: stateRunning, k: key, expires: exp, insert: true}
		if rec.Reply != nil {
			op = &walOp{kind: stateDone, k: key, expires: exp, reply: rec.Reply, insert: true}
		}
		ops = append(ops, op)
		copied++
		if size += len(rec.Reply) + len(key.Sender) + walRecordFixed; size >= maxGroupBytes || len(ops) >= maxGroup {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return copied, err
}

// sealMigrated closes the migrated log at tmp, stamps it with the old
// ledger's last write (its open sets aside what expired since, as it
// would have from the old file, AGENT-22) and makes it durable, the stamp
// included, before anything of the old ledger is touched.
func sealMigrated(w *WALStore, tmp string, last time.Time, step func(string) error) error {
	if err := w.Close(); err != nil {
		return err
	}
	if err := os.Chtimes(tmp, time.Time{}, last); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	return step(stepSync)
}

// keepAsideMade is keepAside, reporting the name only when this call made
// it (for the caller to remove should the migration fail).
func keepAsideMade(old string, now time.Time) (aside, made string, err error) {
	aside, fresh, err := keepAside(old, now)
	if fresh {
		made = aside
	}
	return aside, made, err
}

// syncFile makes the file at path durable (contents, length and times:
// fsync).
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
