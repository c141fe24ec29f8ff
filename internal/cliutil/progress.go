package cliutil

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress draws a one-line progress indicator on a terminal. It draws
// nothing when disabled (not a terminal, or --json): then its methods are
// no-ops. Safe for concurrent use.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	total   int64
	now     func() time.Time
	last    time.Time
	enabled bool
	drawn   bool
}

// NewProgress returns a progress indicator for total bytes, drawn on
// env.Stderr only when it is a terminal and jsonMode is off.
func NewProgress(env *Env, jsonMode bool, label string, total int64) *Progress {
	return &Progress{w: env.Stderr, label: label, total: total, now: env.Now, enabled: env.StderrIsTerminal && !jsonMode}
}

// Update reports done bytes; it redraws at most ten times a second.
func (p *Progress) Update(done int64) {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.now(); t.Sub(p.last) >= 100*time.Millisecond || done == p.total {
		p.last = t
		pct := 100
		if p.total > 0 {
			pct = int(done * 100 / p.total)
		}
		fmt.Fprintf(p.w, "\r%s %3d%% (%s / %s)", p.label, pct, byteSize(done), byteSize(p.total))
		p.drawn = true
	}
}

// Done clears the line.
func (p *Progress) Done() {
	if p == nil || !p.enabled || !p.drawn {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Phases returns a progress callback for work in named phases (a phase
// name, bytes done, bytes in the phase): each phase gets its own line,
// drawn like NewProgress's and cleared when the next phase starts or when
// the returned done function is called.
func Phases(env *Env, jsonMode bool) (update func(phase string, done, total int64), done func()) {
	var cur *Progress
	var name string
	update = func(phase string, d, total int64) {
		if cur == nil || phase != name {
			cur.Done()
			cur, name = NewProgress(env, jsonMode, phase, total), phase
		}
		cur.Update(d)
	}
	return update, func() { cur.Done() }
}
