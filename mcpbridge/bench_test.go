package mcpbridge

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// BenchmarkMCPCallVsAMPInvoke: the same capability on the same agent, in
// the same run, called b.N times each way, interleaved, by one client on
// loopback: tools/call over MCP's streamable HTTP transport (go-sdk
// client, bearer token) against a signed CAP_INVOKE over the AMP HTTP
// binding (the client signs each request and verifies each reply). The
// ledger is in memory, so that neither side hides behind a disk flush.
// Reported: each side's req/s and p50, and overhead-% = MCP p50 / AMP p50
// - 1 (target, docs/PERFORMANCE.md: at most 15 %).
func BenchmarkMCPCallVsAMPInvoke(b *testing.B) {
	benchMCPVsAMP(b, func(ctx context.Context, url string, tool string, params map[string]any) func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearer{benchToken, http.DefaultTransport}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return func() {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: params})
			if err != nil || r.IsError {
				b.Fatalf("mcp call: %v %+v", err, r)
			}
		}
	})
}

// BenchmarkMCPWireCallVsAMPInvoke is BenchmarkMCPCallVsAMPInvoke with the
// MCP side driven by a plain net/http client that posts the JSON-RPC
// tools/call an MCP host sends at the wire (session id, protocol version
// and bearer headers, one kept-alive connection) and decodes the JSON
// answer: the server's cost without the go-sdk client's own (its
// jsonrpc layer, goroutine hand-offs and repeated decoding).
func BenchmarkMCPWireCallVsAMPInvoke(b *testing.B) {
	benchMCPVsAMP(b, func(ctx context.Context, url string, tool string, params map[string]any) func() {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		b.Cleanup(c.CloseIdleConnections)
		post := func(session, body string) (*http.Response, []byte) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+benchToken)
			if session != "" {
				req.Header.Set(sessionHeader, session)
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			}
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				b.Fatal(err)
			}
			return resp, data
		}
		resp, _ := post("", initBody)
		sid := resp.Header.Get(sessionHeader)
		if resp.StatusCode != http.StatusOK || sid == "" {
			b.Fatalf("initialize: %d", resp.StatusCode)
		}
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		args, _ := json.Marshal(params)
		n := 1
		return func() {
			n++
			body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(args) + `}}`
			resp, data := post(sid, body)
			// What a host reads of the answer, decoded as a host in any
			// language would (encoding/json, not the go-sdk's types).
			var r struct {
				Result *struct {
					IsError           bool            `json:"isError"`
					StructuredContent json.RawMessage `json:"structuredContent"`
				} `json:"result"`
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
				json.Unmarshal(data, &r) != nil || r.Result == nil || r.Result.IsError || len(r.Result.StructuredContent) == 0 {
				b.Fatalf("mcp call: %d %.200s", resp.StatusCode, data)
			}
		}
	})
}

// benchToken is the benchmarks' bearer token.
const benchToken = "bench-token-0123456789abcdef0123456789"

// benchMCPVsAMP runs the interleaved comparison; mcpClient connects an
// MCP client to the endpoint at url and returns one tools/call.
func benchMCPVsAMP(b *testing.B, mcpClient func(ctx context.Context, url, tool string, params map[string]any) func()) {
	led, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: time.Now})
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, newStoreFile(b), agent.Rules{{Caller: "*", Prefix: "*"}}, led)
	ctx := context.Background()
	params := map[string]any{"text": "hello", "lang": "fr"}
	id, _ := capability.ParseID(testCap)
	ampCall := ampCaller(b, e, id, params)

	// MCP: a bearer token.
	tokens, _ := ParseTokenFile([]byte(testPrincipal + " " + benchToken))
	mcps := httptest.NewServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens}))
	defer mcps.Close()
	tool, _ := ToolName(id)
	mcpCall := mcpClient(ctx, mcps.URL, tool, params)
	// Warm both paths (connections, compiled schemas, the heap's size)
	// so that each figure is the steady state, not the first calls.
	const warm = 200
	for range warm {
		ampCall()
		mcpCall()
	}

	ampLat, mcpLat := make([]time.Duration, b.N), make([]time.Duration, b.N)
	var ampTotal, mcpTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		ampCall()
		ampLat[i] = time.Since(t)
		t = time.Now()
		mcpCall()
		mcpLat[i] = time.Since(t)
		ampTotal += ampLat[i]
		mcpTotal += mcpLat[i]
	}
	b.StopTimer()
	slices.Sort(ampLat)
	slices.Sort(mcpLat)
	ap, mp := ampLat[len(ampLat)/2], mcpLat[len(mcpLat)/2]
	b.ReportMetric(float64(b.N)/ampTotal.Seconds(), "amp-req/s")
	b.ReportMetric(float64(b.N)/mcpTotal.Seconds(), "mcp-req/s")
	b.ReportMetric(float64(ap.Microseconds()), "amp-p50-µs")
	b.ReportMetric(float64(mp.Microseconds()), "mcp-p50-µs")
	b.ReportMetric((float64(mp)/float64(ap)-1)*100, "overhead-%")
	if e.runs.Load() != int64(2*b.N+2*warm) {
		b.Fatalf("%d handler runs, want %d", e.runs.Load(), 2*b.N+2*warm)
	}
}

// ampCaller returns one signed CAP_INVOKE of id over the AMP HTTP binding
// by a did:key caller, its reply verified.
func ampCaller(b *testing.B, e *env, id capability.ID, params map[string]any) func() {
	ctx := context.Background()
	amps := httptest.NewServer(amphttp.NewHandler(e.agent, amphttp.Options{}))
	b.Cleanup(amps.Close)
	tr, err := amphttp.NewTransport(amps.URL, 1)
	if err != nil {
		b.Fatal(err)
	}
	_, ck, _ := ed25519.GenerateKey(rand.Reader)
	caller := amp.Identity{DID: amp.DIDKey(ck.Public().(ed25519.PublicKey)), SigningKey: ck}
	send, err := amp.NewSender(amp.SenderConfig{Identity: caller, Rand: rand.Reader, Now: time.Now, DIDs: e.store})
	if err != nil {
		b.Fatal(err)
	}
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: time.Now, DIDs: e.store})
	if err != nil {
		b.Fatal(err)
	}
	pcbor, _ := amp.Marshal(params)
	body, err := capability.Invoke{ID: id, Params: pcbor}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		_, msg, err := send.Seal(ctx, amp.Draft{Type: amp.TypeCapInvoke, To: amp.To(e.agent.DID()), TTL: time.Minute, Body: body})
		if err != nil {
			b.Fatal(err)
		}
		reply, err := tr.RoundTrip(ctx, msg)
		if err != nil {
			b.Fatal(err)
		}
		if m, err := recv.Receive(ctx, reply); err != nil || m.Type != amp.TypeCapResult {
			b.Fatalf("amp reply: %v", err)
		}
	}
}

// BenchmarkMCPSDKFloor: the go-sdk's streamable HTTP round trip alone: a
// tool that does nothing, same client, same transport options as the
// bridge. It is the floor under BenchmarkMCPCallVsAMPInvoke's MCP side
// (docs/PERFORMANCE.md explains the overhead with it).
func BenchmarkMCPSDKFloor(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	defer srv.Close()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{"text": "hello", "lang": "fr"}}); err != nil || r.IsError {
			b.Fatal(err)
		}
		lat[i] = time.Since(t)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}
