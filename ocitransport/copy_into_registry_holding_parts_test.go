package ocitransport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestCopyIntoARegistryHoldingThePartsReadsNoBlobBack: the
// honest flow review 76 broke. A registry answers a blob GET with a
// redirect to its storage host (Docker Hub, GHCR, ECR, Artifact Registry
// all do), which a push never needed to follow: `push oci-layout:DIR:TAG
// oci://…` only uploads. From review 76 (OCI-17) to review 81, a copy of a
// bundle cut into parts into a registry that held the parts already (the
// rerun OCI-14 promises reuses them, a second tag of the same bundle)
// read each part back from the registry: it needed the storage host
// allowed (--allow-redirect), else oci_redirect_refused, and it downloaded
// the whole file where the first push sent nothing twice. The parts a
// registry holds are now hashed from the source the copy reads anyway (a
// registry checks what it is sent against its digest, and every pull
// checks the file again): the copy lands, and no blob GET reaches the
// destination (docs/SPEC-DECISIONS.md OCI-17, amended in review 81).
func TestCopyIntoARegistryHoldingThePartsReadsNoBlobBack(t *testing.T) {
	ctx := context.Background()
	srcDir := filepath.Join(t.TempDir(), "src")
	pushSample(t, mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{MaxLayerSize: 3000}, ocitransport.ReadWrite), "v1")
	src := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly)

	reg := &holdingRegistry{blobs: map[string]int64{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dst := mustOpen(t, "oci://"+host+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadWrite)

	// The first push uploads every part; the second finds them held.
	for run := 1; run <= 2; run++ {
		if _, _, err := ocitransport.Copy(ctx, src, "v1", dst, "v1"); err != nil {
			t.Errorf("push %d of a bundle cut into parts into a registry that redirects blob reads: %v (%s)", run, err, nameOf(err))
		}
	}
	if n := reg.blobGets.Load(); n != 0 {
		t.Errorf("a push read %d blobs back from the destination registry", n)
	}
}

// holdingRegistry is the least of a registry a push speaks to: blobs
// uploaded (POST, PATCH, PUT, one upload at a time) are held (HEAD 200,
// with their size), a blob GET is redirected to another host, a manifest
// PUT is taken.
type holdingRegistry struct {
	mu       sync.Mutex
	blobs    map[string]int64 // size by digest
	upload   int64            // bytes of the upload under way
	blobGets atomic.Int64
	tagPuts  atomic.Int64 // manifest PUTs under a tag
}

func (h *holdingRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v2/amp/x/blobs/uploads/"):
		switch r.Method {
		case http.MethodPost, http.MethodPatch:
			h.mu.Lock()
			h.upload += n
			h.mu.Unlock()
			w.Header().Set("Location", "/v2/amp/x/blobs/uploads/u1")
			w.WriteHeader(http.StatusAccepted)
		case http.MethodPut:
			d := r.URL.Query().Get("digest")
			h.mu.Lock()
			h.blobs[d] = h.upload + n
			h.upload = 0
			h.mu.Unlock()
			w.Header().Set("Docker-Content-Digest", d)
			w.WriteHeader(http.StatusCreated)
		}
	case strings.HasPrefix(p, "/v2/amp/x/blobs/"):
		d := strings.TrimPrefix(p, "/v2/amp/x/blobs/")
		h.mu.Lock()
		size, held := h.blobs[d]
		if d == "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" { // {}
			size, held = 2, true
		}
		h.mu.Unlock()
		if !held {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		if r.Method == http.MethodGet {
			h.blobGets.Add(1)
			http.Redirect(w, r, "https://storage.example/"+d, http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Docker-Content-Digest", d)
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(p, "/v2/amp/x/manifests/"):
		if r.Method == http.MethodPut {
			if !strings.HasPrefix(strings.TrimPrefix(p, "/v2/amp/x/manifests/"), "sha256:") {
				h.tagPuts.Add(1)
			}
			w.WriteHeader(http.StatusCreated)
			return
		}
		http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
	default:
		http.NotFound(w, r)
	}
}
