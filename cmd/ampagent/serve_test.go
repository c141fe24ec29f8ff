//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

func sampleFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bundles", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveStore creates a store that trusts the example publisher and holds
// the translate sample; it returns the store path and a private copy
// (mode 0600) of the test-only agent key.
func serveStore(t *testing.T) (db, key string) {
	t.Helper()
	dir := t.TempDir()
	db = filepath.Join(dir, "store.db")
	s, err := resolver.Open(db, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keyfile.ParsePublicPEM(sampleFile(t, "keys/TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(sampleFile(t, "translate.ampb")), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	key = filepath.Join(dir, "agent.key")
	if err := os.WriteFile(key, sampleFile(t, "keys/TEST-ONLY-translator-agent.key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	return db, key
}

// running is an `ampagent serve` run in the test process.
type running struct {
	url, tcpURL, did, sock string
	metrics                string // the metrics URL, with --metrics-listen
	stop                   func() result
	signal                 func(os.Signal) // sends serve a signal (SIGHUP: reload)
	stderr                 func() string   // its log so far
}

// lockedBuffer is a bytes.Buffer safe to read while serve writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveDeadline bounds how long a test waits for serve to print its start
// document or to refuse to start: a serve that does neither (it hangs, or
// it runs when the test expected a refusal) fails the test in seconds
// with its log, never hangs to the package timeout.
const serveDeadline = 30 * time.Second

// serveProc is an `ampagent serve` run in a goroutine of the test process,
// with injected stop signals and its log kept.
type serveProc struct {
	sigs   chan os.Signal
	exited chan struct{} // closed once run has returned and stdout is closed
	code   int           // run's exit code, once exited is closed
	stderr lockedBuffer
}

// launchServe runs `ampagent argv...` with stdout (closed, when it is a
// Closer, once run returns) and now as the clock. When the test ends,
// serve gets SIGTERM and serveDeadline to stop.
func launchServe(t *testing.T, stdout io.Writer, now func() time.Time, argv ...string) *serveProc {
	t.Helper()
	p := &serveProc{sigs: make(chan os.Signal, 1), exited: make(chan struct{})}
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: &p.stderr,
		Now: now, Rand: rand.Reader, Getenv: func(string) string { return "" }, Signals: p.sigs}
	go func() {
		defer close(p.exited)
		p.code = run(context.Background(), env, append([]string{"ampagent"}, argv...))
		if c, ok := stdout.(io.Closer); ok {
			c.Close()
		}
	}()
	t.Cleanup(func() {
		p.terminate()
		select {
		case <-p.exited:
		case <-time.After(serveDeadline):
			t.Errorf("serve did not stop on SIGTERM:\n%s", p.stderr.String())
		}
	})
	return p
}

// terminate sends serve SIGTERM unless one is already pending.
func (p *serveProc) terminate() {
	select {
	case p.sigs <- syscall.SIGTERM:
	default:
	}
}

// firstDoc decodes serve's first --json document from dec. It fails the
// test, with serve's log, when serve closes its output first or prints
// nothing within serveDeadline (serve is then told to stop).
func (p *serveProc) firstDoc(t *testing.T, dec *json.Decoder, out io.Closer) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	got := make(chan error, 1)
	go func() { got <- dec.Decode(&raw) }()
	timer := time.NewTimer(serveDeadline)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			out.Close()
			t.Fatalf("serve did not start: %v\nstderr: %s", err, p.stderr.String())
		}
		return raw
	case <-timer.C:
		p.terminate()
		out.Close() // unblocks the decoder; serve's later writes fail
		t.Fatalf("serve printed no start document within %v\nstderr: %s", serveDeadline, p.stderr.String())
		return nil
	}
}

// startServe runs serve with --json on 127.0.0.1:0 and waits (at most
// serveDeadline) for its "listening" document. stop sends SIGTERM and
// returns the outcome.
func startServe(t *testing.T, args ...string) *running {
	t.Helper()
	pr, pw := io.Pipe()
	p := launchServe(t, pw, time.Now, append([]string{"serve", "--json", "--listen", "127.0.0.1:0"}, args...)...)
	var doc struct {
		Listening   string `json:"listening"`
		TCP         string `json:"listening_tcp"`
		DID         string `json:"did"`
		AdminSocket string `json:"admin_socket"`
		Metrics     string `json:"metrics"`
	}
	dec := json.NewDecoder(pr)
	raw := p.firstDoc(t, dec, pr)
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Listening == "" {
		pr.Close()
		t.Fatalf("serve did not start: %v %s\nstderr: %s", err, raw, p.stderr.String())
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(io.MultiReader(dec.Buffered(), pr)); rest <- string(b) }()
	r := &running{url: doc.Listening, tcpURL: doc.TCP, did: doc.DID, sock: doc.AdminSocket, metrics: doc.Metrics,
		signal: func(s os.Signal) { p.sigs <- s }, stderr: p.stderr.String}
	var once sync.Once
	var res result
	r.stop = func() result {
		once.Do(func() {
			p.terminate()
			select {
			case <-p.exited:
				res = result{code: p.code, stdout: <-rest, stderr: p.stderr.String()}
			case <-time.After(serveDeadline):
				t.Fatalf("serve did not stop on SIGTERM:\n%s", p.stderr.String())
			}
		})
		return res
	}
	t.Cleanup(func() { r.stop() })
	return r
}

// serveRefusal runs `ampagent serve args...` expecting it to refuse to
// start, with the clock runCLI uses, and returns its outcome. It fails
// the test at once, with serve's output, when serve prints a start
// document instead, and after serveDeadline when it neither exits nor
// starts.
func serveRefusal(t *testing.T, args ...string) result {
	t.Helper()
	var out lockedBuffer
	p := launchServe(t, &out, func() time.Time { return time.UnixMilli(1707055260000) }, append([]string{"serve"}, args...)...)
	deadline := time.NewTimer(serveDeadline)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.exited:
			return result{code: p.code, stdout: out.String(), stderr: p.stderr.String()}
		case <-deadline.C:
			p.terminate()
			t.Fatalf("serve neither refused nor started within %v\nstdout: %s\nstderr: %s", serveDeadline, out.String(), p.stderr.String())
		case <-tick.C:
			if s := out.String(); strings.Contains(s, `"listening"`) || strings.Contains(s, "listening on ") {
				p.terminate()
				t.Fatalf("serve started instead of refusing:\nstdout: %s\nstderr: %s", s, p.stderr.String())
			}
		}
	}
}

