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
			if err := writeKeyPair(c, priv, pub, write); err != nil {
				return err
			}
			did := amp.DIDKey(pub)
			if c.Bool("json") {
				out := map[string]any{"did": did, "key_file": c.String("out"), "public_key_pem": string(keyfile.PublicPEM(pub))}
				if c.IsSet("pub") {
					out["public_key_file"] = c.String("pub")
				}
				return cliutil.PrintJSON(env.Stdout, out)
			}
			// The paths are the operator's, but a script may pass on a
			// name from a folder others write: shown through Sanitize
			// (CLI-52, as ampagent keygen, CLI-47).
			fmt.Fprintf(env.Stdout, "wrote %s (mode 0600)\ndid: %s\n", cliutil.Sanitize(c.String("out")), did)
			if c.IsSet("pub") {
				fmt.Fprintf(env.Stdout, "wrote %s\n", cliutil.Sanitize(c.String("pub")))
			} else {
				fmt.Fprintf(env.Stdout, "%s", keyfile.PublicPEM(pub))
			}
			return nil
		},
	}
}

// errPubIsKey: --pub and -o are one file, by spelling or through a link.
func errPubIsKey() error {
	return cliutil.Usagef("--pub and -o name the same file; the public key needs a file of its own")
}

// writeKeyPair writes the private key with write and, with --pub, the
// public key, so that a refused keygen never leaves a private key whose
// public half was not saved (docs/SPEC-DECISIONS.md, CLI-27): --pub is
// created first (exclusively: an existing file, a missing or unwritable
// folder is refused before the key exists), then the key; when the key
// cannot be written, the --pub file just created is removed again. -o
// reached through another spelling of --pub (a linked folder) is thus
// refused as the same file.
func writeKeyPair(c *cli.Context, priv ed25519.PrivateKey, pub ed25519.PublicKey, write func(keys ...any) error) error {
	if !c.IsSet("pub") {
		return write(priv)
	}
	pubPath, out := c.String("pub"), c.String("out")
	if filepath.Clean(pubPath) == filepath.Clean(out) {
		return errPubIsKey()
	}
	if err := keyfile.WritePublic(pubPath, pub); err != nil {
		if amp.NameOf(err) == keyfile.ErrFileExists {
			return cliutil.Failf(keyfile.ErrFileExists, "--pub names an existing file; refusing to overwrite an existing file").WithCause(err)
		}
		return err
	}
	written, statErr := os.Lstat(pubPath)
	err := write(priv)
	if err == nil {
		return nil
	}
	if statErr != nil {
		return err
	}
	if st, serr := os.Stat(out); serr == nil && os.SameFile(written, st) {
		err = errPubIsKey()
	}
	// Removed only while it is still the file just written.
	if now, serr := os.Lstat(pubPath); serr == nil && os.SameFile(written, now) {
		os.Remove(pubPath)
	}
	return err
}
