package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// storeLockTimeout is how long a command waits for the store's file lock
// before it gives up with store_in_use: short, so that a command run while
// an agent holds the store fails at once instead of hanging.
const storeLockTimeout = 250 * time.Millisecond

// dbFlag names the store file of the registry commands.
var dbFlag = &cli.StringFlag{Name: "db", Usage: "registry store `FILE` (bbolt; required)"}

// How a command opens the store.
type storeMode int

const (
	readOnly  storeMode = iota // shared lock; a missing store is an error
	readWrite                  // exclusive lock; a missing store is an error
	create                     // exclusive lock; a missing store is created
)

// Hints shown with the store errors every registry command can meet.
const (
	hintStoreInUse   = "the store is used by a running agent or another ampbundle command; stop it and try again"
	hintStoreMissing = "a store is created by trusting a publisher key: ampbundle trust add PUB --db %s --name NAME --scope PREFIX"
	hintUnknown      = "'ampbundle ls --db %s' lists the installed bundles"
)

// openStore opens the store named by --db in the given mode.
func openStore(env *cliutil.Env, c *cli.Context, mode storeMode) (*resolver.Store, error) {
	if err := cliutil.Require(c, "db"); err != nil {
		return nil, err
	}
	s, err := resolver.Open(c.String("db"), resolver.Options{
		Now:         env.Now,
		ReadOnly:    mode == readOnly,
		Create:      mode == create,
		LockTimeout: storeLockTimeout,
	})
	if err != nil {
		return nil, storeHint(err, c.String("db"))
	}
	return s, nil
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
func closeStore(s *resolver.Store, err *error) {
	if cerr := s.Close(); cerr != nil && *err == nil {
		*err = amp.Named(0, resolver.ErrStoreIO, "cannot close the store").WithCause(cerr)
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
