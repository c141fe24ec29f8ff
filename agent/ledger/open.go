package ledger

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// Durable store kinds (FileOptions.Kind).
const (
	// KindWAL is the write-ahead log (OpenWAL), the default.
	KindWAL = "wal"
	// KindBolt is the bbolt file (OpenBolt).
	KindBolt = "bbolt"
)

// FileOptions configures OpenFile.
type FileOptions struct {
	Limits
	// Now is the clock (required).
	Now func() time.Time
	// LockTimeout bounds the wait for the file lock (default 1 s).
	LockTimeout time.Duration
	// Kind is KindWAL (the default when empty) or KindBolt.
	Kind string
	// Path is the ledger file. Default: the registry file's name +
	// ".ledger.wal" (KindWAL) or + ".ledger" (KindBolt).
	Path string
	// Migrated, when set, is told about a migration from a bbolt ledger:
	// the old file's new name, the log's and the entries copied.
	Migrated func(old, log string, entries int)
}

// OpenFile opens the durable ledger of the agent whose registry file is
// registryPath, and reports the kind it opened.
//
// Migration: with KindWAL and the default path, when no log exists yet
// but a bbolt ledger does (registryPath + ".ledger", written by an agent
// before the log existed), its unexpired entries, running ones included,
// are copied once into a new log, which is made durable and renamed into
// place; only then is the bbolt file renamed to registryPath +
// ".ledger.migrated" (kept for the operator to delete). A crash before the
// log is in place leaves the bbolt file where it was, and the next start
// migrates again. An explicit Path holding a bbolt ledger is refused with
// KindWAL rather than migrated.
func OpenFile(registryPath string, o FileOptions) (Store, string, error) {
	switch o.Kind {
	case KindBolt:
		path := o.Path
		if path == "" {
			path = registryPath + ".ledger"
		}
		s, err := OpenBolt(path, BoltOptions{Limits: o.Limits, Now: o.Now, LockTimeout: o.LockTimeout})
		if err != nil {
			return nil, "", err
		}
		return s, KindBolt, nil
	case "", KindWAL:
	default:
		return nil, "", amp.Named(0, "misconfigured", "unknown ledger store %q (wal or bbolt)", o.Kind)
	}
	wopts := WALOptions{Limits: o.Limits, Now: o.Now, LockTimeout: o.LockTimeout}
	path := o.Path
	if path == "" {
		path = registryPath + ".ledger.wal"
		old := registryPath + ".ledger"
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && isBoltFile(old) {
			n, err := migrateBolt(old, path, wopts)
			if err != nil {
				return nil, "", err
			}
			if o.Migrated != nil {
				o.Migrated(old+".migrated", path, n)
			}
		}
	} else if isBoltFile(path) {
		return nil, "", amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is a bbolt ledger; use the bbolt store for it, or a new file for the write-ahead log")
	}
	s, err := OpenWAL(path, wopts)
	if err != nil {
		return nil, "", err
	}
	return s, KindWAL, nil
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

// migrateBolt copies the unexpired entries of the bbolt ledger at old
// into a new log at path (see OpenFile) and returns how many it copied.
func migrateBolt(old, path string, o WALOptions) (int, error) {
	b, err := OpenBolt(old, BoltOptions{Now: o.Now, LockTimeout: o.LockTimeout})
	if err != nil {
		return 0, err
	}
	defer b.Close()
	tmp := path + ".migrating"
	os.Remove(tmp)
	os.Remove(tmp + ".compact")
	w, err := openWAL(tmp, WALOptions{Limits: Limits{Budget: 1 << 62}, Now: o.Now, LockTimeout: o.LockTimeout}, fdatasync)
	if err != nil {
		return 0, err
	}
	cleanup := func(err error) (int, error) {
		w.Close()
		os.Remove(tmp)
		os.Remove(tmp + ".lock")
		return 0, amp.AsError(err)
	}
	now := o.Now().UnixMilli()
	var ops []*walOp
	flush := func() {
		if len(ops) > 0 && err == nil {
			w.run(ops)
			for _, op := range ops {
				if op.err != nil && err == nil {
					err = op.err
				}
			}
		}
		ops = ops[:0]
	}
	var size, copied int
	verr := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bEntries).ForEach(func(k, v []byte) error {
			key, rec, ok := decodeEntry(k, v)
			if !ok {
				return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the bbolt ledger holds a malformed entry; it was not migrated")
			}
			if rec.Expires.UnixMilli() < now {
				return nil
			}
			op := &walOp{kind: stateRunning, k: key, expires: rec.Expires.UnixMilli()}
			if rec.Reply != nil {
				op = &walOp{kind: stateDone, k: key, expires: rec.Expires.UnixMilli(), reply: rec.Reply, insert: true}
			}
			ops = append(ops, op)
			copied++
			if size += len(rec.Reply) + len(key.Sender) + walRecordFixed; size >= maxGroupBytes || len(ops) >= maxGroup {
				flush()
				size = 0
			}
			return err
		})
	})
	flush()
	if verr != nil {
		return cleanup(verr)
	}
	if err != nil {
		return cleanup(err)
	}
	if err := w.Close(); err != nil {
		return cleanup(err)
	}
	os.Remove(tmp + ".lock")
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, walIOError("cannot put the migrated ledger in place", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return 0, walIOError("cannot put the migrated ledger in place", err)
	}
	if err := os.Rename(old, old+".migrated"); err != nil {
		return 0, walIOError("the ledger was migrated but the bbolt file could not be renamed", err)
	}
	return copied, nil
}
