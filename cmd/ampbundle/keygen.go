package main

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

func keygenCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "create a publisher signing key",
		Description: `Writes a new Ed25519 publisher key to FILE as a PKCS#8 PEM "PRIVATE KEY"
block, mode 0600 (an existing file is never overwritten), and prints its
did:key. The public key is written as PEM to --pub FILE, or printed.
Operators trust the public key (or the did:key) with 'ampbundle trust add'.`,
		ArgsUsage: " ",
		Flags: cliutil.KeygenFlags("new private key `FILE` (required)",
			[]cli.Flag{&cli.StringFlag{Name: "pub", Usage: "also write the public key PEM to `FILE`"}}, jsonFlag),
		Action: func(c *cli.Context) error {
			priv, write, err := cliutil.NewSigningKey(c, env)
			if err != nil {
				return err
			}
			pub := priv.Public().(ed25519.PublicKey)
			if err := pubFileFree(c); err != nil {
				return err
			}
			if err := write(priv); err != nil {
				return err
			}
			if c.IsSet("pub") {
				if err := keyfile.WritePublic(c.String("pub"), pub); err != nil {
					return err
				}
			}
			did := amp.DIDKey(pub)
			if c.Bool("json") {
				out := map[string]any{"did": did, "key_file": c.String("out"), "public_key_pem": string(keyfile.PublicPEM(pub))}
				if c.IsSet("pub") {
					out["public_key_file"] = c.String("pub")
				}
				return cliutil.PrintJSON(env.Stdout, out)
			}
			fmt.Fprintf(env.Stdout, "wrote %s (mode 0600)\ndid: %s\n", c.String("out"), did)
			if c.IsSet("pub") {
				fmt.Fprintf(env.Stdout, "wrote %s\n", c.String("pub"))
			} else {
				fmt.Fprintf(env.Stdout, "%s", keyfile.PublicPEM(pub))
			}
			return nil
		},
	}
}

// pubFileFree refuses --pub, before the private key is written, when it
// names the private key file itself or a file that exists: the public key
// is never written over a file, and a keygen refused after writing its
// private key would leave a key whose public half was not saved.
func pubFileFree(c *cli.Context) error {
	if !c.IsSet("pub") {
		return nil
	}
	pub := c.String("pub")
	if filepath.Clean(pub) == filepath.Clean(c.String("out")) {
		return cliutil.Usagef("--pub and -o name the same file; the public key needs a file of its own")
	}
	if _, err := os.Lstat(pub); err == nil {
		return cliutil.Failf(keyfile.ErrFileExists, "--pub names an existing file; refusing to overwrite an existing file")
	}
	return nil
}
