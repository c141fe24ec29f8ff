//go:build unix

package ampbundle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
func shellBlocks(text string) []string { return fencedBlocks(text, "sh") }

// fencedBlocks returns the ```lang blocks of a Markdown text, in order.
func fencedBlocks(text, lang string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
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
// On the folder the section leaves, its subtests then check the result
// it shows, and run what "Running it as a service" has the agent's user
// do and the MCP host configuration of "Use it from an MCP host".
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

	// It ran: the invocation's result, through the sample handler, printed
	// as the README shows it.
	if !strings.Contains(stdout.String(), `"bonjour"`) {
		t.Errorf("the invocation did not print the sample handler's answer:\n%s", stdout.String())
	}
	shown := fencedBlocks(readmeSection(t, "## The job, by hand"), "json")
	if len(shown) != 1 || !strings.Contains(stdout.String(), shown[0]+"\n") {
		t.Errorf("the README shows the result as %q; invoke printed:\n%s", shown, stdout.String())
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
	path := bin + string(os.PathListSeparator) + filepath.Dir(goTool) + string(os.PathListSeparator) + os.Getenv("PATH")
	t.Run("ServiceUserCannotReadTheOperatorsFiles", func(t *testing.T) { readmeServiceStoreSteps(t, work, bin, path) })
	t.Run("ServiceFindsTheHandlerAndFilesItsUnitNames", func(t *testing.T) { readmeServiceInstalls(t, work) })
	t.Run("MCPHostExampleListsTools", func(t *testing.T) { readmeMCPHostExample(t, work, bin) })
}

// readmeServiceStoreSteps runs the steps of "Running it as a service" that
// the agent's user runs (sudo -u ampagent …) in the by-hand folder work,
// where the README's reader is (threat: steps that hand the service user
// files of the operator's 0700 folder, written 0600, and fail with
// "permission denied"). No argument of such a step may name a file of
// that folder: the files reach the user only through root's shell (a
// command substitution, a redirection). As root, the steps run as the
// user nobody (setpriv), with the folder as mktemp made it, exactly as
// on the host; otherwise as this user. /var/lib/ampagent is a folder of
// the test's.
func readmeServiceStoreSteps(t *testing.T, work, bin, path string) {
	blocks := shellBlocks(readmeSection(t, "## Running it as a service"))
	if len(blocks) != 1 {
		t.Fatalf("the section has %d shell blocks, the test knows 1: update the test with the README", len(blocks))
	}
	var steps []string
	cur := ""
	for _, line := range strings.Split(blocks[0], "\n") {
		switch {
		case cur != "":
			cur += "\n" + line
		case strings.HasPrefix(line, "sudo -u ampagent "):
			cur = line
		default:
			continue
		}
		code, _, _ := strings.Cut(line, " #")
		if !strings.HasSuffix(strings.TrimSpace(code), `\`) {
			steps = append(steps, cur)
			cur = ""
		}
	}
	if len(steps) != 2 {
		t.Fatalf("the section has %d steps run by the agent's user, the test knows 2 (trust add, import): update the test", len(steps))
	}
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	rootsOwn := regexp.MustCompile(`\$\([^)]*\)|<\s*\S+`)
	for _, step := range steps {
		args := rootsOwn.ReplaceAllString(step, "")
		for _, e := range entries {
			for _, f := range strings.Fields(args) {
				if strings.Trim(f, `"'`) == e.Name() {
					t.Errorf("the agent's user is handed %s, a file of the operator's folder (0700) it cannot open:\n%s", e.Name(), step)
				}
			}
		}
	}

	state, err := os.MkdirTemp("", "readme-service-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	runAs := ""
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Fatalf("as root, the test runs the steps as nobody with setpriv (util-linux): %v", err)
		}
		// The service user reaches the tools (0755, as in /usr/local/bin)
		// and its state folder, nothing of work's.
		tools, err := os.MkdirTemp("", "readme-service-bin-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(tools) })
		data, err := os.ReadFile(filepath.Join(bin, "ampbundle"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tools, "ampbundle"), data, 0o755); err != nil {
			t.Fatal(err)
		}
		for dir, own := range map[string]bool{tools: false, state: true} {
			mode := os.FileMode(0o755)
			if own {
				mode = 0o700
				if err := os.Chown(dir, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
		}
		runAs = setpriv + " --reuid=65534 --regid=65534 --clear-groups env PATH=" + tools + " TMPDIR=/tmp HOME=/ "
	}
	script := "set -euo pipefail\n"
	for _, step := range steps {
		script += strings.ReplaceAll(strings.Replace(step, "sudo -u ampagent ", runAs, 1), "/var/lib/ampagent", state) + "\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the service user's steps failed: %v\n%s\n%s", err, script, out)
	}
	ls := exec.CommandContext(ctx, filepath.Join(bin, "ampbundle"), "ls", "--db", filepath.Join(state, "registry.db"))
	if out, err := ls.CombinedOutput(); err != nil || !strings.Contains(string(out), "org.example.translate") {
		t.Errorf("the service's store does not hold the bundle: %v\n%s", err, out)
	}
}

