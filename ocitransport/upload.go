package ocitransport

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// streamLayers uploads the layers of f (size bytes, cut at MaxLayerSize)
// to the registry, each hashed as it streams (the distribution
// specification's streamed upload: POST, one PATCH with the layer, PUT
// with the digest), so the file is read once, all of them within one time
// budget (fileBudget: oci_too_slow past it). It returns the layers and
// the whole file's SHA-256.
func (e *Endpoint) streamLayers(ctx context.Context, f *os.File, size int64) ([]ocispec.Descriptor, []byte, error) {
	max, mt, err := layerCut(size, e.o.MaxLayerSize)
	if err != nil {
		return nil, nil, err
	}
	ctx = auth.AppendRepositoryScope(ctx, e.repo.Reference, auth.ActionPull, auth.ActionPush)
	whole := sha256.New()
	var layers []ocispec.Descriptor
	// One clock over every layer's requests (docs/SPEC-DECISIONS.md OCI-35).
	bud := e.o.startBudget(ctx, "layers of a file", int((size+max-1)/max), size, pushRequests)
	defer bud.stop()
	for off := int64(0); off < size; off += max {
		n := min(max, size-off)
		part := sha256.New()
		if err := bud.check(); err != nil {
			return nil, nil, err
		}
		if err := e.streamUpload(bud.ctx, io.NewSectionReader(f, off, n), n, whole, part); err != nil {
			return nil, nil, bud.failed(err)
		}
		layers = append(layers, ocispec.Descriptor{MediaType: mt, Digest: digest.NewDigest(digest.SHA256, part), Size: n})
	}
	return layers, whole.Sum(nil), nil
}

// streamUpload sends n bytes of r as one blob, hashed into the hashes as
// they go; the PUT that ends the upload names the digest of the last one.
func (e *Endpoint) streamUpload(ctx context.Context, r io.Reader, n int64, hashes ...hash.Hash) error {
	scheme := "https"
	if e.repo.PlainHTTP {
		scheme = "http"
	}
	start, err := url.Parse(fmt.Sprintf("%s://%s/v2/%s/blobs/uploads/", scheme, e.repo.Reference.Host(), e.repo.Reference.Repository))
	if err != nil {
		return fail(ErrReference, "the repository makes no valid URL")
	}
	loc, err := e.uploadStep(ctx, http.MethodPost, start, nil, 0, http.StatusAccepted)
	if err != nil {
		return err
	}
	ws := make([]io.Writer, len(hashes))
	for i, h := range hashes {
		ws[i] = h
	}
	if loc, err = e.uploadStep(ctx, http.MethodPatch, loc, io.TeeReader(r, io.MultiWriter(ws...)), n, http.StatusAccepted); err != nil {
		return err
	}
	q := loc.Query()
	q.Set("digest", digest.NewDigest(digest.SHA256, hashes[len(hashes)-1]).String())
	loc.RawQuery = q.Encode()
	_, err = e.uploadStep(ctx, http.MethodPut, loc, nil, 0, http.StatusCreated)
	return err
}

// uploadStep sends one request of an upload and returns the Location the
// registry answers (resolved against u), which must be on the same host.
func (e *Endpoint) uploadStep(ctx context.Context, method string, u *url.URL, body io.Reader, n int64, want int) (*url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fail(ErrReference, "the upload URL is not valid")
	}
	if body != nil {
		req.ContentLength = n
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := e.repo.Client.Do(req)
	if err != nil {
		return nil, wrap(err, "uploading a blob") // plainHTTPAnswer first
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != want {
		return nil, fail(ErrRegistry, "uploading a blob: the registry answered %d to %s", resp.StatusCode, method)
	}
	if method == http.MethodPut {
		return nil, nil
	}
	next, err := u.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" || next.Host != u.Host || next.Scheme != u.Scheme {
		return nil, fail(ErrRegistry, "uploading a blob: the registry's Location is missing or on another host")
	}
	return next, nil
}

// goPlainHTTPAnswer is the text of the error net/http returns when a
// server answers an https request in plain HTTP (it has no sentinel).
const goPlainHTTPAnswer = "server gave HTTP response to HTTPS client"

// plainHTTPAnswer is the error of a request that a registry answered in
// plain HTTP while it was spoken to over https (nil for any other error):
// it says what to do, and leaves out the raw error, which quotes the URL
// and the registry's answer.
func plainHTTPAnswer(err error, what string) error {
	if err == nil || !strings.Contains(err.Error(), goPlainHTTPAnswer) {
		return nil
	}
	return optionRefusal(ErrRegistry, &OptionHint{Field: OptionPlainHTTP, Refusal: what + ": the registry answered plain HTTP"})
}
