//go:build unix

package admin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// TestStalledRequestBodyDoesNotHoldTheAdminConnection: attack: the
// admin socket read an import's and a statement's body at the minimum
// data rate, but every other body (the JSON of trust add, remove, the
// trust policy file's raw bytes) with io.LimitReader alone, and Serve's
// http.Server sets ReadHeaderTimeout but no ReadTimeout, so once the
// headers were in nothing bounded the body's time. A caller that
// declared a body, sent a byte and then nothing kept its connection, a
// handler goroutine and a descriptor of the agent for as long as it
// liked; many such connections took the agent's descriptors (the ones
// its AMP listener needs too). Even a request answered at once (404) was
// held: net/http reads what is left of a body under 256 KiB before it
// writes the answer. Now NewHandler reads every body at the minimum data
// rate (rateBodies, before the routes and the peer check): each such
// connection is cut or answered past admission.FrameGrace.
func TestStalledRequestBodyDoesNotHoldTheAdminConnection(t *testing.T) {
	srv := serveSocket(t)
	// The grace, and a margin: an import's body stalled like these is
	// cut after the grace. The three connections wait together.
	wait := admission.FrameGrace + 2*time.Second
	deadline := time.Now().Add(wait)
	type stalled struct {
		path string
		conn net.Conn
	}
	var conns []stalled
	for _, path := range []string{
		"/v1/trust/policy", // a raw body (Spec.Raw)
		"/v1/trust/add",    // a JSON body
		"/v1/remove",       // a JSON body
		// No route: the mux answers 404 at once, but net/http reads
		// what is left of a small body before it writes the answer.
		"/v1/no-such-operation",
	} {
		conn, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", path)
		conn.SetReadDeadline(deadline)
		conns = append(conns, stalled{path, conn})
	}
	// Each connection is read at once, in its own goroutine: a Read
	// begun after the shared deadline would time out on data already
	// there.
	held := make(chan error, len(conns))
	for _, c := range conns {
		go func() {
			_, err := c.conn.Read(make([]byte, 512))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				held <- fmt.Errorf("a %s body that declared 1000 bytes, sent 1 and then nothing still holds the admin connection, unanswered, after %v "+
					"(an import's body is cut after %v): no data rate and no read timeout bound it", c.path, wait, admission.FrameGrace)
				return
			}
			held <- nil // answered (an error) or closed: not held
		}()
	}
	for range conns {
		if err := <-held; err != nil {
			t.Error(err)
		}
	}
}
