package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport"
	"github.com/ampbundle/ampbundle/resolver"
)

func importCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "verify a bundle and install it in the store, all or nothing",
		ArgsUsage: "FILE",
		Description: `Verifies the bundle FILE against the store's trusted keys (signature and
namespace scope first, then every artifact's size and hash as it streams)
and installs it in one transaction: a failed or interrupted import leaves
the store exactly as it was. A newer version of an installed bundle_id
replaces the older one. A version not newer than the highest ever imported
for its bundle_id is refused as a rollback, even after 'ampbundle rm';
--allow-downgrade accepts it and records a downgrade in the audit log.
Importing the bundle that is already installed changes nothing. A bundle
that expires within --expiry-warning is imported with a WARNING on stderr.

A delta bundle (built with 'ampbundle build --base') is accepted when the
store holds the base release it names, whichever copy of that version it
kept (else delta_base_missing, naming the base); the artifacts it omits
are the base's blobs, re-hashed against the full signed manifest unless
--skip-base-rehash (then checked by content address and size; 'ampbundle
check' re-hashes every blob). The result is exactly the state the full
bundle gives.

The store must exist: 'ampbundle trust add' creates it.

FILE - reads the bundle (or statement) from stdin: it is first copied to a
temporary file, at most --max-stdin-size bytes, and verified from there
like any file; nothing lands in the store before it verifies.

FILE oci://REGISTRY/REPO:TAG (or @sha256:HEX), oci-layout:DIR:TAG or
oci-layout:FILE.tar:TAG pulls that artifact (see 'ampbundle pull'), checked
against its digests, into a temporary file, and imports it from there
exactly as a file; a layout is read without any network call.`,
		Flags: append([]cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.BoolFlag{Name: "allow-downgrade", Usage: "accept a version not newer than the highest ever imported (audited)"},
			&cli.BoolFlag{Name: "skip-base-rehash", Usage: "for a delta, take the base's blobs by content address and size without re-hashing them"},
			expiryWarningFlag,
			&cli.StringFlag{Name: "max-stdin-size", Value: defaultMaxStdin, Usage: "with FILE -, the most `SIZE` read from stdin: bytes, or with K, M, G"},
			jsonFlag,
		}, ociFlags(false)...),
		Action: func(c *cli.Context) error {
			// SIGINT or SIGTERM rolls the import back (exit 130).
			return stopOnSignal(env, c, msgImportInterrupted, func() error { return runImport(env, c) })
		},
	}
}

// importInput is what an import reads: the bundle's bytes (src), their
// artifacts' total size for the progress, the whole file's SHA-256 for
// the audit entry of a refusal, and how a failure is explained (a split
// bundle names the part at fault).
type importInput struct {
	src     io.Reader
	total   int64
	fileSum []byte
	explain func(error) error
}

// runImport is 'ampbundle import': an OCI location is pulled first
// (importOCI), a statement is applied (importStatement), a bundle file
// or a split bundle's part index is imported. The file is read whole
// (hashed) before the store is opened.
func runImport(env *cliutil.Env, c *cli.Context) (err error) {
	if ocitransport.IsLocation(c.Args().First()) {
		return importOCI(env, c) // oci.go
	}
	split := c.NArg() >= 1 && c.Args().First() != stdio && isPartIndexFile(c.Args().First())
	if !split {
		if err := cliutil.ExactArgs(c, 1, "the bundle FILE (or a part index and the PLACEs of its parts)"); err != nil {
			return err
		}
	}
	if err := cliutil.Require(c, "db"); err != nil {
		return err
	}
	path := c.Args().First()
	in := importInput{explain: func(err error) error { return err }}
	if !split {
		f, closer, err := openImportFile(env, c, path)
		if err != nil {
			return err
		}
		defer closer.Close()
		if stmt, err := readStatement(f); err != nil {
			return err
		} else if stmt != nil {
			return importStatement(env, c, inputName(path), stmt)
		}
		if in, err = fileInput(f); err != nil {
			return err
		}
		in.explain = nameTheFile(inputName(path))
	}
	s, err := openStore(env, c, readWrite)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	if split {
		// The part index is verified with the store's trust, like
		// the bundle it carries.
		policy, err := storePolicy(s)
		if err != nil {
			return err
		}
		parts, err := openParts(c.Args().Slice(), policy, false)
		if err != nil {
			return err
		}
		defer parts.Close()
		// The whole file's hash is in the signed index.
		in = importInput{src: parts, explain: parts.Explain, total: int64(parts.x.Size), fileSum: parts.x.SHA256}
	}
	res, err := importBundle(c.Context, env, c, s, in)
	if err != nil {
		return in.explain(err)
	}
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, importView(inputName(path), res))
	}
	printImport(env, inputName(path), res)
	return nil
}

