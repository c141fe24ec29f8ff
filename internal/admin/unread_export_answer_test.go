//go:build unix

package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// bigBundle is a bundle of about size bytes (one incompressible
// artifact and a capability) signed by a fresh key, which the store at s
// is made to trust for org.example.
func bigBundle(t *testing.T, s *resolver.Store, size int) []byte {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("big-publisher", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, size)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	d := &bundle.Draft{BundleID: "org.example.big", Version: 1, CreatedAt: time.Now().Add(-time.Hour)}
	d.Artifacts = append(d.Artifacts,
		bundle.BytesSource("blobs/big.bin", "application/octet-stream", blob),
		bundle.BytesSource("capabilities/org.example.big.op/1.0.0/input.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource("capabilities/org.example.big.op/1.0.0/output.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: "org.example.big.op", Version: v,
		InputSchema:  capability.SchemaRef{ArtifactKey: "capabilities/org.example.big.op/1.0.0/input.schema.json"},
		OutputSchema: capability.SchemaRef{ArtifactKey: "capabilities/org.example.big.op/1.0.0/output.schema.json"}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnreadExportAnswersDoNotHoldTheAdminSocket: attack: the admin
// socket bounded what a caller holds by reading every request body at
// the minimum data rate and serving at most MaxConns connections, but
// nothing bounded the writing of an answer (Serve's http.Server has no
// WriteTimeout): a caller that asked for an export (GET /v1/export, the
// bundle staged into a temporary file, then copied to the connection) and
// never read the answer left the handler blocked in its copy once the
// socket's buffer was full, with its connection slot, its goroutine, its
// descriptor and the staged file on disk, for as long as it liked. 32
// such requests (an operator's `ampbundle export X | stuck-pipe`, or a
// runaway script) had every later caller answered busy until the agent
// restarted. Now every answer is written at the minimum data rate
// (rateAnswer: the write deadline moved before each step, as a body's
// read deadline is): one the caller does not read is cut after the
// grace, its slot freed and its staged file removed.
func TestUnreadExportAnswersDoNotHoldTheAdminSocket(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the staged exports land here
	store, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	data := bigBundle(t, store, 1<<20)
	if _, err := store.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(store, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	for range MaxConns {
		conn, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Asked, and never read.
		fmt.Fprintf(conn, "GET /v1/export?bundle_id=org.example.big HTTP/1.1\r\nHost: agent\r\n\r\n")
	}
	c, err := Dial(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wait := admission.FrameGrace + 2*time.Second
	time.Sleep(wait)
	_, err = c.FetchGeneration()
	staged, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "ampbundle-export-*"))
	if amp.NameOf(err) != "busy" && len(staged) > 0 {
		t.Errorf("%d staged export files are still on disk after their answers were cut", len(staged))
	}
	if amp.NameOf(err) == "busy" {
		t.Fatalf("%d export answers the caller never reads still hold every admin connection %v after they were asked "+
			"(a request body is cut after %v; %d staged export files are still on disk): no write deadline bounds an answer",
			MaxConns, wait, admission.FrameGrace, len(staged))
	}
	if err != nil {
		t.Fatalf("FetchGeneration: %v", err)
	}
}
