package amphttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// stallingServer accepts connections on loopback, reads each request
// whole, writes head (the start of a response) and then sends nothing
// more until the test ends.
func stallingServer(t *testing.T, head string) string { return slowServer(t, 0, head) }

// slowServer is stallingServer that waits delay after each request before
// it writes head.
func slowServer(t *testing.T, delay time.Duration, head string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				time.Sleep(delay)
				io.WriteString(c, head)
				io.Copy(io.Discard, br) // then silence, until closed
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// TestReplyHeadersThatStallAreCutAsAStalledBody: the
// attack: an agent (or anything listening at the URL) starts its answer
// with a status line and one header, then sends nothing more. The body of
// a reply is read under the minimum data rate and a stall longer than
// admission.FrameGrace is 2002 reply_stalled (TRANSPORT-8: "the headers
// of a reply come once the agent holds it whole"); the headers, which
// come first and by the same rule, had no bound at all
// (ResponseHeaderTimeout 0, no stall rule before the body): the caller was
// held to its own deadline, forever with a context that has none (the
// library's callers; the CLI's --wait, 60 s by default, plus any
// --timeout-ms, up to 24 h): 5003 at the caller's deadline (FrameGrace +
// 20 s here). Now: 2002 reply_stalled within about FrameGrace of the
// first byte of the answer, as for a stalled body (headerStall). The
// error's name tells the two apart; the caller's deadline is far enough
// past the grace that a loaded machine does not reach it first.
func TestReplyHeadersThatStallAreCutAsAStalledBody(t *testing.T) {
	url := stallingServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/cbor\r\n")
	tr, err := NewTransport(url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	deadline := admission.FrameGrace + 20*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err = tr.RoundTrip(ctx, []byte{0xa0})
	took := time.Since(start)
	if amp.NameOf(err) != ErrReplyStalled || took > deadline-time.Second {
		t.Fatalf("answer that stalled in its headers: %v after %v, want %s within about %v (the caller's deadline was %v)",
			err, took.Round(100*time.Millisecond), ErrReplyStalled, admission.FrameGrace, deadline)
	}
}

// TestRefusalHeadersAreAsBoundedAsItsBody: the attack: an agent
// answers 503 (a retryable refusal, met again on every attempt) with a
// few hundred bytes of body, as expected, and 4 MiB of headers. The
// refusal's body is read to MaxRefusalBody (64 KiB) at most (TRANSPORT-8:
// "a refusal never costs the client its message bound per attempt"), the
// agents' own servers take 64 KiB of headers; a client's http.Transport
// that kept net/http's default MaxResponseHeaderBytes, 10 MiB, read and
// parsed them into a map on every attempt, and took the answer as a 2003
// busy refusal. An answer whose headers pass 64 KiB (maxHeaderBytes) is
// refused as a delivery failure (net/http's "server response headers
// exceeded"), not read.
func TestRefusalHeadersAreAsBoundedAsItsBody(t *testing.T) {
	pad := strings.Repeat("x", 64<<10)
	var head strings.Builder
	head.WriteString("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n")
	for i := range 64 {
		head.WriteString("X-Pad-" + strings.Repeat("a", i%8+1) + ": " + pad + "\r\n")
	}
	head.WriteString("\r\n")
	url := stallingServer(t, head.String())
	tr, err := NewTransport(url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = tr.RoundTrip(ctx, []byte{0xa0})
	if e := amp.AsError(err); e != nil && e.Code == amp.CodeRelayRejected {
		t.Fatalf("a 503 with %d KiB of headers was read whole and taken as a busy refusal (%v); want it refused past 64 KiB of headers",
			head.Len()>>10, err)
	}
}

// TestSlowAgentIsNotTakenForAStalledReply: the other side of the rule
// above: an agent may take its time before the first byte of its answer
// (an invocation runs that long; the caller's context bounds the wait).
// A header bound counted from the request (ResponseHeaderTimeout) would
// cut a legal slow answer; the grace counts from the answer's first byte.
func TestSlowAgentIsNotTakenForAStalledReply(t *testing.T) {
	url := slowServer(t, admission.FrameGrace+time.Second, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
	tr, err := NewTransport(url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), admission.FrameGrace+10*time.Second)
	defer cancel()
	if reply, err := tr.RoundTrip(ctx, []byte{0xa0}); err != nil || reply != nil {
		t.Fatalf("an agent that answered %v after the request: %v, want the answer (202, no reply)", admission.FrameGrace+time.Second, err)
	}
}

// TestHTTP2ReplyHeadersThatStallAreCut: the attack of
// TestReplyHeadersThatStallAreCutAsAStalledBody over HTTP/2 (an https://
// agent): the answer's HEADERS frame comes without END_HEADERS, and the
// CONTINUATION it announces never does. net/http's HTTP/2 client reports
// the first response byte only once the header block is whole, so the
// grace of headerStall never starts, and the connection's one reader
// waits for the CONTINUATION, holding the caller to its deadline. The
// client pings a connection from which nothing came for
// admission.FrameGrace and closes it when the ping is not answered within
// the grace (HTTP2Config): a peer in the middle of a header block cannot
// answer it, a slow agent's server does. The request fails 2002 within
// about twice the grace; without the ping it fails 5003 at the caller's
// deadline, set far enough past that for a loaded machine.
func TestHTTP2ReplyHeadersThatStallAreCut(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: srv.TLS.Certificates, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		preface := make([]byte, 24)
		if _, err := io.ReadFull(br, preface); err != nil {
			return
		}
		c.Write(h2Frame(0x4, 0, 0, nil)) // the server's SETTINGS
		for {
			var h [9]byte
			if _, err := io.ReadFull(br, h[:]); err != nil {
				return
			}
			n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
				return
			}
			if h[3] == 0x4 && h[4]&0x1 == 0 {
				c.Write(h2Frame(0x4, 0x1, 0, nil)) // ACK of the client's
			}
			if h[3] == 0x1 { // the request's HEADERS: the answer begins
				c.Write(h2Frame(0x1, 0, binary.BigEndian.Uint32(h[5:])&(1<<31-1), []byte{0x88})) // :status 200, no END_HEADERS
			}
			// PINGs go unanswered: the header block is not whole.
		}
	}()
	tr, err := NewTransport("https://"+ln.Addr().String(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	deadline := 2*admission.FrameGrace + 20*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err = tr.RoundTrip(ctx, []byte{0xa0})
	took := time.Since(start)
	if !errors.Is(err, amp.CodeEndpointUnreachable) || took > deadline-2*time.Second {
		t.Fatalf("an HTTP/2 answer that stalled in its header block: %v after %v, want 2002 within about %v (the caller's deadline was %v)",
			err, took.Round(100*time.Millisecond), 2*admission.FrameGrace, deadline)
	}
}
