package cliutil

import (
	"context"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/logthrottle"
)

// LogRateFlag is --log-rate of the serve commands: how many lines of one
// kind are written per second (logthrottle); 0 writes every line.
func LogRateFlag() cli.Flag {
	return &cli.Float64Flag{Name: "log-rate", Value: logthrottle.DefaultRate,
		Usage: "write at most `N` log lines of one kind per second, after a burst of ten seconds' worth (held-back lines are counted on the next: suppressed=K); 0 writes every line"}
}

// ThrottleLog returns h throttled as --log-rate says.
func ThrottleLog(c *cli.Context, h slog.Handler) (slog.Handler, error) {
	rate := c.Float64("log-rate")
	switch {
	case rate < 0 || rate != rate:
		return nil, Usagef("--log-rate must be 0 or more")
	case rate == 0:
		return h, nil
	}
	// Kinds are told apart, beyond level and message, by the message
	// type, the outcome, the error name and the HTTP status of the serve
	// commands' lines.
	return logthrottle.New(h, logthrottle.Options{Rate: rate, KeyAttrs: []string{"typ", "outcome", "name", "status"}, Exempt: KeptLogLine}), nil
}

// FlushLog writes the counts of the lines log held back under --log-rate
// that no later line carried (a serve command calls it as it stops).
func FlushLog(ctx context.Context, log *slog.Logger) {
	if h, ok := log.Handler().(*logthrottle.Handler); ok {
		h.Flush(ctx)
	}
}

// KeptLogLine reports whether an attribute marks a line --log-rate never
// holds back: a message from a caller an allow rule names
// (caller=named), and what the admin socket did (via=admin_socket, the
// agent's own user). Neither is a stranger's to multiply.
func KeptLogLine(a slog.Attr) bool {
	switch a.Key {
	case "caller":
		return a.Value.String() == "named"
	case "via":
		return a.Value.String() == "admin_socket"
	}
	return false
}
