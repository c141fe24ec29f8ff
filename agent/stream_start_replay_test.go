package agent

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// handleRaw hands raw (a captured message) to a and returns the verified
// reply, or nil for none.
func (e *env) handleRaw(a *Agent, raw []byte) *amp.Message {
	e.t.Helper()
	out, err := a.Handle(context.Background(), raw)
	if err != nil {
		e.t.Fatalf("handle: %v", err)
	}
	if out == nil {
		return nil
	}
	return e.receive(e.caller, out)
}

// restartAgent closes e's agent and its store and opens both again over
// the same files (its durable ledger beside the store), as a restart of
// the process does.
func (e *env) restartAgent() *Agent {
	e.t.Helper()
	must(e.t, e.agent.Close())
	must(e.t, e.store.Close())
	s, err := resolver.Open(e.path, resolver.Options{Now: e.clock.Now})
	must(e.t, err)
	e.store = s
	cfg := e.cfg
	cfg.Store = s
	a, err := New(cfg)
	must(e.t, err)
	e.agent = a // closed by newEnv's cleanup
	return a
}

// TestStreamStartReplayedAfterItsCacheIsGoneOpensNothing: STREAM_START was
// kept only in the ledger's memory cache, which a restart empties and
// the sender's own later messages overflow (1/8 of the cache per
// principal). A STREAM_START captured within its ttl (24 h by default)
// then opened the finished stream again under its sender's identity and
// share; with the captured chunks and a captured STREAM_END that was
// refused (missing_chunks: kept in the cache only), the application was
// handed the same stream a second time. Now STREAM_START is recorded in
// the ledger like a hand-over (STREAM-13): a replay gets the recorded
// answer (no reply) and opens nothing.
func TestStreamStartReplayedAfterItsCacheIsGoneOpensNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		memory bool // a memory ledger with a small cache (else the durable log, restarted)
	}{
		{"restart", false},
		{"cache overflowed", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &received{}
			e := newEnv(t, withConfig(func(cfg *Config) {
				cfg.Streams = rec.handler
				cfg.StreamLimits = StreamLimits{SpoolDir: t.TempDir()}
			}), func(e *env) {
				if c.memory {
					l, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: e.clock.Now, VolatileEntries: 16})
					must(t, err)
					e.cfg.Ledger = l
				}
			})
			content := []byte("abcdefghij")
			cs := chunks(content, 4)
			_, start := e.seal(e.caller, amp.TypeStreamStart, startBody(t, "s", content, 4))
			_, d0 := e.seal(e.caller, amp.TypeStreamData, dataBody(t, "s", 0, cs[0]))
			_, d1 := e.seal(e.caller, amp.TypeStreamData, dataBody(t, "s", 1, cs[1]))
			_, d2 := e.seal(e.caller, amp.TypeStreamData, dataBody(t, "s", 2, cs[2]))
			_, end1 := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
			a := e.agent
			for _, raw := range [][]byte{start, d0, d2} {
				if m := e.handleRaw(a, raw); m != nil {
					t.Fatalf("answered %s", m.Type)
				}
			}
			wantStreamError(t, e.handleRaw(a, end1), amp.CodeInvalidMessage, "missing_chunks")
			e.handleRaw(a, d1)
			wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), "s", 3)
			if len(rec.info) != 1 {
				t.Fatalf("handed %d times, want 1", len(rec.info))
			}
			if c.memory {
				for range 4 { // the sender's own messages push its oldest out
					if m := e.send(amp.TypePing, nil); m == nil || m.Type != amp.TypePong {
						t.Fatal("ping not answered")
					}
				}
			} else {
				a = e.restartAgent()
			}
			// The replayer sends what it captured.
			if m := e.handleRaw(a, start); m != nil {
				t.Fatalf("replayed STREAM_START answered %s, want the recorded (no) reply", m.Type)
			}
			if n := a.OpenStreams(); n != 0 {
				t.Fatalf("replayed STREAM_START opened %d streams", n)
			}
			for _, raw := range [][]byte{d0, d1, d2} {
				wantStreamError(t, e.handleRaw(a, raw), amp.CodeInvalidMessage, "unknown_stream")
			}
			wantStreamError(t, e.handleRaw(a, end1), amp.CodeInvalidMessage, "unknown_stream")
			if len(rec.info) != 1 {
				t.Fatalf("the application was handed the stream %d times, want 1", len(rec.info))
			}
		})
	}
}

// fullStore is a memory store whose MarkRunning refuses for want of room
// while full is set.
type fullStore struct {
	*ledger.MemoryStore
	full atomic.Bool
}

func (s *fullStore) MarkRunning(k ledger.Key, expires time.Time) error {
	return s.MarkRunningWithin(k, expires, 0)
}

func (s *fullStore) MarkRunningWithin(k ledger.Key, expires time.Time, reserve int64) error {
	if s.full.Load() {
		return amp.Named(amp.CodeOverloaded, ledger.ErrFull, "full")
	}
	return s.MemoryStore.MarkRunningWithin(k, expires, reserve)
}

// TestStreamStartTheLedgerCannotRecordOpensNothing: the record of a
// STREAM_START (STREAM-13) is its last check. When the ledger has no
// room, the STREAM_START is refused retryably (5004 ledger_full, not
// recorded) and leaves no stream open, no byte charged and no spool
// file; the same message, sent again once there is room, opens it.
func TestStreamStartTheLedgerCannotRecordOpensNothing(t *testing.T) {
	rec := &received{}
	dir := t.TempDir()
	st := &fullStore{MemoryStore: ledger.NewMemory(ledger.Limits{})}
	e := newEnv(t, withConfig(func(cfg *Config) {
		cfg.Streams = rec.handler
		cfg.StreamLimits = StreamLimits{SpoolDir: dir, SpoolThreshold: 4}
	}), func(e *env) {
		l, err := ledger.New(st, ledger.Options{Now: e.clock.Now})
		must(t, err)
		e.cfg.Ledger = l
	})
	content := []byte("abcdefghij")
	_, start := e.seal(e.caller, amp.TypeStreamStart, startBody(t, "s", content, 4))
	st.full.Store(true)
	m := e.handleRaw(e.agent, start)
	wantRetryable(t, m, amp.CodeOverloaded) // ledger_full
	files, err := os.ReadDir(dir)
	must(t, err)
	if n := e.agent.OpenStreams(); n != 0 || len(files) != 0 || e.agent.streams.inFlight != 0 {
		t.Fatalf("refused STREAM_START left %d streams, %d spool files, %d bytes charged", n, len(files), e.agent.streams.inFlight)
	}
	st.full.Store(false)
	if m := e.handleRaw(e.agent, start); m != nil {
		t.Fatalf("STREAM_START sent again answered %s", m.Type)
	}
	e.sendAll(e.caller, "", "s", content, 4)
	if len(rec.info) != 1 {
		t.Fatalf("handed %d times, want 1", len(rec.info))
	}
}

// wantRetryable checks a retryable ERROR of code.
func wantRetryable(t *testing.T, m *amp.Message, code amp.Code) {
	t.Helper()
	if m == nil {
		t.Fatalf("no reply, want ERROR %d", code)
	}
	eb := errorOf(t, m)
	if eb.Code != code || eb.Retry == nil || !*eb.Retry {
		t.Fatalf("error %d retry %v (%s), want %d, retryable", eb.Code, eb.Retry, eb.Message, code)
	}
}
