package mcpbridge

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// logLines is a concurrency-safe log sink for counting lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), sub)
}

// hostileEnv is a store trusting a publisher for org.hostile, holding one
// signed bundle whose capability's input schema is schema, and a bridge
// (logging to logs) for an agent serving that capability.
func hostileEnv(t *testing.T, schema []byte, logs *logLines) *Bridge {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	b, _ := signedBridge(t, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: time.Now().Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("in.json", bundle.MediaTypeSchema, schema),
			bundle.BytesSource("out.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
		Capabilities: []capability.Descriptor{{Name: "org.hostile.tool", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "in.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "out.json"}}},
	}, slog.New(slog.NewTextHandler(logs, nil)))
	return b
}

// signedBridge is a bridge over d, signed by a publisher its store trusts
// for org.hostile, for an agent that serves every capability of d to
// testPrincipal (an empty object answered); and the bundle's length.
func signedBridge(t *testing.T, d *bundle.Draft, log *slog.Logger) (*Bridge, int) {
	t.Helper()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	store, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.TrustAdd("hostile", pub, []string{"org.hostile"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Import(context.Background(), bytes.NewReader(file.Bytes()), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	handlers := map[string]agent.Handler{}
	for _, c := range d.Capabilities {
		handlers[c.Name+":"+c.Version.String()] = func(context.Context, any) (any, error) { return map[string]any{}, nil }
	}
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: store, Policy: agent.Rules{{Caller: testPrincipal, Prefix: "org.hostile"}},
		Now: time.Now, Rand: rand.Reader, InlineHandlers: true, Handlers: handlers}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	opts := Options{Agent: func() Agent { return a }, Store: store}
	if log != nil {
		opts.Logger = log
	}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b, file.Len()
}

// TestSignedSchemaTheSDKRefusesIsNotOfferedNeverPanics: a publisher's
// signed input schema with an "x-mcp-header" annotation the MCP SDK
// refuses (its AddTool panics: on a non-primitive property, a value that
// is not an HTTP token, a header named twice) or one two JSON readers may
// read apart (a repeated key) is not offered, with a precise name logged
// once per catalog generation; Bridge.Run's refresh and tools/list never
// panic (threat: one signed bundle taking the agent down, AMP and MCP).
func TestSignedSchemaTheSDKRefusesIsNotOfferedNeverPanics(t *testing.T) {
	for _, c := range []struct {
		name, schema, refusal string
	}{
		{"header on an object property", `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`, ErrHeaderAnnotation},
		{"header on an array property", `{"type":"object","properties":{"a":{"type":"array","x-mcp-header":"X-A"}}}`, ErrHeaderAnnotation},
		{"header on an untyped property", `{"type":"object","properties":{"a":{"x-mcp-header":"X-A"}}}`, ErrHeaderAnnotation},
		{"header name with a space", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X A"}}}`, ErrHeaderAnnotation},
		{"header name with a newline", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X\r\nSet-Cookie: a"}}}`, ErrHeaderAnnotation},
		{"empty header name", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, ErrHeaderAnnotation},
		{"header name not a string", `{"type":"object","properties":{"a":{"type":"integer","x-mcp-header":7}}}`, ErrHeaderAnnotation},
		{"one header for two properties", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"},"b":{"type":"boolean","x-mcp-header":"x-a"}}}`, ErrHeaderAnnotation},
		{"nested bad header", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","x-mcp-header":"X-B"}}}}}`, ErrHeaderAnnotation},
		{"repeated key", `{"type":"object","properties":{"a":{"type":"string"}},"properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`, ErrSchemaAmbiguous},
		{"valid header", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkHeaderAnnotations([]byte(c.schema))
			if got := string(amp.NameOf(err)); err != nil && got != c.refusal || err == nil && c.refusal != "" {
				t.Fatalf("check: %v (name %q), want %q", err, got, c.refusal)
			}
			logs := &logLines{}
			b := hostileEnv(t, []byte(c.schema), logs)
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("a verified bundle's schema panics the bridge (a process crash): %v", r)
				}
			}()
			b.Refresh(true) // what Bridge.Run does
			srv := b.Server(testPrincipal)
			if srv == nil {
				t.Fatal("no server")
			}
			b.Refresh(false)
			b.Refresh(false)
			offered := len(b.tools().specs)
			if want := map[bool]int{true: 0, false: 1}[c.refusal != ""]; offered != want {
				t.Fatalf("%d tools offered, want %d", offered, want)
			}
			if c.refusal == "" {
				return
			}
			if n := logs.count("name=" + c.refusal); n != 1 {
				t.Fatalf("the refusal is logged %d times, want once per generation:\n%s", n, logs.buf.String())
			}
			if strings.Contains(logs.buf.String(), "Set-Cookie") {
				t.Fatal("the log quotes the schema's header value")
			}
		})
	}
}

// TestSDKPanicOnAToolIsRecoveredAndLoggedOnce: should the SDK refuse a
// tool buildTool let through (a rule of a later SDK), its panic is
// recovered: the tool is not offered and the refusal is logged once
// (threat: a schema rule we do not know yet crashing the process).
func TestSDKPanicOnAToolIsRecoveredAndLoggedOnce(t *testing.T) {
	logs := &logLines{}
	b := hostileEnv(t, []byte(`{"type":"object"}`), logs)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	id, _ := capability.ParseID("org.hostile.tool:1.0.0")
	s := &toolSpec{id: id, tool: &mcp.Tool{Name: "bad", InputSchema: nil}} // AddTool panics on it
	for range 3 {
		if b.addTool(srv, s) {
			t.Fatal("a tool the SDK panics on is reported added")
		}
	}
	if !s.refused.Load() {
		t.Fatal("the refused tool is not marked")
	}
	if n := logs.count("sdk_refused_tool"); n != 1 {
		t.Fatalf("logged %d times, want once", n)
	}
}

// FuzzHeaderCheckKeepsTheSDKFromPanicking: whatever object input schema
// checkHeaderAnnotations lets through, the SDK's AddTool takes without a
// panic (threat: a reading of the annotation rules that differs from the
// SDK's, found by a publisher before us).
func FuzzHeaderCheckKeepsTheSDKFromPanicking(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"},"b":{"type":"boolean","x-mcp-header":"x-a"}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"X-B"}}}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-h\u0065ader":"X A"}}}`,
		`{"type":"object","properties":{"a":true,"b":{"type":"string","x-mcp-header":"B"}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(schema), &top) != nil || !bytes.Equal(bytes.TrimSpace(top["type"]), []byte(`"object"`)) {
			return // not an object schema: buildTool refuses it before
		}
		if checkHeaderAnnotations([]byte(schema)) != nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("the check passed a schema the SDK panics on: %v", r)
			}
		}()
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(schema)}, refuseDirect)
	})
}
