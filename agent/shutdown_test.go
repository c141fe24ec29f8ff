package agent

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// gatedStore is a memory ledger store whose Sweep can be held at a gate,
// and which records every Sweep that reaches it after its Close.
type gatedStore struct {
	*ledger.MemoryStore
	gate    chan struct{} // nil: sweeps do not wait
	entered chan struct{} // receives once per sweep that reached the store

	mu          sync.Mutex
	closed      bool
	sweeps      int
	afterClosed int
}

func newGatedStore(gated bool) *gatedStore {
	s := &gatedStore{MemoryStore: ledger.NewMemory(ledger.Limits{}), entered: make(chan struct{}, 16)}
	if gated {
		s.gate = make(chan struct{})
	}
	return s
}

func (s *gatedStore) Sweep(now time.Time, max int) (int, error) {
	s.entered <- struct{}{}
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	s.sweeps++
	if s.closed {
		s.afterClosed++
	}
	s.mu.Unlock()
	return s.MemoryStore.Sweep(now, max)
}

func (s *gatedStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return s.MemoryStore.Close()
}

func (s *gatedStore) counts() (sweeps, afterClosed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweeps, s.afterClosed
}

// withGatedLedger gives the agent a ledger over store (the test closes it,
// as an embedder that set Config.Ledger does once Close returned).
func withGatedLedger(store *gatedStore) envOption {
	return func(e *env) {
		l, err := ledger.New(store, ledger.Options{Now: e.clock.Now})
		must(e.t, err)
		e.cfg.Ledger = l
	}
}

// goroutineHeader matches the first line of a goroutine's stack.
var goroutineHeader = regexp.MustCompile(`^goroutine (\d+) `)

// agentGoroutines returns, by goroutine id, the stacks of the goroutines
// started by the agent's own code (package agent outside its tests, and
// internal/workers), leaving out the ids in skip: a goleak-style check
// of what the agent leaves behind.
func agentGoroutines(skip map[string]bool) map[string]string {
	out := map[string]string{}
	for id, g := range allGoroutines() {
		if skip[id] {
			continue
		}
		i := strings.Index(g, "\ncreated by ")
		if i < 0 {
			continue
		}
		creator := g[i+len("\ncreated by "):]
		loc := ""
		if j := strings.Index(creator, "\n"); j >= 0 {
			creator, loc = creator[:j], creator[j+1:]
		}
		ours := strings.HasPrefix(creator, "github.com/ampbundle/ampbundle/agent.") ||
			strings.HasPrefix(creator, "github.com/ampbundle/ampbundle/internal/workers.")
		if ours && !strings.Contains(strings.SplitN(loc, " ", 2)[0], "_test.go") {
			out[id] = g
		}
	}
	return out
}

// goroutineIDs is the set of ids of every goroutine now.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for id := range allGoroutines() {
		ids[id] = true
	}
	return ids
}

// allGoroutines returns every goroutine's stack by id.
func allGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if m := goroutineHeader.FindStringSubmatch(g); m != nil {
			out[m[1]] = g
		}
	}
	return out
}

// settledAgentGoroutines waits, a bounded while, for the goroutines the
// agent started since base to finish leaving (a worker returning from its
// last deferred call), and returns those still there.
func settledAgentGoroutines(base map[string]bool) map[string]string {
	left := agentGoroutines(base)
	for deadline := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = agentGoroutines(base) {
		time.Sleep(time.Millisecond)
	}
	return left
}

