package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// deltaJSON describes a delta bundle in --json output: the catalog's view.
type deltaJSON = catalog.ManifestDelta

// buildBase returns the signed manifest of the base named by --base or
// --base-from-db, or nil when neither is given.
func buildBase(env *cliutil.Env, c *cli.Context, bundleID string) ([]byte, error) {
	switch {
	case c.IsSet("base"):
		f, err := bundlebuild.OpenRegular(c.String("base"))
		if err != nil {
			return nil, cliutil.Failf("io_error", "cannot open the base bundle").WithCause(err)
		}
		defer f.Close()
		in, err := bundle.Inspect(f, 0)
		if err != nil {
			return nil, cliutil.WithHint(err, "--base must be a bundle file (full or delta) of an earlier version of the same bundle_id")
		}
		return in.SignedManifest, nil
	case c.IsSet("base-from-db"):
		db := c.String("base-from-db")
		s, err := openStoreAt(env, db, "", readOnly)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		signed, err := installedManifest(s, bundleID)
		if err != nil {
			return nil, storeHint(err, db)
		}
		return signed, nil
	}
	return nil, nil
}

// installedManifest returns the signed manifest of the installed bundle id:
// the head of its export, read up to the end of the manifest and no
// further (the export stops when the pipe closes).
func installedManifest(s registry, id string) ([]byte, error) {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := s.Export(id, pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	in, err := bundle.Inspect(pr, 0)
	pr.CloseWithError(errors.New("manifest read"))
	eerr := <-errc
	if err != nil {
		if eerr != nil {
			return nil, eerr
		}
		return nil, err
	}
	return bytes.Clone(in.SignedManifest), nil
}

// printDelta prints what a delta import took from its base.
func printDelta(env *cliutil.Env, d *resolver.DeltaResult) {
	how := "re-hashed"
	if !d.Rehashed {
		how = "checked by content address and size, not re-hashed"
	}
	fmt.Fprintf(env.Stdout, "  delta over    %s: %d artifacts (%d bytes) taken from the base, %s\n", cliutil.Sanitize(d.Base), d.FromBase, d.FromBaseBytes, how)
}
