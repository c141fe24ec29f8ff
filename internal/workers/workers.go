package workers

import (
	"sync"
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
// idle ones, each of which leaves after Idle without a task). The zero
// Pool is not usable: call New.
type Pool struct {
	work     chan func()
	quit     chan struct{}
	quitOnce sync.Once
	idle     time.Duration
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
	select {
	case p.work <- task:
	default:
		go p.worker(task)
	}
}

func (p *Pool) worker(task func()) {
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		task()
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

// Close makes the idle workers leave (busy ones leave when their task
// ends). Go still works after Close: each task then runs on a goroutine
// of its own.
func (p *Pool) Close() { p.quitOnce.Do(func() { close(p.quit) }) }
