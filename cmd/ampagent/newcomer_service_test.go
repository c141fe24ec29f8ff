//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/resolver"
)

// What a newcomer met running the agent as README.md says, on a fresh
// clone (README.md: "Running it as a service", "Use it from an MCP host").

// storeDirEntries lists the folder of the store db, sorted.
func storeDirEntries(t *testing.T, db string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(db))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestRefusedStartLeavesNoFileBehind: serve and mcp check their whole
// configuration (flags, key, store, handlers, limits) before they open
// the ledger, the admin socket or a listener, so a refused start leaves
// the store's folder as it was: no DB.ledger.wal, no .lock, no socket
// (threat: a usage error that still creates files, which then look like
// the traces of an agent that ran).
func TestRefusedStartLeavesNoFileBehind(t *testing.T) {
	unknownHandler := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.nope:1.0.0": map[string]any{"command": []string{"/bin/true"}}}})
	tooLargeResult := writeConfig(t, map[string]any{"ledger_caller_bytes": 64 << 10, "max_result_bytes": 1 << 20,
		"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/true"}}}})
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name      string
		publisher bool // --key is the store's trusted publisher key
		args      []string
		code      string
		exit      int
	}{
		{"mcp listener without a token file", false, []string{"--mcp-listen", "127.0.0.1:0"}, "usage", 2},
		{"handler for a capability the store lacks", false, []string{"--config", unknownHandler}, "misconfigured", 1},
		{"largest result over a caller's ledger share", false, []string{"--config", tooLargeResult}, string(agent.ErrResultExceedsShare), 1},
		{"publisher key as the agent key", true, nil, ErrPublisherKeyAsAgentKey, 1},
		{"tcp certificate missing", false, []string{"--listen-tcp", "127.0.0.1:0", "--tls-cert", missing, "--tls-key", missing}, "", 1},
		{"stream directory missing", false, []string{"--stream-dir", missing}, "invalid_stream_dir", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, key := serveStore(t)
			if tc.publisher {
				key = filepath.Join(filepath.Dir(db), "publisher.key")
				if err := os.WriteFile(key, sampleFile(t, "keys/TEST-ONLY-example-publisher.key.pem"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := storeDirEntries(t, db)
			code, exit := serveFails(t, append([]string{"--db", db, "--key", key, "--listen", "127.0.0.1:0"}, tc.args...)...)
			if exit != tc.exit || (tc.code != "" && code != tc.code) {
				t.Errorf("serve: got %s exit %d, want %s exit %d", code, exit, tc.code, tc.exit)
			}
			if after := storeDirEntries(t, db); !slices.Equal(before, after) {
				t.Errorf("serve refused to start but left files: before %v, after %v", before, after)
			}
			if tc.exit == 2 || strings.HasPrefix(tc.name, "tcp") || strings.HasPrefix(tc.name, "stream") {
				return // serve's flags: mcp has none of them
			}
			r := runCLI(t, "", append([]string{"mcp", "--db", db, "--key", key}, tc.args...)...)
			if r.code != tc.exit {
				t.Errorf("mcp: exit %d, want %d: %s", r.code, tc.exit, r.stderr)
			}
			if after := storeDirEntries(t, db); !slices.Equal(before, after) {
				t.Errorf("mcp refused to start but left files: before %v, after %v", before, after)
			}
		})
	}
}

// TestServeWithThePublisherKeyIsRefused: `serve --key publisher.key` with
// the key its own store trusts for bundles is refused, naming the trusted
// key and what to do; a key file that holds only an Ed25519 key (the shape
// of 'ampbundle keygen', a publisher key of another store) starts with a
// warning; an agent key from 'ampagent keygen' starts without one (threat:
// an agent that signs its replies with the publisher's offline key, so
// that the key the air gap keeps offline sits on a networked host).
func TestServeWithThePublisherKeyIsRefused(t *testing.T) {
	db, key := serveStore(t)
	pub := filepath.Join(filepath.Dir(db), "publisher.key")
	if err := os.WriteFile(pub, sampleFile(t, "keys/TEST-ONLY-example-publisher.key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := serveRefusal(t, "--db", db, "--key", pub, "--listen", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, `the agent key is the publisher key "example" this store trusts`) ||
		!strings.Contains(r.stderr, "ampagent keygen") {
		t.Errorf("publisher key: exit %d\n%s", r.code, r.stderr)
	}

	const shapeWarning = "holds only an ed25519 key"
	other := filepath.Join(filepath.Dir(db), "acme-publisher.key")
	if err := os.WriteFile(other, sampleFile(t, "keys/TEST-ONLY-acme-publisher.key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := startServe(t, "--db", db, "--key", other, "--allow", "*=org.example.")
	if log := run.stop().stderr; !strings.Contains(log, shapeWarning) {
		t.Errorf("a key file of the publisher shape started without a warning:\n%s", log)
	}
	run = startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.")
	if log := run.stop().stderr; strings.Contains(log, shapeWarning) {
		t.Errorf("an agent key from 'ampagent keygen' was warned about:\n%s", log)
	}
}

// serveStartText runs serve without --json and returns its start lines,
// waiting (at most serveDeadline) until the line that starts with last is
// printed; serve stops when the test ends.
func serveStartText(t *testing.T, last string, args ...string) []string {
	t.Helper()
	var out lockedBuffer
	p := launchServe(t, &out, time.Now, append([]string{"serve"}, args...)...)
	deadline := time.Now().Add(serveDeadline)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, last) {
				return strings.Split(strings.TrimSpace(out.String()), "\n")
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("serve exited %d: %s\n%s", p.code, out.String(), p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no %q line within %v:\n%s\n%s", last, serveDeadline, out.String(), p.stderr.String())
	return nil
}

// TestServeTextOutputNamesTheMCPAndCatalogURLs: serve's text start lines
// say what its --json document says, the MCP endpoint and the catalog
// included, also for --catalog on the agent's listener (threat: an
// operator who starts serve by hand and is not told where its MCP
// endpoint and catalog are, while --json tells).
func TestServeTextOutputNamesTheMCPAndCatalogURLs(t *testing.T) {
	tokens := writeFile(t, "tokens", "did:web:a.example.org tok-0123456789abcdef0123456789abcdef\n")
	flags := []string{"--allow", "*=org.example.", "--catalog", "--mcp-listen", "127.0.0.1:0", "--mcp-token-file", tokens}

	db, key := serveStore(t)
	doc := startServeDoc(t, append([]string{"--db", db, "--key", key}, flags...)...)
	listening, _ := doc["listening"].(string)
	mcpURL, _ := doc["mcp"].(string)
	if doc["catalog"] != listening+"/ui/" || !strings.HasPrefix(mcpURL, "http://127.0.0.1:") || !strings.HasSuffix(mcpURL, "/mcp") {
		t.Errorf("--json start document: %v", doc)
	}

	db, key = serveStore(t)
	lines := serveStartText(t, "catalog on ", append([]string{"--listen", "127.0.0.1:0", "--db", db, "--key", key}, flags...)...)
	said := map[string]string{}
	for _, line := range lines {
		for _, prefix := range []string{"listening on ", "mcp on ", "catalog on "} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				said[prefix], _, _ = strings.Cut(rest, " ")
			}
		}
	}
	if said["mcp on "] == "" || !strings.HasSuffix(said["mcp on "], "/mcp") || said["catalog on "] != said["listening on "]+"/ui/" {
		t.Fatalf("text start lines do not say what --json says: %q", lines)
	}
	res, err := http.Get(said["catalog on "])
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("the catalog line names %s, which answers %d", said["catalog on "], res.StatusCode)
	}
}

// TestMCPSaysWhenThePrincipalIsAllowedNoTool: `ampagent mcp` for a
// principal that no allow rule admits to a handled capability, or with
// no handler at all, says so once on stderr at the start, naming the
// principal and the rule that would allow it; a principal with a tool
// gets no such line (threat: an MCP host shown `tools: []` and nothing
// else, with no way to learn why).
func TestMCPSaysWhenThePrincipalIsAllowedNoTool(t *testing.T) {
	db, key := serveStore(t)
	handler := map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/true"}}}
	noRules := writeConfig(t, map[string]any{"handlers": handler})
	otherCaller := writeConfig(t, map[string]any{"handlers": handler, "allow": []string{"did:web:other.example.org=org.example."}})
	noHandlers := writeConfig(t, map[string]any{"allow": []string{"*=org.example."}})
	everyone := writeConfig(t, map[string]any{"handlers": handler, "allow": []string{"*=org.example."}})
	me := localPrincipal()
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string // each in the one warning line; none: no warning
	}{
		{"no allow rule", []string{"--config", noRules}, []string{"principal=" + me, "--allow " + me + "=org.example.translate.text"}},
		{"a rule for another caller", []string{"--config", otherCaller}, []string{"principal=" + me}},
		{"another principal", []string{"--config", noRules, "--principal", "did:web:ide.example.org"},
			[]string{"principal=did:web:ide.example.org", "--allow did:web:ide.example.org=org.example.translate.text"}},
		{"no handler", []string{"--config", noHandlers}, []string{"principal=" + me, "names no handler"}},
		{"allowed with --allow", []string{"--config", noRules, "--allow", me + "=org.example."}, nil},
		{"allowed by a * rule", []string{"--config", everyone}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"mcp", "--db", db, "--key", key}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("mcp: exit %d\n%s", r.code, r.stderr)
			}
			var warned []string
			for _, line := range strings.Split(r.stderr, "\n") {
				if strings.Contains(line, "no tools") {
					warned = append(warned, line)
				}
			}
			if tc.wants == nil {
				if len(warned) != 0 {
					t.Errorf("a principal with a tool was warned: %q", warned)
				}
				return
			}
			if len(warned) != 1 {
				t.Fatalf("want one warning line, got %q (stderr %q)", warned, r.stderr)
			}
			for _, want := range tc.wants {
				if !strings.Contains(warned[0], want) {
					t.Errorf("the warning does not say %q: %s", want, warned[0])
				}
			}
		})
	}
}

// TestMCPOnAStoreTheServiceHoldsSaysWhatToDo: `ampagent mcp` on the store
// a running agent holds is refused (the store is locked) with a hint that
// names the running agent's own MCP endpoint (threat: a newcomer told
// only "store is locked by another process").
func TestMCPOnAStoreTheServiceHoldsSaysWhatToDo(t *testing.T) {
	db, key := serveStore(t)
	startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.")
	r := runCLI(t, "", "mcp", "--db", db, "--key", key, "--allow", "*=org.example.")
	if r.code != 1 || !strings.Contains(r.stderr, "--mcp-listen") || !strings.Contains(r.stderr, string(resolver.ErrStoreInUse)) && !strings.Contains(r.stderr, "locked") {
		t.Errorf("mcp on a held store: exit %d\n%s", r.code, r.stderr)
	}
}
