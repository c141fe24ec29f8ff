package capability

import (
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestDeclareOfManyBadItemsAllocatesAboutItsSize: a CAP_DECLARE whose
// capabilities are 65,536 one-byte items (a 65 KB reply a peer sends a
// querying client) made room for 65,536 descriptors, 29 MB, before the
// first item failed to decode. The descriptors now grow as they decode
// (CAP-10).
func TestDeclareOfManyBadItemsAllocatesAboutItsSize(t *testing.T) {
	body, err := amp.Marshal(map[string]any{"capabilities": make([]int, 65536)})
	if err != nil {
		t.Fatal(err)
	}
	got := testalloc.Least(func() { _, err = DecodeDeclare(body) })
	if err == nil {
		t.Fatal("a declare of integers decoded")
	}
	if bound := uint64(64 * len(body)); got > bound {
		t.Fatalf("decoding a %d-byte declare allocated %d bytes, more than %d", len(body), got, bound)
	}
}
