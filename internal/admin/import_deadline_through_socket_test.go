//go:build unix

package admin

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
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
	for _, tc := range []struct {
		name     string
		held     bool // another write holds the store past the deadline
		want     amp.ErrName
		imported bool
	}{
		{"within its deadline", false, "", true},
		{"held past its deadline behind another write", true, resolver.ErrStoreIO, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, c := serve(t)
			if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			gate := &lockHolderGate{open: make(chan struct{})}
			first := make(chan error, 1)
			if tc.held {
				go func() {
					_, err := s.Import(context.Background(), gate, resolver.ImportOptions{})
					first <- err
				}()
				time.Sleep(200 * time.Millisecond) // it holds the write lock
			} else {
				close(gate.open)
				first <- nil
			}
			timeout := time.Minute
			if tc.held {
				timeout = 100 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.Import(ctx, bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{})
				done <- err
			}()
			if tc.held {
				<-ctx.Done()
				time.Sleep(200 * time.Millisecond) // the deadline has passed at the agent too
				close(gate.open)
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
		})
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
