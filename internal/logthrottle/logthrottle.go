package logthrottle

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
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

// HeldBackMessage is the message of the summary line written for a kind
// whose held-back lines no later line of its own carried: once it has
// been quiet for a second, or at Flush. Its attributes are "kind" (the
// kind's message and attribute values) and SuppressedKey.
const HeldBackMessage = "log lines held back"

// Bounds on the text that names a kind.
const (
	maxKeyBytes  = 64 // of the message
	maxAttrBytes = 32 // of each KeyAttrs value
)

// Options configure a Handler.
type Options struct {
	// Rate is how many lines of one kind pass per second, sustained. New
	// returns the handler unchanged when Rate is negative; 0 means
	// DefaultRate.
	Rate float64
	// Burst is how many lines of one kind pass at once after a quiet
	// spell (default ten seconds of Rate; at least 1).
	Burst float64
	// MaxKinds bounds the kinds counted apart at once (default
	// DefaultMaxKinds); a kind that has its whole burst back and nothing
	// held back gives its place to a new kind, and lines of further kinds
	// share one allowance.
	MaxKinds int
	// KeyAttrs names attributes of a line whose values are part of its
	// kind (integers whole, anything else as its text cut like the
	// message: give only attributes with few values), so that, for
	// example, refusals of different error names or HTTP statuses are
	// counted apart.
	KeyAttrs []string
	// Exempt, when set, reports whether an attribute exempts the line
	// that carries it, or every line of the logger that carries it
	// (slog.Logger.With), from throttling.
	Exempt func(slog.Attr) bool
	// Now is the clock (default time.Now). A step back counts as no
	// time passed.
	Now func() time.Time
}

// cut returns s up to its first digit or '[', at most max bytes, so that
// text carrying an address or a number (net/http's "TLS handshake error
// from ADDR: …") names one kind, not one per peer.
func cut(s string, max int) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' || c == '[' || i == max {
			return s[:i]
		}
	}
	return s
}

// appendKind appends the key of a line's kind to key: its level, its cut
// message, then "\x00name=value" per KeyAttrs value found (the level
// first, as one byte past NUL: levels are small numbers).
func appendKind(key []byte, level slog.Level, msg string) []byte {
	key = append(key, byte(level+128))
	return append(key, cut(msg, maxKeyBytes)...)
}

type bucket struct {
	tokens     float64
	last       time.Time
	suppressed int64
	level      slog.Level
	label      string // the kind's message and attribute values, for a summary line
}

// state is shared by a Handler and those derived from it (WithAttrs,
// WithGroup): one allowance per kind, whatever attributes a logger adds.
type state struct {
	opts      Options
	root      slog.Handler // the handler New was given: summary lines carry no logger's attributes
	mu        sync.Mutex
	kinds     map[string]*bucket // by appendKind's key
	other     bucket
	nextSweep time.Time
	// nextReclaim: before it, no kind of a full table can give its place
	// to a new one (reclaim).
	nextReclaim time.Time
	// seen is the clock's last reading, clock the time the allowances
	// count by: it moves as the clock moves forward and stands still when
	// the clock steps back (advance).
	seen, clock time.Time
}

// advance returns the time the allowances count by at the clock reading
// now: a step back counts as no time passed, and time counts on from the
// new reading (threat: a clock set back an hour left a kind that was cut
// off for that hour, and no summary line written: CLI-28). s.mu is held.
func (s *state) advance(now time.Time) time.Time {
	if s.clock.IsZero() {
		s.clock = now
	} else if d := now.Sub(s.seen); d > 0 {
		s.clock = s.clock.Add(d)
	}
	s.seen = now
	return s.clock
}

// take reports whether a line of the kind key (of level) passes now and,
// if it does, how many of its kind were held back before it. Only a new
// kind allocates.
func (s *state) take(key []byte, level slog.Level, now time.Time) (pass bool, suppressed int64) {
	b := s.kinds[string(key)]
	if b == nil {
		if len(s.kinds) >= s.opts.MaxKinds {
			s.reclaim(now)
		}
		if len(s.kinds) < s.opts.MaxKinds {
			b = &bucket{tokens: s.opts.Burst, last: now, level: level, label: strings.ReplaceAll(string(key[1:]), "\x00", " ")}
			s.kinds[string(key)] = b
		} else {
			b = &s.other
		}
	}
	s.refill(b, now)
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	if suppressed > 0 && b != &s.other {
		// Its count rides on this line, not on a summary line (sweep):
		// it may give its place once its burst is back, which a walk
		// that skipped it did not count on (threat: every kind of a full
		// table with a count held back at the walk, each then carried by
		// the kind's next line, left the next walk a day ahead, and every
		// new kind in the shared allowance for that day: CLI-30).
		if at := s.fullAt(b, now); at.Before(s.nextReclaim) {
			s.nextReclaim = at
		}
	}
	return true, suppressed
}

func (s *state) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(s.opts.Burst, b.tokens+d.Seconds()*s.opts.Rate)
		b.last = now
	}
}

