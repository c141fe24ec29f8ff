package amphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// TestSlowHTTPBodyGivesBackItsChargeWithinSeconds: a body declaring
// 16 MiB and then trickled, steadily but below the minimum data rate, is
// cut off as soon as it falls behind that rate after the grace, not once
// its whole declared length is overdue (threat: the charge of a trickled
// body held for the 30 s read timeout, pinning the budget; the TCP
// binding follows the same rule, transport.RateReader). Scaled down: a
// 1 MiB/s minimum and 200 ms of grace, so that the whole body had 16.2 s
// at the old rule; the trickle sends 4 KiB every 20 ms (about 200 KiB/s).
// Measured in bytes: the request is answered, and the peer's share is
// free again, before the trickle has sent 2 MiB.
func TestSlowHTTPBodyGivesBackItsChargeWithinSeconds(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	opts := Options{MaxInFlightBytes: 64 << 20, MaxPeerInFlightBytes: 16<<20 + 1, MinDataRate: 1 << 20, grace: 200 * time.Millisecond}
	srv := startServer(t, h, opts)
	c := slowBody(t, srv, "127.0.0.30", 16<<20)
	c.SetDeadline(time.Now().Add(time.Minute))
	var sent atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		chunk := []byte(strings.Repeat("x", 4<<10))
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := c.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	}()
	line, _ := bufio.NewReader(c).ReadString('\n')
	if n := sent.Load(); n >= 2<<20 {
		t.Fatalf("the trickled body was answered (%q) only after %d bytes", line, n)
	}
	t.Logf("answered %q after %d bytes of the body", strings.TrimSpace(line), sent.Load())
	if s := postFrom(t, srv.Server, "127.0.0.30"); s != http.StatusOK {
		t.Fatalf("the peer after its slow body was cut off: %d, want 200", s)
	}
}

// TestHTTPMessagesNameTheirPeer: the context a message is handled in
// names its peer (admission.PeerOf), so that the agent's processing
// slots are handed out by peer (threat: without it every HTTP caller is
// one peer to the agent's fair admission, and a flood takes every slot).
func TestHTTPMessagesNameTheirPeer(t *testing.T) {
	peers := make(chan string, 1)
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		peers <- admission.PeerOf(ctx)
		return []byte{0xa0}, nil
	})
	srv := httptest.NewServer(NewHandler(h, Options{}))
	defer srv.Close()
	if s := postFrom(t, srv, "127.0.0.31"); s != http.StatusOK {
		t.Fatalf("status %d", s)
	}
	if p := <-peers; p != "127.0.0.31" {
		t.Fatalf("the handler saw peer %q, want 127.0.0.31", p)
	}
}

// TestSlowBodiesFromOtherPeersCannotHoldTheServerBudget: four hosts each
// declare a body as large as their share and trickle it; what they
// declared is charged to their own shares (one more request of theirs is
// 503), but the server's bytes only what arrived, so a fifth host is
// still answered 200 (threat: bodies charged their declared length to
// the server when their headers came let four slow hosts fill its
// budget, and every other caller got 503; the TCP binding follows the
// same rule). The minimum data rate is kept out of it (a minute of
// grace).
func TestSlowBodiesFromOtherPeersCannotHoldTheServerBudget(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	opts := Options{MaxBody: 1 << 20, MaxInFlightBytes: 4 * (1<<20 + 1), grace: time.Minute}
	srv := startServer(t, h, opts)
	for h := 2; h <= 5; h++ {
		from := fmt.Sprintf("127.0.0.%d", 40+h)
		slowBody(t, srv, from, 1<<20)
		// Its share is taken: one more request of its own is refused.
		if s := postFrom(t, srv.Server, from); s != http.StatusServiceUnavailable {
			t.Fatalf("the slow body from %s was not charged to its share: another request of its got %d, want 503", from, s)
		}
	}
	if s := postFrom(t, srv.Server, "127.0.0.41"); s != http.StatusOK {
		t.Fatalf("a small body from another host while four slow bodies arrive: %d, want 200", s)
	}
}

// TestGETOnTheMessagesURLIsReadable: the URL the demo prints is the one
// a newcomer opens in a browser or with curl; a GET there is 405 with
// Allow: POST and a short JSON body, not binary CBOR on a terminal, and
// nothing of the request (path, query, headers) comes back in it.
func TestGETOnTheMessagesURLIsReadable(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	srv := httptest.NewServer(NewHandler(h, Options{}))
	defer srv.Close()
	const marker = "zz<script>echo-me</script>"
	req, _ := http.NewRequest(http.MethodGet, srv.URL+MessagesPath+"?q="+url.QueryEscape(marker), nil)
	req.Header.Set("X-Probe", marker)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Fatalf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	var doc struct {
		Error struct{ Name, Message string }
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal(body, &doc) != nil || doc.Error.Name != "method_not_allowed" {
		t.Fatalf("GET answered %q: %q, want a JSON error", ct, body)
	}
	if strings.Contains(string(body), "echo-me") {
		t.Fatalf("the answer echoes the request: %q", body)
	}
}
