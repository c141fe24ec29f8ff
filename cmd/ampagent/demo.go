package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/urfave/cli/v2"

	ampbundle "github.com/ampbundle/ampbundle"
	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

func demoCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "run the whole job on the embedded sample bundle, with no setup",
		ArgsUsage: " ",
		Description: `Runs, in a new temporary folder and with nothing but this binary, what
publishers, operators, agents and callers do, and prints it as a transcript:

  1. make a publisher key for this run only, build the sample bundle
     org.example.translate (its source is embedded in the binary) with it,
     trust that key for org.example in a new store, import the bundle
  2. start an agent (a fresh did:key) on 127.0.0.1 with a free port, serving
     the four versions of org.example.translate.text to one caller
  3. a paged CAP_QUERY: two pages of two, following next_cursor
  4. an encrypted CAP_INVOKE with version negotiation (prefer 2.2.0, accept
     2.1.0 then 2.0.0: the agent runs 2.1.0)
  5. params that violate the input schema: 4004, with the location
  6. a caller the policy does not know: 3001
  7. the same signed message sent twice: byte-identical replies, and the
     handler ran once
  8. the bundle removed from the store: the same invocation fails closed
     with 5002
  9. a summary

Every request goes over the real HTTP binding and every reply is verified
(signature, sender, recipient, reply_to). Nothing is read or written outside
the temporary folder, which is removed at the end unless --keep is given,
and nothing listens beyond 127.0.0.1. Exit 0 only if every step behaved as
shown; otherwise 1, naming the first step that did not. With --json the
transcript is one JSON document (on failure it goes to stderr, and stdout
holds the error document).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "keep", Usage: "keep the temporary folder (its path is printed)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			d := &demo{env: env, ctx: c.Context, t: &transcript{}}
			if !c.Bool("json") {
				d.t.w = env.Stdout
			}
			err := d.run(c.Bool("keep"))
			if c.Bool("keep") && d.t.w != nil && d.dir != "" {
				fmt.Fprintf(d.t.w, "\nkept %s (bundle, store, key)\n", cliutil.Sanitize(d.dir))
			}
			if c.Bool("json") {
				doc := map[string]any{"ok": err == nil, "steps": d.t.steps}
				if c.Bool("keep") {
					doc["dir"] = d.dir
				}
				w := env.Stdout
				if err != nil {
					w = env.Stderr
				}
				if perr := cliutil.PrintJSON(w, doc); perr != nil && err == nil {
					err = perr
				}
			}
			return err
		},
	}
}

// The demo's fixed inputs: the embedded sample source. Its publisher key
// is made at run time: the repository's TEST-ONLY private keys are not
// embedded in the binary.
const (
	demoSample     = "testdata/bundles/translate"
	demoKeyFile    = "demo-publisher.key.pem"
	demoCapability = "org.example.translate.text"
	demoBundleID   = "org.example.translate"
	demoNamespace  = "org.example"
)

// demoCreated is the created_at of the sample bundles (testdata/bundles
// README): with the sample's own key, the demo would build byte for byte
// the committed translate.ampb (a test checks it).
var demoCreated = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

var demoVersions = []string{"1.0.0", "1.5.0", "2.0.0", "2.1.0"}

// transcript collects the steps and, for people, prints them as they run.
type transcript struct {
	w     io.Writer // nil under --json
	steps []*demoStep
}

// demoStep is one numbered step: what was sent, what came back, and
// whether each check held.
type demoStep struct {
	Number  int            `json:"number"`
	Name    string         `json:"name"`
	OK      bool           `json:"ok"`
	Checks  []demoCheck    `json:"checks"`
	Details map[string]any `json:"details"`
	Error   string         `json:"error,omitempty"`
	w       io.Writer
}

type demoCheck struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
}

func (t *transcript) step(name string) *demoStep {
	s := &demoStep{Number: len(t.steps) + 1, Name: name, OK: true, Checks: []demoCheck{}, Details: map[string]any{}, w: t.w}
	t.steps = append(t.steps, s)
	if t.w != nil {
		fmt.Fprintf(t.w, "\n[%d] %s\n", s.Number, name)
	}
	return s
}

// say prints a line of the transcript (people only). The line may carry
// the temporary folder's path ($TMPDIR's) and the messages and JSON bodies
// the agents exchanged: what a terminal acts on is escaped (SanitizeJSON:
// a plain line, and the newlines of a JSON body, are kept as they are, and
// nothing is cut; docs/SPEC-DECISIONS.md CLI-52).
func (s *demoStep) say(format string, args ...any) {
	if s.w != nil {
		fmt.Fprintf(s.w, "    %s\n", cliutil.SanitizeJSON([]byte(fmt.Sprintf(format, args...))))
	}
}

// note records a detail and prints it as "label: value".
func (s *demoStep) note(key, label string, v any) {
	s.Details[key] = v
	text, ok := v.(string)
	if !ok {
		if raw, isRaw := v.(json.RawMessage); isRaw {
			text = string(raw)
		} else {
			text = jsonOf(v)
		}
	}
	s.say("%-10s %s", label+":", text)
}

// check records a verdict; the step fails if any check fails.
func (s *demoStep) check(ok bool, format string, args ...any) bool {
	what := fmt.Sprintf(format, args...)
	s.Checks = append(s.Checks, demoCheck{What: what, OK: ok})
	if !ok {
		s.OK = false
	}
	verdict := "[ok]  "
	if !ok {
		verdict = "[FAIL]"
	}
	s.say("%s %s", verdict, what)
	return ok
}

// fail records an unexpected error.
func (s *demoStep) fail(err error) {
	s.OK = false
	s.Error = err.Error()
	s.say("[FAIL] %s", err)
}

// demo is one run of the demo: its folder, store, agent and clients.
type demo struct {
	env *cliutil.Env
	ctx context.Context
	t   *transcript
	dir string

	store    *resolver.Store
	srv      *http.Server
	url      string
	provider amp.Identity
	caller   amp.Identity
	stranger amp.Identity
	runs     map[string]*atomic.Int64 // capability id -> handler runs

	wire     *wireLog
	plain    *client.Client // the caller
	secret   *client.Client // the caller, encrypting
	outsider *client.Client // the stranger
	closers  []func()

	// tweak, in tests, changes the agent's configuration (to see the demo
	// notice an agent that misbehaves).
	tweak func(*agent.Config)
	// publisher, in tests, replaces the publisher key made at run time.
	publisher ed25519.PrivateKey
}

func (d *demo) run(keep bool) (err error) {
	d.dir, err = os.MkdirTemp("", "ampagent-demo-")
	if err != nil {
		return cliutil.Failf("io_error", "cannot create a temporary folder").WithCause(err)
	}
	defer func() {
		for i := len(d.closers) - 1; i >= 0; i-- {
			d.closers[i]()
		}
		if !keep {
			os.RemoveAll(d.dir)
		}
	}()
	ctx, cancel := context.WithTimeout(d.ctx, 60*time.Second)
	defer cancel()
	d.ctx = ctx
	if d.t.w != nil {
		fmt.Fprintf(d.t.w, "ampagent demo: the whole job on the embedded sample bundle, in %s\n", cliutil.Sanitize(d.dir))
		fmt.Fprintf(d.t.w, "(nothing outside that folder is read or written; nothing listens beyond 127.0.0.1)\n")
	}
	setup := []struct {
		name string
		fn   func(*demoStep) error
	}{
		{"build the sample bundle, trust its publisher key, import it", d.stepImport},
		{"start an agent on 127.0.0.1 over HTTP", d.stepServe},
	}
	for _, st := range setup {
		s := d.t.step(st.name)
		if err := st.fn(s); err != nil {
			s.fail(err)
		}
		if !s.OK {
			return d.summary()
		}
	}
	for _, st := range []struct {
		name string
		fn   func(*demoStep) error
	}{
		{"a paged query, following next_cursor", d.stepQuery},
		{"an encrypted invocation with version negotiation", d.stepNegotiate},
		{"params that violate the input schema: 4004", d.stepSchema},
		{"a caller the policy does not know: 3001", d.stepUnauthorized},
		{"the same signed message twice: one run, byte-identical replies", d.stepReplay},
		{"the bundle removed: the same invocation fails closed with 5002", d.stepRemoved},
		{"trust across air gaps: 2-of-3 co-signing, a key rotation, a revocation", d.stepTrust},
	} {
		s := d.t.step(st.name)
		if err := st.fn(s); err != nil {
			s.fail(err)
		}
	}
	return d.summary()
}

func (d *demo) summary() error {
	s := d.t.step("summary")
	var failed *demoStep
	for _, st := range d.t.steps[:len(d.t.steps)-1] {
		verdict := "[ok]  "
		if !st.OK {
			verdict = "[FAIL]"
			if failed == nil {
				failed = st
			}
		}
		s.say("%s %d. %s", verdict, st.Number, st.Name)
	}
	if failed != nil {
		s.OK = false
		s.say("the demo failed at step %d", failed.Number)
		return cliutil.Failf("demo_failed", "step %d (%s) did not behave as expected", failed.Number, failed.Name)
	}
	s.say("every step behaved as shown")
	return nil
}

// stepImport: make a publisher key, build the bundle from the embedded
// source with it, create the store, trust the key for org.example, import.
func (d *demo) stepImport(s *demoStep) error {
	src := filepath.Join(d.dir, "source", "translate")
	if err := extract(ampbundle.Samples, demoSample, src); err != nil {
		return err
	}
	key := d.publisher
	if key == nil {
		id, err := newIdentity(d.env.Rand)
		if err != nil {
			return err
		}
		key = id.SigningKey
	}
	keyPath := filepath.Join(d.dir, demoKeyFile)
	if err := keyfile.WritePrivate(keyPath, key); err != nil {
		return err
	}
	pub := key.Public().(ed25519.PublicKey)
	s.note("source", "source", "the embedded "+demoSample+", extracted to "+src)
	s.note("signer", "signed by", amp.DIDKey(pub)+" (a publisher key made for this run, "+demoKeyFile+", mode 0600)")

	draft, err := bundlebuild.LoadSource(src, bundlebuild.SourceOptions{CreatedAt: demoCreated, Signer: pub})
	if err != nil {
		return err
	}
	file := filepath.Join(d.dir, "translate.ampb")
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return cliutil.Failf("io_error", "cannot create the bundle file").WithCause(err)
	}
	h := sha256.New()
	cw := &bundlebuild.CountingWriter{W: io.MultiWriter(f, h)}
	m, err := bundle.Write(cw, draft, []ed25519.PrivateKey{key}, bundle.WriteOptions{})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cliutil.Failf("io_error", "cannot write the bundle file").WithCause(cerr)
	}
	if err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	s.note("bundle", "built", fmt.Sprintf("%s: bundle_id %s, version %d, %d artifacts, %d capabilities, %d bytes",
		filepath.Base(file), m.BundleID, m.Version, len(m.Artifacts), len(m.Capabilities), cw.N))
	s.note("sha256", "sha256", sum)
	arts := make([]string, len(m.Artifacts))
	for i, a := range m.Artifacts {
		arts[i] = fmt.Sprintf("%s (%d bytes)", a.Key, a.Size)
	}
	s.Details["artifacts"] = arts
	s.say("artifacts:")
	for _, a := range arts {
		s.say("  %s", a)
	}

	d.store, err = resolver.Open(filepath.Join(d.dir, "store.db"), resolver.Options{Now: d.env.Now, Create: true})
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func() { d.store.Close() })
	if err := d.store.TrustAdd("demo-publisher", pub, []string{demoNamespace}); err != nil {
		return err
	}
	s.note("trusted", "trusted", amp.DIDKey(pub)+" for "+demoNamespace)
	in, err := os.Open(file)
	if err != nil {
		return cliutil.Failf("io_error", "cannot open the bundle file").WithCause(err)
	}
	defer in.Close()
	res, err := d.store.Import(d.ctx, in, resolver.ImportOptions{})
	if err != nil {
		return err
	}
	s.note("imported", "imported", fmt.Sprintf("%s version %d: %d artifacts (%d new blobs), store generation %d",
		res.BundleID, res.Version, res.Artifacts, res.NewBlobs, res.Generation))
	s.note("capabilities", "serves", strings.Join(res.Capabilities, ", "))
	want := make([]string, len(demoVersions))
	for i, v := range demoVersions {
		want[i] = demoCapability + ":" + v
	}
	got := slices.Clone(res.Capabilities)
	slices.Sort(got)
	s.check(res.BundleID == demoBundleID && slices.Equal(got, want), "the signed bundle verified against the trusted key and imported all four versions")
	return nil
}

// extract copies the embedded folder root of fsys to dir.
func extract(fsys fs.FS, root, dir string) error {
	return fs.WalkDir(fsys, root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// newIdentity returns a fresh did:key identity from the injected CSPRNG.
func newIdentity(rand io.Reader) (amp.Identity, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(rand, seed); err != nil {
		return amp.Identity{}, cliutil.Failf("key_error", "cannot read randomness").WithCause(err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	x, err := amp.AgreementKeyFromEd25519(priv)
	if err != nil {
		return amp.Identity{}, err
	}
	return amp.Identity{DID: amp.DIDKey(priv.Public().(ed25519.PublicKey)), SigningKey: priv, Agreement: x}, nil
}

// translate is the demo's handler for one version: 2.x returns text and
// detected_source, 1.x text only. It counts its runs.
func translate(version string, runs *atomic.Int64) agent.Handler {
	return func(ctx context.Context, params any) (any, error) {
		runs.Add(1)
		p, _ := params.(map[string]any)
		if strings.HasPrefix(version, "1.") {
			return map[string]any{"text": fmt.Sprintf("[%v] %v", p["lang"], p["text"])}, nil
		}
		return map[string]any{"text": fmt.Sprintf("[%v] %v", p["target"], p["text"]), "detected_source": "en"}, nil
	}
}

// stepServe: identities, the agent with its handlers and policy, the HTTP
// binding on a free loopback port, and the clients.
func (d *demo) stepServe(s *demoStep) error {
	var err error
	for _, id := range []*amp.Identity{&d.provider, &d.caller, &d.stranger} {
		if *id, err = newIdentity(d.env.Rand); err != nil {
			return err
		}
	}
	d.runs = map[string]*atomic.Int64{}
	handlers := map[string]agent.Handler{}
	for _, v := range demoVersions {
		id := demoCapability + ":" + v
		d.runs[id] = new(atomic.Int64)
		handlers[id] = translate(v, d.runs[id])
	}
	cfg := agent.Config{Core: agent.Core{
		Identity: d.provider, Store: d.store, Handlers: handlers,
		Policy: agent.Rules{{Caller: d.caller.DID, Prefix: demoNamespace}},
		Now:    d.env.Now, Rand: d.env.Rand,
	}}
	if d.tweak != nil {
		d.tweak(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func() { a.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return cliutil.Failf("io_error", "cannot listen on 127.0.0.1").WithCause(err)
	}
	d.srv = amphttp.NewServer(amphttp.NewHandler(a, amphttp.Options{}), agent.Bounds{}.LongestAnswer()+30*time.Second, nil)
	go d.srv.Serve(ln)
	d.closers = append(d.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if d.srv.Shutdown(ctx) != nil {
			d.srv.Close()
		}
	})
	d.url = "http://" + ln.Addr().String()
	s.note("agent", "agent", d.provider.DID)
	s.note("url", "listening", d.url+amphttp.MessagesPath)
	s.note("handlers", "handlers", strings.Join(slices.Sorted(maps.Keys(handlers)), ", "))
	s.note("policy", "policy", "only "+d.caller.DID+" may use "+demoNamespace+".*")

	// The binding answers a health check.
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(d.ctx, http.MethodGet, d.url+amphttp.HealthPath, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return cliutil.Failf("io_error", "the agent does not answer").WithCause(err)
	}
	var health struct {
		Status string `json:"status"`
		DID    string `json:"did"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&health)
	resp.Body.Close()
	s.check(err == nil && resp.StatusCode == http.StatusOK && health.Status == "ok" && health.DID == d.provider.DID,
		"GET %s answers 200 with the agent's did", amphttp.HealthPath)

	tr, err := amphttp.NewTransport(d.url, 4)
	if err != nil {
		return err
	}
	d.closers = append(d.closers, tr.Close)
	d.wire = &wireLog{next: tr}
	client := func(id amp.Identity, encrypt bool) (*client.Client, error) {
		return client.New(client.Config{Identity: id, Peer: d.provider.DID, Transport: d.wire,
			Now: d.env.Now, Rand: d.env.Rand, Encrypt: encrypt,
			Retry: client.Retry{MaxAttempts: 3, Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}})
	}
	if d.plain, err = client(d.caller, false); err != nil {
		return err
	}
	if d.secret, err = client(d.caller, true); err != nil {
		return err
	}
	if d.outsider, err = client(d.stranger, false); err != nil {
		return err
	}
	s.note("caller", "caller", d.caller.DID)
	return nil
}

