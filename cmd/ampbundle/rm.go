package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func rmCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove an installed bundle",
		ArgsUsage: "BUNDLE_ID",
		Description: `Uninstalls BUNDLE_ID in one transaction: its artifacts, capabilities,
aliases and DID documents go, and blobs no other bundle shares are deleted.
The high-water mark of the bundle_id stays: no version up to the highest
ever imported can be imported again without --allow-downgrade (rollback
protection). Audited.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag, jsonFlag},
		Action: storeAction(env, readWrite, 1, "the BUNDLE_ID to remove", func(c *cli.Context, s registry) error {
			id := c.Args().First()
			var highest uint64
			bundles, err := s.Bundles()
			if err != nil {
				return err
			}
			for _, b := range bundles {
				if b.BundleID == id {
					highest = b.Highest
				}
			}
			version, err := s.Remove(id)
			if err != nil {
				return storeHint(err, c.String("db"))
			}
			shown := cliutil.Sanitize(id)
			if version == 0 {
				// Its record did not decode: neither its version nor its
				// high-water mark could be read (docs/SPEC-DECISIONS.md
				// STORE-9); the mark stays all the same.
				if c.Bool("json") {
					return cliutil.PrintJSON(env.Stdout, map[string]any{"removed": id, "generation": s.Generation()})
				}
				fmt.Fprintf(env.Stdout, "removed %s (its record could not be read: version unknown)\n", shown)
				fmt.Fprintf(env.Stdout, "its high-water mark stays: importing %s at a version up to it again needs --allow-downgrade\n", shown)
				return nil
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"removed": id, "version": version, "highest_version": highest, "generation": s.Generation(),
				})
			}
			fmt.Fprintf(env.Stdout, "removed %s version %d\n", shown, version)
			fmt.Fprintf(env.Stdout, "the high-water mark stays at version %d: importing %s version %d or lower again needs --allow-downgrade\n", highest, shown, highest)
			return nil
		}),
	}
}
