package ocitransport_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// budgetLayerSize cuts the sample bundle (8,517 bytes) into 190 layers,
// no two alike.
const budgetLayerSize = 45

// stepClock is the test's clock: it moves only when the registry says a
// request took its time.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// heldRegistry is the least of a registry a pull, a push and a copy speak
// to, each request of which takes step on the test's clock (once its body
// is read): within every bound a request has of its own (the 60 s header
// wait, the grace, the minimum rate).
type heldRegistry struct {
	clock *stepClock
	step  time.Duration
	blobs map[string][]byte // served by a blob GET

	blobGets, blobPuts, manifestPuts atomic.Int64
}

func (h *heldRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.clock.add(h.step)
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v2/amp/x/blobs/uploads/"):
		if r.Method == http.MethodPut {
			h.blobPuts.Add(1)
			w.Header().Set("Docker-Content-Digest", r.URL.Query().Get("digest"))
			w.WriteHeader(http.StatusCreated)
			return
		}
		w.Header().Set("Location", "/v2/amp/x/blobs/uploads/u1")
		w.WriteHeader(http.StatusAccepted)
	case strings.HasPrefix(p, "/v2/amp/x/blobs/") && r.Method == http.MethodGet:
		data, ok := h.blobs[strings.TrimPrefix(p, "/v2/amp/x/blobs/")]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		h.blobGets.Add(1)
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Write(data)
	case strings.HasPrefix(p, "/v2/amp/x/manifests/") && r.Method == http.MethodPut:
		h.manifestPuts.Add(1)
		w.WriteHeader(http.StatusCreated)
	default:
		http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN"}]}`, http.StatusNotFound)
	}
}

// budgetOf is a file's budget (docs/SPEC-DECISIONS.md OCI-34): one
// answer's header wait (60 s), the default grace (30 s), the file's bytes
// at the default minimum rate, and RequestAllowance for each of the
// requests its layers take.
func budgetOf(layers, perLayer int, size int64) time.Duration {
	return 90*time.Second + time.Duration(size)*time.Second/ocitransport.DefaultMinDataRate +
		time.Duration(layers*perLayer)*ocitransport.RequestAllowance
}

// layersWithin is how many layers that each take per are begun within
// budget (each begun at the time the ones before it took).
func layersWithin(budget, per time.Duration) int64 {
	return int64((budget + per - 1) / per)
}

// TestPullOfManySmallLayersTheRegistryHoldsIsRefusedOnOneClock: the
// attack. Each layer is its own GET, with its own 60 s header wait and
// 30 s grace: a registry that takes 59 s over each of a bundle's
// MaxLayers one-byte layers held a pull some 160 hours (250 with the
// grace), where the same bytes in one layer are refused in about 90 s;
// only --timeout stopped it (none with --timeout 0, or an embedder's
// context without a deadline). Every layer of a file is now fetched on one
// clock: one header wait, the grace, the file at the minimum rate and
// RequestAllowance a request; past it the next layer is not asked for,
// oci_too_slow, nothing written (docs/SPEC-DECISIONS.md OCI-34). An honest
// registry on a 300 ms round-trip link that redirects each GET to its
// storage (two round trips and the servers' time, 0.9 s) still pulls.
func TestPullOfManySmallLayersTheRegistryHoldsIsRefusedOnOneClock(t *testing.T) {
	want, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	srcDir := filepath.Join(t.TempDir(), "src")
	pushSample(t, mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{MaxLayerSize: budgetLayerSize}, ocitransport.ReadWrite), "v1")
	a, err := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly).Resolve(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	n := len(a.Manifest.Layers)
	blobs := map[string][]byte{}
	for _, l := range a.Manifest.Layers {
		if blobs[l.Digest.String()], err = os.ReadFile(filepath.Join(srcDir, "blobs", "sha256", l.Digest.Encoded())); err != nil {
			t.Fatal(err)
		}
	}
	budget := budgetOf(n, 1, a.FileSize)
	for _, tc := range []struct {
		name     string
		step     time.Duration
		wantGets int64 // 0: every layer, and the file pulled
	}{
		{"a registry that holds each layer 59 s", 59 * time.Second, layersWithin(budget, 59*time.Second)},
		{"an honest registry 300 ms away, redirecting to its storage", 900 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Now()}
			reg := &heldRegistry{clock: clock, step: tc.step, blobs: blobs}
			srv := httptest.NewServer(reg)
			defer srv.Close()
			src := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x",
				ocitransport.Options{PlainHTTP: true, Now: clock.Now}, ocitransport.ReadOnly)
			out := filepath.Join(t.TempDir(), "out.ampb")
			err := src.PullFile(context.Background(), a, out)
			gets := reg.blobGets.Load()
			if tc.wantGets == 0 {
				if err != nil || gets != int64(n) {
					t.Fatalf("an honest pull of %d layers: %v (%s), %d GETs", n, err, nameOf(err), gets)
				}
				if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
					t.Fatal("the pulled file is not the pushed file")
				}
				return
			}
			if nameOf(err) != string(ocitransport.ErrTooSlow) || gets != tc.wantGets {
				t.Errorf("a pull of %d layers each held %v: %v (%s) after %d GETs, want %s after %d",
					n, tc.step, err, nameOf(err), gets, ocitransport.ErrTooSlow, tc.wantGets)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused pull left a file at the output path: %v", err)
			}
		})
	}
}

