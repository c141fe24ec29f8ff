package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

func verifyCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "verify a bundle's signature and every artifact",
		ArgsUsage: "FILE",
		Description: `Checks the bundle as an import would, without a store: the signature by
one of the --trust keys (a public key PEM file or a did:key, trusted here
for every namespace), the manifest, expiry, and every artifact's size and
hash. Exit 0 only when all of it verifies.

A delta bundle (docs/FORMAT.md §12) verifies as far as the file goes: the
signed header and its binding to the full signed manifest, the manifest,
and every artifact the delta carries. The artifacts it takes from its base
are named as such (they are verified when the delta is imported into a
store holding the base).`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trust", Usage: "trusted publisher key: `PUB` PEM file or did:key (repeatable, required)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			split := c.NArg() >= 1 && isPartIndexFile(c.Args().First())
			if !split {
				if err := cliutil.ExactArgs(c, 1, "the bundle FILE (or a part index and the PLACEs of its parts)"); err != nil {
					return err
				}
			}
			if len(c.StringSlice("trust")) == 0 {
				return cliutil.WithHint(cliutil.Usagef("missing required flag --trust"), "give the publisher's public key: --trust publisher.pub.pem or --trust did:key:z6Mk…")
			}
			policy, err := trustFlags(c.StringSlice("trust"))
			if err != nil {
				return err
			}
			path := c.Args().First()
			var src io.Reader
			explain := func(err error) error { return err }
			var parts *partsInput
			if split {
				if parts, err = openParts(c.Args().Slice(), policy, false); err != nil {
					return err
				}
				defer parts.Close()
				src, explain = parts, parts.Explain
			} else {
				f, err := os.Open(path)
				if err != nil {
					return cliutil.Failf("io_error", "cannot open the bundle").WithCause(err)
				}
				defer f.Close()
				src = f
			}
			var prog *cliutil.Progress
			r, err := bundle.NewReader(src, bundle.ReaderOptions{Policy: policy, Now: env.Now, Progress: func(n int64) { prog.Update(n) }, AllowDelta: true})
			if err != nil {
				return explain(err)
			}
			var total int64
			for _, a := range r.Manifest().Artifacts {
				total += int64(a.Size)
			}
			prog = cliutil.NewProgress(env, c.Bool("json"), "verifying", total)
			err = r.VerifyRest()
			prog.Done()
			if err != nil {
				return explain(err)
			}
			if split {
				// The last part's and the whole's hashes are checked at the
				// end of the stream, which VerifyRest reached.
				if err := parts.Err(); err != nil {
					return err
				}
				fmt.Fprintf(env.Stderr, "read %d parts of %s, each matching the signed part index (signed by %s)\n", len(parts.x.Parts), parts.x.Name, strings.Join(parts.signers, ", "))
			}
			sigs := signatureInfo(r.Signatures(), r.Signers())
			s := summarize(path, r.Manifest(), sigs, true)
			if d := r.Delta(); d != nil {
				dv := deltaView(r.Manifest(), d)
				if c.Bool("json") {
					return cliutil.PrintJSON(env.Stdout, map[string]any{"verified": true, "delta": dv, "needs_base": dv.Omitted > 0, "bundle": s})
				}
				fmt.Fprintf(env.Stdout, "verified delta: signatures and the %d artifacts %s carries; %d artifacts (%d bytes) come from base %s and are verified on import into a store holding it\n",
					len(s.Artifacts)-dv.Omitted, path, dv.Omitted, dv.OmittedBytes, dv.Base)
				s.print(env.Stdout)
				return nil
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"verified": true, "bundle": s})
			}
			fmt.Fprintf(env.Stdout, "verified: signature and all %d artifacts of %s\n", len(s.Artifacts), path)
			s.print(env.Stdout)
			return nil
		},
	}
}

// trustFlags turns --trust values into a policy trusting each key for
// every namespace.
func trustFlags(values []string) (*bundle.Policy, error) {
	p := &bundle.Policy{}
	for _, v := range values {
		pub, err := keyfile.ParsePublic(v)
		if err != nil {
			return nil, err
		}
		name := v
		if !strings.HasPrefix(v, "did:key:") {
			name = filepath.Base(v)
		}
		p.Keys = append(p.Keys, bundle.TrustedKey{Name: name, Key: pub, Scopes: []string{"*"}})
	}
	return p, nil
}

// signatureInfo lists the bundle's signatures and which trusted key
// verified each.
func signatureInfo(sigs []bundle.Signature, signers []bundle.TrustedKey) []sigInfo {
	var out []sigInfo
	for _, s := range sigs {
		si := sigInfo{KID: s.KID}
		for _, k := range signers {
			if s.KID == amp.DIDKey(k.Key) {
				si.Verified, si.TrustedAs = true, k.Name
			}
		}
		out = append(out, si)
	}
	return out
}