// serveFails runs serve --json expecting it to refuse to start (see
// serveRefusal); it returns the error code of the --json document and the
// exit code.
func serveFails(t *testing.T, args ...string) (string, int) {
	t.Helper()
	r := serveRefusal(t, append([]string{"--json"}, args...)...)
	if r.code == 0 {
		t.Fatalf("serve exited 0 without serving: %s", r.stdout)
	}
	code, _ := errorDoc(t, r)
	return code, r.code
}

func newTestClient(t *testing.T, url, peer string) *client.Client {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := (&keyfile.Keys{Ed25519: priv}).Identity("")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := amphttp.NewTransport(url, 4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: id, Peer: peer, Transport: tr, Now: time.Now, Rand: rand.Reader,
		Retry: client.Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func invokeID(t *testing.T, c *client.Client, id string, params map[string]any, timeoutMS uint64) (map[string]any, error) {
	t.Helper()
	capID, err := capability.ParseID(id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := amp.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	inv := capability.Invoke{ID: capID, Params: p}
	if timeoutMS > 0 {
		inv.TimeoutMS = &timeoutMS
	}
	res, _, err := c.Invoke(context.Background(), inv)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := amp.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func writeConfig(t *testing.T, cfg any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "config.json", string(b))
}

// TestServeExecHandlers runs the agent with program handlers and checks each
// outcome a program can have: success, non-zero exit (5001, its stderr
// never reaches the caller), output that breaks the output schema (5001),
// and a program still running at the deadline (5003, its whole process
// group killed).
func TestServeExecHandlers(t *testing.T) {
	db, key := serveStore(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	cfg := writeConfig(t, map[string]any{
		"allow": []string{"*=org.example."},
		"handlers": map[string]any{
			// Upper-cases the text (reads stdin; its env names the caller).
			"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/sh", "-c",
				`read -r line; t=$(printf '%s' "$line" | sed 's/.*"text":"\([^"]*\)".*/\1/' | tr a-z A-Z); printf '{"text":"%s","detected_source":"%s"}' "$t" "$MODE"`},
				"env": map[string]string{"MODE": "en"}},
			"org.example.translate.text:2.0.0": map[string]any{"command": []string{"/bin/sh", "-c", `echo "SECRET-STDERR" >&2; exit 3`}},
			"org.example.translate.text:1.5.0": map[string]any{"command": []string{"/bin/sh", "-c", `echo '{"nope":1}'`}},
			// Leaves a grandchild behind: the kill must take the group.
			"org.example.translate.text:1.0.0": map[string]any{"command": []string{"/bin/sh", "-c",
				`sleep 60 & echo $! > ` + pidFile + `; wait`}},
		},
	})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	c := newTestClient(t, r.url, r.did)

	out, err := invokeID(t, c, "org.example.translate.text:2.1.0", map[string]any{"text": "hello", "target": "fr"}, 0)
	if err != nil || out["text"] != "HELLO" || out["detected_source"] != "en" {
		t.Fatalf("success: %v %v", out, err)
	}
	_, err = invokeID(t, c, "org.example.translate.text:2.0.0", map[string]any{"text": "hello", "target": "fr"}, 0)
	if !errors.Is(err, amp.CodeInternalError) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("failing program: %v", err)
	}
	_, err = invokeID(t, c, "org.example.translate.text:1.5.0", map[string]any{"text": "hello", "lang": "fr"}, 0)
	if !errors.Is(err, amp.CodeInternalError) {
		t.Fatalf("invalid output: %v", err)
	}
	// A 2 s deadline, not 300 ms: the program starts under its reaper on
	// Linux (CLI-40), and on a loaded machine the deadline could pass
	// before the shell had written the grandchild's pid.
	start := time.Now()
	_, err = invokeID(t, c, "org.example.translate.text:1.0.0", map[string]any{"text": "hello", "lang": "fr"}, 2000)
	if !errors.Is(err, amp.CodeTimeout) {
		t.Fatalf("slow program: %v", err)
	}
	if time.Since(start) > 30*time.Second { // the program sleeps 60 s: room for a loaded machine
		t.Fatal("the deadline did not stop the program")
	}
	pidText, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	deadline := time.Now().Add(20 * time.Second) // a hang guard: an escaped child sleeps its 60 s
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the handler's child survived the deadline")
		}
		time.Sleep(20 * time.Millisecond)
	}

	res := r.stop()
	if res.code != 0 {
		t.Fatalf("serve exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "SECRET-STDERR") {
		t.Error("the program's stderr did not reach the log")
	}
	if _, err := os.Stat(r.sock); !errors.Is(err, os.ErrNotExist) {
		t.Error("the admin socket was left behind")
	}
}

