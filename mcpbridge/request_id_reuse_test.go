package mcpbridge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStringIDWithLoneSurrogateIsAnsweredUnderAnother: a string
// id the SDK cannot carry as written is answered under another id, and
// two such ids are one.
//
// Attack: validRequestID accepts any string of at most 256 bytes as
// written. The SDK's JSON decoder replaces a lone surrogate escape
// ("\ud800", "\udc00") and a byte that is not UTF-8 with U+FFFD, and
// answers under StringID("\ufffd"). Today a ping with id "\ud800" is
// answered 200 under id "\ufffd", and a batch of two requests with the
// distinct ids "\ud800" and "\udc00" gets one answer: the second request
// is dropped silently and the host waits for it until it gives up, the
// misanswer MCP-35 was written to stop (1.5 answered as 1).
//
// Should: checkBody refuses (400 invalid_request_id) a string id that
// does not decode to valid UTF-8 (a lone or reversed surrogate escape, a
// byte sequence that is not UTF-8), as it refuses 1.5.
func TestStringIDWithLoneSurrogateIsAnsweredUnderAnother(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	for _, id := range []string{`"\ud800"`, `"\udc00"`, `"\udc00\ud800"`, `"a\udfff"`, "\"\xff\"", "\"\xed\xa0\x80\""} {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if r.status != http.StatusOK {
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, ErrInvalidRequestID) {
				t.Errorf("id %q: refused %d %q, want 400 %s", id, r.status, r.body, ErrInvalidRequestID)
			}
			continue
		}
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(r.body), &msg); err != nil || string(msg.ID) != id {
			t.Errorf("a ping with id %q was answered under id %q", id, msg.ID)
		}
	}
	r := send(t, http.MethodPost, srv.URL, testToken, s.session,
		`[{"jsonrpc":"2.0","id":"\ud800","method":"ping"},{"jsonrpc":"2.0","id":"\udc00","method":"ping"}]`)
	if r.status == http.StatusOK {
		var answers []json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &answers); err != nil || len(answers) != 2 {
			t.Errorf("a batch of two pings (ids \"\\ud800\" and \"\\udc00\") got %d answers: %q", len(answers), r.body)
		}
	} else if r.status != http.StatusBadRequest || !strings.Contains(r.body, ErrInvalidRequestID) {
		t.Errorf("batch with lone-surrogate ids: refused %d %q, want 400 %s", r.status, r.body, ErrInvalidRequestID)
	}
}

// TestBatchWithRepeatedIDDropsARequest: two requests of one batch
// under one id (as written, or one id in two spellings) get one answer.
//
// Attack: checkBody checks each batch member's id alone. The SDK keys a
// batch's pending answers by id, so [{id:1,ping},{id:1,ping}] and
// [{id:"a"},{id:"\u0061"}] are answered once: the other request is
// dropped silently (it may even run: a tools/call's side effect with no
// answer) and the host waits for it until it gives up. MCP (2025-06-18,
// "Requests") says an id MUST NOT have been used before by the requestor
// in the session, so such a batch is malformed, yet it is answered 200 as
// if whole.
//
// Should: checkBody refuses (400 invalid_request_id) a batch in which two
// requests carry the same id after decoding (the same integer, or strings
// equal once escapes are decoded); an integer 1 and a string "1" are
// different ids and both are answered.
func TestBatchWithRepeatedIDDropsARequest(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	for _, c := range []struct {
		batch   string
		answers int // when accepted
		refuse  bool
	}{
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 2, true},
		{`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"\u0061","method":"ping"}]`, 2, true},
		{`[{"jsonrpc":"2.0","id":-5,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":-5,"method":"ping"}]`, 3, true},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"}]`, 2, false},
	} {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, c.batch)
		if r.status != http.StatusOK {
			if !c.refuse || r.status != http.StatusBadRequest || !strings.Contains(r.body, ErrInvalidRequestID) {
				t.Errorf("%s: refused %d %q", c.batch, r.status, r.body)
			}
			continue
		}
		var answers []json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &answers); err != nil || len(answers) != c.answers {
			t.Errorf("%s: %d requests got %d answers (200): %q", c.batch, c.answers, len(answers), r.body)
		}
	}
}
