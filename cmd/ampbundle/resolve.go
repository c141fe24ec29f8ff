package main

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func resolveCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "resolve",
		Usage:     "print the verified bytes of one schema reference",
		ArgsUsage: " ",
		Description: `Resolves a schema reference exactly as an agent does: from the local store
only, by (bundle_id, artifact_key), with the bytes checked against
--hash-alg/--hash before anything is printed. 'ampbundle ls --json' lists
the references of every installed capability.

Writes the bytes to stdout exactly, with nothing added. With --json, prints
a document with the size, the hash and the bytes in base64. Any failure
(bundle not installed or expired, no such artifact, missing bytes, hash
mismatch) is AMP 5002 UNAVAILABLE, and nothing is written to stdout but the
--json error document. Opens the store read-only.`,
		Flags: []cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.StringFlag{Name: "bundle-id", Usage: "`BUNDLE_ID` of the reference (required)"},
			&cli.StringFlag{Name: "artifact-key", Usage: "artifact `KEY` of the reference (required)"},
			&cli.StringFlag{Name: "hash-alg", Value: capability.HashSHA256, Usage: "`ALG` of --hash: sha-256 or sha-512"},
			&cli.StringFlag{Name: "hash", Usage: "expected hash of the bytes, `HEX` (required)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 0, "no arguments (the reference is given by flags)"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db", "bundle-id", "artifact-key", "hash"); err != nil {
				return err
			}
			alg := c.String("hash-alg")
			var size int
			switch alg {
			case capability.HashSHA256:
				size = sha256.Size
			case capability.HashSHA512:
				size = sha512.Size
			default:
				return cliutil.Usagef("--hash-alg must be sha-256 or sha-512")
			}
			hash, err := cliutil.DecodeHexN("hash", c.String("hash"), size)
			if err != nil {
				return err
			}
			ref := capability.SchemaRef{BundleID: c.String("bundle-id"), ArtifactKey: c.String("artifact-key"), HashAlg: alg, Hash: hash}
			s, err := openStore(env, c, readOnly)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			data, err := s.Resolve(ref)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, resolveJSON{BundleID: ref.BundleID, ArtifactKey: ref.ArtifactKey,
					HashAlg: alg, Hash: hex.EncodeToString(hash), Size: len(data),
					ContentBase64: base64.StdEncoding.EncodeToString(data)})
			}
			if _, err := env.Stdout.Write(data); err != nil {
				return cliutil.Failf("io_error", "cannot write the bytes").WithCause(err)
			}
			return nil
		},
	}
}

// resolveJSON is the --json output of resolve.
type resolveJSON struct {
	BundleID      string `json:"bundle_id"`
	ArtifactKey   string `json:"artifact_key"`
	HashAlg       string `json:"hash_alg"`
	Hash          string `json:"hash"`
	Size          int    `json:"size"`
	ContentBase64 string `json:"content_base64"` // standard base64, padded
}
