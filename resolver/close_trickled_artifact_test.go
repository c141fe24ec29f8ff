package resolver

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// steadyTrickle yields r a step at a time, one every pause: a stream that
// keeps a steady rate (every Read returns at once with bytes), never
// blocked.
// given counts the bytes it has yielded, for the test to read.
type steadyTrickle struct {
	r     io.Reader
	step  int
	pause time.Duration
	given atomic.Int64
}

func (tr *steadyTrickle) Read(p []byte) (int, error) {
	time.Sleep(tr.pause)
	n, err := tr.r.Read(p[:min(len(p), tr.step)])
	tr.given.Add(int64(n))
	return n, err
}

// endlessArtifactBundle is a bundle of one artifact of size bytes,
// written as it is read (no copy of it in memory), and stop, which ends
// the writing. The artifact's hash in the manifest is not its bytes'
// (the writer would fail once it had copied them all): an import stopped
// before the artifact's end never sees it.
func endlessArtifactBundle(t *testing.T, size int64) (r io.Reader, stop func()) {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	d := &bundle.Draft{BundleID: "org.example.large", Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	d.Artifacts = append(d.Artifacts,
		bundle.Source{Key: "blobs/0000.bin", MediaType: "application/octet-stream", Size: size, Hash: make([]byte, sha256.Size),
			Open: func() (io.ReadCloser, error) { return io.NopCloser(io.LimitReader(zeros{}, size)), nil }},
		bundle.BytesSource("capabilities/org.example.large.op/1.0.0/input.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource("capabilities/org.example.large.op/1.0.0/output.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: "org.example.large.op", Version: v,
		InputSchema:  capability.SchemaRef{ArtifactKey: "capabilities/org.example.large.op/1.0.0/input.schema.json"},
		OutputSchema: capability.SchemaRef{ArtifactKey: "capabilities/org.example.large.op/1.0.0/output.schema.json"}}}
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, err := bundle.Write(pw, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{})
		pw.CloseWithError(err)
	}()
	return pr, func() { pr.CloseWithError(errors.New("the test is over")); <-written }
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestCloseDoesNotWaitForAWholeArtifactOfATrickledImport: attack: Close
// cancels every Import it waits for (Store.enter, beginImport), but an
// Import looked at its context only between artifacts (stage) and not
// at all while bundle.NewReader read the manifest: one reading a single
// large artifact from a stream that keeps the minimum data rate (every
// Read returns bytes at once, so it is never "blocked in a Read", the
// one wait Close documents) held Close until that artifact was read
// whole: MaxArtifactSize at 128 KiB/s, hours for a 1 GiB artifact. The
// agent's shutdown (SIGTERM, its admin socket closed first) hung that
// long behind an `ampbundle import` or a sync whose source trickles;
// below, Close waited for the 4 MiB artifact trickled at 640 KiB/s
// (about 6 s; the test now trickles a 256 MiB one, 7 minutes, so that a
// Close that waits for it never returns in the test's time). Now the Import's stream (importStream) checks the
// context before every Read, and stops once it has been done for
// cancelGrace, so Close returns within that and a Read.
func TestCloseDoesNotWaitForAWholeArtifactOfATrickledImport(t *testing.T) {
	// Opened here, not with newStore: its cleanup checks the store, which
	// this test closes.
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	k := sampleKey(t, "example-publisher")
	if err := s.TrustAdd("example", pub(k), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	// The largest artifact the store takes, at 640 KiB/s: 7 minutes.
	const size = 256 << 20
	src, stopSrc := endlessArtifactBundle(t, size)
	defer stopSrc()
	tr := &steadyTrickle{r: src, step: 32 << 10, pause: 50 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), tr, ImportOptions{})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the Import holds the lock, reading the artifact
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	// Hang guard: Close returns within cancelGrace and a Read of the
	// trickle (about 0.55 s); waiting for the whole artifact, it would
	// take 7 minutes.
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		stopSrc() // the Import's next Read fails: Close returns
		<-closed
		t.Fatalf("Close did not return in %v (%d of the %d MiB artifact read): it waited for the Import in flight to read its whole artifact from a stream "+
			"that keeps its rate, though it had cancelled it", time.Since(start).Round(100*time.Millisecond), tr.given.Load()>>20, size>>20)
	}
	given := tr.given.Load()
	t.Logf("Close returned after %v; the Import read %d KiB of the stream", time.Since(start).Round(time.Millisecond), given>>10)
	// Stopped by Close: cancelled (store_io), neither a refusal nor
	// truncated, before the artifact's end.
	expectName(t, <-done, ErrStoreIO)
	if given >= size {
		t.Fatalf("the Import read %d bytes of the stream before Close returned, the whole %d-byte artifact", given, size)
	}
}
