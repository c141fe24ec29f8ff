package main

import (
	"errors"
	"io"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// readConfigFile reads the agent's config file (--config of serve, mcp
// and card), at most maxConfigFile bytes. The file names the programs the
// agent runs as its own user and who may call them, so it is read only
// when it is a regular file (regfile.Open: a FIFO put at its path is
// refused at once, never waited on by a start or by the SIGHUP reload in
// serve's signal loop) that no other user than the agent's (or root) may
// have written (configWriters, judged on the open file). Every refusal is
// invalid_config (docs/SPEC-DECISIONS.md CLI-54).
func readConfigFile(path string) ([]byte, error) {
	f, st, err := regfile.Open(path, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, cliutil.Failf("invalid_config", "the config file is not a regular file")
	}
	if err != nil {
		return nil, cliutil.Failf("invalid_config", "cannot read the config file").WithCause(err)
	}
	defer f.Close()
	if err := configWriters(st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, cliutil.Failf("invalid_config", "cannot read the config file").WithCause(err)
	}
	if len(data) > maxConfigFile {
		return nil, cliutil.Failf("invalid_config", "the config file is larger than %d bytes", maxConfigFile)
	}
	return data, nil
}

// exposedProgramError says that another user than the agent's (or root)
// may rewrite or replace a handler's program, or an interpreter its #!
// line names, or create it where it is missing, or that the program runs
// through a #! line the agent cannot follow to the file the system would
// run (programWriters): the handler does not run (CLI-70, CLI-72). hint,
// when set, replaces the start's hint to chown and chmod go-w.
type exposedProgramError struct{ msg, hint string }

func (e *exposedProgramError) Error() string { return e.msg }
