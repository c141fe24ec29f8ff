//go:build linux

package main

import (
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeChildren is a reaper's process table for killAdopted: children
// that die when killed, children that do not (uninterruptible sleep),
// children /proc does not list, and pids /proc lists that are not the
// reaper's children (a /proc of another PID namespace). Its clock moves
// only when killAdopted sleeps.
type fakeChildren struct {
	t       *testing.T
	clock   time.Time
	alive   map[int]bool // the reaper's children, unreaped
	stuck   map[int]bool // killed, they do not die
	exited  []int        // dead, to be reaped
	hidden  int          // children alive that no listing shows
	foreign []int        // listed, not the reaper's
	rounds  int          // listings of /proc
	killed  map[int]int
	forkers bool // killed, each leaves a new child first (a fork chain)
	next    int  // the pid a fork chain's next child gets
}

func (f *fakeChildren) ops() reapOps {
	return reapOps{
		reap: func() (int, error) {
			if len(f.exited) > 0 {
				pid := f.exited[0]
				f.exited = f.exited[1:]
				delete(f.alive, pid)
				return pid, nil
			}
			if len(f.alive) > 0 || f.hidden > 0 {
				return 0, nil
			}
			return 0, unix.ECHILD
		},
		children: func() ([]int, error) {
			f.rounds++
			if f.rounds > 10000 {
				f.t.Fatalf("killAdopted read /proc %d times in %s of its clock: it spins", f.rounds, f.clock.Sub(time.Unix(0, 0)))
			}
			var out []int
			for pid := range f.alive {
				out = append(out, pid)
			}
			slices.Sort(out)
			return append(out, f.foreign...), nil
		},
		isChild: func(pid int) bool { return f.alive[pid] },
		kill: func(pid int) {
			f.killed[pid]++
			if f.alive[pid] && !f.stuck[pid] && !slices.Contains(f.exited, pid) {
				f.exited = append(f.exited, pid)
				if f.forkers {
					f.next++
					f.alive[f.next] = true
				}
			}
		},
		now:   func() time.Time { return f.clock },
		sleep: func(d time.Duration) { f.clock = f.clock.Add(d) },
	}
}

// TestReaperGivesUpOnChildrenThatCannotDieWithoutSpinning: attack: a
// handler program leaves a child that cannot be reaped at once: killed,
// it stays in uninterruptible sleep (a hung file system), or /proc does
// not show it as the reaper's (a /proc of another PID namespace). The
// reaper's kill loop read all of /proc and killed again without a pause
// (a core busy) until os/exec killed it at the deadline's grace, the
// invocation held to its deadline and the rest left to init. Rounds that
// make no progress are paced (1 ms doubling to 100 ms), the reaper gives
// up after 1 s of them and says which children it left, and a pid /proc
// names that is not the reaper's child is never killed (CLI-48).
func TestReaperGivesUpOnChildrenThatCannotDieWithoutSpinning(t *testing.T) {
	t.Run("a fork chain", testReaperGivesUpOnAForkChain)
	t.Run("orphans exiting as fast as they are reaped", testReaperGivesUpOnEndlessExits)
	for _, tc := range []struct {
		name        string
		alive       []int
		stuck       []int
		hidden      int
		foreign     []int
		wantLeft    []int // nil: all reaped, no error
		wantUnknown bool
	}{
		{"children that die when killed", []int{10, 11, 12}, nil, 0, nil, nil, false},
		{"a child in uninterruptible sleep", []int{10, 11}, []int{11}, 0, nil, []int{11}, false},
		{"a child /proc does not list", nil, nil, 1, nil, nil, true},
		{"a /proc of another PID namespace", nil, nil, 1, []int{1, 7}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChildren{t: t, clock: time.Unix(0, 0), alive: map[int]bool{}, stuck: map[int]bool{},
				hidden: tc.hidden, foreign: tc.foreign, killed: map[int]int{}}
			for _, pid := range tc.alive {
				f.alive[pid] = true
			}
			for _, pid := range tc.stuck {
				f.stuck[pid] = true
			}
			err := killAdopted(f.ops())
			var ae *abandonedError
			switch {
			case tc.wantLeft == nil && !tc.wantUnknown:
				if err != nil {
					t.Fatalf("killAdopted: %v, want every child reaped", err)
				}
			case !errors.As(err, &ae):
				t.Fatalf("killAdopted: %v, want it to give up and say what it left", err)
			case !slices.Equal(ae.pids, tc.wantLeft) || ae.unknown != tc.wantUnknown:
				t.Fatalf("it left %v (unlisted children: %v), want %v (%v)", ae.pids, ae.unknown, tc.wantLeft, tc.wantUnknown)
			}
			// Paced: 1 s of patience at 1 ms doubling to 100 ms is about
			// 17 rounds; 40 is generous.
			if f.rounds > 40 {
				t.Errorf("killAdopted read /proc %d times", f.rounds)
			}
			if took := f.clock.Sub(time.Unix(0, 0)); took > reapPatience+reapPauseMax {
				t.Errorf("killAdopted held the invocation %s, bound %s", took, reapPatience+reapPauseMax)
			}
			for _, pid := range tc.foreign {
				if f.killed[pid] > 0 {
					t.Errorf("pid %d, listed by a /proc but not the reaper's child, was killed", pid)
				}
			}
			for _, pid := range tc.alive {
				if f.killed[pid] == 0 {
					t.Errorf("child %d was never killed", pid)
				}
			}
		})
	}
}

