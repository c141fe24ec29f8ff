package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/keyfile"
)

func buildCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "build",
		Usage:     "build a signed bundle from a source folder",
		ArgsUsage: "SRC",
		Description: `Reads the source folder SRC (layout: docs/FORMAT.md §8), checks every
descriptor, JSON Schema ($refs must resolve inside the bundle) and DID
document, and writes the signed bundle to FILE (atomically: a temporary file
renamed into place). Same source + same key + same created time = identical
bytes. created_at comes from --created, else SOURCE_DATE_EPOCH, else now.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "bundle `FILE` to write (required)"},
			&cli.StringFlag{Name: "key", Usage: "publisher private key `PEM` file (required; mode 0600)"},
			&cli.StringFlag{Name: "created", Usage: "created_at as an RFC 3339 `TIME`"},
			&cli.StringFlag{Name: "hash", Value: capability.HashSHA256, Usage: "artifact hash `ALG`: sha-256 or sha-512"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "the source folder SRC"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "out", "key"); err != nil {
				return err
			}
			if h := c.String("hash"); h != capability.HashSHA256 && h != capability.HashSHA512 {
				return cliutil.Usagef("--hash must be sha-256 or sha-512")
			}
			created, err := createdAt(env, c)
			if err != nil {
				return err
			}
			key, err := keyfile.ReadSigningKey(c.String("key"))
			if err != nil {
				return err
			}
			d, err := bundle.LoadSource(c.Args().First(), bundle.SourceOptions{
				HashAlg: c.String("hash"), CreatedAt: created, Signer: key.Public().(ed25519.PublicKey)})
			if err != nil {
				return err
			}
			var total int64
			for _, s := range d.Artifacts {
				total += s.Size
			}
			prog := cliutil.NewProgress(env, c.Bool("json"), "building", total)
			out := c.String("out")
			m, size, sum, err := writeAtomic(out, d, key, prog)
			prog.Done()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"file": out, "size": size, "sha256": sum,
					"bundle": summarize("", m, []sigInfo{{KID: string(bundle.KeyID(key.Public().(ed25519.PublicKey)))}}, false),
				})
			}
			fmt.Fprintf(env.Stdout, "wrote %s: %s version %d, %d artifacts, %d capabilities, %d bytes, sha256 %s\n",
				out, m.BundleID, m.Version, len(m.Artifacts), len(m.Capabilities), size, sum)
			return nil
		},
	}
}

// createdAt picks the bundle's created_at.
func createdAt(env *cliutil.Env, c *cli.Context) (time.Time, error) {
	if c.IsSet("created") {
		t, err := time.Parse(time.RFC3339, c.String("created"))
		if err != nil {
			return time.Time{}, cliutil.Usagef("--created must be an RFC 3339 time such as 2026-11-22T10:00:00Z")
		}
		return t.UTC().Truncate(time.Second), nil
	}
	if s := env.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, cliutil.Usagef("SOURCE_DATE_EPOCH must be a whole number of seconds")
		}
		return time.Unix(n, 0).UTC(), nil
	}
	return env.Now().UTC().Truncate(time.Second), nil
}

// writeAtomic writes the bundle to a temporary file next to out and renames
// it into place, so that out is either the old file or the complete new one.
func writeAtomic(out string, d *bundle.Draft, key ed25519.PrivateKey, prog *cliutil.Progress) (*bundle.Manifest, int64, string, error) {
	f, err := os.CreateTemp(filepath.Dir(out), ".ampbundle-*.tmp")
	if err != nil {
		return nil, 0, "", cliutil.Failf("io_error", "cannot create the output file").WithCause(err)
	}
	defer os.Remove(f.Name()) // after a successful rename this is a no-op
	h := sha256.New()
	cw := &countingWriter{w: f, h: h}
	m, err := bundle.Write(cw, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{Progress: prog.Update})
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, 0, "", cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	if err := f.Close(); err != nil {
		return nil, 0, "", cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return nil, 0, "", cliutil.Failf("io_error", "cannot move the bundle into place").WithCause(err)
	}
	return m, cw.n, hex.EncodeToString(h.Sum(nil)), nil
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	h interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}