// wireLog is the HTTP transport, recording the bytes that crossed it.
type wireLog struct {
	next client.Transport
	mu   sync.Mutex
	sent [][]byte
	got  [][]byte
}

func (w *wireLog) RoundTrip(ctx context.Context, msg []byte) ([]byte, error) {
	reply, err := w.next.RoundTrip(ctx, msg)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent = append(w.sent, bytes.Clone(msg))
	w.got = append(w.got, bytes.Clone(reply))
	return reply, err
}

// mark returns the number of exchanges so far; since returns those after.
func (w *wireLog) mark() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.sent) }

func (w *wireLog) since(n int) (sent, got [][]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent[n:]), slices.Clone(w.got[n:])
}

// bodyJSON renders a CBOR body for the transcript.
func bodyJSON(body []byte) json.RawMessage {
	j, err := amp.JSONValue(body)
	if err != nil {
		return json.RawMessage(`"(not renderable)"`)
	}
	return j
}

// exchangeNote shows one verified exchange: what was sent and what came
// back, and checks the correlation the client verified.
func (d *demo) exchangeNote(s *demoStep, prefix string, ex *client.Exchange) {
	if ex == nil || ex.Request == nil {
		return
	}
	how := func(m *amp.Message) string {
		if m.Encrypted() {
			return " (authcrypt on the wire)"
		}
		return ""
	}
	s.note(prefix+"sent", "sent", fmt.Sprintf("%s id %s%s: %s", ex.Request.Type.Name(), ex.Request.ID, how(ex.Request), bodyJSON(ex.Request.Body)))
	if ex.Reply == nil {
		return
	}
	s.note(prefix+"got", "got", fmt.Sprintf("%s reply_to %s%s: %s", ex.Reply.Type.Name(), hex.EncodeToString(ex.Reply.ReplyTo), how(ex.Reply), bodyJSON(ex.Reply.Body)))
}

