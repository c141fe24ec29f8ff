package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
	"github.com/ampbundle/ampbundle/ocitransport"
)

func pullCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "pull",
		Usage:     "pull a bundle or statement from an OCI registry or layout into a file or a layout",
		ArgsUsage: "SOURCE",
		Description: `Pulls the artifact SOURCE names, oci://REGISTRY/REPO:TAG,
oci://REGISTRY/REPO@sha256:HEX, oci-layout:DIR:TAG or
oci-layout:FILE.tar:TAG, into the file --out: a bundle's layers
concatenated, each checked against its digest as it streams and the whole
against the manifest's size and SHA-256; a statement's one blob. A digest
reference is checked against what the registry answers. The file is
written to a temporary file and renamed only when every check passed:
on any failure nothing is written. An existing FILE is replaced only with
--force (else file_exists, before any network call).

With --out oci-layout:DIR[:TAG] (or a .tar), the bundle is copied with its
statements into that layout, for a trip across an air gap.

A pull checks the transport, not the publisher: 'ampbundle import' (or
'import oci://…' directly) verifies signatures, trust, hashes and rollback.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "`FILE` to write, or oci-layout:DIR[:TAG] (required)"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing FILE"},
			jsonFlag,
		}, ociFlags(false)...),
		Action: func(c *cli.Context) (err error) {
			defer func() { err = ociFlagHint(err) }() // the library names its Options, the CLI its flags
			if err := cliutil.ExactArgs(c, 1, "the SOURCE"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "out"); err != nil {
				return err
			}
			loc, err := parseOCI(c.Args().First(), "the SOURCE", true)
			if err != nil {
				return err
			}
			o, err := ociOptions(env, c)
			if err != nil {
				return err
			}
			if err := pullTarget(c.String("out"), c.Bool("force")); err != nil {
				return err // before any network call
			}
			ctx, src, done, err := openOCI(c, 0, loc, o, ocitransport.ReadOnly)
			if err != nil {
				return err
			}
			defer done()
			out := c.String("out")
			if ocitransport.IsLocation(out) {
				dst, err := parseOCI(out, "--out", false)
				if err != nil {
					return err
				}
				tag, err := copyTag(loc, dst)
				if err != nil {
					return err
				}
				ep, err := ocitransport.Open(ctx, dst, o, ocitransport.ReadWrite)
				if err != nil {
					return err
				}
				defer ep.Close()
				a, n, err := ocitransport.Copy(ctx, src, loc.Reference, ep, tag)
				if err != nil {
					return err
				}
				if err := ep.Commit(); err != nil {
					return err
				}
				return printPushed(env, c, "copied", dst.WithReference(tag), a, n)
			}
			a, err := src.Resolve(ctx, loc.Reference)
			if err != nil {
				return err
			}
			if a.Kind == ocitransport.KindBundle {
				err = pullBundle(ctx, src, a, out)
			} else {
				err = pullStatement(ctx, src, a, out)
			}
			if err != nil {
				return err
			}
			return printPulled(env, c, loc, a, out)
		},
	}
}

// pullTarget refuses an --out FILE before any network call: one that is
// not a regular file, nothing, /dev/null or one of this process's
// descriptors (judgeOut), also with force; an existing regular file
// without force (file_exists). /dev/null and a name standing for one of
// this process's descriptors are written with or without force.
func pullTarget(out string, force bool) error {
	if ocitransport.IsLocation(out) {
		return nil
	}
	k, err := judgeOut(out)
	if err != nil || k != regfile.OutputFile || force {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		return existsError(out)
	}
	return nil
}

// pullBundle writes the bundle file of a to out: through PullFile (a
// temporary file next to out, renamed over it once every check passed),
// or, for /dev/null or a name standing for one of this process's
// descriptors (judgeOut), into a temporary file in the system's
// temporary folder that is copied there once every check passed
// (copyToStream: discarded, or through a duplicate of the descriptor),
// so that nothing is renamed over it.
func pullBundle(ctx context.Context, src *ocitransport.Endpoint, a *ocitransport.Artifact, out string) error {
	k, err := judgeOut(out)
	if err != nil {
		return err
	}
	if k == regfile.OutputFile {
		return src.PullFile(ctx, a, out)
	}
	f, err := bundlebuild.CreateTemp(os.TempDir(), "pull")
	if err != nil {
		return cliutil.Failf("io_error", "cannot create a temporary file for the bundle").WithCause(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := src.WriteBundle(ctx, a, f); err != nil {
		return err
	}
	return copyToStream(f, out, k)
}

// pullStatement writes a statement's blob to out (writePulled).
func pullStatement(ctx context.Context, src *ocitransport.Endpoint, a *ocitransport.Artifact, out string) error {
	data, err := src.Statement(ctx, a)
	if err != nil {
		return err
	}
	return writePulled(data, out, regfile.SyncDir)
}

// writePulled writes data to out: a temporary file, synced, renamed over
// out once complete, then out's folder synced by syncDir (regfile.SyncDir;
// a test's recorder), so that the new name is durable when it returns, as
// a bundle's (ocitransport's PullFile; docs/SPEC-DECISIONS.md OCI-26). A
// folder that cannot be synced is io_error: the file is at out, its name
// perhaps not yet durable.
//
// An out that is /dev/null or names one of this process's descriptors
// (judgeOut) gets data, complete, through copyToStream; nothing is
// renamed over it. out is judged again just before the rename
// (stillFile).
func writePulled(data []byte, out string, syncDir func(dir string) error) (err error) {
	k, err := judgeOut(out)
	if err != nil {
		return err
	}
	if k != regfile.OutputFile {
		return copyToStream(bytes.NewReader(data), out, k)
	}
	f, err := bundlebuild.CreateTemp(filepath.Dir(out), "pull")
	if err != nil {
		return cliutil.Failf("io_error", "cannot create the output file").WithCause(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		if err = stillFile(out); err != nil {
			return err
		}
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		return cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	if err = syncDir(filepath.Dir(out)); err != nil {
		return cliutil.Failf("io_error", "the output file was written, but its folder could not be synced").WithCause(err)
	}
	return nil
}

func printPulled(env *cliutil.Env, c *cli.Context, loc ocitransport.Location, a *ocitransport.Artifact, out string) error {
	v := pushedJSON{Location: loc.String(), Digest: a.Descriptor.Digest.String(), Kind: a.Kind, Layers: len(a.Manifest.Layers), Size: a.FileSize, File: out}
	w := summaryTo(env, out) // never after the bytes pulled to -o /dev/stdout (CLI-104)
	if c.Bool("json") {
		return cliutil.PrintJSON(w, v)
	}
	fmt.Fprintf(w, "pulled %s from %s to %s\n", a.Kind, cliutil.Sanitize(v.Location), cliutil.Sanitize(out))
	fmt.Fprintf(w, "  digest      %s\n", v.Digest)
	if a.Kind == ocitransport.KindBundle {
		fmt.Fprintf(w, "  size        %d bytes (checked against its digests; import verifies the signatures)\n", v.Size)
	}
	return nil
}
