package main

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

func keygenCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "create an agent identity (Ed25519 signing key + X25519 key agreement key)",
		Description: `Writes a new agent identity to FILE and prints its did:key and DID document.

FILE holds two PEM blocks, both PKCS#8 "PRIVATE KEY": first the Ed25519
signing key, then the X25519 key agreement key used for authcrypt. The X25519
key is derived from the Ed25519 seed (the clamped first half of its SHA-512,
as libsodium's crypto_sign_ed25519_sk_to_curve25519 does), so that the
did:key of the identity lists it as its keyAgreement key and peers can
encrypt to it with no DID document exchange.

FILE is created with mode 0600 and never overwritten. Every tool refuses a
private key file that group or others can read.`,
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "new key `FILE` to write (required)"},
			&cli.BoolFlag{Name: "encrypt", Usage: "encrypt the private key under a passphrase (from --passphrase-file, $AMP_KEY_PASSPHRASE, or asked twice on the terminal)"},
			cliutil.PassphraseFileFlag(),
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "out"); err != nil {
				return err
			}
			var passphrase []byte
			if c.Bool("encrypt") {
				var err error
				if passphrase, err = cliutil.NewPassphrase(c, env); err != nil {
					return err
				}
			} else if c.IsSet("passphrase-file") {
				return cliutil.Usagef("--passphrase-file needs --encrypt")
			}
			seed := make([]byte, ed25519.SeedSize)
			if _, err := env.Rand.Read(seed); err != nil {
				return cliutil.Failf("key_error", "cannot read randomness").WithCause(err)
			}
			priv := ed25519.NewKeyFromSeed(seed)
			x, err := amp.AgreementKeyFromEd25519(priv)
			if err != nil {
				return err
			}
			xpriv, err := ecdh.X25519().NewPrivateKey(x.Private[:])
			if err != nil {
				return cliutil.Failf("key_error", "cannot build the x25519 key").WithCause(err)
			}
			out := c.String("out")
			write := func() error { return keyfile.WritePrivate(out, priv, xpriv) }
			if passphrase != nil {
				write = func() error { return keyfile.WritePrivateEncrypted(out, passphrase, env.Rand, priv, xpriv) }
			}
			if err := write(); err != nil {
				return err
			}
			did := amp.DIDKey(priv.Public().(ed25519.PublicKey))
			doc, err := amp.DIDKeyDocument(did)
			if err != nil {
				return err
			}
			docJSON, err := json.Marshal(doc)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"did": did, "key_file": out, "did_document": json.RawMessage(docJSON),
				})
			}
			fmt.Fprintf(env.Stdout, "wrote %s (mode 0600)\ndid: %s\ndid document:\n", out, did)
			return cliutil.PrintJSON(env.Stdout, json.RawMessage(docJSON))
		},
	}
}
