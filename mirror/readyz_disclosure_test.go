package mirror

// Threat: /readyz on the public listener handed any anonymous peer the
// store check's details (blob hashes, interrupted imports, schema compile
// errors; on the agent, handler program paths): a map of a damaged host
// for an attacker. The public answer carries the status and fixed reason
// names only; the details go to the log (MIRROR-9).

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer a logger writes from other goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReadyzTellsAnAnonymousPeerNoDetailOfADamagedStore: over a tampered
// store, /readyz is 503 with integrity/store_damaged, once, with the
// code's fixed text; no subject and none of the check's messages (the
// tampered blob's key). The log has them, once however often the probe
// asks.
func TestReadyzTellsAnAnonymousPeerNoDetailOfADamagedStore(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	tamperSchema(t, p)
	var log lockedBuffer
	m, ts := startMirror(t, p, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
		o.Now = func() time.Time { return testNow }
	})
	full := m.Ready()
	if full.Status != "not_ready" || len(full.Problems) == 0 {
		t.Fatalf("a tampered store: %+v", full)
	}
	for range 3 {
		resp, body := get(t, http.MethodGet, ts.URL+ReadyPath, nil)
		code, rep := readyOf(t, ts.URL)
		if resp.StatusCode != http.StatusServiceUnavailable || code != resp.StatusCode || rep.Status != "not_ready" ||
			len(rep.Problems) != 1 || rep.Problems[0].Check != "integrity" || rep.Problems[0].Code != "store_damaged" ||
			rep.Problems[0].Subject != "" || rep.Problems[0].Message != readyMessages["store_damaged"] {
			t.Fatalf("/readyz: %d %s, want 503 with integrity/store_damaged once, its fixed text, no subject", resp.StatusCode, body)
		}
		for _, p := range full.Problems {
			if strings.Contains(string(body), p.Message) {
				t.Fatalf("/readyz tells an anonymous peer %q: %s", p.Message, body)
			}
		}
	}
	logged := log.String()
	for _, p := range full.Problems {
		if strings.Count(logged, p.Message) != 1 {
			t.Errorf("the log has %q %d times, want once:\n%s", p.Message, strings.Count(logged, p.Message), logged)
		}
	}
}
