//go:build unix

package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestAnImportPastItsCallersDeadlineIsEndedByTheAgentWhichSaysSo: an
// import through the socket ran with no deadline at the agent: the
// caller's deadline (ampbundle import --timeout) either never reached
// the client (ampbundle dropped it with the cancellation, CLI-22) or only
// cut the request, racing the agent's commit. The deadline now travels
// as timeout_ms; the agent ends the import at it and answers, and the
// client waits ImportAnswerGrace past it for that answer: an import held
// behind another write past its deadline is the agent's store_io
// "import canceled", and nothing is installed; one within its deadline
// is imported as before.
func TestAnImportPastItsCallersDeadlineIsEndedByTheAgentWhichSaysSo(t *testing.T) {
	deadlines := make(chan context.Context, 1) // the agent's import contexts
	seen := func(ctx context.Context) {
		select {
		case deadlines <- ctx:
		default:
		}
	}
	withSeen := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), importDeadlineKey{}, seen)))
		})
	}
	for _, tc := range []struct {
		name     string
		held     bool // another write holds the store past the deadline
		timeout  time.Duration
		want     amp.ErrName
		imported bool
	}{
		{"within its deadline", false, time.Minute, "", true},
		{"held past its deadline behind another write", true, 100 * time.Millisecond, resolver.ErrStoreIO, false},
		// ADMIN-11: a deadline further away than the agent's 30 days
		// is not told (it was, and refused bad_request).
		{"with a deadline a year away", false, 365 * 24 * time.Hour, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for len(deadlines) > 0 {
				<-deadlines
			}
			s, _, c := serveWrapped(t, withSeen)
			if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			gate := newStoreHolder()
			t.Cleanup(gate.release) // before the store closes, on a failure too
			first := make(chan error, 1)
			if tc.held {
				go func() {
					_, err := s.Import(context.Background(), gate, resolver.ImportOptions{})
					first <- err
				}()
				gate.awaitHolding(t, first) // it holds the write lock
			} else {
				gate.release()
				first <- nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.Import(ctx, bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{})
				done <- err
			}()
			if tc.held {
				// The deadline has passed at the agent too: the
				// context it runs the import under is done.
				select {
				case actx := <-deadlines:
					<-actx.Done()
				case err := <-done:
					t.Fatalf("the import returned while another write held the store: %v", err)
				case <-time.After(20 * time.Second):
					t.Fatal("the agent has not begun the import under a deadline within 20 s")
				}
				gate.release()
			}
			<-first
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the import has not returned 20 s after the other write ended")
			}
			if got := amp.NameOf(err); got != tc.want {
				t.Fatalf("import: %v (name %q); want %q: the agent's own answer", err, got, tc.want)
			}
			bs, err := s.Bundles()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(bs) == 1; got != tc.imported {
				t.Fatalf("installed after the import: %+v; want imported %v", bs, tc.imported)
			}
			if told := len(deadlines) > 0; tc.timeout > maxImportTimeout && told {
				t.Fatalf("a deadline %v away was told to the agent; want none beyond %v", tc.timeout, maxImportTimeout)
			}
		})
	}
}

// storeHolder is an import's stream that blocks its first Read until open
// is closed, then ends; holding is closed once that Read began, which
// resolver.Store.Import does only while it holds the store's write lock:
// a test waits on it, not on a time, to know that the lock is held.
type storeHolder struct {
	open, holding chan struct{}
	began, opened sync.Once
}

func newStoreHolder() *storeHolder {
	return &storeHolder{open: make(chan struct{}), holding: make(chan struct{})}
}

func (g *storeHolder) Read([]byte) (int, error) {
	g.began.Do(func() { close(g.holding) })
	<-g.open
	return 0, io.ErrUnexpectedEOF
}

// release lets g's import end (closes open, once).
func (g *storeHolder) release() { g.opened.Do(func() { close(g.open) }) }

// awaitHolding waits until g's import holds the store's write lock;
// ended is where that import's result comes, should it end first.
func (g *storeHolder) awaitHolding(t *testing.T, ended <-chan error) {
	t.Helper()
	select {
	case <-g.holding:
	case err := <-ended:
		t.Fatalf("the import holding the store ended before it read its stream: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the import holding the store has not read its stream within 20 s")
	}
}

// TestAgentDeadlineTellsTheAgentNoTimeoutItRefuses: the client told the
// agent the time left to any deadline, and the agent refuses a
// timeout_ms beyond maxImportTimeout (30 days) bad_request: an import
// with a longer --timeout, which imported before timeout_ms existed,
// failed. A deadline within 30 days is told as before; one beyond is
// not told at all (the agent applies none, as an older agent did), and
// the request is still sent with the caller's deadline and its grace.
func TestAgentDeadlineTellsTheAgentNoTimeoutItRefuses(t *testing.T) {
	for _, tc := range []struct {
		away time.Duration
		told bool
	}{
		{time.Minute, true},
		{maxImportTimeout - time.Minute, true},
		{maxImportTimeout + time.Minute, false},
		{365 * 24 * time.Hour, false},
		{time.Duration(1<<63 - 1), false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.away)
		rctx, stop, left := agentDeadline(ctx)
		if tc.told {
			if left <= 0 || left > tc.away {
				t.Errorf("%v away: timeout_ms %v; want the time left, at most %v", tc.away, left, tc.away)
			}
			if _, err := importTimeout(fmt.Sprint(left.Milliseconds())); err != nil {
				t.Errorf("%v away: the agent refuses the timeout_ms told: %v", tc.away, err)
			}
		} else if left != 0 {
			t.Errorf("%v away: timeout_ms %v told; want none beyond %v", tc.away, left, maxImportTimeout)
		}
		d, _ := ctx.Deadline()
		if rd, ok := rctx.Deadline(); !ok || !rd.Equal(d.Add(ImportAnswerGrace)) {
			t.Errorf("%v away: the request's deadline %v, %v; want the caller's plus ImportAnswerGrace", tc.away, rd, ok)
		}
		stop()
		cancel()
	}
}

// TestAnImportWhoseTimeoutIsNotANumberIsRefusedBeforeItIsRead: the
// agent reads timeout_ms from the query; one that is not a number of
// milliseconds from 1 to maxImportTimeout (it could overflow a
// time.Duration into a deadline in the past, or none) is refused
// bad_request before the body is read: nothing imported, nothing audited.
func TestAnImportWhoseTimeoutIsNotANumberIsRefusedBeforeItIsRead(t *testing.T) {
	s, sock, c := serve(t)
	if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for _, v := range []string{"0", "-1", "1.5", "abc", "18446744073709551615", fmt.Sprint(maxImportTimeout.Milliseconds() + 1)} {
		req, _ := http.NewRequest("POST", "http://agent/v1/import?timeout_ms="+v, bytes.NewReader(sample(t, "translate.ampb")))
		req.Header.Set("Content-Type", "application/ampbundle")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("timeout_ms=%s: status %d; want 400", v, resp.StatusCode)
		}
	}
	after, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if bs, _ := s.Bundles(); len(bs) != 0 || len(after) != len(before) {
		t.Fatalf("after refused timeouts: %d bundles, %d audit entries (before %d)", len(bs), len(after), len(before))
	}
	if _, err := importTimeout(fmt.Sprint(maxImportTimeout.Milliseconds())); err != nil {
		t.Fatalf("the largest timeout_ms refused: %v", err)
	}
}
