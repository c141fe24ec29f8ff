package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// Spool file name prefixes of the agent (agent/stream.go, agent/stream_invoke.go).
var spoolPrefixes = []string{"ampstream-", "ampparams-"}

// streamConfig turns the stream settings into the agent's limits. Without
// a stream directory, streams are not served (nil). The directory must
// exist and be a directory of the agent's user (or root) that only its
// owner may write to. It is opened once and judged as opened: the agent
// makes, reopens and removes its spool files through the directory held
// open (StreamLimits.SpoolRoot), so one swapped in at the path later by
// whoever may write a folder above it is never used (CLI-56). The caller
// closes lim.SpoolRoot once the agents are closed. It writes nothing:
// removeLeftSpool removes what a previous run left, once every check of
// the start has passed.
func streamConfig(cfg *serveConfig) (agent.StreamLimits, *agent.ParamStreamLimits, error) {
	if cfg.StreamDir == "" {
		return agent.StreamLimits{}, nil, nil
	}
	root, err := os.OpenRoot(cfg.StreamDir)
	if err != nil {
		var st os.FileInfo
		if st, err = os.Stat(cfg.StreamDir); err == nil && !st.IsDir() {
			return agent.StreamLimits{}, nil, cliutil.Failf("invalid_stream_dir", "the stream directory is not a directory")
		}
		return agent.StreamLimits{}, nil, cliutil.WithHint(cliutil.Failf("invalid_stream_dir", "cannot use the stream directory").WithCause(err),
			"create it first, for the agent's user only: install -d -m 0700 DIR")
	}
	if err := judgeStreamDir(root); err != nil {
		root.Close()
		return agent.StreamLimits{}, nil, err
	}
	lim := agent.StreamLimits{SpoolDir: cfg.StreamDir, SpoolRoot: root, MaxBytes: uint64(cfg.StreamMaxBytes), PerSender: cfg.StreamPerSender}
	params := &agent.ParamStreamLimits{MaxSize: uint64(cfg.StreamMaxParamsBytes), MaxBytes: uint64(cfg.StreamMaxBytes), PerSender: cfg.StreamPerSender}
	return lim, params, nil
}

// judgeStreamDir refuses a stream directory, as opened, that others may
// write to or that another user than the agent's (or root) owns.
func judgeStreamDir(root *os.Root) error {
	st, err := root.Stat(".")
	switch {
	case err != nil:
		return cliutil.Failf("invalid_stream_dir", "cannot use the stream directory").WithCause(err)
	case !st.IsDir():
		return cliutil.Failf("invalid_stream_dir", "the stream directory is not a directory")
	case st.Mode().Perm()&0o022 != 0:
		return cliutil.WithHint(cliutil.Failf("invalid_stream_dir", "others may write to the stream directory"),
			"chmod go-w DIR: spooled content must be the agent's alone")
	}
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// Its owner may remove, rename and create any entry, whatever
		// the mode: the agent's spool files too (CLI-55).
		return cliutil.WithHint(cliutil.Failf("invalid_stream_dir", "the stream directory is owned by another user (uid %d) than the agent's (uid %d) or root", uid, os.Geteuid()),
			"chown AGENT_USER DIR: spooled content must be the agent's alone")
	}
	if _, err := readSpoolDir(root); err != nil {
		return cliutil.Failf("invalid_stream_dir", "cannot read the stream directory").WithCause(err)
	}
	return nil
}

// readSpoolDir lists the directory root holds open.
func readSpoolDir(root *os.Root) ([]os.DirEntry, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// removeLeftSpool removes the spool files a previous run left in the
// stream directory (it died with streams open), if there is one.
func removeLeftSpool(lim agent.StreamLimits, log *slog.Logger) error {
	if lim.SpoolRoot == nil {
		return nil
	}
	entries, err := readSpoolDir(lim.SpoolRoot)
	if err != nil {
		return cliutil.Failf("invalid_stream_dir", "cannot read the stream directory").WithCause(err)
	}
	removed := 0
	for _, e := range entries {
		for _, p := range spoolPrefixes {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), p) {
				if lim.SpoolRoot.Remove(e.Name()) == nil {
					removed++
				}
			}
		}
	}
	if removed > 0 {
		log.Info("removed spool files left by a previous run", "files", removed)
	}
	return nil
}
