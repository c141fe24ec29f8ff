package mirror

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// bigBundleSource is a Source serving one bundle, org.example.big, of
// size bytes (not a signed bundle: the server serves what the store
// exports, and these tests look only at how it is written).
type bigBundleSource struct {
	Source
	size int
}

func (b bigBundleSource) Generation() uint64 { return 1 }
func (b bigBundleSource) Bundles() ([]resolver.Bundle, error) {
	return []resolver.Bundle{{BundleID: "org.example.big", Version: 1}}, nil
}
func (b bigBundleSource) Catalog() (*resolver.Catalog, error) { return &resolver.Catalog{}, nil }
func (b bigBundleSource) Export(_ string, w io.Writer) error {
	_, err := io.Copy(w, io.LimitReader(zeros{}, int64(b.size)))
	return err
}
func (b bigBundleSource) Close() error { return nil }

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// indexStatus is the status of GET /index.json on a new connection (0:
// no answer).
func indexStatus(url string) int {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + IndexPath)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSlowReaderPinsAMirrorSlot: a peer asks for a large bundle file and
// then reads nothing (a zero TCP window). The mirror's write blocked until
// the http.Server's WriteTimeout (10 minutes in 'ampbundle serve'),
// holding the request slot all that time: a quarter of the slots per
// address, so four addresses reading nothing shut every other site out of
// the mirror for ten minutes at no bandwidth cost to them (threat:
// slow-read pinning the mirror's slots). The body is now written under
// the minimum data rate (MIRROR-14): a reader that stalls past the grace
// is cut off and its slot given back. The bound: the grace (1 s here)
// plus one 64 KiB step at 128 KiB/s is 1.5 s after the last progress; 8 s
// leaves room for a loaded machine, and is far below the write timeout.
// That the slot was held is seen in the server's own count, not by a
// probe racing the cut (a probe on a loaded machine missed the window).
func TestSlowReaderPinsAMirrorSlot(t *testing.T) {
	m, ts := startMirror(t, "", func(o *Options) {
		o.Open = func() (Source, error) { return bigBundleSource{size: 32 << 20}, nil }
		o.MaxInFlight, o.MaxPeerInFlight, o.grace = 4, 1, time.Second
	})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() }) // before ts.Close, which waits for the handler
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	if _, err := io.WriteString(conn, "GET "+BundlesPrefix+"org.example.big HTTP/1.1\r\nHost: mirror\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The peer's one slot is held by the stalled read.
	deadline := time.Now().Add(10 * time.Second)
	for m.slots.Requests() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stalled download never held its slot (the test proves nothing)")
		}
		time.Sleep(2 * time.Millisecond)
	}
	start := time.Now()
	for m.slots.Requests() != 0 {
		if time.Since(start) > 8*time.Second {
			t.Fatal("a peer reading nothing still holds its mirror slot 8 s on: it is held until the write timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := indexStatus(ts.URL); got != http.StatusOK {
		t.Fatalf("after the cut the peer's next request was answered %d, want 200", got)
	}
}

// TestReaderAtTheMinimumRateGetsTheWholeBundle: the rate cuts only a
// reader below it; one reading steadily, here in small reads with pauses
// shorter than the grace, gets every byte of a bundle several socket
// buffers long (threat: the slow-read fix cutting an honest sync).
func TestReaderAtTheMinimumRateGetsTheWholeBundle(t *testing.T) {
	const size = 8 << 20
	_, ts := startMirror(t, "", func(o *Options) {
		o.Open = func() (Source, error) { return bigBundleSource{size: size}, nil }
		o.MinDataRate, o.grace = 1<<20, 500*time.Millisecond
	})
	resp, err := http.Get(ts.URL + BundlesPrefix + "org.example.big")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 256<<10)
	var got int
	for {
		n, err := resp.Body.Read(buf)
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("cut off after %d of %d bytes: %v", got, size, err)
		}
		time.Sleep(5 * time.Millisecond) // at most ~50 MiB/s: above the rate, below the loopback's
	}
	if got != size {
		t.Fatalf("%d of %d bytes", got, size)
	}
}
