package amphttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRefusedAnswerIsNotLostToAConnectionReset: a request refused with
// its body unread (413, 503) must reach its client even though the client
// is still sending the body (threat: closed with unread bytes, the socket
// answers with a TCP reset, and the client's next write fails with
// "connection reset" instead of it reading the answer; Go's own client
// then reports the failed write: a retryable 503 turned into a transport
// failure). The server shuts its side, keeps reading (and dropping) for a
// short while, and then closes: it does not hold the connection.
func TestRefusedAnswerIsNotLostToAConnectionReset(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	srv := startServer(t, h, Options{MaxBody: 1 << 10, MaxInFlight: 4, MaxPeerInFlight: 1})
	part := strings.Repeat("a", 4<<10)
	cases := []struct {
		name, from, head string
		hold             bool // another request of the same peer holds its only slot
		want             int
		code             amp.Code
	}{
		{"413 cut off while read", "127.0.0.30",
			fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(part), part), false, http.StatusRequestEntityTooLarge, amp.CodeInvalidMessage},
		{"413 from Content-Length", "127.0.0.31",
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", 64<<10, part), false, http.StatusRequestEntityTooLarge, amp.CodeInvalidMessage},
		{"503 over the peer's slots", "127.0.0.32",
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", 1<<10, part[:512]), true, http.StatusServiceUnavailable, amp.CodeOverloaded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hold {
				slowBody(t, srv, tc.from, 1000)
			}
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from)}}
			c, err := d.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\n%s", MessagesPath, ContentType, tc.head)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the answer's body: %v", err)
			}
			if resp.StatusCode != tc.want || !resp.Close {
				t.Fatalf("answer %d (close %v), want %d and the connection closed", resp.StatusCode, resp.Close, tc.want)
			}
			if eb, err := amp.DecodeError(body); err != nil || eb.Code != tc.code {
				t.Fatalf("answer's error body: %v %v", eb, err)
			}
			// The client goes on sending, as one that writes its body while
			// it reads does: the server still reads, so nothing is reset.
			for i := range 2 {
				if _, err := c.Write([]byte(part)); err != nil {
					t.Fatalf("write %d after the answer: %v (the server reset the connection)", i, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The server shut its side after the answer...
			if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("after the answer: %d bytes, %v; want EOF", n, err)
			}
			// ...and closes the connection soon: writing fails within seconds.
			end := time.Now().Add(5 * time.Second)
			for {
				if _, err := c.Write([]byte(part)); err != nil {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the server still holds the refused connection after 5 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
