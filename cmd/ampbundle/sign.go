package main

import (
	"crypto/ed25519"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func signCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "sign",
		Usage:     "add a signature to a bundle (co-signing)",
		ArgsUsage: "FILE",
		Description: `Adds the signature of --key to the bundle FILE, so that two officers can
sign one release in two rooms. The manifest, the artifacts and the
signatures already there stay byte for byte; the new COSE signature is
inserted at its place in kid order (docs/FORMAT.md §2), so the result is
the file 'build' writes with all the keys at once.

Before signing, the whole bundle is verified: every existing signature
against the key its kid names, the manifest, expiry, every artifact's size
and hash. A key that already signed is refused (duplicate_signer), as is a
ninth signature. Writes --out (default: FILE itself), atomically.

FILE may also be a revocation statement ('ampbundle revoke'): the signature
is added the same way, after its form and signatures are checked.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "private key `FILE` of the co-signer (required; mode 0600)"},
			cliutil.PassphraseFileFlag(),
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "`FILE` to write (default: the input, replaced atomically)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "the bundle FILE"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "key"); err != nil {
				return err
			}
			in := c.Args().First()
			out := c.String("out")
			if out == "" {
				out = in
			}
			if err := checkOut(out); err != nil { // before the key is read (CLI-105)
				return err
			}
			key, err := cliutil.ReadSigningKey(c, env, c.String("key"))
			if err != nil {
				return err
			}
			f, err := bundlebuild.OpenRegular(in)
			if err != nil {
				return cliutil.Failf("io_error", "cannot open the bundle").WithCause(err)
			}
			defer f.Close()
			if stmt, err := readStatement(f); err != nil {
				return err
			} else if stmt != nil {
				return signStatement(env, c, in, out, stmt, key)
			}
			m, size, sum, err := writeAtomic(out, func(w io.Writer) (*bundle.Manifest, error) {
				return bundle.Cosign(w, f, key, bundle.CosignOptions{Now: env.Now})
			})
			if err != nil {
				return err
			}
			kid := string(bundle.KeyID(key.Public().(ed25519.PublicKey)))
			if c.Bool("json") {
				return cliutil.PrintJSON(summaryTo(env, out), map[string]any{
					"file": out, "size": size, "sha256": sum, "bundle_id": m.BundleID, "version": m.Version, "added": kid,
				})
			}
			fmt.Fprintf(summaryTo(env, out), "signed %s version %d with %s: wrote %s, %d bytes, sha256 %s\n",
				cliutil.Sanitize(m.BundleID), m.Version, kid, cliutil.Sanitize(out), size, sum)
			return nil
		},
	}
}
