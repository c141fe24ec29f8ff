package cliutil

import (
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
	return logthrottle.New(h, logthrottle.Options{Rate: rate}), nil
}
