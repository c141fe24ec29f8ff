package amphttp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// TestEarlyHintsBeforeSlowWorkDoNotCutTheReply: the fault: the stall
// rule for reply headers (headerStall, TRANSPORT-8) starts its grace at
// the answer's first byte. An agent, or the reverse proxy in front of
// it, that sends an informational head first (103 Early Hints; 100
// Continue) and only then works longer than admission.FrameGrace before
// its final answer had that answer cut as 2002 reply_stalled: the grace
// had started at the 1xx's first byte, and the caller retried a message
// whose handler had run. A 1xx head that is whole is not a stall; the
// final answer may come when the agent holds it (as if nothing had been
// sent yet: the caller's own deadline bounds it), so the request must
// return the agent's 200 reply.
func TestEarlyHintsBeforeSlowWorkDoNotCutTheReply(t *testing.T) {
	reply := []byte{0xa1, 0x61, 0x61, 0x01}
	final := "HTTP/1.1 200 OK\r\nContent-Type: application/cbor\r\nContent-Length: 4\r\n\r\n" + string(reply)
	url := informationalServer(t, "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n", admission.FrameGrace+time.Second, final)
	tr, err := NewTransport(url, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), admission.FrameGrace+10*time.Second)
	defer cancel()
	got, err := tr.RoundTrip(ctx, []byte{0xa0})
	if err != nil || !bytes.Equal(got, reply) {
		t.Fatalf("a 103 then the reply %v later: %x, %v; want the reply %x", admission.FrameGrace+time.Second, got, err, reply)
	}
}

// informationalServer answers each request on loopback with info, then,
// delay later (unless the test has ended), with final.
func informationalServer(t *testing.T, info string, delay time.Duration, final string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, info)
				select {
				case <-time.After(delay):
					io.WriteString(c, final)
				case <-stop:
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(stop)
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// TestEndlessEarlyHintsAreBounded: the attack, once interim heads are
// watched (httptrace's Got1xxResponse): net/http then resets its header
// bound at each 1xx and leaves their count to the watcher, so an agent
// could send 103 heads for ever, each under 64 KiB, and hold the caller
// while the client parsed them. At most maxInformational are read; the
// next ends the request as a failure to deliver (2002, retryable), at
// once, not at the caller's deadline.
func TestEndlessEarlyHintsAreBounded(t *testing.T) {
	var hints bytes.Buffer
	for range 1000 {
		hints.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n")
	}
	url := informationalServer(t, hints.String(), time.Minute, "")
	tr, err := NewTransport(url, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = tr.RoundTrip(ctx, []byte{0xa0})
	if amp.CodeOf(err) != amp.CodeEndpointUnreachable || time.Since(start) > 5*time.Second {
		t.Fatalf("1000 interim heads: %v after %v; want 2002 at once", err, time.Since(start).Round(time.Millisecond))
	}
}

// TestAnInterimHeadThatStallsIsCut: the stall rule still holds inside an
// interim head: its grace starts at its first byte, and a 103 whose head
// never ends is 2002 reply_stalled within about admission.FrameGrace.
func TestAnInterimHeadThatStallsIsCut(t *testing.T) {
	url := stallingServer(t, "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n")
	tr, err := NewTransport(url, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	deadline := admission.FrameGrace + 4*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	_, err = tr.RoundTrip(ctx, []byte{0xa0})
	if amp.NameOf(err) != ErrReplyStalled {
		t.Fatalf("a 103 whose head stalls: %v; want %s", err, ErrReplyStalled)
	}
}
