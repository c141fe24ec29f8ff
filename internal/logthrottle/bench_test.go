package logthrottle

import (
	"io"
	"log/slog"
	"testing"
)

// BenchmarkLogLine measures what the throttle adds to one log line, as
// serve configures it (KeyAttrs, Exempt): "bare" is the JSON handler
// alone, "passed" a line the throttle lets through, "held" one it holds
// back (a flood), "exempt" a named caller's line. docs/PERFORMANCE.md
// gives the ratios to "bare".
func BenchmarkLogLine(b *testing.B) {
	opts := Options{Rate: 1e12, Burst: 1e12, KeyAttrs: []string{"typ", "outcome", "name"},
		Exempt: func(a slog.Attr) bool { return a.Key == "caller" && a.Value.String() == "named" }}
	held := opts
	held.Rate, held.Burst = 1e-9, 1
	bare := slog.NewJSONHandler(io.Discard, nil)
	for _, bc := range []struct {
		name   string
		h      slog.Handler
		caller string
	}{
		{"bare", bare, "other"},
		{"passed", New(bare, opts), "other"},
		{"held", New(bare, held), "other"},
		{"exempt", New(bare, held), "named"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := slog.New(bc.h).With("remote", "127.0.0.1:50412")
			b.ReportAllocs()
			for b.Loop() {
				log.Info("message handled", "from", "did:key:z6MkvwBLaKUoGSi5yZDgYc6UWyqVsePnM77WgqGQk8MNuH8L", "caller", bc.caller,
					"typ", "CAP_INVOKE", "code", 0, "outcome", "ok")
			}
		})
	}
}
