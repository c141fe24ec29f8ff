package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport"
)

func pushCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "push a bundle, a statement or a layout's bundle to an OCI registry or layout",
		ArgsUsage: "FILE|SOURCE DESTINATION",
		Description: `Pushes the bundle FILE to DESTINATION, oci://REGISTRY/REPO[:TAG],
oci-layout:DIR[:TAG] or oci-layout:FILE.tar[:TAG], as one artifact
(docs/FORMAT.md, "Bundles in OCI registries and layouts"): the file is one
layer, byte for byte, or with --max-layer-size consecutive layers of at most
SIZE bytes that concatenated are the file. Without TAG the artifact is
pushed untagged; its digest is printed.

A revocation, trust or heartbeat statement FILE is pushed as an artifact
whose subject is the bundle DESTINATION names (TAG or @sha256:HEX): the
registry lists it among the bundle's referrers (OCI 1.1; a registry without
the referrers API gets the referrers tag sha256-HEX).

SOURCE, an oci:// or oci-layout: reference, copies that bundle with its
statements (every manifest and blob verified against its digest and
bounded, as a pull is) to DESTINATION, tagged TAG or SOURCE's tag: a layout
carried across an air gap goes into the site's registry this way.

Nothing is signed or verified here: the store that imports what is pulled
verifies it. A tar destination is rewritten whole (its bundles kept) and
replaced only when the push succeeded.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "max-layer-size", Usage: "cut the bundle into layers of at most `SIZE` bytes (bytes, or with K, M, G; default: one layer)"},
			jsonFlag,
		}, ociFlags(false)...),
		Action: func(c *cli.Context) (err error) {
			defer func() { err = ociFlagHint(err) }() // the library names its Options, the CLI its flags
			if err := cliutil.ExactArgs(c, 2, "the FILE (or SOURCE) and the DESTINATION"); err != nil {
				return err
			}
			src, dstArg := c.Args().Get(0), c.Args().Get(1)
			if !ocitransport.IsLocation(dstArg) {
				return cliutil.Usagef("the DESTINATION is oci://REGISTRY/REPO[:TAG] or oci-layout:DIR[:TAG]")
			}
			dst, err := parseOCI(dstArg, "the DESTINATION", false)
			if err != nil {
				return err
			}
			o, err := ociOptions(env, c)
			if err != nil {
				return err
			}
			ctx, ep, done, err := openOCI(c, 0, dst, o, ocitransport.ReadWrite)
			if err != nil {
				return err
			}
			defer done()
			var a *ocitransport.Artifact
			var extra int
			switch {
			case ocitransport.IsLocation(src):
				a, extra, err = pushCopy(ctx, ep, src, dst, o)
			default:
				a, err = pushFile(ctx, ep, src, dst)
			}
			if err != nil {
				return err
			}
			if err := ep.Commit(); err != nil {
				return err
			}
			return printPushed(env, c, "pushed", dst, a, extra)
		},
	}
}

// pushCopy copies the bundle SOURCE names, with its statements, to ep.
func pushCopy(ctx context.Context, ep *ocitransport.Endpoint, srcArg string, dst ocitransport.Location, o ocitransport.Options) (*ocitransport.Artifact, int, error) {
	srcLoc, err := parseOCI(srcArg, "the SOURCE", true)
	if err != nil {
		return nil, 0, err
	}
	tag, err := copyTag(srcLoc, dst)
	if err != nil {
		return nil, 0, err
	}
	src, err := ocitransport.Open(ctx, srcLoc, o, ocitransport.ReadOnly)
	if err != nil {
		return nil, 0, err
	}
	defer src.Close()
	return ocitransport.Copy(ctx, src, srcLoc.Reference, ep, tag)
}

// copyTag is the tag a copy gets: the destination's, else the source's
// (none when the source names a digest). A destination digest is refused.
func copyTag(src, dst ocitransport.Location) (string, error) {
	if dst.IsDigest() {
		return "", cliutil.Usagef("the destination names a digest; give a TAG or none")
	}
	if dst.Reference != "" || src.IsDigest() {
		return dst.Reference, nil
	}
	return src.Reference, nil
}

// pushFile pushes a bundle file, or a statement onto the bundle dst names.
func pushFile(ctx context.Context, ep *ocitransport.Endpoint, path string, dst ocitransport.Location) (*ocitransport.Artifact, error) {
	f, err := bundlebuild.OpenRegular(path)
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot open the file").WithCause(err)
	}
	defer f.Close()
	stmt, err := readStatement(f)
	if err != nil {
		return nil, err
	}
	if stmt != nil {
		if dst.Reference == "" {
			return nil, cliutil.Usagef("a statement is pushed onto a bundle: name it in DESTINATION (:TAG or @sha256:HEX)")
		}
		b, err := ep.Resolve(ctx, dst.Reference)
		if err != nil {
			return nil, err
		}
		return ep.PushStatement(ctx, stmt, b)
	}
	if dst.IsDigest() {
		return nil, cliutil.Usagef("the destination names a digest; give a TAG or none")
	}
	return ep.PushBundle(ctx, f, filepath.Base(path), dst.Reference)
}

// pushedJSON is the JSON view of a push or pull.
type pushedJSON struct {
	Location   string `json:"location"`
	Digest     string `json:"digest"`
	Kind       string `json:"kind"`
	Layers     int    `json:"layers"`
	Size       int64  `json:"size,omitempty"`
	Statements int    `json:"statements,omitempty"`
	File       string `json:"file,omitempty"`
}

func printPushed(env *cliutil.Env, c *cli.Context, verb string, loc ocitransport.Location, a *ocitransport.Artifact, stmts int) error {
	v := pushedJSON{Location: loc.String(), Digest: a.Descriptor.Digest.String(), Kind: a.Kind, Layers: len(a.Manifest.Layers), Size: a.FileSize, Statements: stmts}
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, v)
	}
	S := cliutil.Sanitize // a tag or path of the command line, a hint of the registry
	fmt.Fprintf(env.Stdout, "%s %s to %s\n", verb, a.Kind, S(v.Location))
	fmt.Fprintf(env.Stdout, "  digest      %s\n", v.Digest)
	if a.Kind == ocitransport.KindBundle {
		fmt.Fprintf(env.Stdout, "  layers      %d (%d bytes)\n", v.Layers, v.Size)
	}
	if stmts > 0 {
		fmt.Fprintf(env.Stdout, "  statements  %d\n", stmts)
	}
	return nil
}
