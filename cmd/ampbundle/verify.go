package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/catalog"
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
store holding the base).

FILE - reads the bundle from stdin.`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trust", Usage: "trusted publisher key: `PUB` PEM file or did:key (repeatable, required)"},
			&cli.StringFlag{Name: "base", Usage: "for a delta: verify the full base bundle `OLD.ampb` too, and the omitted artifacts against it"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error { return runVerify(env, c) },
	}
}

// runVerify is 'ampbundle verify': the bundle (a file, stdin, or a split
// bundle's part index and parts) is verified whole against the --trust
// keys, then reported as a full bundle or as a delta (reportDelta).
func runVerify(env *cliutil.Env, c *cli.Context) error {
	split := c.NArg() >= 1 && c.Args().First() != stdio && isPartIndexFile(c.Args().First())
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
	src, parts, closer, err := openVerifyInput(env, c, split, policy)
	if err != nil {
		return err
	}
	if closer != nil {
		defer closer.Close()
	}
	explain := func(err error) error { return err }
	if parts != nil {
		explain = parts.Explain
	}
	r, err := verifyStream(env, c, src, policy)
	if err != nil {
		return explain(err)
	}
	out := map[string]any{"verified": true}
	if split {
		// The last part's and the whole's hashes are checked at the
		// end of the stream, which VerifyRest reached.
		if err := parts.Err(); err != nil {
			return err
		}
		out["parts"] = map[string]any{"index": path, "count": len(parts.x.Parts), "signers": parts.signers}
		fmt.Fprintf(env.Stderr, "read %d parts of %s, each matching the signed part index (signed by %s)\n", len(parts.x.Parts), cliutil.Sanitize(parts.x.Name), cliutil.SanitizeJoin(parts.signers, ", "))
	}
	sigs := catalog.SignaturesOf(r.Signatures(), r.Signers())
	s := summarize(inputName(path), r.Manifest(), sigs, true)
	out["bundle"] = s
	if r.Delta() != nil {
		return reportDelta(env, c, r, s, out)
	}
	if c.IsSet("base") {
		return cliutil.Usagef("--base applies to a delta bundle; %s is a full bundle", path)
	}
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, out)
	}
	fmt.Fprintf(env.Stdout, "verified: signature and all %d artifacts of %s\n", len(s.Artifacts), cliutil.Sanitize(inputName(path)))
	printManifest(env.Stdout, s)
	return nil
}

// openVerifyInput opens what verify reads: the parts of a split bundle
// (parts, its index verified with policy), stdin, or the file. closer,
// when not nil, releases it.
func openVerifyInput(env *cliutil.Env, c *cli.Context, split bool, policy *bundle.Policy) (io.Reader, *partsInput, io.Closer, error) {
	path := c.Args().First()
	switch {
	case split:
		parts, err := openParts(c.Args().Slice(), policy, false)
		if err != nil {
			return nil, nil, nil, err
		}
		return parts, parts, parts, nil
	case path == stdio:
		return env.Stdin, nil, nil, nil
	}
	// Only a regular file is opened: a FIFO or a device in its place is
	// refused at once, never waited on (BUNDLE-19).
	f, err := bundlebuild.OpenRegular(path)
	if err != nil {
		return nil, nil, nil, cliutil.Failf("io_error", "cannot open the bundle").WithCause(err)
	}
	return f, nil, f, nil
}

// verifyStream verifies the bundle read from src: signature and manifest
// first, then every artifact the file carries, with a progress sized by
// the verified manifest.
func verifyStream(env *cliutil.Env, c *cli.Context, src io.Reader, policy *bundle.Policy) (*bundle.Reader, error) {
	var prog *cliutil.Progress
	r, err := bundle.NewReader(src, bundle.ReaderOptions{Policy: policy, Now: env.Now, Progress: func(n int64) { prog.Update(n) }, AllowDelta: true})
	if err != nil {
		return nil, err
	}
	var total int64
	for _, a := range r.Manifest().Artifacts {
		total += int64(a.Size)
	}
	prog = cliutil.NewProgress(env, c.Bool("json"), "verifying", total)
	err = r.VerifyRest()
	prog.Done()
	if err != nil {
		return nil, err
	}
	return r, nil
}

// reportDelta ends the verification of a delta: the artifacts it takes
// from its base are verified against --base when given (or when it omits
// none), and the report says which were verified and which are left to
// the import.
func reportDelta(env *cliutil.Env, c *cli.Context, r *bundle.Reader, s summary, out map[string]any) error {
	path := c.Args().First()
	dv := catalog.DeltaOf(r.Manifest(), r.Delta())
	baseChecked := false
	if c.IsSet("base") {
		if err := verifyBase(env, r, c.String("base")); err != nil {
			return err
		}
		baseChecked = true
	} else if dv.Omitted == 0 {
		baseChecked = true
	}
	out["delta"], out["needs_base"] = dv, !baseChecked
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, out)
	}
	if baseChecked {
		fmt.Fprintf(env.Stdout, "verified delta with its base: signatures, the %d artifacts %s carries, and the %d artifacts (%d bytes) it takes from base %s, verified in %s\n",
			len(s.Artifacts)-dv.Omitted, cliutil.Sanitize(inputName(path)), dv.Omitted, dv.OmittedBytes, cliutil.Sanitize(dv.Base), cliutil.Sanitize(c.String("base")))
	} else {
		fmt.Fprintf(env.Stdout, "verified delta: signatures and the %d artifacts %s carries; %d artifacts (%d bytes) come from base %s and are verified on import into a store holding it, or here with --base\n",
			len(s.Artifacts)-dv.Omitted, cliutil.Sanitize(inputName(path)), dv.Omitted, dv.OmittedBytes, cliutil.Sanitize(dv.Base))
	}
	printManifest(env.Stdout, s)
	return nil
}

// verifyBase verifies the full bundle at path (its signatures, manifest and
// every artifact) and checks that it is the base release of the delta r
// (its bundle_id at the version r names, BUNDLE-21) and carries every
// artifact r omits with the same hash_alg, hash, size and media type:
// those artifacts are then verified, as the base's artifacts, against the
// hashes r's own signed manifest names.
//
// The base is judged by no --trust key (not by the delta's policy): as in
// a store, whose base is whatever copy it holds at that
// version, the base only supplies bytes, each bound by hash to r's signed
// manifest. Its signatures must still each verify against the key its kid
// names (TRUST-20); they are counted as its signers, so that a base signed
// by a retired or rotated key verifies without that key being trusted for
// the delta too (BUNDLE-23).
func verifyBase(env *cliutil.Env, r *bundle.Reader, path string) error {
	// Opened as the bundle itself is (BUNDLE-19): a FIFO or a device given
	// as the base is refused at once, never waited on.
	f, err := bundlebuild.OpenRegular(path)
	if err != nil {
		return cliutil.Failf("io_error", "cannot open the base bundle").WithCause(err)
	}
	defer f.Close()
	const hint = "--base must be a full bundle of the base version the delta names, whole and unaltered"
	in, err := bundle.Inspect(f, 0)
	if err != nil {
		return cliutil.WithHint(err, hint)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return cliutil.Failf("io_error", "cannot read the base bundle").WithCause(err)
	}
	// The base's own signers, trusted for every name and for this file
	// alone (bundle.SelfPolicy): a kid that names no key is left out, and
	// the reader refuses its signature (TRUST-20).
	own := bundle.SelfPolicy(in.Signatures)
	// Only the base's bytes are used, each against its signed hash: whether
	// the base itself has expired does not matter to the delta (the
	// delta's manifest carries its own expiry, checked above).
	never := func() time.Time { return time.Time{} }
	br, err := bundle.NewReader(f, bundle.ReaderOptions{Policy: own, Now: never})
	if err == nil {
		err = br.VerifyRest()
	}
	if err != nil {
		return cliutil.WithHint(err, hint)
	}
	return r.CheckBase(br.SignedManifest())
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
