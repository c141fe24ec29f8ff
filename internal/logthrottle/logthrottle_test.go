package logthrottle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// lines decodes the JSON lines written to b.
func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, m)
	}
	b.Reset()
	return out
}

func newLogger(opts Options) (*slog.Logger, *bytes.Buffer, *clock) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	opts.Now = c.now
	return slog.New(New(slog.NewJSONHandler(&b, nil), opts)), &b, c
}

// TestFloodOfOneKindIsCutAndCounted: a peer that makes the server log a
// line per request gets Burst lines written at once and Rate per second
// after that (threat: filling the disk with refusal lines); what was held
// back is counted on the next line of the kind, not lost silently.
func TestFloodOfOneKindIsCutAndCounted(t *testing.T) {
	log, b, c := newLogger(Options{Rate: 2, Burst: 5})
	for range 1000 {
		log.Warn("request refused: agent busy", "limit", "requests")
	}
	if got := lines(t, b); len(got) != 5 {
		t.Fatalf("a flood of one kind: %d lines, want the burst of 5", len(got))
	}
	c.t = c.t.Add(time.Second)
	for range 1000 {
		log.Warn("request refused: agent busy", "limit", "requests")
	}
	got := lines(t, b)
	if len(got) != 2 {
		t.Fatalf("a second later: %d lines, want the rate of 2", len(got))
	}
	if n, _ := got[0][SuppressedKey].(float64); n != 995 {
		t.Fatalf("first line after the cut: suppressed=%v, want 995", got[0][SuppressedKey])
	}
	if _, ok := got[1][SuppressedKey]; ok || got[1]["limit"] != "requests" {
		t.Fatalf("second line: %v", got[1])
	}
	// A quiet spell gives the burst back, and the count of what was held
	// back meanwhile rides on the next line.
	c.t = c.t.Add(time.Minute)
	log.Warn("request refused: agent busy")
	if got := lines(t, b); len(got) != 1 || got[0][SuppressedKey] != float64(998) {
		t.Fatalf("after a quiet spell: %v", got)
	}
}

// TestAFloodDoesNotSilenceOtherKinds: lines of another kind (another
// message or level) keep their own allowance during a flood (threat: a
// flood of refusals hiding the line an operator needs).
func TestAFloodDoesNotSilenceOtherKinds(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 3})
	for range 100 {
		log.Info("unverified message refused")
	}
	log.Error("ledger sweep failed", "err", "disk full")
	log.Warn("unverified message refused")
	got := lines(t, b)
	if len(got) != 5 || got[3]["msg"] != "ledger sweep failed" || got[4]["level"] != "WARN" {
		t.Fatalf("other kinds during a flood: %v", got)
	}
}

// TestPeerChosenTextMakesNoNewKinds: messages that carry a peer's address
// or numbers (net/http's "http: TLS handshake error from ADDR: …") are
// one kind whatever the address (threat: a peer changing ports to get a
// fresh allowance for every line, or to grow the table of kinds); and
// however many kinds there are, the table is bounded.
func TestPeerChosenTextMakesNoNewKinds(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 2, MaxKinds: 4})
	for i := range 1000 {
		log.Warn(fmt.Sprintf("http: TLS handshake error from 10.0.%d.%d:%d: EOF", i/250, i%250, 1024+i))
		log.Warn(fmt.Sprintf("http: TLS handshake error from [2001:db8::%x]:443: EOF", i))
	}
	if got := lines(t, b); len(got) != 2 {
		t.Fatalf("handshake errors from 2000 addresses: %d lines, want 2", len(got))
	}
	h := log.Handler().(*Handler)
	for i := range 1000 {
		log.Info(strings.Repeat("x", i%100) + "y")
	}
	if n := len(h.s.kinds); n > 4 {
		t.Fatalf("%d kinds kept, MaxKinds is 4", n)
	}
	// Three new kinds fill the table with their bursts; the 997 further
	// kinds share one burst.
	if got := lines(t, b); len(got) != 3*2+2 {
		t.Fatalf("1000 new kinds with room for 3: %d lines, want 8", len(got))
	}
}

// TestDerivedLoggersShareTheAllowance: a logger with attributes (a
// request's remote address) or a group counts against the same
// allowance (threat: per-request loggers each getting a fresh burst).
func TestDerivedLoggersShareTheAllowance(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 3})
	for i := range 100 {
		l := log.With("remote", fmt.Sprintf("10.0.0.%d:1", i))
		if i%2 == 0 {
			l = l.WithGroup("g")
		}
		l.Info("http request refused", "status", 400)
	}
	if got := lines(t, b); len(got) != 3 {
		t.Fatalf("100 derived loggers: %d lines, want 3", len(got))
	}
}

// TestNegativeRateLetsEverythingThrough: throttling can be turned off.
func TestNegativeRateLetsEverythingThrough(t *testing.T) {
	h := slog.NewJSONHandler(&bytes.Buffer{}, nil)
	if New(h, Options{Rate: -1}) != slog.Handler(h) {
		t.Fatal("Rate < 0 must return the handler unchanged")
	}
	if !New(h, Options{}).Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("Enabled must follow the next handler")
	}
}

