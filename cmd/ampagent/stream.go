package main

import (
	"log/slog"
	"os"
	"path/filepath"
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
// owner may write to. It only reads: removeLeftSpool removes what a
// previous run left, once every check of the start has passed.
func streamConfig(cfg *serveConfig) (agent.StreamLimits, *agent.ParamStreamLimits, error) {
	if cfg.StreamDir == "" {
		return agent.StreamLimits{}, nil, nil
	}
	st, err := os.Stat(cfg.StreamDir)
	switch {
	case err != nil:
		return agent.StreamLimits{}, nil, cliutil.WithHint(cliutil.Failf("invalid_stream_dir", "cannot use the stream directory").WithCause(err),
			"create it first, for the agent's user only: install -d -m 0700 DIR")
	case !st.IsDir():
		return agent.StreamLimits{}, nil, cliutil.Failf("invalid_stream_dir", "the stream directory is not a directory")
	case st.Mode().Perm()&0o022 != 0:
		return agent.StreamLimits{}, nil, cliutil.WithHint(cliutil.Failf("invalid_stream_dir", "others may write to the stream directory"),
			"chmod go-w DIR: spooled content must be the agent's alone")
	}
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// Its owner may remove, rename and create any entry, whatever
		// the mode: the agent's spool files too (CLI-55).
		return agent.StreamLimits{}, nil, cliutil.WithHint(cliutil.Failf("invalid_stream_dir", "the stream directory is owned by another user (uid %d) than the agent's (uid %d) or root", uid, os.Geteuid()),
			"chown AGENT_USER DIR: spooled content must be the agent's alone")
	}
	if _, err := os.ReadDir(cfg.StreamDir); err != nil {
		return agent.StreamLimits{}, nil, cliutil.Failf("invalid_stream_dir", "cannot read the stream directory").WithCause(err)
	}
	lim := agent.StreamLimits{SpoolDir: cfg.StreamDir, MaxBytes: uint64(cfg.StreamMaxBytes), PerSender: cfg.StreamPerSender}
	params := &agent.ParamStreamLimits{MaxSize: uint64(cfg.StreamMaxParamsBytes), MaxBytes: uint64(cfg.StreamMaxBytes), PerSender: cfg.StreamPerSender}
	return lim, params, nil
}

// removeLeftSpool removes the spool files a previous run left in the
// stream directory (it died with streams open), if there is one.
func removeLeftSpool(cfg *serveConfig, log *slog.Logger) error {
	if cfg.StreamDir == "" {
		return nil
	}
	entries, err := os.ReadDir(cfg.StreamDir)
	if err != nil {
		return cliutil.Failf("invalid_stream_dir", "cannot read the stream directory").WithCause(err)
	}
	removed := 0
	for _, e := range entries {
		for _, p := range spoolPrefixes {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), p) {
				if os.Remove(filepath.Join(cfg.StreamDir, e.Name())) == nil {
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
