//go:build linux || darwin || freebsd

package admin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// silentSocket listens at a socket of this user (so that dialOwn keeps
// its connections, as it keeps an agent's) and hands every connection
// to serve, which may read and write what it likes and then holds the
// connection until the test ends: a hung agent, or a process of this
// user that took the socket's path. It returns the socket's path.
func silentSocket(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
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
				serve(c)
				<-done
			}()
		}
	}()
	return sock
}

// readHead reads a request's head from c (and none of its body).
func readHead(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || line == "\r\n" {
			return
		}
	}
}

// wantNoAnswer fails unless err is the refusal of a request the agent
// kept waiting: admin_socket, code 5003, cause ErrNoAnswer.
func wantNoAnswer(t *testing.T, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatal("the request succeeded")
	case amp.NameOf(err) != "admin_socket" || amp.CodeOf(err) != amp.CodeTimeout || !errors.Is(err, ErrNoAnswer):
		t.Fatalf("error %q (%s, %d), want admin_socket, 5003, cause ErrNoAnswer", err, amp.NameOf(err), uint16(amp.CodeOf(err)))
	}
}

// within runs f and returns its error, or fails the test when f is still
// running after guard: a hang guard only (the Client's waits are
// injected and far shorter), so that a Client that waits for ever fails
// instead of hanging the run.
func within(t *testing.T, guard time.Duration, f func() error) error {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- f() }()
	select {
	case err := <-got:
		return err
	case <-time.After(guard):
		t.Fatalf("the request was still waiting after %v: nothing bounds the wait", guard)
		return nil
	}
}

// TestAdminRequestToASilentAgentIsRefusedNotWaitedForForever: attack:
// the admin Client's HTTP client had no timeout and the requests a
// context.Background(), so an agent that accepted the connection and
// then hung, or a process of this user that took the socket's path
// (it passes dialOwn's user check) and accepts without answering, held
// every ampbundle command that reached the store through the socket for
// ever: a GET waiting for its answer's head, an import whose body the
// process never reads (blocked once the socket's buffer is full), an
// answer whose head came and whose body never did. Now every request is
// watched (requestWatch): ErrNoAnswer (admin_socket, 5003) once the
// agent leaves a part of the request untaken, or the answer unbegun, for
// the Client's wait, or its answer falls below the minimum data rate.
func TestAdminRequestToASilentAgentIsRefusedNotWaitedForForever(t *testing.T) {
	cases := []struct {
		name  string
		serve func(net.Conn)
		call  func(c *Client) error
	}{
		{"accepts and never answers a GET", func(net.Conn) {},
			func(c *Client) error { _, err := c.Bundles(); return err }},
		{"reads a POST's head and never answers", readHead,
			func(c *Client) error { return c.TrustRemove("example") }},
		{"never reads an import's body", func(net.Conn) {},
			func(c *Client) error {
				_, err := c.Import(context.Background(), bytes.NewReader(make([]byte, 16<<20)), resolver.ImportOptions{})
				return err
			}},
		{"answers a head and never its body", func(c net.Conn) {
			readHead(c)
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[{"))
		}, func(c *Client) error { _, err := c.Bundles(); return err }},
		{"answers an export's head and never its body", func(c net.Conn) {
			readHead(c)
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nx"))
		}, func(c *Client) error { return c.Export("example", &bytes.Buffer{}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Dial(silentSocket(t, tc.serve)) // dialOwn's user check passes: this user
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.wait = 200 * time.Millisecond
			wantNoAnswer(t, within(t, 20*time.Second, func() error { return tc.call(c) }))
		})
	}
}

// TestDialStoreRefusesASilentProcessAtTheSocketPath: DialStore asked the
// agent once at once (GET /v1/generation) and went on whatever the
// answer but ErrOtherStore: a process that accepts at the path and never
// answers held DialStore, and so every command over a held store, for
// ever. Now that first request has ProbeWait, and DialStore refuses such
// a process, ErrNoAnswer, before the command goes on.
func TestDialStoreRefusesASilentProcessAtTheSocketPath(t *testing.T) {
	db := filepath.Join(t.TempDir(), "store.db")
	s, err := resolver.Open(db, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sock := silentSocket(t, readHead)
	err = within(t, 20*time.Second, func() error {
		c, err := dialStore(sock, db, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	wantNoAnswer(t, err)
}

// TestAnAgentsAnswerWithinTheWaitIsTaken: the watch cuts nothing an
// agent answers: the round trip of a served socket with the same short
// wait still succeeds, and an answer's error keeps its own name.
func TestAnAgentsAnswerWithinTheWaitIsTaken(t *testing.T) {
	_, _, c := serve(t)
	c.wait = 2 * time.Second
	if _, err := c.Bundles(); err != nil {
		t.Fatal(err)
	}
	if err := c.TrustRemove("nobody-trusted"); amp.NameOf(err) == "admin_socket" || err == nil {
		t.Fatalf("an agent's refusal came back as %v", err)
	}
	var got bytes.Buffer
	err := c.Export("no-such-bundle", &got)
	if amp.NameOf(err) == "admin_socket" {
		t.Fatalf("an agent's export refusal came back as %v", err)
	}
}
