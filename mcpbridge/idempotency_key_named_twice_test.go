package mcpbridge

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
)

// TestIdempotencyKeyReadersMayDisagreeOnIsRefused: a host (or whatever
// writes to the endpoint) sends a tools/call whose _meta names the
// idempotency key twice, {"…idempotency_key":"a","…idempotency_key":"b"},
// or names it once in a _meta followed by another _meta (or params
// followed by other params). The SDK keeps the last key and merges two
// _meta objects, while a proxy, a gateway's idempotency cache or a log
// in front of the agent may keep the first: the key that decided whether
// the call ran, and under which message id, was not the one they saw (a
// parser differential on the key that decides idempotency; the timeout
// likewise). Was (MCP-39): the bridge used the SDK's choice and the call
// ran. Now (MCP-40) the body check refuses such a message, 400
// duplicate_meta_key over HTTP, the stdio session ended with that name,
// before the SDK reads it, and nothing runs, whichever spelling
// encoding/json would fold into params or _meta (ASCII case, the long s
// U+017F: Unicode simple folding); a key named once, a known
// name nested deeper than _meta's own members, and other keys named
// twice are as before.
func TestIdempotencyKeyReadersMayDisagreeOnIsRefused(t *testing.T) {
	const k, to = `"io.github.ampbundle/idempotency_key"`, `"io.github.ampbundle/timeout_ms"`
	call := func(id int, params string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":` + params + `}`
	}
	args := `"arguments":{"text":"hi","lang":"fr"}`
	tool := func(t *testing.T) string { return `"name":"` + testTool(t) + `",` + args }
	cases := []struct {
		name    string
		message func(t *testing.T, id int) string
		refused bool
	}{
		{"key twice", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`",`+k+`:"b"}}`)
		}, true},
		{"key twice, the second escaped", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`","io.github.ampbundle\/idempotency\u005fkey":"b"}}`)
		}, true},
		{"timeout twice", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+to+`:1000,`+to+`:60000}}`)
		}, true},
		{"key in the first of two _meta", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"},"_meta":{"x":1}}`)
		}, true},
		{"key then a null _meta", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"},"_meta":null}`)
		}, true},
		{"key in each of two _meta, one escaped", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"},"_m\u0065ta":{`+k+`:"b"}}`)
		}, true},
		{"key with a _meta in another case", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"},"_META":{}}`)
		}, true},
		{"key in the first of two params", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"}},"p\u0061rams":{`+tool(t)+`}`)
		}, true},
		{"key in the first of two params, the second's s a long s", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"}},"paramſ":{`+tool(t)+`,"_meta":{`+k+`:"b"}}`)
		}, true},
		{"key in the first of two params, the second's s a long s, escaped", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"}},"PARAM\u017f":{`+tool(t)+`}`)
		}, true},
		{"key with a _meta whose a is no fold of a", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`"},"_met\u00e0":{}}`)
		}, false},
		{"key once", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`",`+to+`:60000}}`)
		}, false},
		{"key once, its name nested deeper too", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{`+k+`:"a-`+strconv.Itoa(id)+`","x":{`+k+`:"b"}}}`)
		}, false},
		{"key once, another key twice", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{"x":1,`+k+`:"a-`+strconv.Itoa(id)+`","x":2}}`)
		}, false},
		{"no key, two _meta", func(t *testing.T, id int) string {
			return call(id, `{`+tool(t)+`,"_meta":{"x":1},"_meta":{"y":2}}`)
		}, false},
	}

	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens}))
	t.Cleanup(srv.Close)
	s := open(t, srv.URL, testToken)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := c.message(t, 10+i)
			if err := checkBody([]byte(msg), 1000); c.refused != (amp.NameOf(err) == ErrDuplicateMetaKey) || (!c.refused && err != nil) {
				t.Errorf("checkBody: %v (refused: %v)", err, c.refused)
			}
			before := e.runs.Load()
			r := send(t, http.MethodPost, srv.URL, testToken, s.session, msg)
			ran := e.runs.Load() - before
			switch {
			case c.refused && (r.status != http.StatusBadRequest || !strings.Contains(r.body, ErrDuplicateMetaKey) || ran != 0):
				t.Errorf("answered %d %q, the handler ran %d times; want 400 %s and no run", r.status, r.body, ran, ErrDuplicateMetaKey)
			case !c.refused && (r.status != http.StatusOK || ran != 1):
				t.Errorf("answered %d %q, the handler ran %d times; want 200 and one run", r.status, r.body, ran)
			}
		})
	}

	// The stdio transport is checked alike: the session ends with the
	// name before the SDK reads the message.
	p := serveStdioPipes(t, 1<<20)
	p.send(t, cases[0].message(t, 1))
	if got := p.answerID(t); got != "" {
		t.Fatalf("answered under id %s", got)
	}
	select {
	case err := <-p.done:
		if amp.NameOf(err) != ErrDuplicateMetaKey {
			t.Fatalf("stdio session ended with %v, want %s", err, ErrDuplicateMetaKey)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stdio session did not end")
	}
}
