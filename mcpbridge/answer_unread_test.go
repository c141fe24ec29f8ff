package mcpbridge

// The endpoint read a POST's body at the bindings' minimum data rate
// (MCP-19) but wrote its answer with no deadline, and ampagent's MCP
// server has no WriteTimeout: a peer that never read its answer held the
// POST's slot, and the answer, for as long as it kept the connection open
// (docs/SPEC-DECISIONS.md MCP-43).

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// peerWriter is a ResponseWriter over a peer's connection, as
// http.ResponseController reaches it: a peer that reads takes every
// byte; one that reads nothing (a zero TCP window) takes none, and a
// write then waits for the write deadline set (none: until the test
// ends).
type peerWriter struct {
	header  http.Header
	reads   bool
	gone    chan struct{}
	mu      sync.Mutex
	dl      time.Time
	sets    int          // write deadlines set
	stuck   atomic.Int64 // writes the peer read nothing of
	written atomic.Int64 // bytes the peer read
}

func newPeerWriter(t *testing.T, reads bool) *peerWriter {
	p := &peerWriter{header: http.Header{}, reads: reads, gone: make(chan struct{})}
	t.Cleanup(func() { close(p.gone) }) // before the test's server closes
	return p
}

func (p *peerWriter) Header() http.Header { return p.header }

func (p *peerWriter) WriteHeader(int) {}

func (p *peerWriter) Flush() {}

func (p *peerWriter) SetReadDeadline(time.Time) error { return nil }

func (p *peerWriter) SetWriteDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dl, p.sets = t, p.sets+1
	return nil
}

// deadline is the write deadline last set, and how many were set.
func (p *peerWriter) deadline() (time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dl, p.sets
}

func (p *peerWriter) Write(b []byte) (int, error) {
	if p.reads {
		p.written.Add(int64(len(b)))
		return len(b), nil
	}
	p.stuck.Add(1)
	var passed <-chan time.Time
	if dl, _ := p.deadline(); !dl.IsZero() {
		tm := time.NewTimer(time.Until(dl))
		defer tm.Stop()
		passed = tm.C
	}
	select {
	case <-passed:
		return 0, os.ErrDeadlineExceeded
	case <-p.gone:
		return 0, net.ErrClosed
	}
}

// mcpPost is a POST of body in session with testToken, as it reaches
// the endpoint from a loopback connection.
func mcpPost(session, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Host = "127.0.0.1"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer "+testToken)
	r.Header.Set(sessionHeader, session)
	return r
}

// TestAnswerThePeerNeverReadsGivesItsSlotBack: a token holder that
// posted a tools/list (an answer of up to MaxToolsBytes) and read none of
// it held its POST slot, the answer and the handler for as long as it
// kept the connection open: with MaxPeerInFlight 16 and MaxInFlight 64,
// four token holders held every slot and every other host's POST was 503
// for good. The answer is now written at the bindings' minimum data rate
// (transport.RateWriter): once the write's deadline passes, the write
// fails and the slot comes back. Counted here: the principal's next POST,
// refused busy while the slot is held, is served. The grace is lowered
// to 100 ms; time is only a hang guard.
func TestAnswerThePeerNeverReadsGivesItsSlotBack(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{MaxInFlight: 4, MaxPeerInFlight: 1, grace: 100 * time.Millisecond})
	s := open(t, srv.URL, testToken)
	if s.status != http.StatusOK {
		t.Fatalf("session: %d %s", s.status, s.body)
	}
	pw := newPeerWriter(t, false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(pw, mcpPost(s.session, listBody(9)))
	}()
	eventually(t, "the list's answer was never written", func() bool { return pw.stuck.Load() > 0 })
	busy := 0
	eventually(t, "the POST slot of an answer its peer never reads never came back", func() bool {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":10,"method":"ping"}`)
		if r.status == http.StatusServiceUnavailable {
			busy++
		}
		return r.status == http.StatusOK
	})
	<-done // the write failed: the request ended
	if n := pw.written.Load(); n != 0 {
		t.Fatalf("the peer read %d bytes; it reads none", n)
	}
	t.Logf("the principal's POSTs refused busy while the answer was stuck: %d", busy)
}

// TestAnswerWriteDeadlineIsClearedOnceWritten: the answer's write
// deadline is set while it is written and cleared once it is, since the
// server sets none per request (no WriteTimeout): else the next request
// on a kept-alive connection would have its answer cut at once (threat:
// a bound that turns into a refusal of honest hosts).
func TestAnswerWriteDeadlineIsClearedOnceWritten(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	if s.status != http.StatusOK {
		t.Fatalf("session: %d %s", s.status, s.body)
	}
	pw := newPeerWriter(t, true)
	h.ServeHTTP(pw, mcpPost(s.session, listBody(9)))
	dl, sets := pw.deadline()
	if pw.written.Load() == 0 || sets == 0 || !dl.IsZero() {
		t.Fatalf("%d bytes written under %d write deadlines, the last %v: want bytes, a deadline set, and none left", pw.written.Load(), sets, dl)
	}
}
