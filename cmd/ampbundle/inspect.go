package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func inspectCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show a bundle's manifest without trusting anyone",
		ArgsUsage: "FILE",
		Description: `Prints bundle_id, version, times, publisher, signer key ids, artifacts
with size and hash, and capabilities with their supported ranges. Nothing is
verified: not the signature, not the artifacts ('ampbundle verify' does).
FILE - reads the bundle from stdin.`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "the bundle FILE"); err != nil {
				return err
			}
			path := c.Args().First()
			var src io.Reader = env.Stdin
			if path != stdio {
				f, err := bundlebuild.OpenRegular(path)
				if err != nil {
					return cliutil.Failf("io_error", "cannot open the bundle").WithCause(err)
				}
				defer f.Close()
				src = f
			}
			in, err := bundle.Inspect(src, 0)
			if err != nil {
				return err
			}
			s := summarize(inputName(path), in.Manifest, catalog.SignaturesOf(in.Signatures, nil), false)
			if in.Delta != nil {
				dv := catalog.DeltaOf(in.Manifest, in.Delta)
				s.Delta = &dv
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, s)
			}
			fmt.Fprintln(env.Stdout, "signature NOT checked: run 'ampbundle verify FILE --trust PUB' to verify")
			if s.Delta != nil {
				fmt.Fprintf(env.Stdout, "DELTA over base %s: %d artifacts (%d bytes) come from the base; the manifest below is the full bundle's\n",
					cliutil.Sanitize(s.Delta.Base), s.Delta.Omitted, s.Delta.OmittedBytes)
			}
			printManifest(env.Stdout, s)
			return nil
		},
	}
}