// stepQuery: two pages of two, newest first, following next_cursor.
func (d *demo) stepQuery(s *demoStep) error {
	limit := uint64(2)
	q := capability.Query{Filter: capability.Filter{Capability: demoCapability}, Limit: &limit, Order: capability.OrderNewestFirst}
	var all []string
	var pages [][]string
	for page := 1; page <= 3; page++ {
		decl, ex, err := d.plain.Query(d.ctx, q)
		if err != nil {
			return err
		}
		ids := make([]string, len(decl.Capabilities))
		for i, c := range decl.Capabilities {
			ids[i] = c.Version.String()
		}
		sent := fmt.Sprintf("CAP_QUERY id %s: capability %s, limit %d, order %s", ex.Request.ID, q.Filter.Capability, *q.Limit, q.Order)
		if q.Cursor != "" {
			sent += ", cursor " + abbrev(q.Cursor)
		}
		got := fmt.Sprintf("CAP_DECLARE reply_to %s: %s", hex.EncodeToString(ex.Reply.ReplyTo), strings.Join(ids, ", "))
		if decl.NextCursor != "" {
			got += "; next_cursor " + abbrev(decl.NextCursor)
		} else {
			got += "; no next_cursor (last page)"
		}
		s.say("page %d", page)
		s.note(fmt.Sprintf("page%d_sent", page), "sent", sent)
		s.note(fmt.Sprintf("page%d_got", page), "got", got)
		s.check(bytes.Equal(ex.Reply.ReplyTo, ex.Request.ID[:]) && ex.Reply.From == d.provider.DID,
			"CAP_DECLARE signed by the agent, reply_to = the query's id")
		pages = append(pages, ids)
		all = append(all, ids...)
		if decl.NextCursor == "" {
			break
		}
		q.Cursor = decl.NextCursor
	}
	s.Details["pages"] = pages
	want := []string{"2.1.0", "2.0.0", "1.5.0", "1.0.0"}
	s.check(len(pages) == 2 && len(pages[0]) == 2 && len(pages[1]) == 2, "two pages of two, the last without next_cursor")
	s.check(slices.Equal(all, want), "newest first, no version repeated or skipped: %s", strings.Join(all, ", "))
	return nil
}

