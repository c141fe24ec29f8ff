package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

const (
	translateIn1  = `{"type":"object","required":["text","lang"],"properties":{"text":{"type":"string"},"lang":{"type":"string"},"legacy_hint":{"type":"string"}},"additionalProperties":false}`
	translateOut1 = `{"type":"object","required":["translation"],"properties":{"translation":{"type":"string"}},"additionalProperties":false}`
	translateIn2  = `{"type":"object","required":["source_text","options"],"properties":{"source_text":{"type":"string"},"options":{"type":"object","required":["target_lang","formality"],"properties":{"target_lang":{"type":"string"},"formality":{"enum":["neutral","formal"]}},"additionalProperties":false}},"additionalProperties":false}`
	translateOut2 = `{"type":"object","required":["translated_text"],"properties":{"translated_text":{"type":"string"},"detected_formality":{"type":"string"}},"additionalProperties":false}`
)

// bridgeBundle carries org.agentries.translate-v and .translate-nobridge in
// 1.0.0 and 2.0.0 (incompatible majors); translate 2.0.0 has policy bridge
// with the bridge of testdata/compat/bridge/example.json, the other 2.0.0
// has no policy. Claims are computed the way build computes them.
func bridgeBundle(t *testing.T, key ed25519.PrivateKey) []byte {
	t.Helper()
	return bridgeBundleWith(t, key, translateOut2)
}

// bridgeBundleWith is bridgeBundle with out2 as the 2.0.0 output schema.
func bridgeBundleWith(t *testing.T, key ed25519.PrivateKey, out2 string) []byte {
	t.Helper()
	bridgeDoc, err := os.ReadFile(filepath.Join("..", "testdata", "compat", "bridge", "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := &bundle.Draft{BundleID: "org.agentries.bridges", Version: 1, CreatedAt: t0.Add(-time.Hour)}
	files := mapLoader{}
	for _, name := range []string{"org.agentries.translate-v", "org.agentries.translate-v-nobridge"} {
		for _, v := range []string{"1.0.0", "2.0.0"} {
			dir := "capabilities/" + name + "/" + v + "/"
			in, out := translateIn1, translateOut1
			if v == "2.0.0" {
				in, out = translateIn2, out2
			}
			files[dir+"input.schema.json"], files[dir+"output.schema.json"] = []byte(in), []byte(out)
			d.Artifacts = append(d.Artifacts,
				bundle.BytesSource(dir+"input.schema.json", bundle.MediaTypeSchema, []byte(in)),
				bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, []byte(out)))
			ver, _ := capability.ParseVersion(v)
			desc := capability.Descriptor{Name: name, Version: ver,
				InputSchema:  capability.SchemaRef{ArtifactKey: dir + "input.schema.json"},
				OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}}
			if v == "2.0.0" {
				sr, _ := capability.ParseRange(">=1.0.0 <2.0.0")
				desc.SupportedRanges = []capability.Range{sr}
				if name == "org.agentries.translate-v" {
					sum := sha256.Sum256(bridgeDoc)
					files[dir+"bridge.json"] = bridgeDoc
					d.Artifacts = append(d.Artifacts, bundle.BytesSource(dir+"bridge.json", bundle.MediaTypeBridge, bridgeDoc))
					desc.Policy = capability.PolicyBridge
					desc.Bridge = &capability.SchemaRef{ArtifactKey: dir + "bridge.json", HashAlg: capability.HashSHA256, Hash: sum[:]}
				}
			}
			d.Capabilities = append(d.Capabilities, desc)
		}
	}
	annotated, err := compat.Annotate(d.Capabilities, compat.NewSource(files))
	if err != nil {
		t.Fatal(err)
	}
	d.Capabilities = annotated
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// translate2 is a 2.0.0 handler: it reads only the 2.x request shape and
// answers in the 2.x result shape.
func translate2(runs *atomic.Int64) Handler {
	return func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		m := p.(map[string]any)
		o := m["options"].(map[string]any)
		return map[string]any{
			"translated_text":    m["source_text"].(string) + "/" + o["target_lang"].(string) + "/" + o["formality"].(string),
			"detected_formality": "neutral",
		}, nil
	}
}

func withBridgeBundle(t *testing.T, runs *atomic.Int64) envOption {
	return func(e *env) {
		e.importBundle(bridgeBundle(t, seedKey(21)))
		e.handlers["org.agentries.translate-v:2.0.0"] = translate2(runs)
		e.handlers["org.agentries.translate-v-nobridge:2.0.0"] = translate2(runs)
	}
}

