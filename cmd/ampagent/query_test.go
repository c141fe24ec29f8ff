package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// testNow is runCLI's clock; the test agents share it.
func testNow() time.Time { return time.UnixMilli(1707055260000) }

const (
	translateCap  = "org.example.translate.text"
	translatorWeb = "did:web:translator.example.org"
)

var (
	samplesDir    = filepath.Join("..", "..", "testdata", "bundles")
	translatorDoc = filepath.Join(samplesDir, "translate", "dids", "translator.json")
)

// testAgents is the sample bundle served on loopback HTTP by two agents
// over one store: a did:key one and the did:web translator of the sample,
// with an authorized caller and a stranger (key files written by keygen).
type testAgents struct {
	url, did  string // the did:key agent
	webURL    string // the did:web agent (translatorWeb)
	caller    string // key file of the authorized caller
	callerDID string
	stranger  string // key file of a caller no policy names
	runs      map[string]*atomic.Int64
	dir       string
	store     *resolver.Store
	handler   http.Handler // the did:key agent's HTTP handler
}

// keygen writes a new identity with the CLI and returns its file and DID.
func keygen(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	r := runCLI(t, "", "keygen", "-o", p, "--json")
	if r.code != 0 {
		t.Fatalf("keygen: exit %d %s", r.code, r.stderr)
	}
	var out struct {
		DID string `json:"did"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	return p, out.DID
}

// echoHandler answers with the version that ran in front of the text, so
// that tests see which version the agent chose. 1.0.0 fails on "fail" with
// an error the caller gets in a CAP_RESULT.
func echoHandler(version string, runs *atomic.Int64) agent.Handler {
	return func(_ context.Context, params any) (any, error) {
		runs.Add(1)
		p := params.(map[string]any)
		text := version + " " + p["text"].(string)
		if strings.HasPrefix(version, "1.") {
			if p["text"] == "fail" {
				return nil, amp.Named(amp.CodeBadRequest, "untranslatable", "the text cannot be translated")
			}
			return map[string]any{"text": text}, nil
		}
		return map[string]any{"text": text, "detected_source": "en"}, nil
	}
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := amphttp.NewServer(h, 10*time.Second, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func startAgents(t *testing.T) *testAgents {
	t.Helper()
	ta := &testAgents{dir: t.TempDir(), runs: map[string]*atomic.Int64{}}
	ta.caller, ta.callerDID = keygen(t, ta.dir, "caller.pem")
	ta.stranger, _ = keygen(t, ta.dir, "stranger.pem")

	s, err := resolver.Open(filepath.Join(ta.dir, "store.db"), resolver.Options{Now: testNow, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ta.store = s
	pub, err := keyfile.ParsePublic(filepath.Join(samplesDir, "keys", "TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(samplesDir, "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := s.Import(context.Background(), f, resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}

	handlers := map[string]agent.Handler{}
	for _, v := range []string{"1.0.0", "1.5.0", "2.0.0", "2.1.0"} {
		id := translateCap + ":" + v
		ta.runs[id] = new(atomic.Int64)
		handlers[id] = echoHandler(v, ta.runs[id])
	}
	policy := agent.Rules{{Caller: ta.callerDID, Prefix: "org.example"}}

	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	x, err := amp.AgreementKeyFromEd25519(priv)
	if err != nil {
		t.Fatal(err)
	}
	provider := amp.Identity{DID: amp.DIDKey(priv.Public().(ed25519.PublicKey)), SigningKey: priv, Agreement: x}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: provider, Store: s, Policy: policy, Handlers: handlers, Now: testNow, Rand: rand.Reader}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ta.did = provider.DID
	ta.handler = amphttp.NewHandler(a, amphttp.Options{})
	ta.url = serve(t, ta.handler)

	// The sample's did:web agent: its document is in the bundle, its keys
	// in a TEST-ONLY file (copied to a 0600 file: git keeps no modes).
	data, err := os.ReadFile(filepath.Join(samplesDir, "keys", "TEST-ONLY-translator-agent.key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := keyfile.ParsePrivate(data)
	if err != nil {
		t.Fatal(err)
	}
	webID, err := keys.Identity(translatorWeb)
	if err != nil {
		t.Fatal(err)
	}
	// A second agent on the same store keeps its own ledger (the store's
	// ledger file belongs to the first).
	webLedger, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	web, err := agent.New(agent.Config{Core: agent.Core{Identity: webID, Store: s, Policy: policy, Handlers: handlers, Now: testNow, Rand: rand.Reader, Ledger: webLedger}})
	if err != nil {
		t.Fatal(err)
	}
	ta.webURL = serve(t, amphttp.NewHandler(web, amphttp.Options{}))
	return ta
}

// ran returns how often each version's handler ran.
func (ta *testAgents) ran() map[string]int64 {
	out := map[string]int64{}
	for id, n := range ta.runs {
		if v := n.Load(); v > 0 {
			out[strings.TrimPrefix(id, translateCap+":")] = v
		}
	}
	return out
}

// queryDoc is the --json output of query.
type queryDoc struct {
	Provider     string `json:"provider"`
	Verified     bool   `json:"verified"`
	Pages        int    `json:"pages"`
	NextCursor   string `json:"next_cursor"`
	Capabilities []struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		Version     string   `json:"version"`
		Supported   []string `json:"supported_ranges"`
		InputSchema struct {
			BundleID    string `json:"bundle_id"`
			ArtifactKey string `json:"artifact_key"`
			Hash        string `json:"hash"`
		} `json:"input_schema"`
	} `json:"capabilities"`
}

func parseQuery(t *testing.T, r result) queryDoc {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var d queryDoc
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return d
}

func (d queryDoc) versions() []string {
	var out []string
	for _, c := range d.Capabilities {
		out = append(out, c.Version)
	}
	return out
}

// TestQueryPages: limit 2 newest-first gives two pages; --all follows the
// cursor; --cursor continues by hand; --order oldest-first reverses.
func TestQueryPages(t *testing.T) {
	ta := startAgents(t)
	base := []string{"query", ta.url, "--key", ta.caller, "--to", ta.did, "--capability", translateCap, "--limit", "2", "--json"}

	allRun := runCLI(t, "", append(base, "--all")...)
	if !strings.Contains(allRun.stdout, `">=2.0.0 <2.2.0"`) {
		t.Fatalf("ranges are not printed as they are (html escaping?):\n%s", allRun.stdout)
	}
	all := parseQuery(t, allRun)
	if !slices.Equal(all.versions(), []string{"2.1.0", "2.0.0", "1.5.0", "1.0.0"}) || all.Pages != 2 || all.NextCursor != "" || !all.Verified || all.Provider != ta.did {
		t.Fatalf("--all: %+v", all)
	}
	c := all.Capabilities[0]
	if c.ID != translateCap+":2.1.0" || c.InputSchema.BundleID != "org.example.translate" || len(c.InputSchema.Hash) != 64 ||
		!slices.Equal(c.Supported, []string{">=2.0.0 <2.2.0"}) {
		t.Fatalf("descriptor JSON: %+v", c)
	}

	first := parseQuery(t, runCLI(t, "", base...))
	if !slices.Equal(first.versions(), []string{"2.1.0", "2.0.0"}) || first.NextCursor == "" || first.Pages != 1 {
		t.Fatalf("first page: %+v", first)
	}
	second := parseQuery(t, runCLI(t, "", append(base, "--cursor", first.NextCursor)...))
	if !slices.Equal(second.versions(), []string{"1.5.0", "1.0.0"}) || second.NextCursor != "" {
		t.Fatalf("second page: %+v", second)
	}
	// The cursor is bound to the order: changing it is 4001 (RFC 004 §6.5).
	r := runCLI(t, "", append(base, "--cursor", first.NextCursor, "--order", "oldest-first")...)
	if _, code := errorDoc(t, r); r.code != 1 || code != 4001 {
		t.Fatalf("cursor with another order: exit %d amp %d", r.code, code)
	}

	old := parseQuery(t, runCLI(t, "", append(base, "--all", "--order", "oldest-first")...))
	if !slices.Equal(old.versions(), []string{"1.0.0", "1.5.0", "2.0.0", "2.1.0"}) {
		t.Fatalf("oldest-first: %v", old.versions())
	}

	// Flags before the URL mean the same; human output names each id,
	// its ranges and schemas.
	r = runCLI(t, "", "query", "--key", ta.caller, "--to", ta.did, "--capability", translateCap, ta.url, "--version", ">=2.0.0")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	for _, want := range []string{translateCap + ":2.1.0", translateCap + ":2.0.0", `supports:   ">=2.0.0 <2.2.0"`,
		"input:      org.example.translate:capabilities/org.example.translate.text/2.1.0/input.schema.json (sha-256 ", "verified"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("human output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, ":1.5.0") {
		t.Fatalf("--version ignored:\n%s", r.stdout)
	}
}

// TestQueryTypeAndErrors: the legacy alias resolves; an unknown name is
// 4002, an unsatisfiable range 4003, a stranger 3001.
func TestQueryTypeAndErrors(t *testing.T) {
	ta := startAgents(t)
	q := func(key string, args ...string) result {
		return runCLI(t, "", append([]string{"query", ta.url, "--key", key, "--to", ta.did, "--json"}, args...)...)
	}
	d := parseQuery(t, q(ta.caller, "--type", "translate", "--all"))
	if len(d.Capabilities) != 4 || d.Capabilities[0].Name != translateCap {
		t.Fatalf("--type translate: %+v", d)
	}
	for _, tc := range []struct {
		name string
		key  string
		args []string
		code int
	}{
		{"unknown capability", ta.caller, []string{"--capability", "org.example.translate.nope"}, 4002},
		{"no version in range", ta.caller, []string{"--capability", translateCap, "--version", ">=3.0.0"}, 4003},
		{"unknown type", ta.caller, []string{"--type", "nope"}, 4002},
		{"stranger", ta.stranger, []string{"--capability", translateCap}, 3001},
	} {
		r := q(tc.key, tc.args...)
		if _, code := errorDoc(t, r); r.code != 1 || code != tc.code {
			t.Errorf("%s: exit %d amp %d, want 1 and %d", tc.name, r.code, code, tc.code)
		}
	}
}

// TestQueryDIDWeb: a provider that is not a did:key needs its document;
// with it, the replies of the sample's did:web agent verify.
func TestQueryDIDWeb(t *testing.T) {
	ta := startAgents(t)
	args := []string{"query", ta.webURL, "--key", ta.caller, "--to", translatorWeb, "--capability", translateCap, "--json"}
	if r := runCLI(t, "", args...); r.code != 2 || !strings.Contains(r.stderr, "--to-doc") {
		t.Fatalf("did:web without --to-doc: exit %d %s", r.code, r.stderr)
	}
	d := parseQuery(t, runCLI(t, "", append(args, "--to-doc", translatorDoc)...))
	if d.Provider != translatorWeb || len(d.Capabilities) != 4 {
		t.Fatalf("did:web: %+v", d)
	}
	// The did:key agent's replies do not verify as the did:web agent's.
	r := runCLI(t, "", "query", ta.url, "--key", ta.caller, "--to", translatorWeb, "--to-doc", translatorDoc, "--capability", translateCap, "--json")
	if _, code := errorDoc(t, r); r.code != 1 || code == 0 {
		t.Fatalf("reply from another agent: exit %d amp %d\n%s", r.code, code, r.stdout)
	}
}

func TestQueryUsage(t *testing.T) {
	ta := startAgents(t)
	other := writeFile(t, "other.json", strings.Replace(mustRead(t, translatorDoc), translatorWeb, "did:web:other.example.org", -1))
	ok := []string{"query", ta.url, "--key", ta.caller, "--to", ta.did}
	for name, args := range map[string][]string{
		"no url":                  {"query", "--key", ta.caller, "--to", ta.did, "--capability", translateCap},
		"two urls":                append(ok, ta.url, "--capability", translateCap),
		"no filter":               ok,
		"capability and type":     append(ok, "--capability", translateCap, "--type", "translate"),
		"bad capability":          append(ok, "--capability", "Org.Example"),
		"bad range":               append(ok, "--capability", translateCap, "--version", "^2.0.0"),
		"bad order":               append(ok, "--capability", translateCap, "--order", "random"),
		"zero limit":              append(ok, "--capability", translateCap, "--limit", "0"),
		"limit not a number":      append(ok, "--capability", translateCap, "--limit", "two"),
		"no key":                  {"query", ta.url, "--to", ta.did, "--capability", translateCap},
		"no provider":             {"query", ta.url, "--key", ta.caller, "--capability", translateCap},
		"provider not a did":      {"query", ta.url, "--key", ta.caller, "--to", "agent", "--capability", translateCap},
		"not http":                {"query", "ftp://127.0.0.1/", "--key", ta.caller, "--to", ta.did, "--capability", translateCap},
		"did:web without doc":     {"query", ta.webURL, "--key", ta.caller, "--to", translatorWeb, "--capability", translateCap},
		"document of another did": {"query", ta.webURL, "--key", ta.caller, "--to", translatorWeb, "--to-doc", other, "--capability", translateCap},
		"doc for a did:key":       append(ok, "--capability", translateCap, "--to-doc", translatorDoc),
		"unknown flag":            append(ok, "--capability", translateCap, "--frobnicate"),
	} {
		t.Run(name, func(t *testing.T) {
			if r := runCLI(t, "", append(args, "--json")...); r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestQueryLeakyKey: a caller key file that others can read is refused
// before anything is sent.
func TestQueryLeakyKey(t *testing.T) {
	ta := startAgents(t)
	leaky := filepath.Join(t.TempDir(), "leaky.pem")
	if err := os.WriteFile(leaky, []byte(mustRead(t, ta.caller)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(leaky, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "query", ta.url, "--key", leaky, "--to", ta.did, "--capability", translateCap, "--json")
	if code, _ := errorDoc(t, r); r.code != 1 || code != "insecure_key_file" {
		t.Fatalf("leaky key: exit %d %s", r.code, code)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
