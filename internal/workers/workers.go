package workers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultIdle is how long an idle worker waits for its next task before
// it leaves.
const DefaultIdle = 10 * time.Second

// Pool runs tasks on reusable goroutines. A worker runs one task after
// another: its stack has grown to what the tasks need, where a goroutine
// per task starts from a small stack and grows it (copying it) every time.
// A task is handed to an idle worker, or to a new one when none is idle,
// so there are never more workers than tasks running at once (plus the
// idle ones, each of which leaves after Idle without a task). The pool
// knows every goroutine it started: Shutdown waits for them. The zero
// Pool is not usable: call New.
type Pool struct {
	work     chan func()
	quit     chan struct{}
	quitOnce sync.Once
	idle     time.Duration
	// busy counts the tasks running.
	busy atomic.Int64

	mu   sync.Mutex
	live int           // workers started and not yet left
	gone chan struct{} // closed when live drops to 0 (nil: nobody waits)
}

// New returns a pool whose idle workers leave after idle (DefaultIdle
// when zero or less).
func New(idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Pool{work: make(chan func()), quit: make(chan struct{}), idle: idle}
}

// Go runs task on an idle worker, or on a new one. It never waits.
func (p *Pool) Go(task func()) {
	p.busy.Add(1)
	select {
	case p.work <- task:
	default:
		p.mu.Lock()
		p.live++
		p.mu.Unlock()
		go p.worker(task)
	}
}

func (p *Pool) worker(task func()) {
	idle := time.NewTimer(p.idle)
	defer func() {
		idle.Stop()
		p.mu.Lock()
		if p.live--; p.live == 0 && p.gone != nil {
			close(p.gone)
			p.gone = nil
		}
		p.mu.Unlock()
	}()
	for {
		p.run(task)
		task = nil
		idle.Reset(p.idle)
		select {
		case task = <-p.work:
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// run runs task, counted busy until it returns or panics.
func (p *Pool) run(task func()) {
	defer p.busy.Add(-1)
	task()
}

// Close makes the idle workers leave (busy ones leave when their task
// ends) and returns at once. Go still works after Close: each task then
// runs on a worker of its own, which leaves when the task ends.
func (p *Pool) Close() { p.quitOnce.Do(func() { close(p.quit) }) }

// Shutdown closes the pool (Close) and waits until every worker it
// started has left, or until ctx ends. It returns the number of tasks
// still running then (0 when every worker left, or when those left are
// only leaving).
func (p *Pool) Shutdown(ctx context.Context) int {
	p.Close()
	p.mu.Lock()
	if p.live == 0 {
		p.mu.Unlock()
		return 0
	}
	if p.gone == nil {
		p.gone = make(chan struct{})
	}
	gone := p.gone
	p.mu.Unlock()
	select {
	case <-gone:
		return 0
	case <-ctx.Done():
		return int(p.busy.Load())
	}
}
