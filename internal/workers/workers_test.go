package workers

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// goroutines waits for the goroutine count to settle at or below want.
func goroutinesAtMost(t *testing.T, want int) int {
	t.Helper()
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

// TestPoolReusesIdleWorkers: tasks run one after another reuse one
// worker instead of starting a goroutine each (threat: a goroutine and a
// fresh stack per message).
func TestPoolReusesIdleWorkers(t *testing.T) {
	p := New(time.Minute)
	defer p.Close()
	base := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		time.Sleep(100 * time.Microsecond) // let the worker park again
	}
	if n := runtime.NumGoroutine() - base; n > 2 {
		t.Fatalf("%d goroutines for 100 sequential tasks", n)
	}
}

// TestPoolNeverQueues: a task never waits for a busy worker (threat: one
// slow task holding up the others): with every worker busy, Go starts
// another.
func TestPoolNeverQueues(t *testing.T) {
	p := New(time.Minute)
	defer p.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	for i := 0; i < 10; i++ {
		started.Add(1)
		p.Go(func() { started.Done(); <-release })
	}
	ok := make(chan struct{})
	go func() { started.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(5 * time.Second):
		t.Fatal("ten blocking tasks did not all start")
	}
	close(release)
}

// TestPoolWorkersLeave: idle workers leave after their idle time, and at
// once on Close (threat: goroutines that outlive their use); Go after
// Close still runs the task.
func TestPoolWorkersLeave(t *testing.T) {
	for _, tc := range []struct {
		name  string
		idle  time.Duration
		close bool
	}{
		{"idle time", 20 * time.Millisecond, false},
		{"close", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			p := New(tc.idle)
			var wg sync.WaitGroup
			release := make(chan struct{})
			for i := 0; i < 8; i++ {
				wg.Add(1)
				p.Go(func() { defer wg.Done(); <-release })
			}
			close(release)
			wg.Wait()
			if tc.close {
				p.Close()
			}
			if n := goroutinesAtMost(t, base); n > base {
				t.Fatalf("%d goroutines left, %d before", n, base)
			}
			done := make(chan struct{})
			p.Go(func() { close(done) })
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("a task after the workers left did not run")
			}
		})
	}
}

// TestPoolShutdownWaitsForBusyTasks: Shutdown returns only once every
// worker has left, busy ones included, and at its deadline says how many
// tasks still run (threat: a pool closed while its tasks still run, its
// owner then tearing down what they use).
func TestPoolShutdownWaitsForBusyTasks(t *testing.T) {
	base := runtime.NumGoroutine()
	p := New(time.Hour)
	release, started := make(chan struct{}), make(chan struct{})
	p.Go(func() { close(started); <-release })
	<-started
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if n := p.Shutdown(ended); n != 1 {
		t.Fatalf("Shutdown at its deadline with a task blocked: %d tasks running, want 1", n)
	}
	done := make(chan int, 1)
	go func() { done <- p.Shutdown(context.Background()) }()
	select {
	case n := <-done:
		t.Fatalf("Shutdown returned (%d) while a task still ran", n)
	default:
	}
	close(release)
	if n := <-done; n != 0 {
		t.Fatalf("Shutdown after the task ended: %d tasks running", n)
	}
	// Go after Shutdown runs on a worker of its own, which Shutdown
	// waits for too.
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	if n := p.Shutdown(context.Background()); n != 0 {
		t.Fatalf("Shutdown after a late task: %d running", n)
	}
	select {
	case <-ran:
	default:
		t.Fatal("Shutdown returned before a task handed to the pool ran")
	}
	if n := goroutinesAtMost(t, base); n > base {
		t.Fatalf("%d goroutines left, %d before", n, base)
	}
}
