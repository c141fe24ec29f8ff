package mcpbridge

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRequestIDIsAnsweredAsSentOrRefused: a JSON-RPC id the SDK cannot
// carry exactly is answered under another id, or not at all.
//
// Attack: go-sdk v1.8.0 reads a numeric id as a float64 and keeps
// int64(v) (jsonrpc2.MakeID), so the ids 1.5 and 1 are one id, 1e300
// (beyond int64) becomes whatever the conversion gives, and 2^53+1 is
// 2^53. A ping with id 1.5 was answered under id 1; a batch [id 1, id 1.5]
// got one answer, the second request silently dropped (the host waits for
// it until it gives up). MCP (2025-06-18, "Requests") allows only string
// or integer ids; checkBody, which reads every body before the SDK,
// counted the id as one value and let any number through, and the
// endpoint's answer rewriting (MCP-22) keeps the SDK's id, not the host's.
//
// Should: every request answered under exactly the id it was sent with,
// or refused before the SDK (400 invalid_request_id) when its id is not
// a string or an integer the SDK carries exactly (MCP-35).
func TestRequestIDIsAnsweredAsSentOrRefused(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	for _, id := range []string{"1.5", "1e300", "9007199254740993", "-0", "1.0", "1e2", "true", "{}", `"` + strings.Repeat("a", MaxRequestIDBytes+1) + `"`} {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if r.status != http.StatusOK {
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, ErrInvalidRequestID) {
				t.Errorf("id %.40s: refused %d %q, want 400 %s", id, r.status, r.body, ErrInvalidRequestID)
			}
			continue
		}
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(r.body), &msg); err != nil {
			t.Fatalf("id %s: answer is not JSON: %q", id, r.body)
		}
		if string(msg.ID) != id {
			t.Errorf("a ping with id %.40s was answered under id %s", id, msg.ID)
		}
	}
	// Ids the SDK carries exactly are answered under them.
	for _, id := range []string{"1", "-7", "9007199254740991", "-9007199254740991", `"req-1"`, `"` + strings.Repeat("a", MaxRequestIDBytes) + `"`} {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &msg) != nil || string(msg.ID) != id {
			t.Errorf("a ping with id %.40s: %d %q", id, r.status, r.body)
		}
	}
	r := send(t, http.MethodPost, srv.URL, testToken, s.session,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`)
	if r.status == http.StatusOK {
		var answers []json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &answers); err != nil || len(answers) != 2 {
			t.Errorf("a batch of two pings (ids 1 and 1.5) got %d answers: %s", len(answers), r.body)
		}
	}
}

// TestRequestIDHiddenUnderAnotherSpellingIsChecked: the SDK decodes
// escapes in member names and keeps the last of duplicates, so an id
// written "i\u0064", or after a plain valid id, is the id it answers
// under; each is checked wherever it stands (the body, or any element of
// a batch). Values outside a message (params, _meta) are not ids.
func TestRequestIDHiddenUnderAnotherSpellingIsChecked(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","id":0,"method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","id":"\u0041","method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","i\u0064":1.5,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","\u0069\u0064":[],"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","ID":1.5,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","id":1,"id":2.5,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","id":-0.0,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","id":10000000000000000,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, ErrInvalidRequestID},
		{`{"jsonrpc":"2.0","id":false,"method":"ping"}`, ErrInvalidRequestID},
		{`[{"id":1,"method":"ping"},{"id":"x","method":"ping"}]`, ""},
		{`[{"id":1,"method":"ping"},{"id":1e0,"method":"ping"}]`, ErrInvalidRequestID},
		{`{"id":1,"method":"ping","params":{"id":1.5,"_meta":{"id":{}}}}`, ""},
		{`{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"id":1.5}}}`, ""},
		{`{"idx":1.5,"i":1.5,"d":1.5,"method":"ping"}`, ""},
		{`[[{"id":1.5}]]`, ""}, // not a message: the SDK refuses it
	} {
		err := checkBody([]byte(c.doc), 100)
		if got := string(amp.NameOf(err)); (err == nil) != (c.want == "") || (err != nil && got != c.want) {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
}

// FuzzRequestIDAcceptedIsCarriedExactly: every numeric id validRequestID
// accepts comes back from the SDK's float64 and int64 conversion
// (jsonrpc2.MakeID) as the text it was written with.
func FuzzRequestIDAcceptedIsCarriedExactly(f *testing.F) {
	for _, s := range []string{"0", "-1", "1.5", "9007199254740991", "9007199254740993", "-0", "1e2", `"x"`, "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !json.Valid([]byte(id)) || strings.TrimSpace(id) != id || id == "" || !validRequestID([]byte(id)) {
			return
		}
		var v any
		if err := json.Unmarshal([]byte(id), &v); err != nil {
			t.Fatal(err)
		}
		if f, ok := v.(float64); ok {
			if got := strconv.FormatInt(int64(f), 10); got != id {
				t.Fatalf("id %s is answered as %s", id, got)
			}
		}
	})
}
