// Package regfile is the module's one way to open a file that must be a
// regular file, to make a new name in a folder durable, and to put a
// finished temporary file in place without replacing anything.
//
// Open and OpenIn examine what a name leads to before they open it: a
// FIFO is never joined (nothing waits for a writer) and a device is never
// opened (its driver never runs: a watchdog does not arm, a terminal does
// not become a controlling one, a tape does not rewind). On Linux the
// name is looked up once: open(O_PATH|O_NOFOLLOW) gives a descriptor of
// what is there without opening it, fstat examines that descriptor, and
// only a regular file is opened, through /proc/self/fd (only when that
// folder is the proc file system), which opens that very inode whatever
// was put in the name since. Without /proc (or with one that is not
// procfs), and on other systems, the name is examined (lstat), then
// opened without following a link and without waiting, and what was
// opened must be the file examined (os.SameFile): a node put in the name
// between the two looks is opened before it is refused. Anything but a regular file is
// ErrNotRegular. The file returned blocks as any file does (the
// no-waiting flag is cleared) and is named as the path examined
// (docs/SPEC-DECISIONS.md BUNDLE-12, BUNDLE-17, BUNDLE-19, BUNDLE-20,
// BUILD-4, CLI-29).
//
// OpenStream opens a one-shot input the same way but takes a pipe too (a
// FIFO, a shell's process substitution), with an open that waits for its
// writer: its caller bounds that wait (CLI-57).
//
// SyncDir syncs a folder after a name was added to it, opening it only as
// a folder; LinkNew hard-links a synced temporary file to its final name,
// which fails when anything is there, and where no link can be made
// renames it exclusively where the system can (CLI-29, CLI-32).
//
// FolderAbove judges the folders a path's lookup passes through, links
// followed, as ssh's StrictModes does: none may be another user's or
// writable by group or others without the sticky bit (MIRROR-18,
// AGENT-48). Walk is that lookup, every part given to a judge of the
// caller's; the agent's judge of a handler's program walks it too
// (CLI-77).
//
// CreateUnnamed makes a file with no name (Linux O_TMPFILE, only where
// /proc is procfs) and LinkUnnamed gives it its name once complete, never
// replacing a file there: a process killed before leaves nothing; where
// it cannot be made it is ErrNoUnnamed (CLI-33). OwnedBySelf tells a
// file of this process's user.
//
// The package opens and names files only; callers give their errors their
// own names (keyfile, bundlebuild, cmd/ampbundle).
package regfile
