package amphttp

import (
	"bytes"
	"testing"
)

// TestChunkedBodyIsChargedWhatItHolds: a body of unknown length (chunked)
// is charged what it holds, 64 KiB at a time as it arrives, and its
// buffers hold what was charged (threat: a buffer grown by doubling was
// charged its whole new capacity, to the peer and to the server, so an
// 8 MiB + 1 body was charged 16 MiB; with a known length the buffer's
// capacity ran ahead of the bytes charged). The joined copy is charged
// while it is made, and the chunks' charge given back after: what stays
// charged is the body.
func TestChunkedBodyIsChargedWhatItHolds(t *testing.T) {
	const size = 8<<20 + 1
	for _, length := range []int64{-1, size} {
		var declared, charged, peak int64
		body, err := readBody(bytes.NewReader(make([]byte, size)), length, 16<<20,
			func(n int64) bool { declared += n; return true },
			func(n int64) bool { charged += n; peak = max(peak, charged); return true },
			func(n int64) { charged += n; peak = max(peak, charged) },
			func(n int64) { charged -= n })
		if err != nil || len(body) != size {
			t.Fatalf("length %d: read %d bytes, %v", length, len(body), err)
		}
		if declared > size+readChunk {
			t.Errorf("length %d: the peer was charged %d bytes for a body of %d", length, declared, size)
		}
		if charged != size || cap(body) != size {
			t.Errorf("length %d: the body of %d bytes holds %d and stays charged %d", length, size, cap(body), charged)
		}
		if peak > 2*size+readChunk {
			t.Errorf("length %d: the server was charged up to %d bytes for a body of %d", length, peak, size)
		}
	}
}
