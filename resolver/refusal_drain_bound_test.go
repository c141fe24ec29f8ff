package resolver

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// drainsInFlight counts the refused Imports now in drainRefused (the
// drain itself, not its reading goroutine).
func drainsInFlight() int {
	buf := make([]byte, 8<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	return strings.Count(stacks, "resolver.drainRefused(")
}

// TestRefusedDrainsAreBoundedInNumber: attack: the drain of a refused
// stream runs without s.mu, and nothing counted the drains: every caller
// whose junk was refused at once and whose stream then kept the minimum
// data rate got its own drain, each a goroutine, a 32 KiB buffer, a
// SHA-256 of up to MaxRefusalDrain (1 GiB: over two hours at
// admission.MinDataRate) and the caller's connection, all at the same
// time: 64 such imports drained at once. Now at most MaxRefusalDrains
// drain at once; a refusal beyond them is audited at once, unhashed and
// recorded nowhere, as a drain that gives up is (MIRROR-13).
func TestRefusedDrainsAreBoundedInNumber(t *testing.T) {
	s := newStore(t)
	// The rate, shortened: 1000 B/s. The grace is long (the stall rule's
	// too), so that a trickling writer descheduled on a loaded machine
	// does not end its drain before the drains are counted.
	lowerLimits(s, func(l *storeLimits) { l.drainRate, l.drainGrace = 1000, 2*time.Second })
	const n = 64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range n {
		pr, pw := io.Pipe()
		wg.Add(2)
		go func() { // junk, refused at once; then 100 bytes each 50ms: 2000 B/s, above the rate
			defer wg.Done()
			defer pw.Close()
			if _, err := pw.Write(bytes.Repeat([]byte("not a bundle at all\n"), 256)); err != nil {
				return
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					if _, err := pw.Write(bytes.Repeat([]byte{'x'}, 100)); err != nil {
						return
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			_, _ = s.Import(context.Background(), pr, ImportOptions{})
			pr.Close()
		}()
	}
	most := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		most = max(most, drainsInFlight())
	}
	if most == 0 {
		t.Fatal("test setup: no refused Import is in its drain")
	}
	if most > MaxRefusalDrains {
		t.Fatalf("%d refused imports drained their streams at the same time (of %d offered, bound %d): nothing bounds the drains in flight, "+
			"each a goroutine, a buffer and the caller's connection for up to MaxRefusalDrain at the minimum data rate", most, n, MaxRefusalDrains)
	}
	// Every refusal beyond the bound is audited at once, unhashed: once
	// all n imports have run to their refusal, which on a loaded machine
	// may be past the sampling above (the 20 s is a hang guard).
	unhashed := 0
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		entries, err := s.Audit()
		if err != nil {
			t.Fatal(err)
		}
		unhashed = 0
		for _, e := range entries {
			if e.Action == "import_refused" && len(e.FileSHA256) == 0 {
				unhashed++
			}
		}
		if unhashed >= n-MaxRefusalDrains || time.Now().After(end) {
			break
		}
	}
	if unhashed < n-MaxRefusalDrains {
		t.Fatalf("%d of the %d refusals beyond the %d drains are audited (unhashed), not all", unhashed, n-MaxRefusalDrains, MaxRefusalDrains)
	}
}