// TestPushAndCopyOfManyLayersTheRegistryHoldsAreRefusedOnOneClock: the
// same attack on what is sent. A push streams each layer in three requests
// (POST, PATCH, PUT), a copy into a registry in three (HEAD, POST, PUT),
// each with its own header wait and grace: a registry taking 59 s over
// held a push of MaxLayers layers some 490 hours (more with each
// answer's grace). A file's layers are
// now sent on one clock, RequestAllowance for each request a layer may
// take (a push three, a copy four): past it the next layer is not sent,
// oci_too_slow, no manifest pushed (docs/SPEC-DECISIONS.md OCI-35); a
// request past it is not sent either, on the test's clock, so a layer is
// sent only when its third request (the PUT) began within the budget
// (OCI-40). An honest registry 300 ms away (0.9 s a request) still takes
// them.
func TestPushAndCopyOfManyLayersTheRegistryHoldsAreRefusedOnOneClock(t *testing.T) {
	srcDir := filepath.Join(t.TempDir(), "src")
	a := pushSample(t, mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{MaxLayerSize: budgetLayerSize}, ocitransport.ReadWrite), "v1")
	n := len(a.Manifest.Layers)
	push := func(ctx context.Context, dst *ocitransport.Endpoint) error {
		f, err := os.Open(sampleBundle)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, err = dst.PushBundle(ctx, f, "translate.ampb", "v1")
		return err
	}
	copyIn := func(ctx context.Context, dst *ocitransport.Endpoint) error {
		src := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly)
		_, _, err := ocitransport.Copy(ctx, src, "v1", dst, "v1")
		return err
	}
	const hostile, honest = 59 * time.Second, 900 * time.Millisecond
	for _, tc := range []struct {
		name     string
		send     func(context.Context, *ocitransport.Endpoint) error
		wantPuts int64 // 0: every layer, and the manifest
		step     time.Duration
	}{
		{"a push to a registry that holds each request 59 s", push, layersWithin(budgetOf(n, 3, a.FileSize), hostile) / 3, hostile},
		{"a push to an honest registry 300 ms away", push, 0, honest},
		{"a copy into a registry that holds each request 59 s", copyIn, layersWithin(budgetOf(n, 4, a.FileSize), hostile) / 3, hostile},
		{"a copy into an honest registry 300 ms away", copyIn, 0, honest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Now()}
			reg := &heldRegistry{clock: clock, step: tc.step}
			srv := httptest.NewServer(reg)
			defer srv.Close()
			dst := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x",
				ocitransport.Options{PlainHTTP: true, Now: clock.Now, MaxLayerSize: budgetLayerSize}, ocitransport.ReadWrite)
			err := tc.send(context.Background(), dst)
			puts, manifests := reg.blobPuts.Load(), reg.manifestPuts.Load()
			if tc.wantPuts == 0 {
				// Every layer, and the empty config (a copy's twice: its
				// untagged manifest, then the tag).
				if err != nil || puts < int64(n)+1 || manifests == 0 {
					t.Fatalf("%d layers: %v (%s), %d blobs and %d manifests sent", n, err, nameOf(err), puts, manifests)
				}
				return
			}
			if nameOf(err) != string(ocitransport.ErrTooSlow) || puts != tc.wantPuts || manifests != 0 {
				t.Errorf("%d layers each held %v a request: %v (%s) after %d blobs and %d manifests, want %s after %d blobs and none",
					n, tc.step, err, nameOf(err), puts, manifests, ocitransport.ErrTooSlow, tc.wantPuts)
			}
		})
	}
}

