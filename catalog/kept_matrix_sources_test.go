package catalog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// wideSchemasBundle signs a bundle org.many with n capabilities, each
// taking and giving its own schema of props properties.
func wideSchemasBundle(t testing.TB, n, props int) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	d := &bundle.Draft{BundleID: "org.many", Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, `{"type":"object","title":"%d","properties":{`, i)
		for p := range props {
			if p > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%05d":{"type":"string","maxLength":%d}`, p, 10+p)
		}
		b.WriteString("}}")
		key := fmt.Sprintf("s%04d.json", i)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(key, bundle.MediaTypeSchema, []byte(b.String())))
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: manyName(i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestKeptMatricesCannotHoldParsedSchemasPastTheMemoBound: the memo of
// computed matrices is bounded at MaxKeptMatrixBytes, counting the
// matrices only; but each was computed through the model's compat
// sources, one a bundle, which kept every schema they parsed (a tree many
// times the schema's text) for the model's life. A peer asking for one
// matrix after another grew the heap by every schema of the store parsed
// (four matrices held about 120 MiB against 64 MiB). The heap a model
// keeps after computing N matrices now stays within the memo's bound
// plus a slack of 4 MiB (the collector's and the test's own noise).
func TestKeptMatricesCannotHoldParsedSchemasPastTheMemoBound(t *testing.T) {
	const (
		caps  = 24
		props = 1500
		bound = 1 << 20
		slack = 4 << 20
	)
	src, err := opener(newStore(t, wideSchemasBundle(t, caps, props)))()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.(interface{ Close() error }).Close() })
	opts := PageReadOptions(now)
	opts.MaxKeptMatrixBytes = bound
	m, err := Read(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	for i := range caps {
		if _, ok := m.lookupMatrix(manyName(i)); !ok {
			t.Fatalf("no matrix for %s", manyName(i))
		}
	}
	after := heapInUse()
	runtime.KeepAlive(m)
	grown := int64(after) - int64(before)
	t.Logf("grown %d KiB", grown>>10)
	if grown > bound+slack {
		t.Errorf("computing %d matrices grew the model's heap by %d KiB, over the memo's bound of %d KiB plus %d KiB of slack",
			caps, grown>>10, bound>>10, slack>>10)
	}
}