// demoNegotiated is the invocation of steps 4 and 8.
func demoNegotiated(params string) (capability.Invoke, error) {
	var vs [3]capability.Version
	for i, v := range []string{"2.2.0", "2.1.0", "2.0.0"} {
		var err error
		if vs[i], err = capability.ParseVersion(v); err != nil {
			return capability.Invoke{}, err
		}
	}
	p, err := jsonToCBOR(params)
	if err != nil {
		return capability.Invoke{}, err
	}
	return capability.Invoke{Capability: demoCapability, Params: p,
		Negotiate: &capability.NegotiateHints{Preferred: vs[0], Acceptable: vs[1:]}}, nil
}

// jsonToCBOR converts JSON params as invoke --params does.
func jsonToCBOR(s string) ([]byte, error) {
	v, err := offlineschema.ValueFromJSON([]byte(s))
	if err != nil {
		return nil, err
	}
	return offlineschema.ToCBOR(v)
}

const demoParams = `{"text":"hello, world","target":"fr"}`

// stepNegotiate: encrypted, prefer 2.2.0 (not served), accept 2.1.0 then
// 2.0.0: the agent runs 2.1.0.
func (d *demo) stepNegotiate(s *demoStep) error {
	inv, err := demoNegotiated(demoParams)
	if err != nil {
		return err
	}
	before := d.counts()
	mark := d.wire.mark()
	res, ex, err := d.secret.Invoke(d.ctx, inv)
	d.exchangeNote(s, "", ex)
	if err != nil {
		return err
	}
	sent, got := d.wire.since(mark)
	s.check(len(sent) == 1 && onWireEncrypted(sent[0]) && onWireEncrypted(got[0]),
		"request and reply crossed HTTP encrypted (authcrypt: enc, no plaintext body)")
	s.check(ex.Reply.Type == amp.TypeCapResult && bytes.Equal(ex.Reply.ReplyTo, ex.Request.ID[:]),
		"CAP_RESULT signed by the agent, reply_to = the invocation's id")
	ran := d.ranSince(before)
	s.note("ran", "agent ran", strings.Join(ran, ", "))
	s.check(slices.Equal(ran, []string{demoCapability + ":2.1.0"}), "2.2.0 is not served; the first acceptable version, 2.1.0, ran once")
	var out map[string]any
	if err := amp.Unmarshal(res.Result, &out); err != nil {
		return err
	}
	s.check(res.Status == capability.StatusSuccess && out["text"] == "[fr] hello, world" && out["detected_source"] == "en",
		"status success with the 2.x result (text, detected_source)")
	return nil
}