// readmeMCPHostExample runs the MCP host configuration of "Use it from an
// MCP host" on the by-hand folder work (its /home/you/amp), as an MCP host
// would: initialize, then tools/list (threat: an example whose key, store
// or allow rule leaves the reader with an error or `tools: []`).
func readmeMCPHostExample(t *testing.T, work, bin string) {
	blocks := fencedBlocks(readmeSection(t, "## Use it from an MCP host"), "json")
	if len(blocks) != 1 {
		t.Fatalf("the section has %d json blocks, the test knows 1: update the test", len(blocks))
	}
	var hostCfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(blocks[0]), &hostCfg); err != nil || len(hostCfg.MCPServers) != 1 {
		t.Fatalf("the MCP host configuration is not one server: %v\n%s", err, blocks[0])
	}
	const home = "/home/you/amp/"
	for _, srv := range hostCfg.MCPServers {
		var args []string
		for _, a := range srv.Args {
			if strings.Contains(a, "/") && !strings.HasPrefix(a, home) {
				t.Fatalf("the example names %s, not a file of the by-hand folder (%s)", a, home)
			}
			args = append(args, strings.Replace(a, home, work+"/", 1))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, srv.Command), args...)
		// Requests go in one at a time, as from a host; stdin closes once
		// tools/list is answered (at its end, mcp stops).
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}`+"\n")
		var stdout strings.Builder
		var names []string
		lines := bufio.NewScanner(out)
		lines.Buffer(nil, 16<<20)
		for lines.Scan() {
			stdout.WriteString(lines.Text() + "\n")
			var msg struct {
				ID     int `json:"id"`
				Result struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
				} `json:"result"`
			}
			if json.Unmarshal(lines.Bytes(), &msg) != nil {
				continue
			}
			if msg.ID == 1 {
				io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
			}
			if msg.ID == 2 {
				for _, tool := range msg.Result.Tools {
					names = append(names, tool.Name)
				}
				break
			}
		}
		stdin.Close()
		io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the MCP example failed: %v\n%s", err, stderr.String())
		}
		if len(names) == 0 || strings.Contains(stderr.String(), "no tools") {
			t.Errorf("the MCP example lists no tool: %q\nstdout: %s\nstderr: %s", names, stdout.String(), stderr.String())
		}
	}
}

// readmeServiceInstalls checks "Running it as a service" against the
// by-hand folder work after its agent ran and stopped: every handler
// program its agent.json names (the config the service gets) is built
// into /usr/local/bin, in systemd's PATH (threat: a service that refuses
// to start, "program ampsample-translate is not in PATH", because the
// program is only in $(go env GOPATH)/bin, which ProtectHome= hides); and
// every ledger file contrib/systemd/ampagent.service names is a file the
// agent wrote beside its store (threat: a unit that documents files that
// do not exist).
func readmeServiceInstalls(t *testing.T, work string) {
	installed := map[string]bool{}
	for _, line := range strings.Split(shellBlocks(readmeSection(t, "## Running it as a service"))[0], "\n") {
		if !strings.Contains(line, "go build -o /usr/local/bin/ ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(f, "./cmd/"); ok {
				installed[name] = true
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(work, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Handlers map[string]struct {
			Command []string `json:"command"`
		} `json:"handlers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil || len(cfg.Handlers) == 0 {
		t.Fatalf("agent.json names no handler: %v", err)
	}
	for id, h := range cfg.Handlers {
		prog := h.Command[0]
		if !installed[strings.TrimPrefix(prog, "/usr/local/bin/")] || (strings.Contains(prog, "/") && !strings.HasPrefix(prog, "/usr/local/bin/")) {
			t.Errorf("the handler of %s, %s, is not built into /usr/local/bin by the service steps (they install %v)", id, prog, installed)
		}
	}
	unit, err := os.ReadFile(filepath.Join("contrib", "systemd", "ampagent.service"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`/var/lib/ampagent/(registry\.db\.ledger\S*)`).FindAllStringSubmatch(string(unit), -1)
	if len(named) == 0 {
		t.Fatal("ampagent.service names no ledger file: update the test")
	}
	for _, m := range named {
		if _, err := os.Stat(filepath.Join(work, m[1])); err != nil {
			t.Errorf("ampagent.service names %s, which the agent did not write beside its store: %v", m[0], err)
		}
	}
}
