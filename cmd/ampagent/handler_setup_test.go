//go:build unix

package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// The setups the handler program tests share (issue 22: the same setup
// written out in each test).

// setsidDaemon is the start of a handler program's shell script that
// starts a daemon that left the program's process group and session, and
// writes its pid to $1 (shellProgram's pid file): setsid runs in the
// background, so it is not a group leader and calls setsid() itself; the
// shell it runs starts the daemon and exits at once, so the daemon's
// parent is gone. The script goes on once the pid file is written.
const setsidDaemon = `setsid /bin/sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"' sh "$1" </dev/null >/dev/null 2>&1 &
while [ ! -s "$1" ]; do sleep 0.01; done
`

// shellProgram is runProgram's handler of `/bin/sh -c script`, the
// script's $1 a pid file in a folder of the test's own (its path is
// returned), logging to log (nil: nowhere).
func shellProgram(t *testing.T, script string, log io.Writer) (agent.Handler, string) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if log != nil {
		logger = slog.New(slog.NewTextHandler(log, nil))
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	h := runProgram("org.example.spawn:1.0.0", execHandler{Command: []string{"/bin/sh", "-c", script, "sh", pidFile}}, logger, nil)
	return h, pidFile
}

// spawnedPid reads the pid a test's program wrote to file, and kills that
// process when the test ends, should it have outlived the invocation.
func spawnedPid(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		t.Fatalf("pid %q", data)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// namedCaller is a caller a test's allow rule names, by its DID.
type namedCaller struct {
	t  *testing.T
	id amp.Identity
}

// newNamedCaller makes a caller of a fresh key.
func newNamedCaller(t *testing.T) namedCaller {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := (&keyfile.Keys{Ed25519: priv}).Identity("")
	if err != nil {
		t.Fatal(err)
	}
	return namedCaller{t: t, id: id}
}

// DID is the caller's DID, for an allow rule.
func (n namedCaller) DID() string { return n.id.DID }

// client is the caller's client of the agent at url whose DID is peer,
// one attempt a call (as newTestClient's).
func (n namedCaller) client(url, peer string) *client.Client {
	n.t.Helper()
	tr, err := amphttp.NewTransport(url, 4)
	if err != nil {
		n.t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: n.id, Peer: peer, Transport: tr, Now: time.Now, Rand: rand.Reader,
		Retry: client.Retry{MaxAttempts: 1}})
	if err != nil {
		n.t.Fatal(err)
	}
	return c
}