// testReaperGivesUpOnAForkChain: attack: each process of a chain forks
// once more before the reaper's kill lands, so every round finds a new
// child, progress by the patience's measure, and the reaper kept on until
// os/exec killed it at the deadline's grace (with no deadline, for ever),
// holding the invocation's slot, and the chain went to init. The whole
// of killAdopted is bounded (reapLimit, under os/exec's WaitDelay): it
// gives up and says so (CLI-48, amended).
func testReaperGivesUpOnAForkChain(t *testing.T) {
	f := &fakeChildren{t: t, clock: time.Unix(0, 0), alive: map[int]bool{100: true}, stuck: map[int]bool{},
		killed: map[int]int{}, forkers: true, next: 100}
	err := killAdopted(f.ops())
	var ae *abandonedError
	if !errors.As(err, &ae) || ae.limit != reapLimit {
		t.Fatalf("killAdopted: %v, want it to give up after %s in all", err, reapLimit)
	}
	if took := f.clock.Sub(time.Unix(0, 0)); took > reapLimit+reapPauseMax {
		t.Errorf("killAdopted held the invocation %s, bound %s", took, reapLimit+reapPauseMax)
	}
	if reapLimit >= 2*time.Second {
		t.Errorf("reapLimit %s is not under os/exec's WaitDelay (2 s) the agent gives the reaper", reapLimit)
	}
}

// testReaperGivesUpOnEndlessExits: attack: chains that fork and exit
// hand the reaper an exited orphan every time it reaps. Its inner loop
// reaped them one after another without ever looking at the clock or
// killing anyone, for as long as the chains ran: the whole bound
// (reapLimit) was checked only between rounds. It now holds inside the
// loop too. Each reap here takes 10 µs of the fake clock.
func testReaperGivesUpOnEndlessExits(t *testing.T) {
	clock, reaps := time.Unix(0, 0), 0
	ops := reapOps{
		reap: func() (int, error) {
			reaps++
			if reaps > 1_000_000 {
				t.Fatalf("killAdopted reaped %d orphans over %s of its clock: its bound does not hold", reaps, clock.Sub(time.Unix(0, 0)))
			}
			clock = clock.Add(10 * time.Microsecond)
			return 1000 + reaps, nil
		},
		children: func() ([]int, error) { return nil, nil },
		isChild:  func(int) bool { return false },
		kill:     func(int) {},
		now:      func() time.Time { return clock },
		sleep:    func(d time.Duration) { clock = clock.Add(d) },
	}
	err := killAdopted(ops)
	var ae *abandonedError
	if !errors.As(err, &ae) || ae.limit != reapLimit {
		t.Fatalf("killAdopted: %v, want it to give up after %s in all", err, reapLimit)
	}
	if took := clock.Sub(time.Unix(0, 0)); took > reapLimit+time.Millisecond {
		t.Errorf("killAdopted held the invocation %s, bound %s", took, reapLimit)
	}
}
