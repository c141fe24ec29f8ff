package main

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
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
		Flags:     cliutil.KeygenFlags("new key `FILE` to write (required)", nil, jsonFlag),
		Action: func(c *cli.Context) error {
			priv, write, err := cliutil.NewSigningKey(c, env)
			if err != nil {
				return err
			}
			x, err := amp.AgreementKeyFromEd25519(priv)
			if err != nil {
				return err
			}
			xpriv, err := ecdh.X25519().NewPrivateKey(x.Private[:])
			if err != nil {
				return cliutil.Failf("key_error", "cannot build the x25519 key").WithCause(err)
			}
			out := c.String("out")
			if err := write(priv, xpriv); err != nil {
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
			// The path is the operator's, but a script may pass on a name
			// from a folder others write: shown through Sanitize, as key
			// show shows it, so its terminal escapes are never sent.
			fmt.Fprintf(env.Stdout, "wrote %s (mode 0600)\ndid: %s\ndid document:\n", cliutil.Sanitize(out), did)
			return cliutil.PrintJSON(env.Stdout, json.RawMessage(docJSON))
		},
	}
}
