package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// storeLockTimeout is how long a command waits for the store's file lock
// before it gives up with store_in_use: short, so that a command run while
// an agent holds the store fails at once instead of hanging.
const storeLockTimeout = 250 * time.Millisecond

// dbFlag names the store file of the registry commands.
var dbFlag = &cli.StringFlag{Name: "db", Usage: "registry store `FILE` (bbolt; required)"}

// adminSocketFlag names the admin socket of an agent serving the store.
var adminSocketFlag = &cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` of the agent serving the store, used when it holds the store (default DB.admin.sock)"}

// registry is what the registry commands use of a store: the store
// itself, or, while a running agent holds it, that agent's admin socket,
// which runs the very same operations (admin.Ops) in the agent.
type registry = *admin.Registry

// How a command opens the store.
type storeMode int

const (
	readOnly  storeMode = iota // shared lock; a missing store is an error
	readWrite                  // exclusive lock; a missing store is an error
	create                     // exclusive lock; a missing store is created
)

// Hints shown with the store errors every registry command can meet.
const (
	hintStoreInUse   = "another ampbundle command holds the store, or an agent whose admin socket is not at the default path (give it with --admin-socket); wait for it or stop it"
	hintStoreMissing = "a store is created by trusting a publisher key: ampbundle trust add PUB --db %s --name NAME --scope PREFIX"
	hintUnknown      = "'ampbundle ls --db %s' lists the installed bundles"
)

// openStore opens the store named by --db in the given mode. When the
// store is in use and an agent answers on its admin socket, the command
// goes through the agent instead (a note on stderr says so).
func openStore(env *cliutil.Env, c *cli.Context, mode storeMode) (registry, error) {
	if err := cliutil.Require(c, "db"); err != nil {
		return nil, err
	}
	return openStoreAt(env, c.String("db"), c.String("admin-socket"), mode)
}

// openCreating opens --db, creating the store when it does not exist yet
// (how a store is born: trust add, trust policy apply). discard closes it
// after a failure and removes it again when this command created it and
// nothing was written since.
func openCreating(env *cliutil.Env, c *cli.Context) (s registry, created bool, discard func(), err error) {
	if err := cliutil.Require(c, "db"); err != nil {
		return nil, false, nil, err
	}
	db := c.String("db")
	_, statErr := os.Stat(db)
	created = errors.Is(statErr, fs.ErrNotExist)
	if s, err = openStoreAt(env, db, c.String("admin-socket"), create); err != nil {
		return nil, false, nil, err
	}
	discard = func() {
		empty := created && s.Generation() == 0
		s.Close()
		if empty {
			os.Remove(db)
		}
	}
	return s, created, discard, nil
}

// openStoreAt is openStore for the store file db and admin socket sock
// (empty: the default next to db).
func openStoreAt(env *cliutil.Env, db, sock string, mode storeMode) (registry, error) {
	s, err := resolver.Open(db, resolver.Options{
		Now:         env.Now,
		ReadOnly:    mode == readOnly,
		Create:      mode == create,
		LockTimeout: storeLockTimeout,
		Actor:       resolver.ProcessActor(),
	})
	if err == nil {
		return admin.Local(s), nil
	}
	if errors.Is(err, resolver.ErrStoreInUse) {
		if sock == "" {
			sock = admin.SocketPath(db)
		}
		// The agent is asked to serve this very store file: a socket of
		// this user's agent of another store at sock (a link put there,
		// a wrong --admin-socket) refuses the command (ADMIN-8).
		ac, aerr := admin.DialStore(sock, db)
		if aerr == nil {
			fmt.Fprintf(env.Stderr, "note: the store is held by a running agent; using its admin socket %s\n", cliutil.Sanitize(sock))
			return &ac.Registry, nil
		}
		if admin.ReportAsIs(aerr) {
			// Not store_in_use: the operator must learn that another
			// user's socket, or an agent of another store, sits where
			// the agent's should be (the refusal carries its hint:
			// ADMIN-5, ADMIN-8).
			return nil, aerr
		}
	}
	return nil, storeHint(err, db)
}

// storeHint attaches the operator's next step to an error of the store db.
func storeHint(err error, db string) error {
	switch {
	case errors.Is(err, resolver.ErrStoreInUse):
		return cliutil.WithHint(err, hintStoreInUse)
	case errors.Is(err, resolver.ErrStoreMissing):
		return cliutil.WithHint(err, fmt.Sprintf(hintStoreMissing, db))
	case errors.Is(err, resolver.ErrUnknownBundle):
		return cliutil.WithHint(err, fmt.Sprintf(hintUnknown, db))
	}
	return err
}

// closeStore closes s, reporting a close failure only when the command
// itself succeeded (a failed commit shows up at close for bbolt).
func closeStore(s registry, err *error) {
	if cerr := s.Close(); cerr != nil && *err == nil {
		*err = amp.Named(0, resolver.ErrStoreIO, "cannot close the store").WithCause(cerr)
	}
}

// storeAction is the action of a command that takes n arguments (args
// names them in the usage error) and works on the store opened in mode:
// it checks the arguments, opens the store, runs do and closes the store
// (closeStore).
func storeAction(env *cliutil.Env, mode storeMode, n int, args string, do func(c *cli.Context, s registry) error) cli.ActionFunc {
	return func(c *cli.Context) (err error) {
		if err := cliutil.ExactArgs(c, n, args); err != nil {
			return err
		}
		s, err := openStore(env, c, mode)
		if err != nil {
			return err
		}
		defer closeStore(s, &err)
		return do(c, s)
	}
}

// storeIO labels an error that is not already an *amp.Error as store_io.
func storeIO(msg string, err error) error {
	var e *amp.Error
	if errors.As(err, &e) {
		return err
	}
	return amp.Named(0, resolver.ErrStoreIO, "%s", msg).WithCause(err)
}
