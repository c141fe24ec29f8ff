package logthrottle

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultRate     = 10
	DefaultMaxKinds = 256
)

// SuppressedKey names the attribute that carries how many lines of the
// same kind were held back since the last one written.
const SuppressedKey = "suppressed"

// maxKeyBytes bounds the part of a message that names its kind.
const maxKeyBytes = 64

// Options configure a Handler.
type Options struct {
	// Rate is how many lines of one kind pass per second, sustained. New
	// returns the handler unchanged when Rate is negative; 0 means
	// DefaultRate.
	Rate float64
	// Burst is how many lines of one kind pass at once after a quiet
	// spell (default ten seconds of Rate, at least 1).
	Burst float64
	// MaxKinds bounds the kinds counted apart (default DefaultMaxKinds);
	// lines of further kinds share one allowance.
	MaxKinds int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// kind is what lines are counted by: their level, and their message up to
// its first digit or '[' (at most 64 bytes), so that messages carrying an
// address or a number (net/http's "TLS handshake error from ADDR: …")
// are one kind, not one per peer.
type kind struct {
	level slog.Level
	msg   string
}

func kindOf(r slog.Record) kind {
	m := r.Message
	for i := 0; i < len(m); i++ {
		if c := m[i]; c >= '0' && c <= '9' || c == '[' || i == maxKeyBytes {
			m = m[:i]
			break
		}
	}
	return kind{r.Level, m}
}

type bucket struct {
	tokens     float64
	last       time.Time
	suppressed int64
}

// state is shared by a Handler and those derived from it (WithAttrs,
// WithGroup): one allowance per kind, whatever attributes a logger adds.
type state struct {
	opts  Options
	mu    sync.Mutex
	kinds map[kind]*bucket
	other bucket
}

// take reports whether a line of kind k passes now and, if it does, how
// many of its kind were held back before it.
func (s *state) take(k kind) (pass bool, suppressed int64) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.kinds[k]
	if b == nil {
		if len(s.kinds) < s.opts.MaxKinds {
			b = &bucket{tokens: s.opts.Burst, last: now}
			s.kinds[k] = b
		} else {
			b = &s.other
		}
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(s.opts.Burst, b.tokens+d.Seconds()*s.opts.Rate)
	}
	if b.last.Before(now) {
		b.last = now
	}
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}

// Handler passes records to another slog.Handler, at most Burst of one
// kind at once and Rate per second after that; it drops the others and
// adds SuppressedKey, their count, to the next record of their kind that
// passes. The count of a kind that stops is written with its next line.
type Handler struct {
	next slog.Handler
	s    *state
}

// New returns h throttled as opts says, or h itself when opts.Rate is
// negative.
func New(h slog.Handler, opts Options) slog.Handler {
	if opts.Rate < 0 {
		return h
	}
	if opts.Rate == 0 {
		opts.Rate = DefaultRate
	}
	if opts.Burst <= 0 {
		opts.Burst = max(1, 10*opts.Rate)
	}
	if opts.MaxKinds <= 0 {
		opts.MaxKinds = DefaultMaxKinds
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &state{opts: opts, kinds: make(map[kind]*bucket)}
	s.other.tokens = opts.Burst
	return &Handler{next: h, s: s}
}

// Enabled reports whether the next handler takes records of level l.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

// Handle writes r through the next handler unless its kind is over its
// allowance.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	pass, n := h.s.take(kindOf(r))
	if !pass {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int64(SuppressedKey, n))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns a Handler over the next handler with attrs, sharing
// this one's allowances.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), s: h.s}
}

// WithGroup returns a Handler over the next handler with the group,
// sharing this one's allowances.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), s: h.s}
}
