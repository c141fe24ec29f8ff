package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// minRateFloor is the lowest --min-rate a command takes, in bytes per
// second (1 KiB/s): below it a peer could hold a transfer, and the slot
// it takes, for the whole of its timeout at almost no cost. Left out,
// --min-rate is admission.MinDataRate (128 KiB/s, 1 Mbit/s).
const minRateFloor = 1 << 10

// minRate is the --min-rate of c in bytes per second, the one parser of
// that flag: 0 when it was not given (the default, admission.MinDataRate,
// applied by the options it is given to), a usage error under
// minRateFloor (0 and negative values included: they would read as the
// default, another rule than the one asked for).
func minRate(c *cli.Context) (int64, error) {
	if !c.IsSet("min-rate") {
		return 0, nil
	}
	if v := c.Int64("min-rate"); v >= minRateFloor {
		return v, nil
	}
	return 0, cliutil.Usagef("--min-rate must be at least %d bytes per second", minRateFloor)
}
