//go:build unix

package ampbundle

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeSection returns the body of the README section whose heading is
// heading, up to the next section.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("README.md has no section %q", heading)
	}
	body := text[start+len(heading)+2:]
	if end := strings.Index(body, "\n## "); end >= 0 {
		body = body[:end]
	}
	return body
}

// shellBlocks returns the ```sh blocks of a Markdown text, in order.
func shellBlocks(text string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestReadmeByHandRuns runs the shell blocks of the README's "The job, by
// hand", top to bottom, in one bash from the top of the repository, as a
// reader would paste them (threat: a README that no longer runs, with
// placeholders, programs nothing ships, or files written into the clone).
// What the test changes, and only that: `go install` installs into a
// folder of the test's (GOBIN, put first in PATH); mktemp makes its folder
// under the test's (TMPDIR); the agent listens on a free port instead of
// 8080; and after the line that starts the agent in the background the
// test waits until the port accepts connections (a reader types slower).
// The README itself stops the agent; the test kills whatever is left.
func TestReadmeByHandRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("the README's shell blocks need bash: %v", err)
	}
	// The script runs go install: the go tool that runs this test, first
	// on PATH, is the one it gets.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the README's shell blocks need the go tool: %v", err)
	}
	const port8080 = "127.0.0.1:8080"
	blocks := shellBlocks(readmeSection(t, "## The job, by hand"))
	if len(blocks) != 7 {
		t.Fatalf("the section has %d shell blocks, the test knows 7: update the test with the README", len(blocks))
	}
	script := strings.Join(blocks, "\n")
	for _, placeholder := range []string{"…", "z6Mk", "/usr/local/bin/"} {
		if strings.Contains(script, placeholder) {
			t.Errorf("the README's commands hold the placeholder %q", placeholder)
		}
	}
	if !strings.Contains(script, port8080) {
		t.Fatalf("the README's commands no longer use %s: update the test", port8080)
	}
	port := freePort(t)
	script = strings.ReplaceAll(script, port8080, "127.0.0.1:"+port)
	var lines []string
	served := false
	for _, line := range strings.Split(script, "\n") {
		lines = append(lines, line)
		if strings.HasPrefix(line, "ampagent serve ") && strings.HasSuffix(strings.TrimSpace(line), "&") {
			served = true
			lines = append(lines, fmt.Sprintf(`serve_pid=$!
until (: </dev/tcp/127.0.0.1/%s) 2>/dev/null; do
  kill -0 "$serve_pid" 2>/dev/null || { echo "the agent exited:" >&2; cat agent.log >&2; exit 1; }
  sleep 0.05
done`, port))
		}
	}
	if !served {
		t.Fatal("the README no longer starts the agent in the background (ampagent serve … &): update the test")
	}
	script = "set -euo pipefail\n" + strings.Join(lines, "\n") + "\n"

	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	scratch := filepath.Join(tmp, "tmp")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "--noprofile", "--norc", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "TMPDIR="+scratch,
		"PATH="+bin+string(os.PathListSeparator)+filepath.Dir(goTool)+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Its own process group, killed whole at the end: an agent the
	// script left running never outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("the README's by-hand section failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	// It ran: the invocation's result, through the sample handler.
	if !strings.Contains(stdout.String(), `"bonjour"`) {
		t.Errorf("the invocation did not print the sample handler's answer:\n%s", stdout.String())
	}
	// Everything it wrote is in its temporary folder, none of it in the
	// clone.
	dirs, err := os.ReadDir(scratch)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("mktemp -d made %d folders under TMPDIR (%v)", len(dirs), err)
	}
	work := filepath.Join(scratch, dirs[0].Name())
	for _, f := range []string{"publisher.key", "publisher.pub", "translate.ampb", "registry.db", "agent.key", "agent.json", "caller.key", "agent.log"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Errorf("the flow did not write %s in its folder: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("the flow wrote %s into the clone", f)
		}
	}
	// The agent stopped gracefully when the README said so.
	if log, err := os.ReadFile(filepath.Join(work, "agent.log")); err != nil || !strings.Contains(string(log), "stopped") {
		t.Errorf("the agent did not stop gracefully: %v\n%s", err, log)
	}
}
