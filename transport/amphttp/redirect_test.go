package amphttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHostileAgentCannotRedirectTheClient: an agent that answers with a
// redirect to another host (standing for a service on the caller's own
// machine) never gets the client to follow it: the signed message is not
// re-posted there (307, 308), no URL of the agent's choosing is fetched
// (301, 302, 303), and the caller gets redirect_refused.
func TestHostileAgentCannotRedirectTheClient(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var hits atomic.Int64
		internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
		}))
		hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if code == http.StatusPermanentRedirect {
				// With a CBOR error body of the agent's choosing: still a
				// refused redirect, not the code the body names.
				body, _ := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeInvalidMessage, "no")))
				w.Header().Set("Location", internal.URL+"/admin")
				w.WriteHeader(code)
				w.Write(body)
				return
			}
			http.Redirect(w, r, internal.URL+"/admin/delete?all=1", code)
		}))
		tr, err := NewTransport(hostile.URL, 2)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = tr.RoundTrip(ctx, []byte("signed amp message bytes"))
		cancel()
		tr.Close()
		hostile.Close()
		internal.Close()
		if n := hits.Load(); n != 0 {
			t.Errorf("http %d: the client followed the redirect (%d request(s) to the other host)", code, n)
		}
		if amp.NameOf(err) != ErrRedirect {
			t.Errorf("http %d: %v, want %s", code, err, ErrRedirect)
		}
	}
}
