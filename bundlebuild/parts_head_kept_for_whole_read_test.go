package bundlebuild

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestPartsHeadKeptForTheWholeRead
//
// Attack (a hostile mirror handing parts whose first item is as large as
// the manifest limit allows, 16 MiB): CheckCarries buffers the head of the
// stream to hand it again to the bundle reader (BUNDLE-14). Once those
// bytes have been handed on, Read keeps an empty slice of the buffer
// (p.head[n:]), which still holds the whole buffer's memory: the 16 MiB
// (more with the buffer's growth) stay allocated for the whole read of
// the parts, an import of gigabytes, beside the bundle reader's own copy
// of the same item.
//
// Before (review 75): after the head had been read through, 18 MiB stayed
// reachable from the reader. Defence (docs/SPEC-DECISIONS.md BUNDLE-18):
// the buffer is released once the bundle reader has had all of it; the
// reader's memory is its read buffer (PartsReader's doc), not a second
// manifest.
func TestPartsHeadKeptForTheWholeRead(t *testing.T) {
	const item, tail = 15 << 20, 1 << 20
	// A CBOR byte string of 15 MiB: one item, read whole by Identify,
	// which then finds it is no bundle (the head is kept all the same).
	data := make([]byte, 5+item+tail)
	data[0] = 0x5a
	binary.BigEndian.PutUint32(data[1:5], item)
	dir := t.TempDir()
	path := filepath.Join(dir, bundle.PartName("a.ampb", 1, 1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	x := &bundle.PartIndex{Format: bundle.PartsFormat, BundleID: "org.example.a", Version: 1, Name: "a.ampb", Size: uint64(len(data)), SHA256: sum[:],
		Parts: []bundle.PartEntry{{Name: filepath.Base(path), Size: uint64(len(data)), SHA256: sum[:]}}}
	data = nil

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	pr := NewPartsReader(x, []string{path})
	defer pr.Close()
	// Read past the head, stopping short of the end: the bundle reader
	// is still streaming the artifacts.
	if _, err := io.CopyN(io.Discard, pr, 5+item+tail/2); err != nil {
		t.Fatal(err)
	}
	after := heap()
	runtime.KeepAlive(pr)
	if kept := int64(after) - int64(before); kept > 4<<20 {
		t.Fatalf("a parts reader past its %d-byte head still holds %d bytes: the head it handed on stays buffered for the whole read", 5+item, kept)
	} else {
		t.Logf("past the head the reader holds %d bytes", kept)
	}
}
