package ocitransport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestTokenScopeFloodHoldsAFewTokens: the attack. A hostile
// registry answers each request without a token 401, its Bearer challenge
// naming a scope never named before ("repository:amp/x:pull junkN"), and
// its own token realm answers a token of about 100 KiB (oras-go reads up
// to 128 KiB of it). Before review 76 the client (oras-go's
// auth.NewCache, kept for the whole endpoint) cached each token under its
// scopes and never forgot one: every request of a sync (tens of thousands:
// manifests, referrers listings, statements) added an entry of up to
// 128 KiB of token and 64 KiB of scope, gigabytes held by a sync from what
// the registry chose to send. The cache holds the tokens of
// MaxTokenScopes scope sets at most (a genuine registry names one or two
// per repository): past the bound, a new scope is oci_registry_error,
// unfetched, and the memory held stays small (docs/SPEC-DECISIONS.md
// OCI-19). Measured by the heap still held (runtime.MemStats after a GC)
// after 200 resolves, with a bound of 4 MiB (before: about 21 MiB).
func TestTokenScopeFloodHoldsAFewTokens(t *testing.T) {
	token := strings.Repeat("t", 100<<10)
	var n atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"token":%q}`, token+fmt.Sprint(n.Load()))
			return
		}
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="reg",scope="repository:amp/x:pull junk%d"`, srv.URL, n.Add(1)))
		http.Error(w, "auth", http.StatusUnauthorized)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ep := mustOpen(t, "oci://"+host+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var err error
	for range 200 {
		_, err = ep.Resolve(context.Background(), "v1")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ep)
	if nameOf(err) != string(ocitransport.ErrRegistry) {
		t.Errorf("a request challenged with a scope past the bound: %v (%s), want %s", err, nameOf(err), ocitransport.ErrRegistry)
	}
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 4<<20 {
		t.Errorf("200 requests, each challenged with a new scope, left %d bytes held by the endpoint (%d challenges)", held, n.Load())
	}
}