// reclaim drops, from a full table, one kind that has its whole burst
// back and no count held back: it is then no different from a kind never
// seen, and its place goes to a new kind, which gets an allowance of its
// own instead of the one all further kinds share (threat: a table filled
// once, hours before, left every later new kind in the shared allowance,
// where one new kind's flood held back the first line of every other:
// CLI-28).
// To keep a new kind out, an attacker must keep every kind of the table
// below its burst: write at the full sustained rate of all of them. When
// none can go, nextReclaim is the earliest time one may, so that a flood
// of new kinds costs no walk of the table per line; a kind skipped for its
// count held back brings it nearer once the count is cleared (by sweep,
// or carried by a line of its own: take). s.mu is held.
func (s *state) reclaim(now time.Time) {
	if now.Before(s.nextReclaim) {
		return
	}
	next := time.Time{}
	for k, b := range s.kinds {
		if b.suppressed > 0 {
			continue // until sweep reports its count, or a line of its own carries it (take)
		}
		s.refill(b, now)
		if b.tokens >= s.opts.Burst {
			delete(s.kinds, k)
			return
		}
		if at := s.fullAt(b, now); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() {
		next = now.Add(24 * time.Hour)
	}
	s.nextReclaim = next
}

// fullAt is when b, refilled at now, has its whole burst back: in
// (Burst - tokens) / Rate seconds, at most a day ahead (a walk a day
// costs nothing).
func (s *state) fullAt(b *bucket, now time.Time) time.Time {
	return now.Add(time.Duration(min((s.opts.Burst-b.tokens)/s.opts.Rate, 86400) * float64(time.Second)))
}

// heldBack is the count of one kind to report in a summary line.
type heldBack struct {
	level slog.Level
	label string
	n     int64
}

// sweep collects (and clears) the counts of the kinds that have held
// lines back and have been quiet for a second (all of them with force),
// at most once a second unless forced.
func (s *state) sweep(now time.Time, force bool) []heldBack {
	if !force && now.Before(s.nextSweep) {
		return nil
	}
	s.nextSweep = now.Add(time.Second)
	var out []heldBack
	for _, b := range s.kinds {
		if b.suppressed > 0 && (force || now.Sub(b.last) >= time.Second) {
			out = append(out, heldBack{b.level, b.label, b.suppressed})
			b.suppressed = 0
			s.nextReclaim = time.Time{} // b may give its place now
		}
	}
	if s.other.suppressed > 0 && (force || now.Sub(s.other.last) >= time.Second) {
		out = append(out, heldBack{slog.LevelInfo, "(other kinds)", s.other.suppressed})
		s.other.suppressed = 0
	}
	sort.Slice(out, func(i, j int) bool { return out[i].label < out[j].label })
	return out
}

// Handler passes records to another slog.Handler, at most Burst of one
// kind at once and Rate per second after that; it drops the others and
// adds SuppressedKey, their count, to the next record of their kind that
// passes, or writes a HeldBackMessage line with it once the kind has been
// quiet for a second (noticed at the next line of any kind) or at Flush.
type Handler struct {
	next   slog.Handler
	s      *state
	exempt bool // the logger carries an Exempt attribute
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
		opts.Burst = 10 * opts.Rate
	}
	opts.Burst = max(1, opts.Burst)
	if opts.MaxKinds <= 0 {
		opts.MaxKinds = DefaultMaxKinds
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &state{opts: opts, root: h, kinds: make(map[string]*bucket)}
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
	exempt := h.exempt
	var buf [256]byte
	key := appendKind(buf[:0], r.Level, r.Message)
	if !exempt && (h.s.opts.Exempt != nil || len(h.s.opts.KeyAttrs) > 0) {
		r.Attrs(func(a slog.Attr) bool {
			if h.s.opts.Exempt != nil && h.s.opts.Exempt(a) {
				exempt = true
				return false
			}
			for _, name := range h.s.opts.KeyAttrs {
				if a.Key != name {
					continue
				}
				switch v := a.Value; v.Kind() {
				case slog.KindString:
					key = append(append(append(append(key, 0), name...), '='), cut(v.String(), maxAttrBytes)...)
				case slog.KindInt64:
					key = strconv.AppendInt(append(append(append(key, 0), name...), '='), v.Int64(), 10)
				case slog.KindUint64:
					key = strconv.AppendUint(append(append(append(key, 0), name...), '='), v.Uint64(), 10)
				default:
					// Any other value (a LogValuer, a named string type
					// passed as any): its text, cut like a string.
					key = append(append(append(append(key, 0), name...), '='), cut(v.Resolve().String(), maxAttrBytes)...)
				}
			}
			return true
		})
	}
	now := h.s.opts.Now()
	h.s.mu.Lock()
	at := h.s.advance(now)
	pass, n := true, int64(0)
	if !exempt {
		pass, n = h.s.take(key, r.Level, at)
	}
	held := h.s.sweep(at, false)
	h.s.mu.Unlock()
	h.writeHeldBack(ctx, now, held)
	if !pass {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int64(SuppressedKey, n))
	}
	return h.next.Handle(ctx, r)
}

// Flush writes a HeldBackMessage line for every kind that has held lines
// back since it last wrote one (a server calls it as it stops, so that no
// count is lost).
func (h *Handler) Flush(ctx context.Context) {
	now := h.s.opts.Now()
	h.s.mu.Lock()
	held := h.s.sweep(h.s.advance(now), true)
	h.s.mu.Unlock()
	h.writeHeldBack(ctx, now, held)
}

func (h *Handler) writeHeldBack(ctx context.Context, now time.Time, held []heldBack) {
	for _, hb := range held {
		level := max(hb.level, slog.LevelInfo)
		if !h.s.root.Enabled(ctx, level) {
			continue
		}
		r := slog.NewRecord(now, level, HeldBackMessage, 0)
		r.AddAttrs(slog.String("kind", hb.label), slog.Int64(SuppressedKey, hb.n))
		h.s.root.Handle(ctx, r)
	}
}

// WithAttrs returns a Handler over the next handler with attrs, sharing
// this one's allowances; it is exempt when one of attrs is.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	exempt := h.exempt
	for _, a := range attrs {
		if h.s.opts.Exempt != nil && h.s.opts.Exempt(a) {
			exempt = true
		}
	}
	return &Handler{next: h.next.WithAttrs(attrs), s: h.s, exempt: exempt}
}

// WithGroup returns a Handler over the next handler with the group,
// sharing this one's allowances.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), s: h.s, exempt: h.exempt}
}
