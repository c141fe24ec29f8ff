package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// Expiry is never a surprise: import warns when the bundle it installed
// expires soon, ls says how soon under lsExpirySoon, and check fails on an
// expired bundle (docs/CLI.md §2.8, §2.9, §2.12).
const (
	// defaultExpiryWarning is import's --expiry-warning.
	defaultExpiryWarning = 7 * 24 * time.Hour
	// lsExpirySoon is how near an expiry ls counts down to.
	lsExpirySoon = 30 * 24 * time.Hour
)

// expiryWarningFlag is import's --expiry-warning.
var expiryWarningFlag = &cli.DurationFlag{Name: "expiry-warning", Value: defaultExpiryWarning,
	Usage: "warn on stderr when the bundle expires within `DURATION` (default 168h = 7 days; 0: never)"}

// warnExpiry prints on stderr a warning when the bundle import installed
// (or found installed) expires within --expiry-warning of now. The import
// has succeeded: a listing that cannot be read only leaves the warning out.
func warnExpiry(env *cliutil.Env, c *cli.Context, s registry, r *resolver.ImportResult) {
	window := c.Duration("expiry-warning")
	if window <= 0 {
		return
	}
	bundles, err := s.Bundles()
	if err != nil {
		return
	}
	for _, b := range bundles {
		if b.BundleID != r.BundleID || b.Version != r.Version || b.ExpiresAt == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, b.ExpiresAt)
		if err != nil {
			return // the store's own field; ls shows it as it is
		}
		if left := at.Sub(env.Now()); left < window {
			fmt.Fprintf(env.Stderr, "WARNING: %s version %d %s (at %s): import a newer version before then\n",
				cliutil.Sanitize(b.BundleID), b.Version, expiresIn(left), cliutil.Sanitize(b.ExpiresAt))
		}
	}
}

// expiresIn says how soon an expiry is ("expires in 2 d 23 h"; see
// countdown), or that it has passed.
func expiresIn(left time.Duration) string {
	if left <= 0 {
		return "has expired"
	}
	return "expires in " + countdown(left)
}

// countdown writes a duration for a person counting down to (or up from)
// an expiry, in the largest unit that says enough and never more than
// there is (each part rounded down): under an hour in minutes ("12 min",
// "under 1 min"), under a day in hours and minutes ("5 h 30 min", "5 h"),
// under a week in days and hours ("2 d 23 h", "3 d"), beyond in days
// ("20 d").
func countdown(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return "under 1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < day:
		return withRest(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "min")
	case d < 7*day:
		return withRest(int(d/day), "d", int(d%day/time.Hour), "h")
	}
	return fmt.Sprintf("%d d", int(d/day))
}

// withRest is "N unit M rest", or "N unit" when M is 0.
func withRest(n int, unit string, m int, rest string) string {
	if m == 0 {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return fmt.Sprintf("%d %s %d %s", n, unit, m, rest)
}

// soonNote is what ls adds to a bundle's expiry line: how soon, when it is
// under lsExpirySoon away ("(expires in 2 d 23 h)"), or how long ago it
// expired ("(EXPIRED 3 d ago)": the bundle fails closed); "" for a
// further expiry and for one that does not parse.
func soonNote(now time.Time, expiresAt string) string {
	at, err := time.Parse(time.RFC3339, expiresAt)
	if err != nil {
		return ""
	}
	switch left := at.Sub(now); {
	case left <= 0 && -left < time.Minute:
		return " (EXPIRED just now)"
	case left <= 0:
		return " (EXPIRED " + countdown(-left) + " ago)"
	case left < lsExpirySoon:
		return " (" + expiresIn(left) + ")"
	}
	return ""
}
