//go:build unix

package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// dialServe opens a raw TCP connection to r's HTTP listener, closed with
// the test.
func dialServe(t *testing.T, r *running) net.Conn {
	t.Helper()
	u, err := url.Parse(r.url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestServeRefusedBodyIsAnsweredAndClosed: through everything serve puts
// in front of the binding (metrics, the refusal log, the connection cap),
// a body cut off at --max-body is answered 413, the answer survives a
// client still sending (threat: an instrumentation wrapper hiding the
// connection from the binding, which then neither stops reading the rest
// of the body nor avoids the reset that loses the answer), and the
// connection is closed within seconds instead of being held while the
// client trickles the rest.
func TestServeRefusedBodyIsAnsweredAndClosed(t *testing.T) {
	db, key := serveStore(t)
	c := dialServe(t, startServe(t, "--db", db, "--key", key, "--max-body", "1048576"))
	part := strings.Repeat("a", 4<<10)
	// One chunk declared larger than --max-body, sent up to just past it.
	go func() {
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", amphttp.MessagesPath, amphttp.ContentType, 2<<20)
		for range (1<<20)/len(part) + 1 {
			if _, err := io.WriteString(c, part); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("answer %d (close %v), want 413 and the connection closed", resp.StatusCode, resp.Close)
	}
	for i := range 2 {
		if _, err := c.Write([]byte(part)); err != nil {
			t.Fatalf("write %d after the answer: %v (the agent reset the connection)", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the answer: %d bytes, %v; want EOF (the agent shut its side)", n, err)
	}
	end := time.Now().Add(5 * time.Second)
	for {
		if _, err := c.Write([]byte(part)); err != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the agent still holds the refused connection after 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeSlowBodyIsCutAtTheMinimumDataRate: through serve's wrappers, a
// body that stops coming is cut off once overdue at the binding's minimum
// data rate (5 s of grace for a small body), not at the server's 30 s read
// timeout (threat: a wrapper hiding the connection from the binding, so
// that a peer trickling bodies holds its request slots and their charged
// bytes six times as long).
func TestServeSlowBodyIsCutAtTheMinimumDataRate(t *testing.T) {
	db, key := serveStore(t)
	c := dialServe(t, startServe(t, "--db", db, "--key", key))
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\nContent-Length: 100\r\n\r\nx", amphttp.MessagesPath, amphttp.ContentType)
	// Hang guard, and what fails the test when the body is not cut at the
	// rate: the server's read timeout (30 s) would answer after it.
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body within 20 s (the server's read timeout is 30 s): %v", err)
	}
	resp.Body.Close()
	took := time.Since(start)
	t.Logf("stalled body answered %d after %v", resp.StatusCode, took)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("stalled body: %d after %v, want 400 after about 5 s", resp.StatusCode, took)
	}
}

// TestServeLogOfRefusalsIsBounded: a peer sending messages that do not
// verify gets a log line each only up to --log-rate (threat: an
// unauthenticated peer filling the disk with refusal lines); every
// refusal is still accounted for, written or counted on the next line of
// its kind (suppressed=K).
func TestServeLogOfRefusalsIsBounded(t *testing.T) {
	db, key := serveStore(t)
	r := startServe(t, "--db", db, "--key", key, "--log-rate", "1")
	post := func() {
		resp, err := http.Post(r.url+amphttp.MessagesPath, amphttp.ContentType, strings.NewReader("not an AMP message"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("garbage: %d", resp.StatusCode)
		}
	}
	for range 100 {
		post()
	}
	time.Sleep(1100 * time.Millisecond)
	post()
	res := r.stop()
	written, counted := 0, 0
	for _, l := range strings.Split(res.stderr, "\n") {
		if !strings.Contains(l, `msg="unverified message refused"`) {
			continue
		}
		written++
		if i := strings.Index(l, " suppressed="); i >= 0 {
			var n int
			fmt.Sscanf(l[i+len(" suppressed="):], "%d", &n)
			counted += n
		}
	}
	if written < 10 || written > 20 {
		t.Fatalf("101 refusals at --log-rate 1: %d lines, want the burst of 10 and about one a second\n%s", written, res.stderr)
	}
	if written+counted != 101 {
		t.Fatalf("%d lines written and %d counted as held back, want 101 in all", written, counted)
	}
}

// TestServeStrangersFloodDoesNotHideNamedCallers: a stranger (a fresh
// did:key no allow rule names) sending verified PINGs gets its "message
// handled" lines held back at --log-rate, but a named caller's message
// during that flood is logged all the same (threat: a stranger's flood of
// cheap verified messages hiding the record of what authorized callers
// did, since both are "message handled" lines).
func TestServeStrangersFloodDoesNotHideNamedCallers(t *testing.T) {
	db, key := serveStore(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	named, err := (&keyfile.Keys{Ed25519: priv}).Identity("")
	if err != nil {
		t.Fatal(err)
	}
	r := startServe(t, "--db", db, "--key", key, "--log-rate", "1", "--allow", named.DID+"=org.example.")
	stranger := newTestClient(t, r.url, r.did)
	for range 150 {
		if err := stranger.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := amphttp.NewTransport(r.url, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: named, Peer: r.did, Transport: tr, Now: time.Now, Rand: rand.Reader, Retry: client.Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := r.stop()
	strangers, namedLines := 0, 0
	for _, l := range strings.Split(res.stderr, "\n") {
		if !strings.Contains(l, `msg="message handled"`) {
			continue
		}
		switch {
		case strings.Contains(l, "from="+named.DID) && strings.Contains(l, "caller=named"):
			namedLines++
		case strings.Contains(l, "caller=other"):
			strangers++
		}
	}
	if namedLines != 1 {
		t.Fatalf("the named caller's PING after a stranger's flood: %d lines, want 1\n%s", namedLines, res.stderr)
	}
	if strangers < 10 || strangers > 20 {
		t.Fatalf("150 stranger PINGs at --log-rate 1: %d lines, want the burst of 10 and about one a second", strangers)
	}
}
