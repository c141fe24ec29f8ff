package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

func exportCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write an installed bundle back to a file, byte for byte",
		ArgsUsage: "BUNDLE_ID",
		Description: `Writes the installed bundle BUNDLE_ID to FILE exactly as it was imported
(the same bytes, so the same signature), checking every artifact against its
hash on the way out: a tampered store fails with 5002 hash_mismatch instead
of handing altered bytes on. FILE is written atomically (a temporary file in
the same folder, synced, then moved into place): on failure nothing is left
behind, and an existing FILE is never replaced without --force. What a killed
run left in the folder is removed first. With -o - the bundle goes to stdout,
and only once every artifact checked (it is first written to a temporary
file); the summary then goes to stderr. Opens the store read-only.

A bundle that fails closed in the store (revoked, stale or expired: see ls) is
not exported (bundle_revoked, bundle_stale, bundle_expired), so that it is not
carried to another site by mistake; --allow-failed-closed exports it anyway,
e.g. as evidence.`,
		Flags: []cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "bundle `FILE` to write, - for stdout (required)"},
			forceFlag,
			&cli.BoolFlag{Name: "allow-failed-closed", Usage: "export a bundle the store fails closed (revoked, stale, expired)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 1, "the BUNDLE_ID to export"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db", "out"); err != nil {
				return err
			}
			s, err := openStore(env, c, readOnly)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			id, out := c.Args().First(), c.String("out")
			var b *resolver.Bundle
			bundles, err := s.Bundles()
			if err != nil {
				return err
			}
			for i := range bundles {
				if bundles[i].BundleID == id {
					b = &bundles[i]
				}
			}
			if b == nil {
				return storeHint(cliutil.Failf(resolver.ErrUnknownBundle, "bundle %s is not installed", id), c.String("db"))
			}
			if !c.Bool("allow-failed-closed") {
				if err := failedClosed(b); err != nil {
					return err
				}
			}
			prog := cliutil.NewProgress(env, c.Bool("json"), "exporting", int64(b.Bytes))
			size, sum, err := writeOutput(env, out, "export", c.Bool("force"), func(w io.Writer) error {
				return s.Export(id, &bundlebuild.CountingWriter{W: w, Progress: func(n int64) { prog.Update(min(n, int64(b.Bytes))) }})
			})
			prog.Done()
			if err != nil {
				return storeHint(err, c.String("db"))
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(summaryTo(env, out), map[string]any{
					"bundle_id": id, "version": b.Version, "file": out, "size": size, "sha256": sum,
				})
			}
			fmt.Fprintf(summaryTo(env, out), "exported %s version %d to %s: %d bytes, sha256 %s\n",
				cliutil.Sanitize(id), b.Version, cliutil.Sanitize(outputName(out)), size, sum)
			return nil
		},
	}
}

// failedClosed refuses a bundle that every use of fails closed in its
// store, naming why.
func failedClosed(b *resolver.Bundle) error {
	const hint = "; --allow-failed-closed exports it anyway"
	switch {
	case b.Revoked != "":
		return cliutil.Failf(resolver.ErrBundleRevoked, "bundle %s fails closed in this store (revoked: %s)%s", b.BundleID, b.Revoked, hint)
	case b.Stale != "":
		return cliutil.Failf(resolver.ErrBundleStale, "bundle %s fails closed in this store (stale: %s)%s", b.BundleID, b.Stale, hint)
	case b.Expired:
		return cliutil.Failf(resolver.ErrBundleExpired, "bundle %s fails closed in this store (expired at %s)%s", b.BundleID, b.ExpiresAt, hint)
	}
	return nil
}