func onWireEncrypted(msg []byte) bool {
	in, err := amp.Limits{}.Inspect(msg)
	return err == nil && in.Enc != nil && len(in.Body) == 0
}

// counts snapshots the handler runs.
func (d *demo) counts() map[string]int64 {
	out := map[string]int64{}
	for id, n := range d.runs {
		out[id] = n.Load()
	}
	return out
}

// ranSince lists the handlers that ran since the snapshot, once per run.
func (d *demo) ranSince(before map[string]int64) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(d.runs)) {
		for n := d.runs[id].Load() - before[id]; n > 0; n-- {
			out = append(out, id)
		}
	}
	return out
}

// refusal checks that err is the AMP code want carried by a verified ERROR
// reply, and returns the error.
func (d *demo) refusal(s *demoStep, ex *client.Exchange, err error, want amp.Code) *amp.Error {
	var e *amp.Error
	if !errors.As(err, &e) {
		s.check(false, "an ERROR reply with %d %s", uint16(want), want.Name())
		if err != nil {
			s.fail(err)
		}
		return nil
	}
	s.note("error", "error", fmt.Sprintf("%d %s: %s", uint16(e.Code), e.Code.Name(), e.Message))
	s.check(e.Code == want && ex != nil && ex.Reply != nil && ex.Reply.Type == amp.TypeError &&
		bytes.Equal(ex.Reply.ReplyTo, ex.Request.ID[:]),
		"a signed ERROR %d %s, reply_to = the invocation's id", uint16(want), want.Name())
	return e
}

