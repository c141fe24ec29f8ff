//go:build unix

package admin

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// serveHandler serves h on a socket of its own (the peer recorded, no
// other bound) and returns a Client of it, both closed at the test's end.
func serveHandler(t *testing.T, h http.Handler) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "handler.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ConnContext: ConnContext, Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// countingWriter counts the answer bytes a handler writes.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return w.ResponseWriter.Write(p)
}

// TestAuditHeadThroughTheSocketDoesNotShipTheLog
//
// Attack: the audit log only grows (every import, refusal, removal and
// trust change; refusals a mirror's offers cause, once a day each). A
// Client answered AuditHead, the one hash 'ampbundle check' and the
// catalog over a held store read on every refresh, by fetching the whole
// log as JSON (GET /v1/audit): each check cost the agent and the client
// the whole log in memory and on the socket, and once the log's JSON
// passed the client's 64 MiB answer bound, check (and the catalog
// through the socket) failed admin_socket where the store answers the
// head at once.
//
// Was: the answer of AuditHead grew with the log. Now
// (docs/SPEC-DECISIONS.md ADMIN-3): a few hundred bytes whatever its
// length (?entries=0), and Audit afterwards still gives the log of that
// same moment (?through=N: the snapshot rule), not a later one.
func TestAuditHeadThroughTheSocketDoesNotShipTheLog(t *testing.T) {
	s, _, _ := serve(t)
	for i := range 300 {
		if err := s.TrustSetThreshold(fmt.Sprintf("org.n%03d", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	var sent atomic.Int64
	h := NewHandler(s, nil)
	c := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(countingWriter{w, &sent}, r)
	}))

	head, err := c.AuditHead()
	if err != nil || len(head) == 0 {
		t.Fatalf("AuditHead: %x %v", head, err)
	}
	// The head (hex), the verdict and the field names: well under 1 KiB
	// whatever the log's length.
	if n := sent.Load(); n > 1024 {
		t.Errorf("AuditHead of a log of 300 entries sent %d bytes: it ships the whole log", n)
	}
	if err := c.VerifyAudit(); err != nil {
		t.Fatal(err)
	}
	// A change after the snapshot: Audit still gives that moment's log.
	if err := s.TrustSetThreshold("org.late", 1); err != nil {
		t.Fatal(err)
	}
	entries, err := c.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := s.Audit(); len(entries) != len(want)-1 {
		t.Fatalf("Audit after AuditHead: %d entries, want the snapshot's %d", len(entries), len(want)-1)
	}
}
