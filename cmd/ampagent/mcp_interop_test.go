//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// The MCP interop fixture: the translate and geo samples, a program
// handler that counts its runs, geo's distance output schema tampered
// with in the store, and one principal allowed everything.
const (
	interopPrincipal = "did:web:interop.example.org"
	interopToken     = "interop-token-0123456789abcdef0123456789"
	interopTool      = "org.example.translate.text_1.0.0"
	interopTampered  = "com.acme.geo.distance_1.0.0"
	interopScript    = "scripts/ci-mcp.sh"
)

type mcpFixture struct {
	bin, db, key, config, tokens, runs string
}

// buildAmpagent builds the ampagent binary into dir.
func buildAmpagent(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "ampagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func newMCPFixture(t *testing.T, bin string) *mcpFixture {
	t.Helper()
	dir := t.TempDir()
	f := &mcpFixture{bin: bin, db: filepath.Join(dir, "store.db"), key: filepath.Join(dir, "agent.key"),
		config: filepath.Join(dir, "config.json"), tokens: filepath.Join(dir, "tokens"), runs: filepath.Join(dir, "runs")}
	s, err := resolver.Open(f.db, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []struct{ name, pub, scope, bundle string }{
		{"example", "keys/TEST-ONLY-example-publisher.pub.pem", "org.example", "translate.ampb"},
		{"acme", "keys/TEST-ONLY-acme-publisher.pub.pem", "com.acme", "geo.ampb"}} {
		pub, err := keyfile.ParsePublicPEM(sampleFile(t, tr.pub))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.TrustAdd(tr.name, pub, []string{tr.scope}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Import(context.Background(), bytes.NewReader(sampleFile(t, tr.bundle)), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	tamperStoreBytes(t, f.db, sampleFile(t, "geo/capabilities/com.acme.geo.distance/1.0.0/output.schema.json"))
	if err := os.WriteFile(f.key, sampleFile(t, "keys/TEST-ONLY-translator-agent.key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "handler.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho run >> \"$RUNS\"\nprintf '{\"text\":\"ok\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := map[string]any{"command": []string{script}, "env": map[string]string{"RUNS": f.runs}}
	cfg, _ := json.Marshal(map[string]any{"handlers": map[string]any{"org.example.translate.text:1.0.0": h, "com.acme.geo.distance:1.0.0": h},
		"allow": []string{interopPrincipal + "=*"}})
	if err := os.WriteFile(f.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.tokens, []byte(interopPrincipal+" "+interopToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// tamperStoreBytes flips a bit in every copy of want in the store file.
func tamperStoreBytes(t *testing.T, db string, want []byte) {
	t.Helper()
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], want)
		if j < 0 {
			break
		}
		raw[i+j+len(want)/2] ^= 0x01
		i += j + len(want)
		n++
	}
	if n == 0 {
		t.Fatal("the schema is not in the store file")
	}
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *mcpFixture) stdioArgs() []string {
	return []string{"mcp", "--db", f.db, "--key", f.key, "--config", f.config, "--principal", interopPrincipal}
}

// runCount is how many times the handler program ran.
func (f *mcpFixture) runCount(t *testing.T) int {
	b, err := os.ReadFile(f.runs)
	if os.IsNotExist(err) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// startMCPServe runs `ampagent serve --mcp-listen` and returns the MCP
// endpoint's URL; the process is stopped (SIGTERM) at cleanup.
func (f *mcpFixture) startMCPServe(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(f.bin, "serve", "--json", "--listen", "127.0.0.1:0", "--db", f.db, "--key", f.key, "--config", f.config,
		"--mcp-listen", "127.0.0.1:0", "--mcp-token-file", f.tokens, "--log-level", "warn")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Error("serve did not stop on SIGTERM")
		}
	})
	var doc struct {
		MCP string `json:"mcp"`
	}
	if err := json.NewDecoder(out).Decode(&doc); err != nil || doc.MCP == "" {
		t.Fatalf("serve did not start: %v %+v\n%s", err, doc, stderr.String())
	}
	return doc.MCP
}

// expectedInputSchema is translate 1.0.0's input schema as docs/FORMAT.md
// ("MCP tools") says it is listed, built here from the sample's files: the
// root with its artifact URL as "$id", each other artifact of the $ref
// closure under "$defs" as a resource of its artifact URL.
func expectedInputSchema(t *testing.T) map[string]any {
	t.Helper()
	read := func(rel string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(sampleFile(t, "translate/"+rel), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	root := read("capabilities/org.example.translate.text/1.0.0/input.schema.json")
	root["$id"] = "ampbundle:///capabilities/org.example.translate.text/1.0.0/input.schema.json"
	text := read("schemas/common/text.json")
	text["$id"] = "ampbundle:///schemas/common/text.json"
	lang := read("schemas/common/language.json")
	root["$defs"] = map[string]any{
		"ampbundle:schemas/common/text.json": text,
		"ampbundle:schemas/common/language.json": map[string]any{"$id": "ampbundle:///schemas/common/language.json",
			"$ref": lang["$id"], "$defs": map[string]any{"artifact": lang}},
	}
	return root
}

// interopNode returns the node binary and the interop script, failing
// (never skipping) when the setup script has not been run.
func interopNode(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: run %s (the MCP interop client needs Node.js 20+)", interopScript)
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "contrib", "mcp-interop"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("contrib/mcp-interop/node_modules is missing: run %s (npm ci of the TypeScript MCP SDK)", interopScript)
	}
	return node, filepath.Join(dir, "interop.mjs")
}

// TestMCPBuiltAgentWithIndependentClients: the built ampagent, driven
// as MCP hosts drive it. Threat: a server only our own client
// understands, or whose guarantees hold only for it.
func TestMCPBuiltAgentWithIndependentClients(t *testing.T) {
	node, script := interopNode(t)
	bin := buildAmpagent(t, t.TempDir())
	t.Run("typescript-sdk", func(t *testing.T) { interopTypeScript(t, bin, node, script) })
	t.Run("go-sdk-command", func(t *testing.T) { goSDKCommand(t, bin) })
}

// interopTypeScript: an independent client, the official TypeScript SDK,
// drives `ampagent mcp` (stdio) and `ampagent serve --mcp-listen`
// (streamable HTTP): initialize, tools/list with the stored schemas, a
// call, a schema violation (4004, no run), a tampered bundle (5002, no
// run).
func interopTypeScript(t *testing.T, bin, node, script string) {
	var outSchema map[string]any
	if err := json.Unmarshal(sampleFile(t, "translate/capabilities/org.example.translate.text/1.0.0/output.schema.json"), &outSchema); err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			f := newMCPFixture(t, bin)
			plan := map[string]any{"transport": transport, "tool": interopTool, "tampered_tool": interopTampered,
				"input_schema": expectedInputSchema(t), "output_schema": outSchema,
				"good_args": map[string]any{"text": "hello", "lang": "fr"}, "good_result": map[string]any{"text": "ok"},
				"bad_args": map[string]any{"text": "hello"}, "violation_code": 4004}
			if transport == "stdio" {
				plan["command"], plan["args"] = f.bin, f.stdioArgs()
			} else {
				plan["url"], plan["token"] = f.startMCPServe(t), interopToken
			}
			p := filepath.Join(t.TempDir(), "plan.json")
			b, _ := json.Marshal(plan)
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, script, p).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", filepath.Base(script), transport, err, out)
			}
			if !bytes.Contains(out, []byte(`"ok":true`)) {
				t.Fatalf("interop report: %s", out)
			}
			if n := f.runCount(t); n != 1 {
				t.Fatalf("the handler ran %d times, want 1 (the good call only)", n)
			}
		})
	}
}

// goSDKCommand: the go-sdk client starts `ampagent mcp` as an MCP host
// does (a command with stdio) and calls a tool.
func goSDKCommand(t *testing.T, bin string) {
	f := newMCPFixture(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(f.bin, f.stdioArgs()...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != interopTool {
		t.Fatalf("%v %+v", err, res)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: interopTool, Arguments: map[string]any{"text": "hi", "lang": "de"}})
	if err != nil || r.IsError || f.runCount(t) != 1 {
		t.Fatalf("%v %+v runs %d", err, r, f.runCount(t))
	}
}
