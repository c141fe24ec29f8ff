package mirror

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// longerThanListed serves the statement files of m with extra bytes
// after them, the Content-Length saying so (header) or the body chunked.
type longerThanListed struct {
	*repeatMirror
	header bool
}

func (l longerThanListed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, ok := l.files[r.URL.Path]
	if !ok || !strings.HasPrefix(r.URL.Path, StatementsPrefix) {
		l.repeatMirror.ServeHTTP(w, r)
		return
	}
	l.fetches.Add(1)
	body := append(append([]byte(nil), data...), "and more"...)
	if l.header {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	} else {
		w.Write(body[:1])
		w.(http.Flusher).Flush() // chunked: no length said before the body
		body = body[1:]
	}
	w.Write(body)
}

// TestStatementsLongerThanListedEachCostADownload: MIRROR-15 ends a list
// at a file served otherwise than listed ("other bytes than the entry's
// size and SHA-256": index_mismatch, FORMAT.md §11.1), so that a mirror
// serving junk for each listed file costs a sync one download a list. A
// bundle file longer than listed is index_mismatch, but a statement or a
// heartbeat longer than listed (its entry's size, then more) was refused
// limit_exceeded, which is no mirror failure: the list went on, and a
// mirror serving every listed statement with a byte too many had each of
// 10,000 read to its listed size (up to 1 MiB, at the minimum data rate),
// every run. Should: more bytes than listed is a file other than the one
// listed: index_mismatch, and the rest of the list is not tried.
func TestStatementsLongerThanListedEachCostADownload(t *testing.T) {
	const n = 5
	for _, tc := range []struct {
		name   string
		header bool
		list   func(t *testing.T, hm *repeatMirror, i int)
	}{
		{"statements, length said", true, func(t *testing.T, hm *repeatMirror, i int) { hm.statement(strangerRevocation(t, byte(i+1))) }},
		{"statements, chunked", false, func(t *testing.T, hm *repeatMirror, i int) { hm.statement(strangerRevocation(t, byte(i+1))) }},
		{"heartbeats, chunked", false, func(t *testing.T, hm *repeatMirror, i int) {
			hb := signedHeartbeat(t, uint64(2+i), "2026-11-20T11:00:00Z", testKey)
			hm.heartbeat(t, hb)
			hm.ix.Heartbeats[len(hm.ix.Heartbeats)-1].BundleID = fmt.Sprintf("org.example.echo%d", i) // installed lines
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hm := newRepeatMirror(t)
			var installed [][]byte
			for i := range n {
				tc.list(t, hm, i)
				installed = append(installed, signedBundle(t, fmt.Sprintf("org.example.echo%d", i), testKey))
			}
			ts := httptest.NewServer(longerThanListed{hm, tc.header})
			defer ts.Close()
			s := agentStore(t, installed...)
			rep, err := syncOnce(t, s, ts.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := hm.fetches.Load(); got != 1 {
				t.Fatalf("one run downloaded %d of %d listed files each longer than listed, want 1 (the rest not tried); report %+v %+v", got, n, rep.Statements, rep.Heartbeats)
			}
			first := ""
			if len(rep.Statements) > 0 {
				first = rep.Statements[0].Error
			} else if len(rep.Heartbeats) > 0 {
				first = rep.Heartbeats[0].Error
			}
			if first != string(ErrIndexMismatch) {
				t.Fatalf("the first file is refused %q, want %s", first, ErrIndexMismatch)
			}
		})
	}
}
