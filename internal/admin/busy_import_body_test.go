//go:build unix

package admin

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestImportBeyondTheConnectionCapIsAnsweredBusy: attack: a connection
// beyond MaxConns was answered 503 busy (AMP 5004, retryable) once its
// request's head was read (connLimit.refuse), then closed. But an
// import's body (megabytes) was still being written by the caller when
// the socket was closed with it unread, so the caller's write failed (a
// broken pipe) and net/http's client reported the write error, not the
// 503 written before it: `ampbundle import` against a busy agent said
// "the agent did not answer on the admin socket" (admin_socket), not the
// retryable busy the socket promises. Now refuse shuts its writing side
// after the answer and discards what the caller still sends (within
// refuseWait, at most refuseDrain bytes) before it closes.
func TestImportBeyondTheConnectionCapIsAnsweredBusy(t *testing.T) {
	srv := serveSocket(t)
	c, err := Dial(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(100 * time.Millisecond) // Dial's probe connection is counted off
	for range MaxConns {
		conn, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	time.Sleep(100 * time.Millisecond) // every held connection is accepted
	body := bytes.Repeat([]byte("x"), 4<<20)
	_, err = c.Import(context.Background(), bytes.NewReader(body), resolver.ImportOptions{})
	if amp.NameOf(err) != "busy" {
		t.Fatalf("an import beyond %d held connections answered %v, not the retryable 5004 busy: "+
			"the busy answer is lost to the unread body's write failing on the closed connection", MaxConns, err)
	}
}
