package amphttp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMessageThatOutlastsTheBodyDeadlineKeepsItsContext: the body of a
// POST is read through transport.RateReader, which moves the
// connection's read deadline after every read that brings bytes, the
// last included. Over HTTP/1.1 net/http clears the deadline when that
// last read hits the body's end (it starts its background read, which
// watches for the client's departure) and the RateReader set it again
// right after: the background read timed out at the body's data
// deadline (admission.FrameGrace, 5 s, after the body's first byte) and
// net/http cancelled the request's context as if the client had gone.
// Threat: every message whose handling outlasts it (an invocation
// slower than 5 s, a message waiting for the agent's slots under a
// flood) had its context ended while its caller still waited: the agent
// gives up what has not started (5003, 503) and a handler is cancelled.
// The deadline is cleared once the body is whole (docs/SPEC-DECISIONS.md
// TRANSPORT-30, as mcpbridge's readBody does); a caller that goes away
// still ends the context.
func TestMessageThatOutlastsTheBodyDeadlineKeepsItsContext(t *testing.T) {
	const grace = 100 * time.Millisecond
	ended := make(chan error, 1)
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
			ended <- context.Cause(ctx)
		case <-time.After(8 * grace): // the body's deadline is grace after its first byte
			ended <- nil
		}
		return []byte{0xa0}, nil
	})
	srv := startServer(t, h, Options{grace: grace})
	for _, tc := range []struct {
		name, head, body string
	}{
		{"small body", "Content-Length: 4\r\n", "ping"},
		{"body of several chunks", fmt.Sprintf("Content-Length: %d\r\n", 3*readChunk), strings.Repeat("x", 3*readChunk)},
		{"body of unknown length", "Transfer-Encoding: chunked\r\n", "4\r\nping\r\n0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\n%s\r\n%s", MessagesPath, ContentType, tc.head, tc.body)
			select {
			case err := <-ended:
				if err != nil {
					t.Fatalf("the context of a message whose caller still waits ended within the %v its handler takes: %v", 8*grace, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the handler did not return")
			}
		})
	}
	t.Run("caller gone", func(t *testing.T) {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\nContent-Length: 4\r\n\r\nping", MessagesPath, ContentType)
		time.Sleep(grace / 2)
		c.Close()
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("the context of a message whose caller went away did not end")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler did not return")
		}
	})
	if s := postFrom(t, srv.Server, "127.0.0.1"); s != http.StatusOK {
		t.Fatalf("a message after: %d, want 200", s)
	}
	<-ended
}
