package etcdledger

import (
	"bytes"
	"testing"
	"time"
)

// FuzzDecodeEntry: any bytes under an entry key decode or are refused
// without panic; what decodes encodes back to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(entry{state: stateDone, expires: time.UnixMilli(1_800_000_000_000), reserve: 1024, end: 1_800_000_001, reply: []byte("x")}.encode())
	f.Add(entry{state: stateRunning, expires: time.UnixMilli(1_800_000_000_000), reserve: 4096, end: 1_800_000_064}.encode())
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		if !bytes.Equal(e.encode(), b) {
			t.Fatalf("decoded %x re-encodes to %x", b, e.encode())
		}
	})
}

// FuzzDecodeCounter: a usage counter decodes to a count that formats back
// to the same bytes, or is refused.
func FuzzDecodeCounter(f *testing.F) {
	for _, s := range []string{"0", "1180", "-1", "01", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeCounter(b)
		if err == nil && (n < 0 || itoa(n) != string(b)) {
			t.Fatalf("%q decoded to %d", b, n)
		}
	})
}

// FuzzParseURL: a ledger URL parses to 1-16 host:port endpoints and a
// prefix that starts and ends with "/", or is refused.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379", "etcd://a:1,b:2/p/q", "etcd://[::1]:1/x", "etcd://a:1/../"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, p, err := ParseURL(s)
		if err != nil {
			return
		}
		if len(e) == 0 || len(e) > maxEndpoints || len(p) < 1 || p[0] != '/' || p[len(p)-1] != '/' {
			t.Fatalf("%q: %v %q", s, e, p)
		}
	})
}
