package mirror

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// gzipPadded is data as a gzip stream that first carries pad bytes of
// empty deflate blocks (stored, of length 0), which inflate to nothing.
func gzipPadded(data []byte, pad int) []byte {
	var hdr bytes.Buffer
	zw := gzip.NewWriter(&hdr)
	zw.Flush() // the 10-byte header, then one empty block
	out := append([]byte(nil), hdr.Bytes()...)
	out = append(out, bytes.Repeat([]byte{0, 0, 0, 0xff, 0xff}, pad/5)...)
	var body bytes.Buffer
	fw, _ := flate.NewWriter(&body, flate.BestSpeed)
	fw.Write(data)
	fw.Close()
	out = append(out, body.Bytes()...)
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
	return binary.LittleEndian.AppendUint32(out, uint32(len(data)))
}

// gzipPaddingMirror answers every statement with a gzip stream padded to
// more than padBytes on the wire, whatever the request asked, counting
// the bytes it got onto the connection and the requests that offered to
// take gzip.
type gzipPaddingMirror struct {
	h         http.Handler
	files     map[string][]byte
	written   atomic.Int64
	askedGzip atomic.Int32
	done      chan struct{}
}

const padBytes = 32 << 20

func (m *gzipPaddingMirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, ok := m.files[r.URL.Path]
	if !ok || !strings.HasPrefix(r.URL.Path, StatementsPrefix) {
		m.h.ServeHTTP(w, r)
		return
	}
	defer func() { m.done <- struct{}{} }()
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		m.askedGzip.Add(1)
	}
	z := gzipPadded(data, padBytes)
	w.Header().Set("Content-Encoding", "gzip")
	for len(z) > 0 {
		n := min(len(z), 64<<10)
		if _, err := w.Write(z[:n]); err != nil {
			return
		}
		m.written.Add(int64(n))
		z = z[n:]
	}
}

// TestGzipPaddedStatementIsReadFarPastItsListedSize: the mirror lists a
// statement of a few hundred bytes and answers it with a gzip stream
// whose 32 MiB of empty deflate blocks inflate to nothing. Sync asked for
// gzip (Go's transport does unless told not to) and inflated it: every
// bound (the listed size, the minimum data rate, the stall window)
// counted inflated bytes, so the 32 MiB on the wire were read whole and
// the statement applied; the same padding fits any answer, a listed
// bundle file's or the index's, so what a run reads is bounded by time
// alone, not by the sizes listed. Should: sync asks for no encoding and
// inflates nothing (as OCI-13 for a registry): the gzip bytes are the
// body, longer than listed, so the statement is refused index_mismatch
// after its listed size and one byte, the rest unread.
func TestGzipPaddedStatementIsReadFarPastItsListedSize(t *testing.T) {
	hm := newRepeatMirror(t)
	st := strangerRevocation(t, 9)
	hm.statement(st)
	m := &gzipPaddingMirror{h: hm, files: hm.files, done: make(chan struct{}, 4)}
	ts := httptest.NewServer(m)
	defer ts.Close()
	s := agentStore(t)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-m.done // the handler's last write has returned
	if len(rep.Statements) != 1 {
		t.Fatalf("statements: %+v", rep.Statements)
	}
	it := rep.Statements[0]
	if m.askedGzip.Load() != 0 {
		t.Errorf("sync offered to take gzip (Accept-Encoding) for a listed file")
	}
	if it.Outcome != OutcomeRefused || it.Error != string(ErrIndexMismatch) {
		t.Errorf("statement of %d bytes answered with %d bytes of gzip padding: %s %s (%s), want refused %s", len(st), m.written.Load(), it.Outcome, it.Error, it.Message, ErrIndexMismatch)
	}
	if w := m.written.Load(); w >= padBytes {
		t.Errorf("the mirror got %d bytes onto the connection for a statement listed at %d bytes: all of them read", w, len(st))
	}
}