// stepSchema: params without "target" are refused with 4004 at /target,
// and no handler runs.
func (d *demo) stepSchema(s *demoStep) error {
	id, err := capability.ParseID(demoCapability + ":2.1.0")
	if err != nil {
		return err
	}
	params, err := jsonToCBOR(`{"text":"hello, world"}`)
	if err != nil {
		return err
	}
	before := d.counts()
	_, ex, err := d.plain.Invoke(d.ctx, capability.Invoke{ID: id, Params: params})
	d.exchangeNote(s, "", ex)
	e := d.refusal(s, ex, err, amp.CodeSchemaViolation)
	if e == nil {
		return nil
	}
	raw, _ := e.Details.(cbor.RawMessage)
	vs := decodeViolations(raw)
	s.note("violations", "where", vs)
	found := false
	for _, v := range vs {
		found = found || (v.InstanceLocation == "/target" && v.Keyword == "required")
	}
	s.check(found, "the violation names its location: /target (required)")
	s.check(len(d.ranSince(before)) == 0, "no handler ran")
	return nil
}

// stepUnauthorized: a caller not in the policy gets 3001, for a capability
// that exists and for one that does not alike.
func (d *demo) stepUnauthorized(s *demoStep) error {
	s.note("stranger", "stranger", d.stranger.DID)
	inv, err := demoNegotiated(demoParams)
	if err != nil {
		return err
	}
	before := d.counts()
	_, ex, err := d.outsider.Invoke(d.ctx, inv)
	d.exchangeNote(s, "", ex)
	e1 := d.refusal(s, ex, err, amp.CodeUnauthorized)
	id, err := capability.ParseID(demoNamespace + ".no-such-thing:1.0.0")
	if err != nil {
		return err
	}
	_, ex2, err := d.outsider.Invoke(d.ctx, capability.Invoke{ID: id, Params: inv.Params})
	s.say("and for a capability that does not exist:")
	d.exchangeNote(s, "unknown_", ex2)
	e2 := d.refusal(s, ex2, err, amp.CodeUnauthorized)
	s.check(e1 != nil && e2 != nil && e1.Message == e2.Message, "the same answer whether the capability exists or not (nothing leaks)")
	s.check(len(d.ranSince(before)) == 0, "no handler ran")
	return nil
}

