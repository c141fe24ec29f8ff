package ocitransport_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayerWhoseRedirectsRunPastTheBudgetIsCutOnTheInjectedClock: a file's
// budget (docs/SPEC-DECISIONS.md OCI-34) was judged on Options.Now only
// before each layer; a request under way was cut by a timer on the
// system's clock. A registry that redirects a one-layer pull's GET to
// itself DefaultMaxRedirects times, each request taking 59 s on the
// clock the caller gave, held the pull 354 s of that clock against a
// budget of about 92 s, and the pull landed: the budget could not be
// tested on an injected clock, and every hop of the chain had its own
// header wait. Every request made under a budget is now refused once
// Options.Now has reached its due time (OCI-40): oci_too_slow, nothing
// at the output path. The same chain taking 0.9 s a request is pulled.
func TestLayerWhoseRedirectsRunPastTheBudgetIsCutOnTheInjectedClock(t *testing.T) {
	want, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	srcDir := filepath.Join(t.TempDir(), "src")
	a := pushSample(t, mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
	if len(a.Manifest.Layers) != 1 {
		t.Fatalf("the sample is %d layers, want 1", len(a.Manifest.Layers))
	}
	blobPath := "/v2/amp/x/blobs/" + a.Manifest.Layers[0].Digest.String()
	hops := ocitransport.DefaultMaxRedirects
	budget := budgetOf(1, 1, a.FileSize)
	for _, tc := range []struct {
		name         string
		step         time.Duration
		wantRequests int64 // 0: the whole chain, and the file pulled
	}{
		{"a registry redirecting the layer to itself, 59 s a request", 59 * time.Second, layersWithin(budget, 59*time.Second)},
		{"an honest registry redirecting the layer, 0.9 s a request", 900 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Now()}
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				clock.add(tc.step)
				if r.URL.Path != blobPath || r.Method != http.MethodGet {
					http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN"}]}`, http.StatusNotFound)
					return
				}
				requests.Add(1)
				hop, _ := strconv.Atoi(r.URL.Query().Get("hop"))
				if hop < hops {
					http.Redirect(w, r, fmt.Sprintf("%s?hop=%d", blobPath, hop+1), http.StatusTemporaryRedirect)
					return
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(want)))
				w.Write(want)
			}))
			defer srv.Close()
			src := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x",
				ocitransport.Options{PlainHTTP: true, Now: clock.Now}, ocitransport.ReadOnly)
			out := filepath.Join(t.TempDir(), "out.ampb")
			err := src.PullFile(context.Background(), a, out)
			n := requests.Load()
			if tc.wantRequests == 0 {
				if err != nil || n != int64(hops)+1 {
					t.Fatalf("an honest chain of %d redirects: %v (%s) after %d requests", hops, err, nameOf(err), n)
				}
				if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
					t.Fatal("the pulled file is not the pushed file")
				}
				return
			}
			if nameOf(err) != string(ocitransport.ErrTooSlow) || n != tc.wantRequests {
				t.Errorf("a chain of %d redirects each held %v (budget %v): %v (%s) after %d requests, want %s after %d",
					hops, tc.step, budget, err, nameOf(err), n, ocitransport.ErrTooSlow, tc.wantRequests)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused pull left a file at the output path: %v", err)
			}
		})
	}
}