// TestExemptLinesAreNeverHeldBack: lines an Exempt attribute marks (an
// authorized caller's message, an administrator's change), on the line or
// on its logger, are all written during a flood of their own message
// (threat: a stranger's flood of verified PINGs, logged as "message
// handled" too, hiding the record of what authorized callers ran).
func TestExemptLinesAreNeverHeldBack(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 2, Exempt: func(a slog.Attr) bool {
		return a.Key == "caller" && a.Value.String() == "allowed" || a.Key == "via" && a.Value.String() == "admin_socket"
	}})
	admin := log.With("via", "admin_socket")
	for i := range 100 {
		log.Info("message handled", "caller", "other", "typ", "PING")
		if i%10 == 0 {
			log.Info("message handled", "caller", "allowed", "typ", "CAP_INVOKE")
			admin.Info("key trusted through the admin socket")
		}
	}
	allowed, admins, others := 0, 0, 0
	for _, l := range lines(t, b) {
		switch {
		case l["caller"] == "allowed":
			allowed++
		case l["via"] == "admin_socket":
			admins++
		case l["caller"] == "other":
			others++
		}
	}
	if allowed != 10 || admins != 10 || others != 2 {
		t.Fatalf("allowed %d (want 10), admin %d (want 10), others %d (want the burst of 2)", allowed, admins, others)
	}
}

// TestKeyAttrsCountRefusalsApart: with KeyAttrs, lines of one message but
// different codes are kinds of their own (threat: a peer's garbage hiding
// another peer's bad signatures).
func TestKeyAttrsCountRefusalsApart(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 2, KeyAttrs: []string{"name"}})
	for range 100 {
		log.Info("unverified message refused", "name", "malformed", "remote", "10.0.0.1:1")
	}
	log.Info("unverified message refused", "name", "bad_signature", "remote", "10.0.0.2:1")
	got := lines(t, b)
	if len(got) != 3 || got[2]["name"] != "bad_signature" {
		t.Fatalf("a bad signature during a flood of garbage: %v", got)
	}
}

// TestHeldBackCountsAreNotLost: the count of a kind that stops is written
// in a summary line once it has been quiet for a second (at the next line
// of any kind) and at Flush, so a flood that ends, or a server that stops,
// still leaves its size in the log.
func TestHeldBackCountsAreNotLost(t *testing.T) {
	log, b, c := newLogger(Options{Rate: 1, Burst: 2})
	for range 50 {
		log.Warn("tcp connection refused: too many connections")
	}
	lines(t, b)
	c.t = c.t.Add(2 * time.Second)
	log.Info("agent serving")
	got := lines(t, b)
	if len(got) != 2 || got[0]["msg"] != HeldBackMessage || got[0][SuppressedKey] != float64(48) ||
		got[0]["kind"] != "tcp connection refused: too many connections" || got[0]["level"] != "WARN" {
		t.Fatalf("after the flood stopped: %v", got)
	}
	for range 30 {
		log.Info("http request refused", "remote", "10.0.0.1:1")
	}
	lines(t, b)
	log.Handler().(*Handler).Flush(context.Background())
	got = lines(t, b)
	if len(got) != 1 || got[0][SuppressedKey] != float64(28) || got[0]["remote"] != nil {
		t.Fatalf("Flush: %v", got)
	}
	log.Handler().(*Handler).Flush(context.Background())
	if got := lines(t, b); len(got) != 0 {
		t.Fatalf("a second Flush wrote %v", got)
	}
}

// TestBurstBelowOneStillWrites: a burst under one line is one line (it
// used to hold back every line for ever).
func TestBurstBelowOneStillWrites(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 0.1, Burst: 0.5})
	log.Info("x")
	if got := lines(t, b); len(got) != 1 {
		t.Fatalf("Burst 0.5: %d lines", len(got))
	}
}

// TestIntegerKeyAttrsCountApart: an integer KeyAttrs value (an HTTP
// status) tells kinds apart too (threat: a flood of 404s holding back
// the 413s of an oversized-body attack).
func TestIntegerKeyAttrsCountApart(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 2, KeyAttrs: []string{"status"}})
	for range 50 {
		log.Info("http request refused", "status", 404)
	}
	log.Info("http request refused", "status", 413)
	got := lines(t, b)
	if len(got) != 3 || got[2]["status"] != float64(413) {
		t.Fatalf("a 413 during a flood of 404s: %v", got)
	}
}

// errName is a named string type, as an error name passed without
// string() is.
type errName string

// TestKeyAttrsOfOtherTypesCountApart: a KeyAttrs value that is neither a
// string nor an integer (a named string type passed as any) still tells
// kinds apart (it used to be left out, merging the kinds).
func TestKeyAttrsOfOtherTypesCountApart(t *testing.T) {
	log, b, _ := newLogger(Options{Rate: 1, Burst: 2, KeyAttrs: []string{"name"}})
	for range 50 {
		log.Info("unverified message refused", "name", errName("malformed"))
	}
	log.Info("unverified message refused", "name", errName("bad_signature"))
	if got := lines(t, b); len(got) != 3 || got[2]["name"] != "bad_signature" {
		t.Fatalf("a bad signature during a flood of garbage: %v", got)
	}
}
