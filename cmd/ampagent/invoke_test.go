package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// invokeDoc is the --json output of invoke.
type invokeDoc struct {
	Status    string          `json:"status"`
	Result    json.RawMessage `json:"result"`
	Target    string          `json:"target"`
	Provider  string          `json:"provider"`
	RequestID string          `json:"request_id"`
	ReplyID   string          `json:"reply_id"`
	Verified  bool            `json:"verified"`
	Encrypted bool            `json:"encrypted"`
	Attempts  int             `json:"attempts"`
}

func parseInvoke(t *testing.T, r result) (invokeDoc, map[string]any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var d invokeDoc
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	var res map[string]any
	if err := json.Unmarshal(d.Result, &res); err != nil {
		t.Fatalf("result %s: %v", d.Result, err)
	}
	return d, res
}

const params2 = `{"text":"hello","target":"fr"}`

// TestInvokeForms: by id, by name and version, negotiated (preferred
// missing, first acceptable served), by range, encrypted; params from a
// file and from stdin.
func TestInvokeForms(t *testing.T) {
	ta := startAgents(t)
	base := []string{"invoke", ta.url, "--key", ta.caller, "--to", ta.did, "--json"}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		ran   string // the version whose handler must have run
	}{
		{"by id", "", []string{"--id", translateCap + ":2.0.0", "--params", params2}, "2.0.0"},
		{"by name and version", "", []string{"--capability", translateCap, "--version", "1.5.0", "--params", `{"text":"hello","lang":"fr"}`}, "1.5.0"},
		{"negotiated", "", []string{"--capability", translateCap, "--prefer", "2.2.0", "--accept", "2.1.0,2.0.0", "--params", params2}, "2.1.0"},
		{"accept repeated", "", []string{"--capability", translateCap, "--accept", "9.0.0", "--accept", "2.0.0", "--params", params2}, "2.0.0"},
		{"preferred served", "", []string{"--capability", translateCap, "--prefer", "2.0.0", "--accept", "2.1.0", "--params", params2}, "2.0.0"},
		{"by range", "", []string{"--capability", translateCap, "--range", ">=1.0.0 <2.0.0", "--params", `{"text":"hello","lang":"fr"}`}, "1.5.0"},
		{"encrypted", "", []string{"--capability", translateCap, "--prefer", "2.2.0", "--accept", "2.1.0,2.0.0", "--params", params2, "--encrypt"}, "2.1.0"},
		{"params file", "", []string{"--id", translateCap + ":2.1.0", "--params", "@" + writeFile(t, "p.json", params2), "--timeout-ms", "5000"}, "2.1.0"},
		{"params on stdin", params2, []string{"--id", translateCap + ":2.1.0", "--params", "@-"}, "2.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ta.ran()
			d, res := parseInvoke(t, runCLI(t, tc.stdin, append(base, tc.args...)...))
			after := ta.ran()
			if after[tc.ran] != before[tc.ran]+1 {
				t.Fatalf("runs %v -> %v, want one more of %s", before, after, tc.ran)
			}
			if !strings.HasPrefix(res["text"].(string), tc.ran+" hello") {
				t.Fatalf("result %v", res)
			}
			if d.Status != "success" || !d.Verified || d.Provider != ta.did || len(d.RequestID) != 32 || len(d.ReplyID) != 32 || d.Attempts != 1 {
				t.Fatalf("output %+v", d)
			}
			if d.Encrypted != (tc.name == "encrypted") {
				t.Fatalf("encrypted = %v", d.Encrypted)
			}
		})
	}

	// Human output: the status, the verification, the result as JSON.
	r := runCLI(t, "", "invoke", "--key", ta.caller, "--to", ta.did, ta.url, "--id", translateCap+":2.0.0", "--params", params2, "--encrypt")
	if r.code != 0 || !strings.Contains(r.stdout, "CAP_RESULT success for "+translateCap+":2.0.0") ||
		!strings.Contains(r.stdout, "verified, encrypted") || !strings.Contains(r.stdout, `"text": "2.0.0 hello"`) {
		t.Fatalf("human: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestInvokeDIDWeb: the did:web agent, its document given, encrypted to its
// keyAgreement key from the document.
func TestInvokeDIDWeb(t *testing.T) {
	ta := startAgents(t)
	d, _ := parseInvoke(t, runCLI(t, "", "invoke", ta.webURL, "--key", ta.caller, "--to", translatorWeb, "--to-doc", translatorDoc,
		"--id", translateCap+":2.1.0", "--params", params2, "--encrypt", "--json"))
	if d.Provider != translatorWeb || !d.Encrypted {
		t.Fatalf("%+v", d)
	}
	if r := runCLI(t, "", "invoke", ta.webURL, "--key", ta.caller, "--to", translatorWeb, "--id", translateCap+":2.1.0", "--params", params2); r.code != 2 {
		t.Fatalf("without --to-doc: exit %d", r.code)
	}
}

// TestInvokeRefusals: every refusal exits 1 with its AMP code, and no
// handler runs for any of them.
func TestInvokeRefusals(t *testing.T) {
	ta := startAgents(t)
	for _, tc := range []struct {
		name string
		key  string
		args []string
		code int
		ame  string
	}{
		{"schema violation", ta.caller, []string{"--id", translateCap + ":2.1.0", "--params", `{"text":"hello"}`}, 4004, "schema_violation"},
		{"wrong type", ta.caller, []string{"--id", translateCap + ":2.1.0", "--params", `{"text":1,"target":"fr"}`}, 4004, "schema_violation"},
		{"stranger", ta.stranger, []string{"--id", translateCap + ":2.1.0", "--params", params2}, 3001, "unauthorized"},
		{"stranger, unknown capability", ta.stranger, []string{"--id", "org.example.nope:1.0.0", "--params", params2}, 3001, "unauthorized"},
		{"unknown capability", ta.caller, []string{"--id", "org.example.translate.nope:1.0.0", "--params", params2}, 4002, "capability_not_found"},
		{"unknown version", ta.caller, []string{"--capability", translateCap, "--version", "3.0.0", "--params", params2}, 4003, "version_mismatch"},
		{"nothing negotiable", ta.caller, []string{"--capability", translateCap, "--prefer", "3.0.0", "--params", params2}, 4003, "version_mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ta.ran()
			r := runCLI(t, "", append([]string{"invoke", ta.url, "--key", tc.key, "--to", ta.did, "--json"}, tc.args...)...)
			if name, code := errorDoc(t, r); r.code != 1 || code != tc.code || name != tc.ame {
				t.Fatalf("exit %d, %s %d; want 1, %s %d", r.code, name, code, tc.ame, tc.code)
			}
			if after := ta.ran(); len(after) != len(before) {
				t.Fatalf("a handler ran: %v -> %v", before, after)
			}
		})
	}
	// For people, the location of the violation comes as a hint.
	r := runCLI(t, "", "invoke", ta.url, "--key", ta.caller, "--to", ta.did, "--id", translateCap+":2.1.0", "--params", `{"text":"hello"}`)
	if r.code != 1 || !strings.Contains(r.stderr, "amp 4004 SCHEMA_VIOLATION") || !strings.Contains(r.stderr, "/target: required") {
		t.Fatalf("human 4004: exit %d\n%s", r.code, r.stderr)
	}
	// For programs, the --json error document carries the details.
	r = runCLI(t, "", "invoke", ta.url, "--key", ta.caller, "--to", ta.did, "--id", translateCap+":2.1.0", "--params", `{"text":"hello"}`, "--json")
	var doc struct {
		Error struct {
			Details []struct {
				InstanceLocation string `json:"instance_location"`
				Keyword          string `json:"keyword"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Error.Details) != 1 ||
		doc.Error.Details[0].InstanceLocation != "/target" || doc.Error.Details[0].Keyword != "required" {
		t.Fatalf("json 4004 details: %v %s", err, r.stdout)
	}
	// A failed execution is a CAP_RESULT with status error: exit 1 too.
	r = runCLI(t, "", "invoke", ta.url, "--key", ta.caller, "--to", ta.did, "--id", translateCap+":1.0.0", "--params", `{"text":"fail","lang":"fr"}`, "--json")
	if name, code := errorDoc(t, r); r.code != 1 || code != 4001 || name != "untranslatable" {
		t.Fatalf("CAP_RESULT error: exit %d %s %d", r.code, name, code)
	}
}

// tamper serves the agent through a proxy that changes its replies.
func tamper(t *testing.T, ta *testAgents, change func(n int, reply []byte) []byte) string {
	t.Helper()
	var mu sync.Mutex
	n := 0
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := httptest.NewRecorder()
		ta.handler.ServeHTTP(rec, req)
		mu.Lock()
		n++
		body := change(n, rec.Body.Bytes())
		mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		io.Copy(w, bytes.NewReader(body))
	}))
}

// TestInvokeForgedReplies: a reply whose signature was altered is 1002;
// a genuine reply to another request (replayed by a man in the middle) is
// 4001 (reply_to, RFC 004 A.12). Both exit 1.
func TestInvokeForgedReplies(t *testing.T) {
	ta := startAgents(t)
	flipped := tamper(t, ta, func(_ int, reply []byte) []byte {
		in, err := amp.Limits{}.Inspect(reply)
		if err != nil {
			t.Error(err)
			return reply
		}
		sig, _ := hex.DecodeString(in.Sig)
		out := bytes.Clone(reply)
		out[bytes.Index(out, sig)+5] ^= 1
		return out
	})
	args := []string{"--key", ta.caller, "--to", ta.did, "--id", translateCap + ":2.1.0", "--params", params2, "--json"}
	r := runCLI(t, "", append([]string{"invoke", flipped}, args...)...)
	if _, code := errorDoc(t, r); r.code != 1 || code != 1002 {
		t.Fatalf("flipped signature: exit %d amp %d", r.code, code)
	}

	var first []byte
	replayed := tamper(t, ta, func(n int, reply []byte) []byte {
		if n == 1 {
			first = bytes.Clone(reply)
		}
		return first
	})
	if r := runCLI(t, "", append([]string{"invoke", replayed}, args...)...); r.code != 0 {
		t.Fatalf("first: exit %d %s", r.code, r.stdout)
	}
	r = runCLI(t, "", append([]string{"invoke", replayed}, args...)...)
	if name, code := errorDoc(t, r); r.code != 1 || code != 4001 || name != "reply_mismatch" {
		t.Fatalf("replayed reply: exit %d %s %d", r.code, name, code)
	}
}

func TestInvokeUsage(t *testing.T) {
	ta := startAgents(t)
	ok := []string{"invoke", ta.url, "--key", ta.caller, "--to", ta.did}
	id := []string{"--id", translateCap + ":2.1.0"}
	for name, args := range map[string][]string{
		"no target":                   append(ok, "--params", params2),
		"id and capability":           append(append(ok, id...), "--capability", translateCap, "--params", params2),
		"id and version":              append(append(ok, id...), "--version", "2.1.0", "--params", params2),
		"id and hints":                append(append(ok, id...), "--prefer", "2.1.0", "--params", params2),
		"capability alone":            append(ok, "--capability", translateCap, "--params", params2),
		"version and hints":           append(ok, "--capability", translateCap, "--version", "2.1.0", "--accept", "2.0.0", "--params", params2),
		"version without a name":      append(ok, "--version", "2.1.0", "--params", params2),
		"bad id":                      append(ok, "--id", translateCap, "--params", params2),
		"bad version":                 append(ok, "--capability", translateCap, "--version", "2.1", "--params", params2),
		"bad accept":                  append(ok, "--capability", translateCap, "--accept", "2.1.0,v2", "--params", params2),
		"bad range":                   append(ok, "--capability", translateCap, "--range", "2.x", "--params", params2),
		"no params":                   append(ok, id...),
		"params not json":             append(append(ok, id...), "--params", `{text: hello}`),
		"params with duplicate key":   append(append(ok, id...), "--params", `{"text":"a","text":"b"}`),
		"params @ without a file":     append(append(ok, id...), "--params", "@"),
		"zero timeout":                append(append(ok, id...), "--params", params2, "--timeout-ms", "0"),
		"two urls":                    append(append(ok, id...), "--params", params2, ta.url),
		"no key, params file missing": {"invoke", ta.url, "--to", ta.did, "--id", translateCap + ":2.1.0", "--params", "@/nonexistent/params.json"},
		"did:web without its doc":     {"invoke", ta.webURL, "--key", ta.caller, "--to", translatorWeb, "--id", translateCap + ":2.1.0", "--params", params2},
	} {
		t.Run(name, func(t *testing.T) {
			if r := runCLI(t, "", append(args, "--json")...); r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	// A params file that does not exist is a failure, not a usage error.
	r := runCLI(t, "", append(append(ok, id...), "--params", "@/nonexistent/params.json", "--json")...)
	if name, _ := errorDoc(t, r); r.code != 1 || name != "io_error" {
		t.Fatalf("missing params file: exit %d %s", r.code, name)
	}
}