// TestStatementsOfABundleTheRegistryHoldsAreReadOnOneClock: the same
// attack on a bundle's many small files. A copy, a pull and each listing
// of a sync read up to MaxReferrers statement manifests of one bundle,
// each its own GET with its own header wait and grace: a registry taking
// 59 s over each held the listing some 16 hours. The manifests one listing
// fetches are now read on one clock (each at most
// MaxStatementManifestSize at the minimum rate, RequestAllowance a
// request): past it the listing fails, oci_too_slow, no statement
// returned (docs/SPEC-DECISIONS.md OCI-36). An honest registry 300 ms
// away (0.9 s a request) still lists them all.
func TestStatementsOfABundleTheRegistryHoldsAreReadOnOneClock(t *testing.T) {
	const n = 100
	dir := filepath.Join(t.TempDir(), "src")
	lay := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	b := pushSample(t, lay, "v1")
	manifests := map[string][]byte{}
	var descs []ocispec.Descriptor
	for i := range n {
		key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i + 1)}, 32))
		data, err := bundle.SignObject(bundle.MediaTypeRevocation, []byte{0xa1, 0x61, 0x61, 0x01}, []ed25519.PrivateKey{key})
		if err != nil {
			t.Fatal(err)
		}
		s, err := lay.PushStatement(context.Background(), data, b)
		if err != nil {
			t.Fatal(err)
		}
		manifests[s.Descriptor.Digest.String()] = s.Raw
		descs = append(descs, s.Descriptor)
	}
	listing, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: descs})
	if err != nil {
		t.Fatal(err)
	}
	budget := 90*time.Second + n*ocitransport.MaxStatementManifestSize*time.Second/ocitransport.DefaultMinDataRate +
		n*ocitransport.RequestAllowance
	for _, tc := range []struct {
		name     string
		step     time.Duration
		wantGets int64 // 0: every manifest, and every statement listed
	}{
		{"a registry that holds each manifest 59 s", 59 * time.Second, layersWithin(budget, 59*time.Second)},
		{"an honest registry 300 ms away", 900 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Now()}
			var gets atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				clock.add(tc.step)
				switch p := r.URL.Path; {
				case p == "/v2/amp/x/referrers/"+b.Descriptor.Digest.String():
					w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
					w.Write(listing)
				case strings.HasPrefix(p, "/v2/amp/x/manifests/") && manifests[strings.TrimPrefix(p, "/v2/amp/x/manifests/")] != nil:
					gets.Add(1)
					w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
					w.Write(manifests[strings.TrimPrefix(p, "/v2/amp/x/manifests/")])
				default:
					http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN"}]}`, http.StatusNotFound)
				}
			}))
			defer srv.Close()
			reg := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x",
				ocitransport.Options{PlainHTTP: true, Now: clock.Now}, ocitransport.ReadOnly)
			out, skipped, err := reg.StatementsSkipping(context.Background(), b)
			if tc.wantGets == 0 {
				if err != nil || len(out) != n || len(skipped) != 0 || gets.Load() != n {
					t.Fatalf("an honest listing of %d statements: %v (%s), %d read, %d skipped, %d GETs", n, err, nameOf(err), len(out), len(skipped), gets.Load())
				}
				return
			}
			if nameOf(err) != string(ocitransport.ErrTooSlow) || len(out) != 0 || gets.Load() != tc.wantGets {
				t.Errorf("a listing of %d statements each held %v: %v (%s), %d read after %d GETs, want %s after %d",
					n, tc.step, err, nameOf(err), len(out), gets.Load(), ocitransport.ErrTooSlow, tc.wantGets)
			}
		})
	}
}
