package bundlebuild

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// softLimit holds the process's soft memory limit for every build of this
// process with SourceOptions.LimitMemory. It is package state because the
// limit it manages is (runtime/debug.SetMemoryLimit is one value for the
// whole process): two builds that each kept and put back the limit they
// found undid each other's (docs/SPEC-DECISIONS.md BUILD-10). It is the
// package's only mutable state, and it holds nothing while no build holds
// the limit.
var softLimit memoryLimits

// memoryLimits is the soft memory limit held by the builds in progress.
// Each build holds a share, its target less memNotHeap plus what one item
// it runs alone is charged beyond its budget (BUILD-8); the limit set is
// the sum of the shares of the builds in progress, never above the limit
// in force before the first of them began. Only when the last ends is that
// limit put back. A limit set by anyone else meanwhile (an embedder) is
// taken as the limit in force: a cap from then on, and left in place when
// the last build ends.
type memoryLimits struct {
	mu     sync.Mutex
	builds int   // builds holding a share
	shares int64 // the sum of their shares
	base   int64 // the limit in force before the first build, or set by someone else since
	set    int64 // the limit last set here
}

// memoryLimit is one build's share of the soft memory limit (memoryLimits):
// the target less memNotHeap, raised by what one item admitted alone is
// charged beyond the budget while it holds that (BUILD-8: the collector
// would otherwise work without rest against a limit below what that item
// must hold).
type memoryLimit struct {
	l              *memoryLimits
	budget, target int64
	share          int64 // this build's share now
	held           bool  // taken and not yet restored
}

// holdMemoryLimit takes a share of the process's soft memory limit for a
// build with this budget and target and returns it; restore gives it
// back.
func holdMemoryLimit(budget, target int64) *memoryLimit {
	return softLimit.hold(budget, target)
}

// hold adds a build's share (memoryLimit) to the limit.
func (l *memoryLimits) hold(budget, target int64) *memoryLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.builds == 0 {
		l.base = debug.SetMemoryLimit(-1)
		l.set = l.base
	}
	m := &memoryLimit{l: l, budget: budget, target: target, share: target - memNotHeap, held: true}
	l.builds++
	l.shares += m.share
	l.apply()
	return m
}

// apply sets the limit to the sum of the shares, at most the limit in
// force (l.mu held). A limit that is not the one last set here was set by
// someone else: it is the limit in force from now on.
func (l *memoryLimits) apply() {
	if now := debug.SetMemoryLimit(-1); now != l.set {
		l.base, l.set = now, now
	}
	if want := min(l.shares, l.base); want != l.set {
		debug.SetMemoryLimit(want)
		l.set = want
	}
}

// follow sets the build's share for used bytes charged to its items in
// flight; once the share is given back (restore) it does nothing.
func (m *memoryLimit) follow(used int64) {
	l := m.l
	l.mu.Lock()
	share := m.target - memNotHeap + max(used-m.budget, 0)
	if !m.held || share == m.share {
		l.mu.Unlock()
		return
	}
	// Lowered from a share raised for one item alone: that item has
	// returned and its tree is garbage, which the collector, paced
	// against the raised limit, has not yet freed. When the limit comes
	// down with it, that garbage is freed now, before the build admits
	// its next item (follow runs under the budget's lock), so that it
	// never stands beside the next item's heap (BUILD-2, amended in
	// review 118; BUILD-8).
	wasRaised := share < m.share && m.share > m.target-memNotHeap
	before := l.set
	l.shares += share - m.share
	m.share = share
	l.apply()
	lowered := l.set < before
	l.mu.Unlock()
	if wasRaised && lowered {
		runtime.GC()
	}
}

// restore gives back the build's share. The last build to end puts back
// the limit in force before the first began, unless someone else has set
// one since; while other builds hold a share the limit is the sum of
// theirs. A second call does nothing.
func (m *memoryLimit) restore() {
	l := m.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !m.held {
		return
	}
	m.held = false
	l.builds--
	l.shares -= m.share
	if l.builds > 0 {
		l.apply()
		return
	}
	if now := debug.SetMemoryLimit(-1); now == l.set && now != l.base {
		debug.SetMemoryLimit(l.base)
	}
	l.base, l.set, l.shares = 0, 0, 0
}
