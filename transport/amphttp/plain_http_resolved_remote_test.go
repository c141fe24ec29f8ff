package amphttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestPlainHTTPToAResolvedRemoteAddressIsRefused: the CLI lets http://
// go without --unsafe-plain-http to a host whose NAME is loopback
// ("localhost"), but a hosts file or a resolver may map that name to an
// address on the network, where the params, the result and any unsigned
// refusal cross in clear. With PlainLoopbackOnly the address actually
// dialed must be loopback: another is refused before any byte is sent,
// 3001 plain_remote, final (no retry); a loopback agent is reached as
// before.
func TestPlainHTTPToAResolvedRemoteAddressIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		w.Write([]byte{0xa0})
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		tr, err := NewTransportWith(base, TransportOptions{PlainLoopbackOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(context.Background(), []byte{0xa0}); err != nil {
			t.Errorf("%s: a loopback agent is refused: %v", base, err)
		}
		tr.Close()
	}
	// 192.0.2.1 (TEST-NET-1) stands for what a name resolved to: the
	// check is on the address dialed, so it is refused before connecting.
	tr, err := NewTransportWith("http://192.0.2.1:9", TransportOptions{PlainLoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = tr.RoundTrip(ctx, []byte{0xa0})
	var e *amp.Error
	if !errors.As(err, &e) || e.Name != ErrPlainRemote || !e.Final || ctx.Err() != nil {
		t.Fatalf("plain http:// to 192.0.2.1: %v, want a final plain_remote before any connection", err)
	}
}
