package amphttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOneSiteCannotHoldEveryRequestSlot: MaxPeerInFlight exists "so that
// one host cannot hold every slot". Attack: one host holding an IPv6 /48
// (a tunnel broker gives one away; one interface can use all of it)
// posts MaxPeerInFlight slow messages from each of four of its /64s.
// Each /64 was a peer of its own: with the defaults (64 slots, 16 a
// peer) the host held all 64, and every other caller got 503 for as
// long as it kept them (LimitListener lets the /48 open a quarter of
// --max-conns, 256 by default: enough). The site holds one peer's share
// (admission.Network, as the connection shares and the agent's slots
// count it: docs/SPEC-DECISIONS.md TRANSPORT-14, TRANSPORT-28), its
// /64s beyond it get 503, and another caller is served.
func TestOneSiteCannotHoldEveryRequestSlot(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		if string(msg) == "slow" {
			entered <- struct{}{}
			<-release
		}
		return []byte{0xa0}, nil
	})
	routes := newServer(h, Options{MaxInFlight: 8, MaxPeerInFlight: 2}).routes()
	post := func(from, body string) int {
		r := httptest.NewRequest(http.MethodPost, MessagesPath, strings.NewReader(body))
		r.Header.Set("Content-Type", ContentType)
		r.RemoteAddr = from
		w := httptest.NewRecorder()
		routes.ServeHTTP(w, r)
		return w.Code
	}
	site := []string{"[2001:db8:69:1::1]:4000", "[2001:db8:69:2::1]:4000", "[2001:db8:69:3::1]:4000", "[2001:db8:69:4::1]:4000"}
	var wg sync.WaitGroup
	defer func() { close(release); wg.Wait() }()
	admitted, refused := 0, 0
	for _, from := range site {
		for range 2 {
			done := make(chan int, 1)
			wg.Add(1)
			go func() { defer wg.Done(); done <- post(from, "slow") }()
			// Admitted (its handler holds the slot) or refused at once.
			select {
			case <-entered:
				admitted++
			case code := <-done:
				if code != http.StatusServiceUnavailable {
					t.Fatalf("a slow message from %s: %d, want 200 held or 503", from, code)
				}
				refused++
			case <-time.After(10 * time.Second):
				t.Fatal("a slow message was neither admitted nor refused within 10 s")
			}
		}
	}
	if code := post("[2001:db8:77::1]:4000", "ping"); code != http.StatusOK {
		t.Fatalf("another caller: %d, want 200 (the site holds %d slots of 8 from four /64s, %d refused)", code, admitted, refused)
	}
	if admitted != 2 {
		t.Fatalf("the site holds %d slots, want its share, 2", admitted)
	}
}