// TestServeAdminSocket: while the agent holds the store, the admin socket
// imports and removes, and the running agent sees it at once (removal
// fails closed with 5002).
func TestServeAdminSocket(t *testing.T) {
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/sh", "-c", `echo '{"text":"x","detected_source":"en"}'`}}}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	if r.sock != admin.SocketPath(db) {
		t.Fatalf("admin socket %q", r.sock)
	}
	// The store is held: an offline open fails, the socket works.
	if _, err := resolver.Open(db, resolver.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, resolver.ErrStoreInUse) {
		t.Fatalf("offline open while serving: %v", err)
	}
	ac, err := admin.Dial(r.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	c := newTestClient(t, r.url, r.did)
	params := map[string]any{"text": "hello", "target": "fr"}
	if _, err := invokeID(t, c, "org.example.translate.text:2.1.0", params, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	if _, err := invokeID(t, c, "org.example.translate.text:2.1.0", params, 0); !errors.Is(err, amp.CodeUnavailable) {
		t.Fatalf("after removal: %v", err)
	}
	if _, err := ac.Import(context.Background(), bytes.NewReader(sampleFile(t, "translate.ampb")), resolver.ImportOptions{AllowDowngrade: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := invokeID(t, c, "org.example.translate.text:2.1.0", params, 0); err != nil {
		t.Fatalf("after re-import: %v", err)
	}
	// What changed the store through the socket is audited with its actor
	// (the socket's callers are this process's user), as offline.
	entries, err := ac.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[len(entries)-2:] {
		if e.Actor == nil || e.Actor.UID != int64(os.Getuid()) {
			t.Fatalf("audit entry %s through the admin socket: actor %+v, want uid %d", e.Action, e.Actor, os.Getuid())
		}
	}
	// Health answers on the HTTP binding.
	resp, err := http.Get(r.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
}

// TestServeRefusesToStart: every misconfiguration is refused before
// anything listens, with a precise code.
func TestServeRefusesToStart(t *testing.T) {
	db, key := serveStore(t)
	loose := filepath.Join(t.TempDir(), "loose.key")
	os.WriteFile(loose, sampleFile(t, "keys/TEST-ONLY-translator-agent.key.pem"), 0o600)
	os.Chmod(loose, 0o644)
	emptyDB := filepath.Join(t.TempDir(), "empty.db")
	s, err := resolver.Open(emptyDB, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	unknownHandler := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.nope:1.0.0": map[string]any{"command": []string{"/bin/true"}}}})
	noCommand := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{}}}})
	unknownField := writeFile(t, "typo.json", `{"listen":"127.0.0.1:0","handler":{}}`)
	notJSON := writeFile(t, "bad.json", `{"listen":`)
	truncated := writeFile(t, "truncated.json", `{"listen":"127.0.0.1:0"`)
	trailing := writeFile(t, "trailing.json", `{"listen":"127.0.0.1:0"} {"listen":"0.0.0.0:80"}`)
	spoofCaller := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/true"}, "env": map[string]string{"AMP_CALLER": "did:key:zSpoofed"}}}})
	badRuleInConfig := writeConfig(t, map[string]any{"allow": []string{"SECRET-LOOKING-RULE"}})
	tinyBodyInConfig := writeConfig(t, map[string]any{"max_body_bytes": 10})
	negativeTimeout := writeConfig(t, map[string]any{"max_timeout_ms": -1})
	badLedgerStore := writeConfig(t, map[string]any{"ledger_store": "sqlite"})
	noTCPSlots := writeConfig(t, map[string]any{"tcp_max_in_flight": -1})
	retiredStore := writeConfig(t, map[string]any{"ledger_store": "bbolt"})
	corruptLedger, inUseLedger := damagedLedger(t), oldBoltLedger(t)
	inUse, err := bolt.Open(inUseLedger, 0o600, nil) // an older agent still runs on it
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.Close()
	for _, tc := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"key readable by others", []string{"--db", db, "--key", loose, "--listen", "127.0.0.1:0"}, "insecure_key_file", 1},
		{"missing key", []string{"--db", db, "--key", filepath.Join(t.TempDir(), "none"), "--listen", "127.0.0.1:0"}, "key_unreadable", 1},
		{"missing store", []string{"--db", filepath.Join(t.TempDir(), "none.db"), "--key", key, "--listen", "127.0.0.1:0"}, string(resolver.ErrStoreMissing), 1},
		{"empty trust store", []string{"--db", emptyDB, "--key", key, "--listen", "127.0.0.1:0"}, "empty_trust_store", 1},
		{"handler for an unknown capability", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", unknownHandler}, "misconfigured", 1},
		{"handler without a command", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", noCommand}, "invalid_config", 1},
		{"unknown config field", []string{"--db", db, "--key", key, "--config", unknownField}, "invalid_config", 1},
		{"config not json", []string{"--db", db, "--key", key, "--config", notJSON}, "invalid_config", 1},
		{"network listen without consent", []string{"--db", db, "--key", key, "--listen", "0.0.0.0:0"}, "unsafe_listen", 1},
		{"no listen address", []string{"--db", db, "--key", key}, "usage", 2},
		{"bad allow rule", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--allow", "nonsense"}, "usage", 2},
		{"tiny body limit", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--max-body", "10"}, "usage", 2},
		{"tiny body limit in the config", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", tinyBodyInConfig}, "invalid_config", 1},
		{"negative timeout in the config", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", negativeTimeout}, "invalid_config", 1},
		{"config cut short", []string{"--db", db, "--key", key, "--config", truncated}, "invalid_config", 1},
		{"data after the config object", []string{"--db", db, "--key", key, "--config", trailing}, "invalid_config", 1},
		{"handler env sets AMP_CALLER (spoofing)", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", spoofCaller}, "invalid_config", 1},
		{"bad allow rule in the config", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", badRuleInConfig}, "invalid_config", 1},
		{"did:web not in the store", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--did", "did:web:nobody.example.org"}, "misconfigured", 1},
		{"unknown ledger store", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--ledger-store", "sqlite"}, "usage", 2},
		{"peer share of 0", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--peer-share", "0"}, "usage", 2},
		{"no connections", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--max-conns", "0"}, "usage", 2},
		{"no tcp message slots", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--tcp-max-in-flight", "0"}, "usage", 2},
		{"tcp message slots without a tcp listener", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--tcp-max-in-flight", "8"}, "usage", 2},
		{"no tcp message slots in the config", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", noTCPSlots}, "invalid_config", 1},
		{"unknown ledger store in the config", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", badLedgerStore}, "invalid_config", 1},
		{"ledger damaged before intact records", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--ledger", corruptLedger}, string(ledger.ErrLedgerCorrupt), 1},
		{"retired bbolt store", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--ledger-store", "bbolt"}, "usage", 2},
		{"retired bbolt store in the config", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", retiredStore}, "invalid_config", 1},
		{"bbolt ledger in use by an older agent", []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0", "--ledger", inUseLedger}, string(ledger.ErrLedgerMigration), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, exit := serveFails(t, tc.args...)
			if exit != tc.exit || (tc.code != "" && code != tc.code) {
				t.Fatalf("got %s exit %d, want %s exit %d", code, exit, tc.code, tc.exit)
			}
		})
	}
	// A rule is named by its position, never echoed.
	r0 := serveRefusal(t, "--json", "--db", db, "--key", key, "--listen", "127.0.0.1:0", "--config", badRuleInConfig)
	if strings.Contains(r0.stdout+r0.stderr, "SECRET-LOOKING-RULE") || !strings.Contains(r0.stdout, "allow rule 1 in the config file") {
		t.Fatalf("bad rule report: %s %s", r0.stdout, r0.stderr)
	}
	// A store in use by another agent: the second one refuses and leaves
	// the first one's admin socket alone.
	r := startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.")
	code, _ := serveFails(t, "--db", db, "--key", key, "--listen", "127.0.0.1:0")
	if code != string(resolver.ErrStoreInUse) {
		t.Fatalf("second agent: %s", code)
	}
	if _, err := admin.Dial(r.sock); err != nil {
		t.Fatalf("the first agent's socket is gone: %v", err)
	}
}

// damagedLedger writes a write-ahead log ledger of two groups and damages
// the first one's payload (an intact group follows it: not a torn tail).
func damagedLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "damaged.ledger.wal")
	s, err := ledger.OpenWAL(path, ledger.WALOptions{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := byte(0); i < 2; i++ {
		if err := s.MarkRunning(ledger.Key{Sender: "did:key:zX", ID: [16]byte{i}}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A byte of the first group's payload: after the header, the 16-byte
	// key, its 4-byte checksum and the 28-byte group header (docs/FORMAT.md).
	b[len(ledger.WALFormatID)+16+4+28+5] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// oldBoltLedger writes an (empty) bbolt ledger as the retired store laid
// it out (docs/FORMAT.md) and returns its path.
func oldBoltLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.ledger")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		if err == nil {
			err = meta.Put([]byte("format"), []byte("ampbundle-ledger/1"))
		}
		if err == nil {
			_, err = tx.CreateBucket([]byte("entries"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeLedgerStores: serve keeps its idempotency ledger in the
// write-ahead log beside the store, never in the store file; a bbolt
// ledger an older agent left there is migrated (one way) and kept aside.
func TestServeLedgerStores(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		file   string
		absent string
	}{
		{"default", nil, ".ledger.wal", ".ledger"},
		{"deprecated wal kind", []string{"--ledger-store", "wal"}, ".ledger.wal", ".ledger"},
		{"old bbolt ledger", nil, ".ledger.wal", ".ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, key := serveStore(t)
			if tc.name == "old bbolt ledger" {
				if err := os.Rename(oldBoltLedger(t), db+".ledger"); err != nil {
					t.Fatal(err)
				}
			}
			r := startServe(t, append([]string{"--db", db, "--key", key}, tc.args...)...)
			if res := r.stop(); res.code != 0 {
				t.Fatalf("serve: %d %s", res.code, res.stderr)
			}
			if _, err := os.Stat(db + tc.file); err != nil {
				t.Fatalf("no ledger at %s: %v", tc.file, err)
			}
			if _, err := os.Stat(db + tc.absent); !os.IsNotExist(err) {
				t.Fatalf("a %s file too: %v", tc.absent, err)
			}
			if kept, _ := filepath.Glob(db + ".ledger.migrated-*"); (len(kept) == 1) != (tc.name == "old bbolt ledger") {
				t.Fatalf("kept aside: %v", kept)
			}
		})
	}
}

// alive reports whether process pid runs (a zombie waiting for its new
// parent to reap it does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// pid (comm) STATE ...; comm may hold spaces, so split after the ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// waitLog waits until serve's log holds the n-th line containing want.
func waitLog(t *testing.T, r *running, want string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); strings.Count(r.stderr(), want) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("serve never logged %q %d times:\n%s", want, n, r.stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeReloadsConfigOnSIGHUP: SIGHUP re-reads the config file's
// handlers and allow rules without a restart, and a bad new config is
// refused with a log line while the running one stays (threat: a typo in
// the config taking a running agent down, or an operator believing a
// tightened allow list is in force when it is not).
func TestServeReloadsConfigOnSIGHUP(t *testing.T) {
	db, key := serveStore(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "agent.json")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	handler := func(word string) string {
		return `{"org.example.translate.text:2.1.0": {"command": ["/bin/sh", "-c", "echo '{\"text\":\"` + word + `\",\"detected_source\":\"en\"}'"]}}`
	}
	write(`{"allow": ["*=org.example."], "handlers": ` + handler("one") + `}`)
	r := startServe(t, "--db", db, "--key", key, "--config", cfgPath)
	c := newTestClient(t, r.url, r.did)
	params := map[string]any{"text": "hello", "target": "fr"}
	call := func() (string, error) {
		out, err := invokeID(t, c, "org.example.translate.text:2.1.0", params, 0)
		if err != nil {
			return "", err
		}
		s, _ := out["text"].(string)
		return s, nil
	}
	if got, err := call(); got != "one" || err != nil {
		t.Fatalf("before reload: %q %v", got, err)
	}

	write(`{"allow": ["*=org.example."], "handlers": ` + handler("two") + `}`)
	r.signal(syscall.SIGHUP)
	waitLog(t, r, "config reloaded", 1)
	if got, err := call(); got != "two" || err != nil {
		t.Fatalf("after reload: %q %v", got, err)
	}

	refusals := []struct{ name, body string }{
		{"not json", `{"allow": [`},
		{"unknown field", `{"allow": ["*=org.example."], "handlerz": {}}`},
		{"bad allow rule", `{"allow": ["nope"], "handlers": ` + handler("three") + `}`},
		{"missing program", `{"allow": ["*=org.example."], "handlers": {"org.example.translate.text:2.1.0": {"command": ["` + filepath.Join(dir, "nope") + `"]}}}`},
		{"capability not installed", `{"allow": ["*=org.example."], "handlers": {"org.example.nope.x:1.0.0": {"command": ["/bin/sh"]}}}`},
		{"a setting only a start applies", `{"allow": ["*=org.example."], "max_in_flight": 3, "handlers": ` + handler("three") + `}`},
	}
	for i, tc := range refusals {
		write(tc.body)
		r.signal(syscall.SIGHUP)
		waitLog(t, r, "reload refused", i+1)
		if got, err := call(); got != "two" || err != nil {
			t.Fatalf("%s: the running config did not stay: %q %v", tc.name, got, err)
		}
	}

	// The allow rules reload too: an empty list refuses everyone.
	write(`{"allow": [], "handlers": ` + handler("two") + `}`)
	r.signal(syscall.SIGHUP)
	waitLog(t, r, "config reloaded", 2)
	if _, err := call(); !errors.Is(err, amp.CodeUnauthorized) {
		t.Fatalf("after reloading an empty allow list: %v", err)
	}
	if res := r.stop(); res.code != 0 {
		t.Fatalf("serve exit %d: %s", res.code, res.stderr)
	}
}

// TestServeUnknownRouteAnswersJSON: a GET of a path the agent does not
// serve gets 404 with a JSON error object, never a CBOR body (threat: a
// person pasting a URL into a browser or curl getting binary on their
// terminal), and the path is not echoed.
func TestServeUnknownRouteAnswersJSON(t *testing.T) {
	db, key := serveStore(t)
	r := startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.")
	for _, path := range []string{"/", "/amp/v1/message", "/<script>x</script>", "/metrics"} {
		resp, err := http.Get(r.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc struct {
			Error struct {
				Code    int    `json:"code"`
				Name    string `json:"name"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(body, &doc) != nil || doc.Error.Name != "no_such_route" || !strings.Contains(doc.Error.Message, amphttp.MessagesPath) {
			t.Fatalf("GET %s: %d %s %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if strings.Contains(string(body), "script") {
			t.Fatalf("GET %s: the path is echoed: %s", path, body)
		}
	}
	// The routes the agent serves still answer as before.
	resp, err := http.Get(r.url + amphttp.MessagesPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET %s: %d", amphttp.MessagesPath, resp.StatusCode)
	}
}
