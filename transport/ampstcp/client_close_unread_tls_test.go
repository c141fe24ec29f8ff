package ampstcp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestTLSAgentThatStopsReadingCannotHoldTheClientsFailure: an amps://
// agent accepts the HANDSHAKE and reads nothing more; a call sends an
// 8 MiB message, so the client's writer fills the socket and gives up
// after WriteTimeout (100 ms here), and the connection fails. Threat:
// the client closed it with tls.Conn.Close, which first writes a
// close_notify alert under TLS's own 5 s write deadline: the socket
// full, every call on the connection got its error 5 s late (here its
// 4 s context ended first: 5003 instead of 2002), and Transport.Close
// likewise waited 5 s for each such connection, one after another. The
// client now closes below TLS: the call fails with 2002 at once.
func TestTLSAgentThatStopsReadingCannotHoldTheClientsFailure(t *testing.T) {
	cert, pool := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert},
		MinVersion: tls.VersionTLS12, SessionTicketsDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
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
				c.(*tls.Conn).NetConn().(*net.TCPConn).SetReadBuffer(4 << 10)
				if !acceptHandshake(c, bufio.NewReader(c)) {
					return
				}
				<-quit // reads nothing more
				c.(*tls.Conn).NetConn().Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(quit)
		wg.Wait()
	})

	tr, err := NewTransport("amps://"+ln.Addr().String(), ClientOptions{
		TLS: &tls.Config{RootCAs: pool}, WriteTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	_, err = tr.RoundTrip(ctx, paddedMessage(t, newID(), nil, 8<<20))
	if !errors.Is(err, amp.CodeEndpointUnreachable) {
		t.Fatalf("call: %v, want 2002 once the write failed (5003: the failure waited for a close_notify write)", err)
	}
	tr.Close()
}