// stepReplay: one signed CAP_INVOKE, POSTed twice: the agent runs the
// handler once and answers the duplicate with the same bytes.
func (d *demo) stepReplay(s *demoStep) error {
	id, err := capability.ParseID(demoCapability + ":2.0.0")
	if err != nil {
		return err
	}
	params, err := jsonToCBOR(`{"text":"good morning","target":"de"}`)
	if err != nil {
		return err
	}
	body, err := capability.Invoke{ID: id, Params: params}.Encode()
	if err != nil {
		return err
	}
	sender, err := amp.NewSender(amp.SenderConfig{Identity: d.caller, Rand: d.env.Rand, Now: d.env.Now})
	if err != nil {
		return err
	}
	req, msg, err := sender.Seal(d.ctx, amp.Draft{Type: amp.TypeCapInvoke, To: amp.To(d.provider.DID), Body: body})
	if err != nil {
		return err
	}
	s.note("message", "sealed", fmt.Sprintf("CAP_INVOKE id %s, %d bytes, sha256 %s", req.ID, len(msg), shortHash(msg)))
	before := d.counts()
	mark := d.wire.mark()
	var replies []*amp.Message
	for i := 0; i < 2; i++ {
		ex, err := d.plain.Send(d.ctx, req, msg)
		if err != nil {
			return err
		}
		replies = append(replies, ex.Reply)
	}
	sent, got := d.wire.since(mark)
	if len(sent) != 2 || len(got) != 2 {
		return fmt.Errorf("expected two exchanges on the wire, saw %d", len(sent))
	}
	for i := range got {
		s.note(fmt.Sprintf("post%d", i+1), fmt.Sprintf("POST #%d", i+1),
			fmt.Sprintf("%d bytes sent (sha256 %s) -> %s %d bytes (sha256 %s)", len(sent[i]), shortHash(sent[i]),
				replies[i].Type.Name(), len(got[i]), shortHash(got[i])))
	}
	s.check(bytes.Equal(sent[0], msg) && bytes.Equal(sent[1], msg), "both POSTs carried the exact same signed bytes")
	s.check(bytes.Equal(got[0], got[1]), "the replies are byte-identical (%d bytes)", len(got[0]))
	s.check(replies[0].Type == amp.TypeCapResult && bytes.Equal(replies[1].ReplyTo, req.ID[:]),
		"both verified: a signed CAP_RESULT, reply_to = the message's id")
	ran := d.ranSince(before)
	s.note("ran", "agent ran", strings.Join(ran, ", "))
	s.check(slices.Equal(ran, []string{id.String()}), "the handler ran once")
	return nil
}

// abbrev shortens an opaque token for the transcript.
func abbrev(s string) string {
	if len(s) <= 16 {
		return s
	}
	return s[:16] + "…"
}

func shortHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// stepRemoved: the operator removes the bundle; the agent still has the
// handlers, but without verified schemas it refuses with 5002.
func (d *demo) stepRemoved(s *demoStep) error {
	v, err := d.store.Remove(demoBundleID)
	if err != nil {
		return err
	}
	s.note("removed", "removed", fmt.Sprintf("%s version %d from the store (generation %d)", demoBundleID, v, d.store.Generation()))
	inv, err := demoNegotiated(demoParams)
	if err != nil {
		return err
	}
	before := d.counts()
	_, ex, err := d.secret.Invoke(d.ctx, inv)
	d.exchangeNote(s, "", ex)
	d.refusal(s, ex, err, amp.CodeUnavailable)
	if ex != nil {
		s.note("attempts", "attempts", fmt.Sprintf("%d (5002 is retryable: the client retried the same message, and it failed closed each time)", ex.Attempts))
	}
	s.check(len(d.ranSince(before)) == 0, "no handler ran: nothing is validated or executed without a verified schema")
	return nil
}

// jsonOf is json.Marshal for values that always have a JSON form.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