// invokeWithin is an invocation of code-review:2.1.0 with timeout_ms.
func invokeWithin(t *testing.T, ms uint64) []byte {
	t.Helper()
	id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
	p, err := amp.Marshal(goodParams)
	if err != nil {
		t.Fatal(err)
	}
	body, err := capability.Invoke{ID: id, Params: p, TimeoutMS: &ms}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// waitClosing sends pings until the agent refuses them as closed
// (Shutdown has begun), or until closed delivers (Close returned, without
// ever refusing: the agent did not own its shutdown). It reports whether
// the agent refused.
func waitClosing(t *testing.T, e *env, closed <-chan error) bool {
	t.Helper()
	for {
		select {
		case <-closed:
			return false
		default:
		}
		_, msg := e.seal(e.caller, amp.TypePing, nil)
		if _, err := e.agent.Handle(context.Background(), msg); amp.NameOf(err) == ErrAgentClosed {
			if !amp.CodeOf(err).Retryable() {
				t.Fatalf("a message refused at shutdown: %v, want a retryable code", err)
			}
			return true
		}
		runtime.Gosched()
	}
}

// TestCloseWaitsForEveryGoroutineTheAgentStarted: Close returns only once
// every goroutine the agent started has ended — a detached handler still
// running past its invocation's timeout, a background ledger sweep — and
// leaves none behind (threat: Close returning while a handler still runs
// and the embedder then tearing down what it uses, the ledger closed
// under a sweep, goroutines piling up over reloads).
func TestCloseWaitsForEveryGoroutineTheAgentStarted(t *testing.T) {
	base := goroutineIDs()
	store := newGatedStore(true)
	release, started := make(chan struct{}), make(chan struct{})
	e := newEnv(t, withGatedLedger(store), withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		close(started)
		<-release // ignores its context
		return map[string]any{"issues": []any{}, "version": "late"}, nil
	}))
	releaseHandler, openGate := sync.OnceFunc(func() { close(release) }), sync.OnceFunc(func() { close(store.gate) })
	defer releaseHandler()
	defer openGate()

	// The first message starts a background sweep, held at the store.
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeWithin(t, 10))
	<-store.entered
	<-started
	if r := resultOf(t, reply); r.Error == nil || r.Error.Code != amp.CodeTimeout {
		t.Fatalf("a handler past its timeout: %+v, want 5003", r)
	}
	if n := len(agentGoroutines(base)); n < 2 {
		t.Fatalf("%d goroutines of the agent running, want the handler's and the sweep's", n)
	}

	closed := make(chan error, 1)
	go func() { closed <- e.agent.Close() }()
	if !waitClosing(t, e, closed) {
		t.Fatal("Close returned while a detached handler and a ledger sweep were still running")
	}
	releaseHandler() // the handler ends; the sweep still holds Close
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a ledger sweep was still running", err)
	default:
	}
	openGate()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := settledAgentGoroutines(base); len(left) > 0 {
		for _, g := range left {
			t.Log(g)
		}
		t.Fatalf("%d goroutines the agent started outlive Close", len(left))
	}
}

// TestCloseReportsAbandonedHandlersAtTheDeadline: a handler that ignores
// its context and never returns cannot hold the shutdown forever: at the
// deadline (Shutdown's ctx; Close's is Config.MaxTimeout) the agent stops
// waiting, still closes, and says how many handlers it left running
// (threat: a shutdown that hangs on one stuck handler, or one that
// silently abandons work).
func TestCloseReportsAbandonedHandlersAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown func(a *Agent) error
	}{
		{"Shutdown whose context ended", func(a *Agent) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return a.Shutdown(ctx)
		}},
		{"Close at MaxTimeout", func(a *Agent) error { return a.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, started := make(chan struct{}), make(chan struct{})
			defer close(release)
			e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) { c.MaxTimeout = 20 * time.Millisecond }),
				withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
					close(started)
					<-release // ignores its context
					return nil, nil
				}))
			_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeWithin(t, 10))
			<-started
			if r := resultOf(t, reply); r.Error == nil || r.Error.Code != amp.CodeTimeout {
				t.Fatalf("a handler past its timeout: %+v, want 5003", r)
			}
			err := tc.shutdown(e.agent)
			if amp.NameOf(err) != ErrShutdownAbandoned || !strings.Contains(err.Error(), "handlers still running: 1,") {
				t.Fatalf("shutdown with a stuck handler: %v, want %s naming 1 handler still running", err, ErrShutdownAbandoned)
			}
			_, msg := e.seal(e.caller, amp.TypePing, nil)
			if _, err := e.agent.Handle(context.Background(), msg); amp.NameOf(err) != ErrAgentClosed {
				t.Fatalf("a message after an abandoned shutdown: %v, want %s", err, ErrAgentClosed)
			}
		})
	}
}

