package ocitransport

import (
	"bytes"
	"context"
	"errors"
	"hash"
	"io"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// errStalled is the cause a body's context is cancelled with when it
// arrives slower than the minimum data rate.
var errStalled = errors.New("ocitransport: body below the minimum data rate")

// blobReader reads one blob: at most its descriptor's size, each byte
// hashed, the digest checked at the end (a short body or another digest
// is an error in place of io.EOF), the minimum data rate kept.
type blobReader struct {
	pacedBody
	desc ocispec.Descriptor
	v    digest.Verifier
}

// openBlob opens desc on e's source for reading through a blobReader.
func (e *Endpoint) openBlob(ctx context.Context, desc ocispec.Descriptor) (*blobReader, error) {
	if desc.Size < 0 || desc.Size > e.o.MaxBlobSize {
		return nil, fail(ErrBlobTooBig, "a blob is larger than the %d-byte limit", e.o.MaxBlobSize)
	}
	if desc.Digest.Validate() != nil || desc.Digest.Algorithm() != digest.SHA256 {
		return nil, fail(ErrDigest, "a descriptor's digest is not a valid sha256 digest")
	}
	cctx, cancel := context.WithCancelCause(withIntent(ctx, respBlob))
	rc, err := e.src.Fetch(cctx, desc)
	if err != nil {
		cancel(nil)
		// oras: the answer's length is not the descriptor's, told by its
		// text; never a registry's error answer, whose message the
		// registry writes (OCI-29 amended).
		var resp *errcode.ErrorResponse
		if !errors.As(err, &resp) && strings.HasSuffix(err.Error(), "mismatch Content-Length") {
			return nil, fail(ErrSize, "the registry answered a blob of another size than its descriptor").WithCause(peerCause{err})
		}
		return nil, wrap(err, "fetching a blob")
	}
	b := &blobReader{desc: desc, v: desc.Digest.Verifier()}
	b.pace(rc, cctx, cancel, desc.Size, &e.o)
	return b, nil
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.left == 0 {
		if !b.v.Verified() {
			return 0, fail(ErrDigest, "a blob does not match its digest")
		}
		return 0, io.EOF
	}
	n, err := b.read(p)
	b.v.Write(p[:n])
	switch {
	case err == nil:
		return n, nil
	case b.stalled():
		return n, fail(ErrTooSlow, "a blob arrived slower than %d bytes per second", b.o.MinDataRate)
	case err == io.ErrUnexpectedEOF:
		// The answer ended before its own length: cut in transit, maybe
		// (the cause tells it from a whole answer that is short).
		return n, fail(ErrSize, "a blob is shorter than its descriptor says").WithCause(err)
	case err == io.EOF && b.left > 0:
		return n, fail(ErrSize, "a blob is shorter than its descriptor says")
	case err == io.EOF:
		return n, nil // the next Read checks the digest
	}
	return n, wrap(err, "reading a blob")
}

// copyBlob streams desc from e's source into w through buf, verified.
func (e *Endpoint) copyBlob(ctx context.Context, desc ocispec.Descriptor, w io.Writer, buf []byte) error {
	b, err := e.openBlob(ctx, desc)
	if err != nil {
		return err
	}
	defer b.Close()
	for {
		n, rerr := b.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return fail(ErrIO, "cannot write the blob").WithCause(err)
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// readSmall reads a small blob (a manifest, a statement) whole.
func (e *Endpoint) readSmall(ctx context.Context, desc ocispec.Descriptor, max int64) ([]byte, error) {
	if desc.Size > max {
		return nil, fail(ErrManifestTooBig, "a manifest or statement is larger than %d bytes", max)
	}
	if desc.Size <= 0 {
		return nil, fail(ErrManifest, "a manifest or statement descriptor has no size")
	}
	var out bytes.Buffer
	out.Grow(int(desc.Size))
	if err := e.copyBlob(ctx, desc, &out, make([]byte, 32<<10)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// hashWriter counts and hashes what is written.
type hashWriter struct {
	h hash.Hash
	n int64
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.n += int64(len(p))
	return len(p), nil
}
