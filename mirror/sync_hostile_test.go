package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// trickle serves bundle files one byte every tick after honest headers (a
// slowloris mirror); everything else is served by h.
type trickle struct {
	h    http.Handler
	tick time.Duration
}

func (tr *trickle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, BundlesPrefix) {
		tr.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	tr.h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	for _, c := range rec.Body.Bytes() {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(tr.tick):
		}
		w.Write([]byte{c})
		w.(http.Flusher).Flush()
	}
}

func TestSyncAbandonsSlowlorisMirrorBody(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	ts := httptest.NewServer(&trickle{h: m, tick: 20 * time.Millisecond})
	defer ts.Close()
	s := agentStore(t)
	before := state(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := Sync(ctx, s, SyncOptions{URL: ts.URL, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync"),
		StallTimeout: 300 * time.Millisecond})
	if err != nil || len(rep.Items) != 1 || rep.Items[0].Error != string(ErrIncomplete) {
		t.Fatalf("a trickling mirror held the sync: %+v %v", rep, err)
	}
	if state(t, s) != before {
		t.Fatal("a stalled download changed the store")
	}
}

// cutMany is a hostile mirror whose index offers n bundle files of size
// bytes each and which cuts every download after half of it.
func cutMany(m http.Handler, n int, size int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == IndexPath:
			ix := Index{Format: IndexFormat, Generation: 9, Capabilities: []IndexCap{}}
			for i := range n {
				id := "org.example.b" + strconv.Itoa(i)
				ix.Bundles = append(ix.Bundles, IndexEntry{BundleID: id, Version: 1, Size: size,
					SHA256: strings.Repeat("ab", 32), Href: BundlesPrefix + id})
			}
			json.NewEncoder(w).Encode(ix)
		case strings.HasPrefix(r.URL.Path, BundlesPrefix):
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			w.WriteHeader(http.StatusOK)
			w.Write(make([]byte, size/2))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		default:
			m.ServeHTTP(w, r)
		}
	})
}

func TestSyncSpoolCannotBeFilledByManyCutDownloads(t *testing.T) {
	m, _ := startMirror(t, newStore(t), nil)
	const size, limit = 64 << 10, 100 << 10
	ts := httptest.NewUnstartedServer(cutMany(m, 8, size))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.Start()
	defer ts.Close()
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.MaxSpoolBytes = limit })
	if err != nil {
		t.Fatal(err)
	}
	refusedForSpace := 0
	for _, it := range rep.Items {
		if it.Error == string(ErrTooLarge) {
			refusedForSpace++
		}
	}
	names, _ := filepath.Glob(filepath.Join(spool, "*"))
	total := int64(0)
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	if total > limit || refusedForSpace == 0 {
		t.Fatalf("spool holds %d bytes in %d files (limit %d), %d refused for space", total, len(names), limit, refusedForSpace)
	}
}

// An auditor must be able to tell which mirror a bundle came from, for an
// accepted import and for a refused (tampered) one.
func TestSyncAuditNamesTheMirrorFileOfEveryImport(t *testing.T) {
	v1, v2 := testBundle(t, 1), testBundle(t, 2)
	_, good := startMirror(t, newStore(t, v1), nil)
	m2, _ := startMirror(t, newStore(t, v2), nil)
	flipLast := func(b []byte) []byte { b[len(b)-2] ^= 0x01; return b } // inside the last artifact
	flipped := flipLast(append([]byte(nil), v2...))
	bad := httptest.NewServer(tamper(m2, flipLast, func(ix []byte) []byte { return bytes.ReplaceAll(ix, []byte(sum(v2)), []byte(sum(flipped))) }))
	defer bad.Close()
	s := agentStore(t)
	for _, u := range []string{good.URL, bad.URL} {
		if _, err := syncOnce(t, s, u, nil); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		if e.Source != "" {
			got[e.Action] = e.Source
		}
	}
	if got["import"] != good.URL+"/bundles/org.example.echo" {
		t.Errorf("accepted import audited with source %q", got["import"])
	}
	if got["import_refused"] != bad.URL+"/bundles/org.example.echo" {
		t.Errorf("refused import audited with source %q (entries %+v)", got["import_refused"], got)
	}
}