// importBundle imports in into s as 'import' does, whatever the bundle
// came from (a file, stdin, a split bundle, an OCI artifact): with
// --allow-downgrade and --skip-base-rehash, a progress of in.total bytes
// and in.fileSum for the audit entry of a refusal; then, once it stands,
// the warning of an expiry near (warnExpiry). The error is the store's,
// for the caller to explain.
func importBundle(ctx context.Context, env *cliutil.Env, c *cli.Context, s registry, in importInput) (*resolver.ImportResult, error) {
	prog := cliutil.NewProgress(env, c.Bool("json"), "importing", in.total)
	ictx, cancel := withDeadlineOf(importContext(ctx, s), ctx)
	defer cancel()
	res, err := s.Import(ictx, in.src, resolver.ImportOptions{AllowDowngrade: c.Bool("allow-downgrade"), SkipBaseRehash: c.Bool("skip-base-rehash"), Progress: prog.Update, FileSHA256: in.fileSum})
	prog.Done()
	if err != nil {
		return nil, err
	}
	warnExpiry(env, c, s, res)
	return res, nil
}

// withDeadlineOf is ictx, an import's context (importContext), with the
// deadline of ctx, the command's (--timeout): through an agent's admin
// socket importContext leaves out ctx's cancellation, and its deadline
// went with it, so the import ran on past --timeout for as long as the
// agent took. The admin client hands the deadline on to the agent, which
// ends the import at it and answers whether it committed
// (internal/admin/client.go ImportAnswerGrace; docs/SPEC-DECISIONS.md
// ADMIN-10).
func withDeadlineOf(ictx, ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ictx, d)
	}
	return ictx, func() {}
}

// openImportFile opens the bundle file of an import: path, or with -
// stdin copied to a temporary file first (at most --max-stdin-size
// bytes), so that it is read like any file. closer releases it.
func openImportFile(env *cliutil.Env, c *cli.Context, path string) (*os.File, io.Closer, error) {
	if path != stdio {
		// Only a regular file is opened: a FIFO or a device in its
		// place is refused at once, never waited on (BUNDLE-19).
		f, err := bundlebuild.OpenRegular(path)
		if err != nil {
			return nil, nil, cliutil.Failf("io_error", "cannot open the bundle").WithCause(err)
		}
		return f, f, nil
	}
	max, err := parseByteSize("--max-stdin-size", c.String("max-stdin-size"))
	if err != nil {
		return nil, nil, err
	}
	sp, err := spoolStdin(env, max)
	if err != nil {
		return nil, nil, err
	}
	return sp.File, sp, nil
}

// fileInput is the import input of a whole bundle file: its artifacts'
// size for the progress, and its hash, taken before the store reads it
// (the audit entry of a refusal names the file by its hash, and the
// store stops reading a refused file).
func fileInput(f *os.File) (importInput, error) {
	total, err := artifactBytes(f)
	if err != nil {
		return importInput{}, err
	}
	fileSum, err := fileSHA256(f)
	if err != nil {
		return importInput{}, err
	}
	return importInput{src: f, total: total, fileSum: fileSum, explain: func(err error) error { return err }}, nil
}

// nameTheFile explains a failed import of a whole file: an error that
// says "file …" (not a bundle, or one that ends early) names which.
func nameTheFile(name string) func(error) error {
	return func(err error) error {
		var e *amp.Error
		if !errors.As(err, &e) || (e.Name != bundle.ErrUnknownFormat && e.Name != bundle.ErrTruncated) {
			return err
		}
		named := *e
		named.Message = fmt.Sprintf("%s is not a bundle or statement: %s", name, e.Message)
		if e.Name == bundle.ErrTruncated {
			named.Message = fmt.Sprintf("%s is not a complete bundle: %s", name, e.Message)
		}
		return &named
	}
}

