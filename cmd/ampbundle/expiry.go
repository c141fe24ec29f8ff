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
				cliutil.Sanitize(b.BundleID), b.Version, expiresIn(left), b.ExpiresAt)
		}
	}
}

// expiresIn says how soon an expiry is, in whole days ("expires in 3 d"),
// in hours under a day ("expires in 5 h"), or that it has passed.
func expiresIn(left time.Duration) string {
	switch {
	case left <= 0:
		return "has expired"
	case left < 24*time.Hour:
		return fmt.Sprintf("expires in %d h", int(left/time.Hour))
	}
	return fmt.Sprintf("expires in %d d", int(left/(24*time.Hour)))
}

// soonNote is what ls adds to a bundle's expiry line: how soon, when it is
// under lsExpirySoon away and not past ("" otherwise, and for an expiry
// that does not parse).
func soonNote(now time.Time, expiresAt string) string {
	at, err := time.Parse(time.RFC3339, expiresAt)
	if err != nil {
		return ""
	}
	if left := at.Sub(now); left > 0 && left < lsExpirySoon {
		return " (" + expiresIn(left) + ")"
	}
	return ""
}
