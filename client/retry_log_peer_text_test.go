package client

import (
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// logRecords is a slog.Handler that keeps every record's message and
// attributes as text.
type logRecords struct {
	mu   sync.Mutex
	text []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	h.mu.Lock()
	h.text = append(h.text, b.String())
	h.mu.Unlock()
	return nil
}
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// TestRetryLogDoesNotEchoThePeersErrorMessage: the agent answers every
// attempt with a signed ERROR that asks for a retry (5004, retry: true)
// whose message is the peer's own text: terminal escapes, a forged log
// line and 256 KiB of padding. Were the shared retry loop (resend) to log
// the whole error on each retry, an agent would write what it likes,
// unbounded and unsanitised, into the caller's operator log,
// MaxAttempts-1 times per message, for Send and Post alike. The log names
// the ERROR's code and error name, never the peer's message; the caller
// still gets the error returned.
func TestRetryLogDoesNotEchoThePeersErrorMessage(t *testing.T) {
	const marker = "PEER-CONTROLLED-TEXT"
	peerText := "\x1b[2J" + marker + "\nlevel=ERROR msg=\"operator key leaked\" " + strings.Repeat("A", 256<<10)
	p := newParties(t)
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		body, err := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeOverloaded, "%s", peerText)))
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	for _, via := range []string{"Send", "Post"} {
		t.Run(via, func(t *testing.T) {
			h := &logRecords{}
			c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Logger: slog.New(h)})
			if err != nil {
				t.Fatal(err)
			}
			if via == "Send" {
				_, err = c.Do(context.Background(), amp.TypePing, nil)
			} else {
				_, err = c.Post(context.Background(), amp.TypePing, nil)
			}
			if err == nil || !strings.Contains(err.Error(), marker) {
				t.Fatalf("every attempt answered busy: %.80q, want the agent's ERROR returned", err)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			logged, named := 0, 0
			for _, line := range h.text {
				if strings.Contains(line, marker) {
					logged += len(line)
				}
				if strings.Contains(line, "code=5004") && strings.Contains(line, "name=overloaded") {
					named++
				}
			}
			if logged > 0 {
				t.Fatalf("%s: the agent's ERROR message was written into the caller's log (%d bytes over %d records, escapes and a forged line included); want the code only", via, logged, len(h.text))
			}
			if want := noSleep.MaxAttempts - 1; named != want {
				t.Errorf("%s: %d retry records name code 5004 and overloaded, want %d: %q", via, named, want, h.text)
			}
		})
	}
}
