package main

import (
	"crypto/ed25519"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

func revokeCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "write a signed revocation statement for keys or bundle versions",
		ArgsUsage: " ",
		Description: `Writes to -o FILE a revocation statement (docs/FORMAT.md §21) for the
namespace --scope, signed by each --key: the keys --revoke-key (a public
key PEM file or a did:key) and the bundle versions --revoke-bundle
(BUNDLE_ID@VERSION) must no longer be trusted. It travels like a bundle:
'ampbundle import FILE' applies it to a store, where it is valid when
signed by the threshold of distinct keys trusted for --scope ('ampbundle
sign' adds a co-signature). There, installed bundles it covers fail closed
at their next use (5002 bundle_revoked) and are listed by ls and check.`,
		Flags: statementFlags(
			&cli.StringFlag{Name: "scope", Usage: "namespace `PREFIX` (or *) the statement speaks for (required)"},
			&cli.StringSliceFlag{Name: "revoke-key", Usage: "key to revoke: `PUB` PEM file or did:key (repeatable)"},
			&cli.StringSliceFlag{Name: "revoke-bundle", Usage: "bundle version to revoke: `BUNDLE_ID@VERSION` (repeatable)"},
		),
		Action: func(c *cli.Context) error {
			in, err := statementInputs(c, env, []string{"scope"}, func() error {
				if len(c.StringSlice("revoke-key")) == 0 && len(c.StringSlice("revoke-bundle")) == 0 {
					return cliutil.Usagef("nothing to revoke: give --revoke-key or --revoke-bundle")
				}
				return nil
			})
			if err != nil {
				return err
			}
			r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: strings.TrimSuffix(c.String("scope"), "."), CreatedAt: in.created}
			for _, k := range c.StringSlice("revoke-key") {
				pub, err := keyfile.ParsePublic(k)
				if err != nil {
					return err
				}
				r.Keys = append(r.Keys, amp.DIDKey(pub))
			}
			for _, b := range c.StringSlice("revoke-bundle") {
				id, v, ok := strings.Cut(b, "@")
				n, err := strconv.ParseUint(v, 10, 64)
				if !ok || err != nil || n < 1 {
					return cliutil.Usagef("--revoke-bundle takes BUNDLE_ID@VERSION, such as org.example.translate@3")
				}
				r.Bundles = append(r.Bundles, bundle.BundleVersion{BundleID: id, Version: n})
			}
			r.Normalize()
			data, err := in.write(bundle.SignRevocation(r, in.keys))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				bv := []string{}
				for _, b := range r.Bundles {
					bv = append(bv, b.String())
				}
				return cliutil.PrintJSON(summaryTo(env, in.out), map[string]any{"file": in.out, "scope": r.Scope, "keys": nonNil(r.Keys), "bundles": bv, "signers": signerKIDs(in.keys), "size": len(data)})
			}
			fmt.Fprintf(summaryTo(env, in.out), "wrote %s: revocation for %s of %d key(s) and %d bundle version(s), signed by %d key(s)\n",
				cliutil.Sanitize(in.out), cliutil.Sanitize(r.Scope), len(r.Keys), len(r.Bundles), len(in.keys))
			return nil
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// signStatement co-signs a statement file (sign FILE when FILE is one).
func signStatement(env *cliutil.Env, c *cli.Context, in, out string, data []byte, key ed25519.PrivateKey) error {
	signed, err := bundle.CosignStatement(data, key)
	if err != nil {
		return err
	}
	if _, _, _, err := writeAtomic(out, func(w io.Writer) (*bundle.Manifest, error) {
		_, err := w.Write(signed)
		return nil, err
	}); err != nil {
		return err
	}
	kid := string(bundle.KeyID(key.Public().(ed25519.PublicKey)))
	if c.Bool("json") {
		return cliutil.PrintJSON(summaryTo(env, out), map[string]any{"file": out, "size": len(signed), "statement": true, "added": kid})
	}
	fmt.Fprintf(summaryTo(env, out), "signed the statement %s with %s: wrote %s, %d bytes\n", cliutil.Sanitize(in), kid, cliutil.Sanitize(out), len(signed))
	return nil
}

func rotateCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "rotate",
		Usage:     "write a signed trust statement: add and retire keys of a scope",
		ArgsUsage: " ",
		Description: `Writes to -o FILE the next trust statement of the chain of --scope
(docs/FORMAT.md §22), signed by each --key: it trusts the keys --add
NAME=PUB for the scope, retires the keys --retire PUB and sets the scope's
threshold to --threshold. The first statement of a scope has no --after;
each next one names the statement before it with --after FILE (its
sequence follows, and it chains to the SHA-256 of its payload, so that
co-signatures added to it later do not break the chain). 'ampbundle import FILE'
applies it when the scope's current threshold of trusted keys signed it
('ampbundle sign' adds co-signatures); an operator who missed several
imports them in order.`,
		Flags: statementFlags(
			&cli.StringFlag{Name: "scope", Usage: "namespace `PREFIX` (or *) of the chain (required)"},
			&cli.StringFlag{Name: "after", Usage: "the previous statement `FILE` of the chain (none for the first)"},
			&cli.IntFlag{Name: "threshold", Value: 1, Usage: "the scope's threshold from this statement on, `N` 1-8"},
			&cli.StringSliceFlag{Name: "add", Usage: "key to trust for the scope: `NAME=PUB` (PEM file or did:key; repeatable)"},
			&cli.StringSliceFlag{Name: "retire", Usage: "key to retire: `PUB` PEM file or did:key (repeatable)"},
		),
		Action: func(c *cli.Context) error {
			in, err := statementInputs(c, env, []string{"scope"}, nil)
			if err != nil {
				return err
			}
			r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: strings.TrimSuffix(c.String("scope"), "."), Sequence: 1,
				Prev: make([]byte, 32), CreatedAt: in.created, Threshold: uint64(max(c.Int("threshold"), 0))}
			if c.IsSet("after") {
				prev, err := cliutil.ReadFile(c.String("after"), bundle.MaxRevocationSize, "previous trust statement")
				if err != nil {
					return err
				}
				p, obj, err := bundle.ParseRotation(prev)
				if err != nil {
					return err
				}
				if p.Scope != r.Scope {
					return cliutil.Usagef("--after names a statement of scope %s, not of --scope", p.Scope)
				}
				// prev names the statement by its payload, whatever
				// signatures its file carries (docs/FORMAT.md §22).
				r.Sequence, r.Prev = p.Sequence+1, obj.PayloadSHA256()
			}
			for _, a := range c.StringSlice("add") {
				name, pubArg, ok := strings.Cut(a, "=")
				if !ok {
					return cliutil.Usagef("--add takes NAME=PUB")
				}
				pub, err := keyfile.ParsePublic(pubArg)
				if err != nil {
					return err
				}
				r.Add = append(r.Add, bundle.NamedKey{Name: name, Key: amp.DIDKey(pub)})
			}
			for _, k := range c.StringSlice("retire") {
				pub, err := keyfile.ParsePublic(k)
				if err != nil {
					return err
				}
				r.Retire = append(r.Retire, amp.DIDKey(pub))
			}
			r.Normalize()
			data, err := in.write(bundle.SignRotation(r, in.keys))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(summaryTo(env, in.out), map[string]any{"file": in.out, "scope": r.Scope, "sequence": r.Sequence,
					"threshold": r.Threshold, "added": len(r.Add), "retired": len(r.Retire), "size": len(data)})
			}
			fmt.Fprintf(summaryTo(env, in.out), "wrote %s: trust statement %d of %s (adds %d, retires %d, threshold %d), signed by %d key(s)\n",
				cliutil.Sanitize(in.out), r.Sequence, cliutil.Sanitize(r.Scope), len(r.Add), len(r.Retire), r.Threshold, len(in.keys))
			return nil
		},
	}
}

// statementFlags are the flags of revoke, rotate and heartbeat: --out,
// --key and --passphrase-file, then the statement's own, then --created
// and --json.
func statementFlags(own ...cli.Flag) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "statement `FILE` to write (required)"},
		&cli.StringSliceFlag{Name: "key", Usage: "signer's private key `PEM` file (required; repeatable)"},
		cliutil.PassphraseFileFlag(),
	}
	flags = append(flags, own...)
	return append(flags, &cli.StringFlag{Name: "created", Usage: "created_at as an RFC 3339 `TIME` (default: now)"}, jsonFlag)
}

// statementInput is what revoke, rotate and heartbeat read before they
// build their statement.
type statementInput struct {
	out     string               // --out
	keys    []ed25519.PrivateKey // the signing keys of --key
	created string               // created_at, RFC 3339 (statementCreated)
}

// statementInputs is the start of revoke, rotate and heartbeat, in this
// order: no arguments; --out and the flags in required; check (nil: none),
// the usage errors found before any key is read; the --out name, judged
// (checkOut: a name that is refused is refused before any key is read or
// anything signed, docs/SPEC-DECISIONS.md CLI-105); the signing keys;
// and created_at.
func statementInputs(c *cli.Context, env *cliutil.Env, required []string, check func() error) (*statementInput, error) {
	if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
		return nil, err
	}
	if err := cliutil.Require(c, append([]string{"out"}, required...)...); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	if err := checkOut(c.String("out")); err != nil {
		return nil, err
	}
	keys, err := signingKeys(c, env, c.StringSlice("key"))
	if err != nil {
		return nil, err
	}
	t, err := statementCreated(c, env)
	if err != nil {
		return nil, err
	}
	return &statementInput{out: c.String("out"), keys: keys, created: t.Format(time.RFC3339)}, nil
}

// write writes a statement to --out as it comes from signing (an error of
// signing is passed on, and nothing written).
func (in *statementInput) write(data []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return data, writeFileAtomic(in.out, data)
}

// statementCreated is a statement's created_at: --created (RFC 3339), else
// now; truncated to the second, in UTC. Shared by revoke, rotate,
// heartbeat and build (createdAt).
func statementCreated(c *cli.Context, env *cliutil.Env) (time.Time, error) {
	if !c.IsSet("created") {
		return env.Now().UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, c.String("created"))
	if err != nil {
		return time.Time{}, cliutil.Usagef("--created must be an RFC 3339 time such as 2026-11-22T10:00:00Z")
	}
	return t.UTC().Truncate(time.Second), nil
}
