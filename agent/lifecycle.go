package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/ampbundle/ampbundle/amp"
)

// ErrAgentClosed names the refusal of a message (or a Sweep) that arrives
// once Shutdown or Close has begun: 5002, retryable, nothing run or
// recorded. Another agent (a restart, a reload) may answer the retry.
const ErrAgentClosed amp.ErrName = "agent_closed"

// ErrShutdownAbandoned names the error of Shutdown (and Close) when its
// deadline came before everything the agent runs had ended: its message
// says how many detached handlers, messages in progress and ledger sweeps
// it stopped waiting for.
const ErrShutdownAbandoned amp.ErrName = "shutdown_abandoned"

func agentClosed() error {
	return amp.Named(amp.CodeUnavailable, ErrAgentClosed, "the agent is shutting down; retry later")
}

// closingBit marks a lifecycle as closing; the bits below count calls.
const closingBit = 1 << 62

// lifecycle counts the calls running in the agent (Handle, Sweep) and
// refuses new ones once closing, so that Shutdown can wait for the last
// one out. Lock-free: one atomic add on the way in and one on the way out.
type lifecycle struct {
	state   atomic.Int64  // closingBit | calls running (and refused ones, briefly)
	once    sync.Once     // close
	idle    chan struct{} // closed once closing with no call running
	setIdle func()        // closes idle, once: a refused call's leave may find the count at zero too
}

func newLifecycle() *lifecycle {
	l := &lifecycle{idle: make(chan struct{})}
	l.setIdle = sync.OnceFunc(func() { close(l.idle) })
	return l
}

// enter counts a call, or reports false (counting nothing) when closing.
func (l *lifecycle) enter() bool {
	if l.state.Add(1)&closingBit != 0 {
		l.leave()
		return false
	}
	return true
}

// leave ends a call counted by enter.
func (l *lifecycle) leave() {
	if l.state.Add(-1) == closingBit {
		l.setIdle()
	}
}

// close refuses every call from now on and returns a channel closed once
// the last call running has left.
func (l *lifecycle) close() <-chan struct{} {
	l.once.Do(func() {
		if l.state.Or(closingBit) == 0 {
			l.setIdle()
		}
	})
	return l.idle
}

// running is the number of calls still running.
func (l *lifecycle) running() int { return int(l.state.Load() &^ closingBit) }

// sweeper tracks the background ledger sweeps (maybeSweep): none starts
// once closed, and the ledger's close waits for the last one out, so
// that ledger.Sweep never runs on a closed ledger.
type sweeper struct {
	mu      sync.Mutex
	closed  bool
	running int
	done    chan struct{} // closed once closed with no sweep running
	after   func()        // run by the last sweep out (the ledger's close)
}

func newSweeper() *sweeper { return &sweeper{done: make(chan struct{})} }

// start counts a sweep, or reports false when closed.
func (s *sweeper) start() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.running++
	return true
}

// end ends a sweep counted by start; the last one out after close runs
// what closeAfter left it.
func (s *sweeper) end() {
	s.mu.Lock()
	s.running--
	var after func()
	if s.running == 0 && s.closed {
		close(s.done)
		after, s.after = s.after, nil
	}
	s.mu.Unlock()
	if after != nil {
		after()
	}
}

// close refuses sweeps from now on and returns a channel closed once the
// last one running has ended.
func (s *sweeper) close() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		if s.running == 0 {
			close(s.done)
		}
	}
	return s.done
}

// leaveTo leaves f to the last sweep out and reports true when a sweep
// runs; else it reports false and f is the caller's to run. Call it after
// close.
func (s *sweeper) leaveTo(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == 0 {
		return false
	}
	s.after = f
	return true
}

// Shutdown stops the agent: from its start, Handle and Sweep refuse
// (ErrAgentClosed, retryable) and no ledger sweep starts. It waits, until
// ctx ends, for every call in progress and every goroutine the agent
// started (detached handlers, which end at their invocation's timeout
// when they honour their context, and ledger sweeps), then drops the open
// streams (removing their spool files) and closes the ledger when the
// agent opened it (Config.Ledger nil) — after the last sweep, even one
// still running at the deadline. When ctx ends first it returns an error
// named ErrShutdownAbandoned that counts what is still running; it never
// stops a handler. Calling it again waits again; it closes once.
func (a *Agent) Shutdown(ctx context.Context) error {
	calls, sweeps := a.life.close(), a.sweeps.close()
	select {
	case <-calls:
	case <-ctx.Done():
	}
	handlers := a.workers.Shutdown(ctx)
	select {
	case <-sweeps:
	case <-ctx.Done():
	}
	var errs []error
	abandoned := false
	if n, s := a.life.running(), a.sweepsRunning(); n > 0 || handlers > 0 || s > 0 {
		abandoned = true
		errs = append(errs, amp.Named(0, ErrShutdownAbandoned,
			"the agent stopped waiting at its shutdown deadline: handlers still running: %d, messages in progress: %d, ledger sweeps running: %d",
			handlers, n, s).WithCause(ctx.Err()))
	}
	a.closeOnce.Do(func() {
		a.streams.closeAll()
		a.params.closeAll()
		if abandoned {
			// A message still in progress removes its spool file
			// through the directory when it ends: it stays open (one
			// descriptor) rather than leave the file behind (CLI-56).
			a.log.Warn("the spool directory stays open for the messages still in progress")
		} else {
			a.spool.close()
		}
		if !a.ownLedger {
			return
		}
		left := a.sweeps.leaveTo(func() {
			if err := a.ledger.Close(); err != nil {
				a.log.Error("cannot close the idempotency ledger after its last sweep", "err", err)
			}
		})
		if left {
			a.log.Warn("the idempotency ledger closes when its running sweep ends")
			return
		}
		a.closeErr = a.ledger.Close()
	})
	return errors.Join(append(errs, a.closeErr)...)
}

// sweepsRunning is the number of ledger sweeps still running.
func (a *Agent) sweepsRunning() int {
	a.sweeps.mu.Lock()
	defer a.sweeps.mu.Unlock()
	return a.sweeps.running
}
