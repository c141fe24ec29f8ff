//go:build unix

package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestConcurrentExportsDoNotEachStageAWholeBundle: attack: an export is
// staged whole into a temporary file before its first byte (opExport),
// and rateAnswer only bounds the rate the caller reads it at, from that
// first byte, never the whole: a caller that reads at exactly the
// minimum data rate (128 KiB/s) keeps its staged file for size/rate (a
// 1 GiB bundle: 2.3 h). Nothing bounded how many exports were staged at
// once but MaxConns: 32 callers (a script exporting every bundle in
// parallel, or one runaway loop) staged 32 whole copies of the largest
// bundle in TMPDIR (often a tmpfs: memory), 32 GiB for 1 GiB bundles,
// held for hours. Now at most MaxStagedExports are staged at once (as
// many as resolver.MaxRefusalDrains), and those beyond are answered
// busy (503, 5004, retryable) before any staging.
func TestConcurrentExportsDoNotEachStageAWholeBundle(t *testing.T) {
	const callers = 12
	const bound = resolver.MaxRefusalDrains // a few, as for refused imports' drains
	t.Setenv("TMPDIR", t.TempDir())
	store, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	data := bigBundle(t, store, 2<<20)
	if _, err := store.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(store, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var conns []net.Conn
	for range callers {
		conn, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
		// Asked; read slowly (here: not yet, within the grace).
		fmt.Fprintf(conn, "GET /v1/export?bundle_id=org.example.big HTTP/1.1\r\nHost: agent\r\n\r\n")
	}
	most := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		staged, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "ampbundle-export-*"))
		most = max(most, len(staged))
		if most == callers {
			break
		}
	}
	if most > bound {
		t.Fatalf("%d exports of one %d MiB bundle, read slowly, were staged at once (%d MiB in TMPDIR, held while "+
			"each caller reads at the minimum rate): nothing bounds staged exports but MaxConns (%d)",
			most, len(data)>>20, most*len(data)>>20, MaxConns)
	}
	// Those beyond the bound are answered busy (503, 5004: retry).
	busy := 0
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			continue
		}
		var doc errorDoc
		if resp.StatusCode == http.StatusServiceUnavailable && json.NewDecoder(resp.Body).Decode(&doc) == nil &&
			doc.Error.Code == "busy" && doc.Error.AMPCode == uint16(amp.CodeOverloaded) {
			busy++
		}
	}
	if busy != callers-bound {
		t.Fatalf("%d of %d exports beyond the %d staged were answered 503 busy (5004)", busy, callers-bound, bound)
	}
}
