package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// agentStore is an empty store trusting testKey (an agent host).
func agentStore(t *testing.T, files ...[]byte) *resolver.Store {
	t.Helper()
	p := newStore(t, files...)
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func syncOnce(t *testing.T, s *resolver.Store, url string, mod func(*SyncOptions)) (*SyncReport, error) {
	t.Helper()
	opts := SyncOptions{URL: url, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync")}
	if mod != nil {
		mod(&opts)
	}
	return Sync(context.Background(), s, opts)
}

// state is what a store has installed and its audit length besides refusals
// (every refused import is audited as import_refused): a sync that changes
// nothing leaves both equal.
func state(t *testing.T, s *resolver.Store) string {
	t.Helper()
	bs, err := s.Bundles()
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.BundleID+"@"+strconv.FormatUint(b.Version, 10))
	}
	n := 0
	for _, e := range a {
		if e.Action != "import_refused" {
			n++
		}
	}
	return strings.Join(out, ",") + " gen " + strconv.FormatUint(s.Generation(), 10) + " audit " + strconv.Itoa(n)
}

func TestSyncImportsNewBundlesThenReportsNothingNew(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	s := agentStore(t)
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.DryRun = true })
	if err != nil || rep.Count(OutcomePlanned) != 1 || state(t, s) != " gen 1 audit 1" {
		t.Fatalf("dry run: %+v %v, store %s", rep, err, state(t, s))
	}
	rep, err = syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Count(OutcomeImported) != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if st := state(t, s); !strings.HasPrefix(st, "org.example.echo@1 ") {
		t.Fatalf("store %s", st)
	}
	rep, err = syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Count(OutcomeCurrent) != 1 || rep.Count(OutcomeImported) != 0 {
		t.Fatalf("second sync: %+v %v", rep, err)
	}
}

