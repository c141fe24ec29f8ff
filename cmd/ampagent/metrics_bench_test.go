package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// BenchmarkInstrumentOverhead measures what serve's HTTP wrapper (metrics,
// the request-scoped remote address, the refusal log) and one agent
// Observation add to a request, against the same trivial handler served
// bare: the figures in docs/PERFORMANCE.md are the ratio of the two.
func BenchmarkInstrumentOverhead(b *testing.B) {
	s, err := resolver.Open(filepath.Join(b.TempDir(), "s.db"), resolver.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := newMetrics(s, nil)
	log := slog.New(slog.DiscardHandler)
	trivial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})
	observed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.observe(agent.Observation{Type: amp.TypeCapInvoke, Duration: time.Millisecond})
		io.WriteString(w, "ok")
	})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", trivial},
		{"instrumented", instrument(observed, m, log)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodPost, amphttp.MessagesPath, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, req)
			}
		})
	}
}