// artifactBytes reads the manifest at the head of f for the progress total
// and rewinds f. A file whose head does not decode gives total 0: the
// import itself then reports what is wrong with it.
func artifactBytes(f *os.File) (int64, error) {
	var total int64
	if in, err := bundle.Inspect(f, 0); err == nil {
		for _, a := range in.Manifest.Artifacts {
			total += int64(a.Size)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, cliutil.Failf("io_error", "cannot read the bundle").WithCause(err)
	}
	return total, nil
}

// readStatement returns the content of f when it is a signed statement (a
// revocation, docs/FORMAT.md §21) rather than a bundle, and rewinds f.
// Statements are one small CBOR item; a bundle is not one item.
func readStatement(f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, bundle.MaxRevocationSize+1))
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the file").WithCause(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the file").WithCause(err)
	}
	if ct := bundle.ContentType(data); len(data) <= bundle.MaxRevocationSize && (ct == bundle.MediaTypeRevocation || ct == bundle.MediaTypeRotation || ct == bundle.MediaTypeHeartbeat) {
		return data, nil
	}
	return nil, nil
}

// importStatement applies a revocation statement to the store.
func importStatement(env *cliutil.Env, c *cli.Context, path string, data []byte) (err error) {
	s, err := openStore(env, c, readWrite)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	// s is the store itself, or the admin socket of the agent holding it:
	// a revocation reaches a running agent without stopping it.
	if bundle.ContentType(data) == bundle.MediaTypeRotation {
		return applyRotation(env, c, s, path, data)
	}
	if bundle.ContentType(data) == bundle.MediaTypeHeartbeat {
		return applyHeartbeat(env, c, s, path, data)
	}
	res, err := s.ApplyRevocation(data)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, map[string]any{"file": path, "revocation": res})
	}
	w := env.Stdout
	if res.Unchanged {
		fmt.Fprintf(w, "unchanged: the revocation in %s was already applied\n", cliutil.Sanitize(path))
		return nil
	}
	S, J := cliutil.Sanitize, cliutil.SanitizeJoin // the statement's text
	fmt.Fprintf(w, "applied revocation for %s signed by %s\n", S(res.Scope), J(res.Signers, ", "))
	if len(res.RevokedKeys) > 0 {
		fmt.Fprintf(w, "  revoked keys      %s\n", J(res.RevokedKeys, ", "))
	}
	if len(res.RemovedTrust) > 0 {
		fmt.Fprintf(w, "  no longer trusted %s\n", J(res.RemovedTrust, ", "))
	}
	if len(res.NarrowedTrust) > 0 {
		fmt.Fprintf(w, "  no longer trusted for %s: %s (still trusted for other scopes; see trust ls)\n", S(res.Scope), J(res.NarrowedTrust, ", "))
	}
	if len(res.RevokedBundles) > 0 {
		fmt.Fprintf(w, "  revoked versions  %s\n", J(res.RevokedBundles, ", "))
	}
	if len(res.FailedClosed) > 0 {
		fmt.Fprintf(w, "  FAILED CLOSED     %s (5002 bundle_revoked from now on; listed by ls and check)\n", J(res.FailedClosed, ", "))
	}
	fmt.Fprintf(w, "  generation        %d\n", res.Generation)
	return nil
}

// applyRotation applies a trust statement to the store.
func applyRotation(env *cliutil.Env, c *cli.Context, st registry, path string, data []byte) error {
	res, err := st.ApplyRotation(data)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, map[string]any{"file": path, "rotation": res})
	}
	w := env.Stdout
	if res.Unchanged {
		fmt.Fprintf(w, "unchanged: trust statement %d of %s was already applied\n", res.Sequence, cliutil.Sanitize(res.Scope))
		return nil
	}
	S, J := cliutil.Sanitize, cliutil.SanitizeJoin // the statement's text
	fmt.Fprintf(w, "applied trust statement %d of %s signed by %s\n", res.Sequence, S(res.Scope), J(res.Signers, ", "))
	fmt.Fprintf(w, "  added      %s\n", J(res.Added, ", "))
	fmt.Fprintf(w, "  retired    %s\n", J(res.Retired, ", "))
	fmt.Fprintf(w, "  threshold  %d\n", res.Threshold)
	if len(res.StillInstalled) > 0 {
		fmt.Fprintf(w, "  still installed, signed by a retired key: %s (verified before the rotation)\n", J(res.StillInstalled, ", "))
	}
	fmt.Fprintf(w, "  generation %d\n", res.Generation)
	return nil
}

// fileSHA256 hashes f from the start and rewinds it.
func fileSHA256(f *os.File) ([]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the bundle").WithCause(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the bundle").WithCause(err)
	}
	return h.Sum(nil), nil
}

