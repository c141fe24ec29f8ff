package ocitransport_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// hostileRegistry is a registry peer of the test that misbehaves in one
// way (mode); it serves the sample bundle's manifest (at tag v1 and by
// digest) and blob otherwise faithfully.
type hostileRegistry struct {
	mode     string
	manifest []byte
	mdigest  digest.Digest
	blob     []byte
	srv      *httptest.Server
}

func newHostileRegistry(t *testing.T, mode string) *hostileRegistry {
	t.Helper()
	blob, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	m := ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(blob)), sum[:], "translate.ampb", "org.example.translate", 1)
	h := &hostileRegistry{mode: mode, manifest: m, mdigest: digest.FromBytes(m), blob: blob}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// registryAnswering is a faithful registry whose answers to the GETs of
// paths under prefix are answer's (only the first such GET's when first),
// opened read-only at amp/x over plain HTTP with o; the server closes
// with t.
func registryAnswering(t *testing.T, o ocitransport.Options, prefix string, first bool, answer http.HandlerFunc) *ocitransport.Endpoint {
	t.Helper()
	h := newHostileRegistry(t, "faithful")
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, prefix) && r.Method == http.MethodGet && (!first || gets.Add(1) == 1) {
			answer(w, r)
			return
		}
		h.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	o.PlainHTTP = true
	return mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", o, ocitransport.ReadOnly)
}

func (h *hostileRegistry) host() string { return strings.TrimPrefix(h.srv.URL, "http://") }

func endless(w http.ResponseWriter, r *http.Request) {
	chunk := make([]byte, 32<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

func (h *hostileRegistry) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(p, "/v2/amp/x/manifests/"):
		h.serveManifest(w, r)
	case strings.HasPrefix(p, "/v2/amp/x/blobs/"):
		h.serveBlob(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *hostileRegistry) serveManifest(w http.ResponseWriter, r *http.Request) {
	body := h.manifest
	w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
	w.Header().Set("Docker-Content-Digest", h.mdigest.String())
	switch h.mode {
	case "huge manifest":
		w.Header().Set("Content-Length", fmt.Sprint(64<<20))
		if r.Method == http.MethodGet {
			endless(w, r)
		}
		return
	case "endless manifest", "manifest then endless":
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodGet {
			w.Header().Del("Content-Length")
			if h.mode == "manifest then endless" {
				w.Write(body) // what follows is never read
			}
			endless(w, r)
		}
		return
	case "wrong manifest digest":
		if r.Method == http.MethodGet {
			body = append([]byte(nil), body...)
			body[len(body)-3] ^= 1
		}
	case "redirect loop":
		http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
		return
	case "redirect away":
		http.Redirect(w, r, "http://registry.invalid"+r.URL.Path, http.StatusTemporaryRedirect)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

func (h *hostileRegistry) serveBlob(w http.ResponseWriter, r *http.Request) {
	body := h.blob
	switch h.mode {
	case "short blob":
		w.Header().Set("Content-Length", fmt.Sprint(len(body)-10))
		w.Write(body[:len(body)-10])
		return
	case "truncated blob":
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body[:len(body)-10])
		return
	case "wrong blob digest":
		body = append([]byte(nil), body...)
		body[len(body)/2] ^= 1
	case "endless blob":
		w.Write(body[:100])
		endless(w, r)
		return
	case "slow blob":
		w.Write(body[:100])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case "blob redirect loop":
		http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.Write(body)
}

// TestHostileRegistryLandsNothing: each way a registry can lie or stall is
// refused with its error name, within its bound (time and bytes), and the
// output folder holds nothing afterwards.
func TestHostileRegistryLandsNothing(t *testing.T) {
	for _, tc := range []struct {
		mode, ref, want string
	}{
		{"faithful", "v1", ""},
		{"huge manifest", "v1", string(ocitransport.ErrManifestTooBig)},
		{"endless manifest", "v1", string(ocitransport.ErrDigest)},
		{"manifest then endless", "v1", ""},
		{"wrong manifest digest", "v1", string(ocitransport.ErrDigest)},
		{"wrong manifest digest", "@", string(ocitransport.ErrDigest)},
		{"redirect loop", "v1", string(ocitransport.ErrRedirect)},
		{"redirect away", "v1", string(ocitransport.ErrRedirect)},
		{"short blob", "v1", string(ocitransport.ErrSize)},
		{"truncated blob", "v1", string(ocitransport.ErrSize)},
		{"wrong blob digest", "v1", string(ocitransport.ErrDigest)},
		{"endless blob", "v1", string(ocitransport.ErrDigest)},
		{"slow blob", "v1", string(ocitransport.ErrTooSlow)},
		{"blob redirect loop", "v1", string(ocitransport.ErrRedirect)},
	} {
		t.Run(tc.mode+" "+tc.ref, func(t *testing.T) {
			h := newHostileRegistry(t, tc.mode)
			ref := tc.ref
			if ref == "@" {
				ref = h.mdigest.String()
			}
			o := ocitransport.Options{PlainHTTP: true, Grace: 200 * time.Millisecond, MinDataRate: 1 << 20}
			ep := mustOpen(t, "oci://"+h.host()+"/amp/x", o, ocitransport.ReadOnly)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			dir := t.TempDir()
			err := func() error {
				a, err := ep.Resolve(ctx, ref)
				if err != nil {
					return err
				}
				return ep.PullFile(ctx, a, filepath.Join(dir, "out.ampb"))
			}()
			if nameOf(err) != tc.want {
				t.Fatalf("got %v (%s), want %s", err, nameOf(err), tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("refused after %v: not within bounds", d)
			}
			entries, _ := os.ReadDir(dir)
			if tc.want != "" && len(entries) != 0 {
				t.Fatalf("something landed: %v", entries)
			}
			if tc.want == "" {
				if data, err := os.ReadFile(filepath.Join(dir, "out.ampb")); err != nil || string(data) != string(h.blob) || len(entries) != 1 {
					t.Fatalf("the faithful pull wrote %d files: %v", len(entries), err)
				}
			}
		})
	}
}