// TestSweepNeverRunsAfterClose: no ledger sweep reaches the ledger once
// Close returned — not one running when Close began, not one a late
// message would start, not an explicit Sweep (threat: a sweep writing to
// a ledger its owner closed, its file descriptor perhaps reused by then).
func TestSweepNeverRunsAfterClose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gated bool
		after func(t *testing.T, e *env, store *gatedStore, base map[string]bool)
	}{
		{"a sweep running when Close begins", true, nil},
		{"a message after Close", false, func(t *testing.T, e *env, store *gatedStore, base map[string]bool) {
			e.clock.Add(time.Hour) // a sweep is due
			_, msg := e.seal(e.caller, amp.TypePing, nil)
			_, err := e.agent.Handle(context.Background(), msg)
			for _, g := range agentGoroutines(base) {
				if strings.Contains(g, "maybeSweep") {
					t.Fatalf("a sweep started after Close:\n%s", g)
				}
			}
			if _, after := store.counts(); after > 0 {
				t.Fatalf("%d ledger sweeps after the ledger was closed", after)
			}
			if amp.NameOf(err) != ErrAgentClosed {
				t.Fatalf("a message after Close: %v, want %s", err, ErrAgentClosed)
			}
		}},
		{"Sweep after Close", false, func(t *testing.T, e *env, store *gatedStore, base map[string]bool) {
			if _, err := e.agent.Sweep(); amp.NameOf(err) != ErrAgentClosed {
				t.Fatalf("Sweep after Close: %v, want %s", err, ErrAgentClosed)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := goroutineIDs()
			store := newGatedStore(tc.gated)
			e := newEnv(t, withGatedLedger(store))
			var before int
			if tc.gated {
				e.exchange(e.caller, amp.TypePing, nil) // starts the first sweep
				<-store.entered
				closed := make(chan error, 1)
				go func() { closed <- e.agent.Close() }()
				if waitClosing(t, e, closed) {
					close(store.gate)
					<-closed
					store.Close()
				} else {
					// Close returned without waiting: the embedder now
					// closes the ledger, and the sweep goes on.
					store.Close()
					close(store.gate)
				}
			} else {
				if err := e.agent.Close(); err != nil {
					t.Fatal(err)
				}
				store.Close()
				_, before = store.counts()
			}
			if tc.after != nil {
				tc.after(t, e, store, base)
			}
			// Every sweep the agent started has reached the store by now.
			for _, g := range settledAgentGoroutines(base) {
				if strings.Contains(g, "maybeSweep") {
					t.Fatalf("a sweep still running after Close:\n%s", g)
				}
			}
			if _, after := store.counts(); after != before {
				t.Fatalf("%d ledger sweeps after the ledger was closed", after-before)
			}
		})
	}
}

// TestHandleGivesUpWaitingForASlotWhenItsContextEnds: a message waiting
// for a processing slot gives up when its context ends — the caller went
// away, a server shuts down — with a precise retryable error, and nothing
// of it ran or was recorded: its retry runs the handler once (threat: a
// goroutine per abandoned request parked until a slot frees, or a
// refusal that burns the message id).
func TestHandleGivesUpWaitingForASlotWhenItsContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, func())
	}{
		{"context ended before", func() (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{"context ends while waiting", func() (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			stop := time.AfterFunc(5*time.Millisecond, cancel)
			return ctx, func() { stop.Stop(); cancel() }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withMemoryLedger())
			const id = "org.agentries.code-review:2.1.0"
			// Every slot taken (2 per core), each by a peer of its own:
			// one peer leaves the last slot free (the Reserve rule,
			// admission.Fair).
			var held []func()
			for i := range 2 * runtime.GOMAXPROCS(0) {
				peer := admission.WithPeer(context.Background(), "192.0.2."+strconv.Itoa(i+1))
				_, done, err := e.agent.cpu.Enter(peer)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, done)
			}
			_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, id, goodParams))
			ctx, cancel := tc.ctx()
			defer cancel()
			reply, err := e.agent.Handle(ctx, msg)
			if reply != nil || amp.NameOf(err) != admission.ErrSlotWaitEnded || !amp.CodeOf(err).Retryable() ||
				!errors.Is(err, context.Canceled) {
				t.Fatalf("a message whose context ended waiting for a slot: %v, want retryable %s with the context's error", err, admission.ErrSlotWaitEnded)
			}
			if n := e.count(id).Load(); n != 0 {
				t.Fatalf("the handler ran %d times for a message that got no slot", n)
			}
			if u := e.agent.Ledger().Usage(); u.Entries != 0 {
				t.Fatalf("%d ledger entries for a message that got no slot", u.Entries)
			}
			for _, done := range held {
				done()
			}
			raw, err := e.agent.Handle(context.Background(), msg)
			if err != nil {
				t.Fatal(err)
			}
			if r := resultOf(t, e.receive(e.caller, raw)); r.Status != capability.StatusSuccess || e.count(id).Load() != 1 {
				t.Fatalf("the retry: %+v, handler ran %d times; want one run", r, e.count(id).Load())
			}
		})
	}
}