// tamper serves h, passing each bundle body through fn (index and other
// documents through idx when set).
func tamper(h http.Handler, fn func([]byte) []byte, idx func([]byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		switch {
		case strings.HasPrefix(r.URL.Path, BundlesPrefix) && fn != nil && rec.Code == 200:
			body = fn(append([]byte(nil), body...))
		case r.URL.Path == IndexPath && idx != nil:
			body = idx(append([]byte(nil), body...))
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

func flipMiddle(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestSyncFromTamperedMirrorChangesNothing(t *testing.T) {
	v1 := testBundle(t, 1)
	v2 := testBundle(t, 2)
	flipped := flipMiddle(append([]byte(nil), v2...))
	cases := []struct {
		name    string
		station [][]byte
		handler func(m *Server) http.Handler
		want    string // error name of the refused item
	}{
		{"one byte flipped, index unchanged", [][]byte{v2}, func(m *Server) http.Handler { return tamper(m, flipMiddle, nil) }, string(ErrIndexMismatch)},
		{"one byte flipped, index rewritten to match", [][]byte{v2}, func(m *Server) http.Handler {
			return tamper(m, flipMiddle, func(ix []byte) []byte { return bytes.ReplaceAll(ix, []byte(sum(v2)), []byte(sum(flipped))) })
		}, "*"},
		{"older version offered", [][]byte{v1}, func(m *Server) http.Handler { return m }, string(ErrOlderOffered)},
		{"file truncated, index rewritten to match", [][]byte{v2}, func(m *Server) http.Handler {
			return tamper(m, func(b []byte) []byte { return b[:len(b)-7] }, func(ix []byte) []byte {
				ix = bytes.ReplaceAll(ix, []byte(sum(v2)), []byte(sum(v2[:len(v2)-7])))
				return bytes.ReplaceAll(ix, []byte(`"size":`+strconv.Itoa(len(v2))), []byte(`"size":`+strconv.Itoa(len(v2)-7)))
			})
		}, "*"},
		{"longer file than the index says", [][]byte{v2}, func(m *Server) http.Handler {
			return tamper(m, func(b []byte) []byte { return append(b, 0) }, nil)
		}, string(ErrIndexMismatch)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _ := startMirror(t, newStore(t, c.station...), nil)
			ts := httptest.NewServer(c.handler(m))
			defer ts.Close()
			// The agent has version 2 installed for "older", version 1 otherwise.
			agentHas := v1
			if c.want == string(ErrOlderOffered) {
				agentHas = v2
			}
			s := agentStore(t, agentHas)
			before := state(t, s)
			rep, err := syncOnce(t, s, ts.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Count(OutcomeRefused) != 1 || rep.Count(OutcomeImported) != 0 {
				t.Fatalf("report %+v", rep.Items)
			}
			if got := rep.Items[0].Error; (c.want == "*" && got == "") || (c.want != "*" && got != c.want) {
				t.Fatalf("refused with %q, want %q (%s)", got, c.want, rep.Items[0].Message)
			}
			if after := state(t, s); after != before {
				t.Fatalf("store changed: %s -> %s", before, after)
			}
		})
	}
}

// cutOnce serves the first bundle GET cut after half its bytes (the
// connection drops), then serves normally; it records the Range headers.
type cutOnce struct {
	h      http.Handler
	cut    atomic.Bool
	ranges atomic.Value
}

func (c *cutOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, BundlesPrefix) {
		c.ranges.Store(r.Header.Get("Range"))
		if c.cut.CompareAndSwap(false, true) {
			rec := httptest.NewRecorder()
			c.h.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
	}
	c.h.ServeHTTP(w, r)
}

func TestInterruptedSyncResumesAndChangesNothingUntilComplete(t *testing.T) {
	v2 := testBundle(t, 2)
	m, _ := startMirror(t, newStore(t, v2), nil)
	cut := &cutOnce{h: m}
	ts := httptest.NewUnstartedServer(cut)
	ts.Config.ErrorLog = nil
	ts.Start()
	defer ts.Close()
	s := agentStore(t)
	before := state(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Count(OutcomeRefused) != 1 || rep.Items[0].Error != string(ErrIncomplete) {
		t.Fatalf("first sync: %+v %v", rep, err)
	}
	if state(t, s) != before {
		t.Fatal("a cut download changed the store")
	}
	rep, err = syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Count(OutcomeImported) != 1 {
		t.Fatalf("second sync: %+v %v", rep, err)
	}
	if rep.Items[0].Resumed != int64(len(v2)/2) || cut.ranges.Load() != "bytes="+strconv.Itoa(len(v2)/2)+"-" {
		t.Fatalf("resumed from %d with %v, want %d", rep.Items[0].Resumed, cut.ranges.Load(), len(v2)/2)
	}
	spool, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path()), "sync", "*"))
	if len(spool) != 0 {
		t.Fatalf("spool not emptied: %v", spool)
	}
}

func TestSyncNeverFollowsARedirect(t *testing.T) {
	var other atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	ts := httptest.NewServer(http.RedirectHandler(elsewhere.URL+WellKnownPath, http.StatusFound))
	defer ts.Close()
	_, err := syncOnce(t, agentStore(t), ts.URL, nil)
	if !errors.Is(err, ErrMirrorRefused) || other.Load() != 0 {
		t.Fatalf("err %v, %d requests elsewhere", err, other.Load())
	}
}

func TestSyncRefusesUntrustedPublisherFromMirror(t *testing.T) {
	// The station trusts a key the agent does not: the file verifies on the
	// station and is refused by the agent.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	station := filepath.Join(t.TempDir(), "station.db")
	st, err := resolver.Open(station, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	st.TrustAdd("other", other.Public().(ed25519.PublicKey), []string{"org.example"})
	st.TrustAdd("example", testKey.Public().(ed25519.PublicKey), []string{"org.example"})
	if _, err := st.Import(context.Background(), bytes.NewReader(testBundle(t, 1)), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, ts := startMirror(t, station, nil)
	// An agent that trusts another key only.
	p := filepath.Join(t.TempDir(), "agent.db")
	s, err := resolver.Open(p, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.TrustAdd("other", other.Public().(ed25519.PublicKey), []string{"org.example"})
	before := state(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Count(OutcomeRefused) != 1 || amp.ErrName(rep.Items[0].Error) == "" {
		t.Fatalf("%+v %v", rep, err)
	}
	if state(t, s) != before {
		t.Fatal("store changed")
	}
}
