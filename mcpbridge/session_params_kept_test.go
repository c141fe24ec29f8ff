package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keptParamsSize is the JSON size of the largest InitializeParams a live
// session of principal's server keeps.
func keptParamsSize(t *testing.T, h *HTTPEndpoint, principal string) int {
	t.Helper()
	n := 0
	for ss := range h.b.Server(principal).Sessions() {
		b, err := json.Marshal(ss.InitializeParams())
		if err != nil {
			t.Fatal(err)
		}
		n = max(n, len(b))
	}
	return n
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestInitializeWhoseClientInfoIsHugeIsRefused: go-sdk v1.8.0 keeps a
// session's initialize params (clientInfo, capabilities, _meta) for the
// session's life (ServerSessionState.InitializeParams), and nothing but
// the body bound (16 MiB in ampagent serve) bounded them: the real
// go-sdk client with a 1 MiB clientInfo version got a session that kept
// the megabyte, and one token holder's 64 sessions kept 64 times that
// (1024 sessions in all; threat: a token holder pinning gigabytes with
// sessions it never uses). The initialize is refused, -32602 with the
// name session_params_too_large, and no session is kept.
func TestInitializeWhoseClientInfoIsHugeIsRefused(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{})
	ctx := context.Background()
	huge := mcp.NewClient(&mcp.Implementation{Name: "host", Version: strings.Repeat("9", 1<<20)}, nil)
	cs, err := huge.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}, nil)
	if err == nil {
		defer cs.Close()
	}
	if n := keptParamsSize(t, h, testPrincipal); n > MaxSessionParams {
		t.Fatalf("a session keeps %d bytes of initialize params (bound %d)", n, MaxSessionParams)
	}
	if err == nil {
		t.Fatal("an initialize with a 1 MiB clientInfo opened a session")
	}
	if st := h.Stats(); st.Sessions != 0 {
		t.Fatalf("sessions counted after the refused initialize: %+v", st)
	}
	// The raw answer names the refusal (the HTTP endpoint rewrites the
	// SDK's errors, and keeps the bridge's own fixed data).
	members := make([]string, 300)
	for i := range members {
		members[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"experimental":{%s}},"clientInfo":{"name":"x","version":"1"}}}`,
		strings.Join(members, ","))
	r := send(t, http.MethodPost, srv.URL, testToken, "", body)
	var answer struct {
		Error struct {
			Code int
			Data struct {
				Code int
				Name string
			}
		}
	}
	if json.Unmarshal([]byte(r.body), &answer) != nil || answer.Error.Code != -32602 || answer.Error.Data.Name != ErrSessionParamsTooLarge {
		t.Fatalf("initialize of 300 capability values: %d %s", r.status, r.body)
	}
	// A plain host is served as before, and so is one whose clientInfo
	// carries its icon inline (a data: URI the MCP specification allows),
	// 32 KiB of base64.
	icon := mcp.Icon{Source: "data:image/png;base64," + strings.Repeat("iVBO", 8<<10), MIMEType: "image/png", Sizes: []string{"128x128"}}
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1", Icons: []mcp.Icon{icon}}, nil)
	ok, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if err := ok.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s := open(t, srv.URL, testToken)
	if r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`); !strings.Contains(r.body, `"result":{}`) {
		t.Fatalf("a plain setLevel: %d %s", r.status, r.body)
	}
}

// TestSessionParamsKeptForTheSessionAreBounded: besides initialize's,
// go-sdk v1.8.0 keeps for a session's life the params of its
// notifications/initialized (its _meta) and of its last
// logging/setLevel (the level, any string): 1 MiB each sent in 8
// sessions kept at least 8 MiB (threat as for initialize: 64 sessions of
// one token holder, each keeping up to three bodies of 16 MiB). Either
// is refused before the SDK keeps it, and the heap the sessions hold,
// once each has sent a ping after it, stays far below what was sent.
func TestSessionParamsKeptForTheSessionAreBounded(t *testing.T) {
	const sessions = 8
	mib := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name, body string
		answered   bool // a request (answered), not a notification
	}{
		{"initialized _meta", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"x":"` + mib + `"}}}`, false},
		{"setLevel level", `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"` + mib + `"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, srv := sessionEnv(t, HTTPOptions{MaxBody: 4 << 20})
			base := heapInUse()
			for range sessions {
				r := send(t, http.MethodPost, srv.URL, testToken, "", initBody)
				if r.status != http.StatusOK {
					t.Fatalf("initialize: %d %s", r.status, r.body)
				}
				a := send(t, http.MethodPost, srv.URL, testToken, r.session, tc.body)
				if tc.answered && !strings.Contains(a.body, ErrSessionParamsTooLarge) {
					t.Errorf("answer: %d %.200s", a.status, a.body)
				}
				// go-sdk v1.8.0 also keeps a session's last message
				// until its next one (MCP-52): a ping makes it the last.
				send(t, http.MethodPost, srv.URL, testToken, r.session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			}
			kept := int64(heapInUse()) - int64(base)
			if st := h.Stats(); st.Sessions != sessions {
				t.Fatalf("sessions: %+v", st)
			}
			t.Logf("%d sessions keep %d bytes of heap", sessions, kept)
			if kept > sessions<<20/4 {
				t.Fatalf("%d sessions sent 1 MiB each of kept params and keep %d bytes of heap", sessions, kept)
			}
		})
	}
}
