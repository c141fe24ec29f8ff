//go:build unix

package admin

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// TestStalledSocketImportDoesNotHoldEveryWrite: an import reads its
// stream under the store's write lock, and the admin socket read the
// request body with no data rate: a caller that sent the headers and a
// few bytes of a large body, then nothing, held every other import, sync
// and trust change of the agent for as long as it kept the connection.
// The body is now read at the minimum data rate (transport.RateReader):
// past the grace the stalled import fails and the lock is free.
func TestStalledSocketImportDoesNotHoldEveryWrite(t *testing.T) {
	_, sock, c := serve(t)
	if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	genuine := sample(t, "translate.ampb")
	fmt.Fprintf(conn, "POST /v1/import HTTP/1.1\r\nHost: agent\r\nContent-Type: application/ampbundle\r\nContent-Length: %d\r\n\r\n", len(genuine))
	if _, err := conn.Write(genuine[:len(genuine)/2]); err != nil { // a sound beginning, then nothing
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the import has the lock and waits for bytes
	done := make(chan error, 1)
	go func() { done <- c.TrustSetThreshold("org.example", 1) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a threshold change after the stalled import gave up: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a threshold change waited 20 s behind an import whose caller sends nothing: the stalled body holds the store's write lock")
	}
}