// importJSON is the JSON view of an import.
type importJSON struct {
	File            string   `json:"file"`
	BundleID        string   `json:"bundle_id"`
	Version         uint64   `json:"version"`
	PreviousVersion uint64   `json:"previous_version,omitempty"`
	Unchanged       bool     `json:"unchanged"`
	Downgrade       bool     `json:"downgrade"`
	Warning         string   `json:"warning,omitempty"`
	Signers         []string `json:"signers"`
	Capabilities    []string `json:"capabilities"`
	Artifacts       int      `json:"artifacts"`
	NewBlobs        int      `json:"new_blobs"`
	Generation      uint64   `json:"generation"`
	// Delta is set when FILE was a delta bundle.
	Delta *resolver.DeltaResult `json:"delta,omitempty"`
	// StatementsNotApplied counts, for an OCI artifact, the statements
	// carried with it that import does not apply (sync does).
	StatementsNotApplied int `json:"statements_not_applied,omitempty"`
	// StatementsUnlisted: for an OCI artifact, the statements carried
	// with it could not be listed (a revocation among them is unknown).
	StatementsUnlisted bool `json:"statements_unlisted,omitempty"`
}

func importView(path string, r *resolver.ImportResult) importJSON {
	v := importJSON{File: path, BundleID: r.BundleID, Version: r.Version, PreviousVersion: r.PreviousVersion,
		Unchanged: r.Unchanged, Downgrade: r.Downgrade, Signers: r.Signers, Capabilities: r.Capabilities,
		Artifacts: r.Artifacts, NewBlobs: r.NewBlobs, Generation: r.Generation, Delta: r.Delta}
	if v.Signers == nil {
		v.Signers = []string{}
	}
	if v.Capabilities == nil {
		v.Capabilities = []string{}
	}
	if r.Downgrade {
		v.Warning = downgradeWarning(r)
	}
	return v
}

func downgradeWarning(r *resolver.ImportResult) string {
	return fmt.Sprintf("downgrade: %s version %d is not newer than the highest version ever imported; accepted because of --allow-downgrade and recorded in the audit log", r.BundleID, r.Version)
}

// printImport writes the import for people; the bundle's text and the
// file's name (path) go through cliutil.Sanitize (idempotent: a caller
// that sanitized path already changes nothing).
func printImport(env *cliutil.Env, path string, r *resolver.ImportResult) {
	w := env.Stdout
	S := cliutil.Sanitize
	if r.Unchanged {
		// The attempt is audited (import_unchanged, CLI-23); nothing
		// else changes.
		fmt.Fprintf(w, "unchanged: %s version %d from %s is already installed (verified again; only the audit log records the attempt)\n", S(r.BundleID), r.Version, S(path))
		return
	}
	if r.Downgrade {
		// Loud: on stderr as well, where an operator piping stdout sees it.
		fmt.Fprintf(env.Stderr, "WARNING: %s\n", S(downgradeWarning(r)))
	}
	switch {
	case r.Replaced:
		fmt.Fprintf(w, "replaced %s version %d: the installed file was revoked; this copy of the same release stands on its own signers\n", S(r.BundleID), r.Version)
	case r.Downgrade && r.PreviousVersion != 0:
		fmt.Fprintf(w, "DOWNGRADED %s from version %d to version %d\n", S(r.BundleID), r.PreviousVersion, r.Version)
	case r.Downgrade:
		fmt.Fprintf(w, "DOWNGRADED %s: imported version %d\n", S(r.BundleID), r.Version)
	case r.PreviousVersion != 0:
		fmt.Fprintf(w, "upgraded %s from version %d to version %d\n", S(r.BundleID), r.PreviousVersion, r.Version)
	default:
		fmt.Fprintf(w, "imported %s version %d\n", S(r.BundleID), r.Version)
	}
	fmt.Fprintf(w, "  signed by     %s\n", cliutil.SanitizeJoin(r.Signers, ", "))
	fmt.Fprintf(w, "  capabilities  %s\n", cliutil.SanitizeJoin(r.Capabilities, ", "))
	fmt.Fprintf(w, "  artifacts     %d (%s)\n", r.Artifacts, newBlobs(r.NewBlobs, r.Artifacts))
	if r.Delta != nil {
		printDelta(env, r.Delta)
	}
	fmt.Fprintf(w, "  generation    %d\n", r.Generation)
}

// newBlobs says how many of an import's artifacts brought a blob the
// store did not hold ("1 new blob", "3 new blobs, the others shared").
func newBlobs(n, artifacts int) string {
	switch {
	case n == 0:
		return "no new blobs, all shared"
	case n == 1 && artifacts > 1:
		return "1 new blob, the others shared"
	case n == 1:
		return "1 new blob"
	case n < artifacts:
		return fmt.Sprintf("%d new blobs, the others shared", n)
	}
	return fmt.Sprintf("%d new blobs", n)
}
