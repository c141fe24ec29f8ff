//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAgentConfigAnotherUserMayWriteIsRefused: the config file of
// 'ampagent serve' and 'mcp' names the programs the agent runs as its own
// user (handlers: command, dir, env) and who may call them (allow). It
// was read whatever its owner and mode: a file another user owns, or one
// group or others may write, let that user have the agent run a program
// of theirs, with the agent's key file readable by it, at the next start
// or SIGHUP, and widen the allow rules. Such a file is refused
// invalid_config, as OpenSSH refuses a config file "Bad owner or
// permissions" (readconf.c); one the agent's user (or root) owns and
// only it may write is read, whoever may read it.
func TestAgentConfigAnotherUserMayWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   os.FileMode
		owner  int // -1: this process's user
		refuse bool
	}{
		{"owner only", 0o600, -1, false},
		{"readable by all, written by the owner", 0o644, -1, false},
		{"group may write", 0o664, -1, true},
		{"others may write", 0o606, -1, true},
		{"another user owns it", 0o644, 65534, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, map[string]any{"max_overdue_handlers": 64})
			if err := os.Chmod(file, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.owner >= 0 {
				if os.Geteuid() != 0 {
					t.Skip("giving a file to another user needs root")
				}
				if err := os.Chown(file, tc.owner, tc.owner); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := serveConfigOf(t, "--config", file)
			if !tc.refuse {
				if err != nil || cfg.MaxOverdueHandlers != 64 {
					t.Fatalf("a config only its owner may write: %v", err)
				}
				return
			}
			if amp.NameOf(err) != "invalid_config" {
				t.Fatalf("a config another user may write was read: %v", err)
			}
		})
	}
}

// TestAgentConfigSwappedForFIFOIsNeverWaitedOn: a SIGHUP re-reads the
// config file in serve's signal loop. It was opened with a plain open(2):
// a FIFO put at its path (by whoever may write its folder) blocked the
// reload for good, without a log line, and with it the loop that takes
// SIGTERM and SIGINT: the agent no longer stopped but by SIGKILL, and the
// allow rules the operator had just removed stayed in force. The FIFO is
// refused at once: the reload is refused and logged, the running
// handlers and rules stay, and the agent stops when told.
func TestAgentConfigSwappedForFIFOIsNeverWaitedOn(t *testing.T) {
	db, key := serveStore(t)
	cfgPath := filepath.Join(t.TempDir(), "agent.json")
	body := `{"allow": ["*=org.example."], "handlers": {"org.example.translate.text:2.1.0": {"command": ["/bin/sh", "-c", "echo '{\"text\":\"one\",\"detected_source\":\"en\"}'"]}}}`
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startServe(t, "--db", db, "--key", key, "--config", cfgPath)
	if err := os.Remove(cfgPath); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(cfgPath, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	t.Cleanup(func() {
		// Release a reload blocked on the FIFO (the behaviour this test
		// refuses), so that the agent can stop: a writer that closes.
		if w, err := os.OpenFile(cfgPath, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	r.signal(syscall.SIGHUP)
	waitLog(t, r, "reload refused", 1)
	if res := r.stop(); res.code != 0 {
		t.Fatalf("serve exit %d after a refused reload: %s", res.code, res.stderr)
	}
}