// TestBridgeServesOldCallerOverHTTP: a 1.0.0 caller is served by the 2.0.0
// handler through the bundle's bridge — its request turned into the 2.x
// shape before input validation, the 2.x result turned back into the 1.x
// shape after output validation — while a 2.0.0 caller gets the 2.x shape
// unchanged, and an incompatible major without a bridge stays 4003.
func TestBridgeServesOldCallerOverHTTP(t *testing.T) {
	var runs atomic.Int64
	e := newEnv(t, withBridgeBundle(t, &runs))
	url, _ := serveHTTP(t, e, amphttp.Options{})
	c := httpClient(t, e, url, e.caller, false)
	invoke := func(id string, params any) (*capability.Result, error) {
		pid, err := capability.ParseID(id)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := amp.Marshal(params)
		r, _, err := c.Invoke(context.Background(), capability.Invoke{ID: pid, Params: p})
		return r, err
	}
	r, err := invoke("org.agentries.translate-v:1.0.0", map[string]any{"text": "Hallo", "lang": "en", "legacy_hint": "x"})
	if err != nil {
		t.Fatalf("a bridged 1.x caller was refused: %v", err)
	}
	var out map[string]any
	if err := amp.Unmarshal(r.Result, &out); err != nil || len(out) != 1 || out["translation"] != "Hallo/en/neutral" {
		t.Fatalf("bridged result %v (%v), want only translation=Hallo/en/neutral", out, err)
	}
	var served string
	if err := amp.Unmarshal(r.Extra[ResultServedID], &served); err != nil || served != "org.agentries.translate-v:2.0.0" {
		t.Fatalf("served_id %q (%v)", served, err)
	}

	// A 1.x request the bridge cannot make into a valid 2.x request is a
	// schema violation against the provider's schema; nothing runs.
	before := runs.Load()
	if _, err := invoke("org.agentries.translate-v:1.0.0", map[string]any{"text": "Hallo"}); amp.CodeOf(err) != amp.CodeSchemaViolation {
		t.Fatalf("bridged request missing lang: err %v, want 4004", err)
	}
	if runs.Load() != before {
		t.Fatal("the handler ran on a request that failed validation after bridging")
	}

	// The exact 2.0.0 version: no bridge, the 2.x shape.
	r, err = invoke("org.agentries.translate-v:2.0.0", map[string]any{"source_text": "Hi", "options": map[string]any{"target_lang": "fr", "formality": "formal"}})
	if err != nil || r.Extra != nil {
		t.Fatalf("exact 2.0.0: %v extra %v", err, r.Extra)
	}
	out = nil
	if err := amp.Unmarshal(r.Result, &out); err != nil || out["translated_text"] != "Hi/fr/formal" {
		t.Fatalf("exact result %v (%v)", out, err)
	}

	// No documented bridge and an incompatible major: 4003 (RFC 004 §8).
	if _, err := invoke("org.agentries.translate-v-nobridge:1.0.0", map[string]any{"text": "Hallo", "lang": "en"}); amp.CodeOf(err) != amp.CodeVersionMismatch {
		t.Fatalf("no bridge: err %v, want 4003", err)
	}
}

// TestTamperedBridgeArtifactRunsNothing: the stored bridge's bytes are
// altered on disk; a bridged invocation is refused with 5002 and the
// handler runs zero times (threat: an unverified adapter rewriting what a
// handler receives).
func TestTamperedBridgeArtifactRunsNothing(t *testing.T) {
	var runs atomic.Int64
	e := newEnv(t, withBridgeBundle(t, &runs))
	e.agent.Close()
	e.store.Close()
	raw, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	needle := []byte(`"value": "neutral"`)
	if bytes.Count(raw, needle) == 0 {
		t.Fatal("the bridge is not in the store file as expected")
	}
	raw = bytes.ReplaceAll(raw, needle, []byte(`"value": "formal!"`))
	if err := os.WriteFile(e.path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := resolver.Open(e.path, resolver.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := e.cfg
	cfg.Store = s
	cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{})
	cfg.Handlers = map[string]Handler{"org.agentries.translate-v:2.0.0": translate2(&runs)}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = a
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.translate-v:1.0.0", map[string]any{"text": "Hallo", "lang": "en"}))
	if eb := errorOf(t, reply); eb.Code != amp.CodeUnavailable {
		t.Fatalf("got %d, want 5002", eb.Code)
	}
	if runs.Load() != 0 {
		t.Fatalf("the handler ran %d times behind a tampered bridge", runs.Load())
	}
}

// TestQueryListsBridgeServedVersions: a CAP_QUERY for a range only the
// bridged callers fall in lists the descriptor that serves them through
// its bridge, as CAP_INVOKE would; without a bridge the answer stays 4003.
func TestQueryListsBridgeServedVersions(t *testing.T) {
	var runs atomic.Int64
	e := newEnv(t, withBridgeBundle(t, &runs))
	url, _ := serveHTTP(t, e, amphttp.Options{})
	c := httpClient(t, e, url, e.caller, false)
	r, _ := capability.ParseRange(">=1.0.0 <2.0.0")
	d, _, err := c.Query(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.agentries.translate-v", Version: r}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Capabilities) != 1 || d.Capabilities[0].ID().String() != "org.agentries.translate-v:2.0.0" || d.Capabilities[0].Bridge == nil {
		t.Fatalf("declare %+v", d.Capabilities)
	}
	_, _, err = c.Query(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.agentries.translate-v-nobridge", Version: r}})
	if amp.CodeOf(err) != amp.CodeVersionMismatch {
		t.Fatalf("no bridge: err %v, want 4003", err)
	}
}
