package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// trickleBody writes body in chunks of chunk bytes, one every pause, with
// an honest Content-Length, until done or the client goes away.
func trickleBody(w http.ResponseWriter, r *http.Request, ctype string, body []byte, chunk int, pause time.Duration) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	for len(body) > 0 {
		n := min(len(body), chunk)
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		body = body[n:]
		select {
		case <-r.Context().Done():
			return
		case <-time.After(pause):
		}
	}
}

// The stall watchdog alone asks StallMinBytes (1 KiB) per StallTimeout
// window: a mirror sending just over it kept a sync for days (a 16 MiB
// index at the 30 s default takes 5.7 days). Each body now has
// StallTimeout + size / MinDataRate, however steadily it trickles. Scaled
// down: a window of 200 ms and 4 MiB/s give a 512 KiB index about 330 ms;
// the mirror, at 50 KiB/s (ten times the watchdog's 5 KiB/s), would take
// over 10 s. The sync must end at its deadline, not before, and well
// before the trickle would have ended: within 5 s of the deadline, room
// for a loaded machine (with 400 KiB/s and 3 windows, 600 ms, of room the
// bound was a wall-clock race with the rest of the sync). The cut must be
// the body's own deadline ("slower than the minimum data rate"), not the
// run's slack, which ends such a trickle some seconds on.
func TestSyncAbandonsAnIndexTricklingPastTheStallWatchdog(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	const window, rate = 200 * time.Millisecond, 4 << 20
	var size int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != IndexPath {
			m.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, r)
		body := append(rec.Body.Bytes(), bytes.Repeat([]byte(" "), 512<<10)...)
		size = len(body)
		trickleBody(w, r, "application/json", body, 2<<10, 40*time.Millisecond)
	}))
	defer ts.Close()
	s := agentStore(t)
	start := time.Now()
	_, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.StallTimeout, o.MinDataRate = window, rate })
	el := time.Since(start)
	deadline := admission.DataDeadline(int64(size), rate, window, 0)
	t.Logf("sync took %v for a deadline of %v; err %v", el, deadline, err)
	if amp.NameOf(err) != ErrMirrorUnreachable || !strings.Contains(err.Error(), "slower than the minimum data rate") {
		t.Fatalf("a trickled index: %v, want %s (slower than the minimum data rate)", err, ErrMirrorUnreachable)
	}
	if el < deadline || el > deadline+5*time.Second {
		t.Errorf("a mirror trickling 50 KiB/s held the sync for %v; its deadline was %v", el, deadline)
	}
}

// The same for a bundle file: the index declares 512 KiB, the mirror
// sends its head at once (a genuine file: its head passes, MIRROR-23) and
// then trickles the file; the download is
// cut at its deadline (download_incomplete), not before and within 5 s of
// it (the whole file at 50 KiB/s takes over 10 s), and what arrived is
// kept for the next run to resume.
func TestSyncAbandonsABundleFileTricklingPastTheStallWatchdog(t *testing.T) {
	const window, rate = 200 * time.Millisecond, 4 << 20
	file := largeEchoBundle(t, 512<<10)
	size, fileSum := int64(len(file)), sha256.Sum256(file)
	m, _ := startMirror(t, newStore(t), nil)
	id := "org.example.echo"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == IndexPath:
			json.NewEncoder(w).Encode(Index{Format: IndexFormat, Generation: 1, Bundles: []IndexEntry{{BundleID: id, Version: 1,
				Size: size, SHA256: hex.EncodeToString(fileSum[:]), Href: BundlesPrefix + id}}})
		case r.URL.Path == BundlesPrefix+id && strings.HasPrefix(r.Header.Get("Range"), "bytes=0-") && r.Header.Get("Range") != "bytes=0-":
			// The file's head (a Range with an end): sent at once. Were
			// it trickled too, its own deadline (64 KiB at the rate,
			// 216 ms) could cut it on a loaded machine before the
			// download under test began.
			w.Header().Set("Content-Type", "application/ampbundle")
			w.Write(file)
		case r.URL.Path == BundlesPrefix+id:
			trickleBody(w, r, "application/ampbundle", file, 2<<10, 40*time.Millisecond)
		default:
			m.ServeHTTP(w, r)
		}
	}))
	defer ts.Close()
	s := agentStore(t)
	before := state(t, s)
	start := time.Now()
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.StallTimeout, o.MinDataRate = window, rate })
	el := time.Since(start)
	deadline := admission.DataDeadline(size, rate, window, 0)
	if err != nil || len(rep.Items) != 1 || rep.Items[0].Error != string(ErrIncomplete) || !strings.Contains(rep.Items[0].Message, "slower than the minimum data rate") {
		t.Fatalf("a trickled bundle file: %+v %v, want one item %s (slower than the minimum data rate)", rep, err, ErrIncomplete)
	}
	if el < deadline || el > deadline+5*time.Second {
		t.Errorf("a mirror trickling a bundle file held the sync for %v; its deadline was %v", el, deadline)
	}
	part, err := os.Stat(filepath.Join(filepath.Dir(s.Path()), "sync", id+"-"+hex.EncodeToString(fileSum[:])+".part"))
	if err != nil || part.Size() == 0 || part.Size() >= size {
		t.Errorf("the partial file is not kept for the next run: %v", err)
	}
	if state(t, s) != before {
		t.Fatal("a cut download changed the store")
	}
}

// The deadline follows the size: an honest mirror sending a 384 KiB index
// at 800 KiB/s, above the minimum of 128 KiB/s, takes more than two stall
// windows and is read to the end.
func TestSyncGivesASlowButSteadyMirrorTheTimeItsSizeNeeds(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	const window = 200 * time.Millisecond
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != IndexPath {
			m.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, r)
		trickleBody(w, r, "application/json", append(rec.Body.Bytes(), bytes.Repeat([]byte(" "), 384<<10)...), 16<<10, 20*time.Millisecond)
	}))
	defer ts.Close()
	s := agentStore(t)
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.StallTimeout, o.MinDataRate = window, 128<<10 })
	if err != nil || rep.Count(OutcomeImported) != 1 {
		t.Fatalf("a steady mirror above the minimum rate: %+v %v", rep, err)
	}
}
