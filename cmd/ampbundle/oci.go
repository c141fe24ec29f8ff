package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// defaultOCITimeout is the overall deadline of a push, pull, import or
// sync that reaches an OCI location without --timeout: a registry that
// trickles answers just above the minimum rate cannot hold it forever.
const defaultOCITimeout = 10 * time.Minute

// ociFlags are the flags of every command that reaches an OCI registry or
// layout (docs/CLI.md, "OCI registries and layouts"). sync has its own
// --tls-ca, --timeout and --min-rate, which these then leave out.
func ociFlags(forSync bool) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "registry-config", Usage: "Docker config.json `FILE` with the registry credentials (default $DOCKER_CONFIG/config.json, else ~/.docker/config.json)"},
		&cli.BoolFlag{Name: "plain-http", Usage: "speak plain HTTP to a loopback registry (127.0.0.0/8, ::1, localhost); refused for any other host"},
		&cli.StringSliceFlag{Name: "plain-http-host", Usage: "speak plain HTTP to registry `HOST` (host or host:port; repeatable)"},
		&cli.StringSliceFlag{Name: "allow-auth-host", Usage: "let the registry's token realm be on `HOST`, and receive the credentials (host or host:port; repeatable; https only; default: only the registry and --allow-redirect hosts)"},
		&cli.StringSliceFlag{Name: "allow-redirect", Usage: fmt.Sprintf("let the registry redirect to `HOST` (host or host:port; repeatable; at most %d redirects; default: only to itself)", ocitransport.DefaultMaxRedirects)},
		&cli.StringFlag{Name: "max-blob-size", Value: "4G", Usage: "the largest bundle file or layer read from an OCI location, `SIZE` in bytes or with K, M, G"},
	}
	if !forSync {
		fs = append(fs,
			&cli.StringFlag{Name: "tls-ca", Usage: "CA certificates `PEM` to verify an https registry with (default: the system roots)"},
			&cli.DurationFlag{Name: "timeout", Value: defaultOCITimeout, Usage: "give up after `DURATION` (0: no limit; each body must also arrive at the minimum rate)"},
			&cli.Int64Flag{Name: "min-rate", Usage: fmt.Sprintf("the slowest a body may arrive, or an upload be taken by the registry, in `BYTES` per second (default %d; at least 1024)", admission.MinDataRate)})
	}
	return fs
}

// ociOptions reads the OCI flags.
func ociOptions(env *cliutil.Env, c *cli.Context) (ocitransport.Options, error) {
	o := ocitransport.Options{
		CredentialsFile:    c.String("registry-config"),
		PlainHTTP:          c.Bool("plain-http"),
		PlainHTTPHosts:     c.StringSlice("plain-http-host"),
		AllowRedirectHosts: c.StringSlice("allow-redirect"),
		AllowAuthHosts:     c.StringSlice("allow-auth-host"),
		MinDataRate:        c.Int64("min-rate"),
		Now:                env.Now,
	}
	if !c.IsSet("registry-config") {
		o.CredentialsFile = ocitransport.DefaultCredentialsFile(env.Getenv)
	}
	var err error
	if _, err = minRate(c); err != nil {
		return o, err
	}
	if o.MaxBlobSize, err = parseByteSize("--max-blob-size", c.String("max-blob-size")); err != nil {
		return o, err
	}
	if c.IsSet("max-layer-size") {
		if o.MaxLayerSize, err = parseByteSize("--max-layer-size", c.String("max-layer-size")); err != nil {
			return o, err
		}
	}
	if p := c.String("tls-ca"); p != "" {
		if o.TLS, err = cliutil.ClientTLS(p); err != nil {
			return o, err
		}
	}
	return o, nil
}

// ociFlagHint names, in a refusal of the ocitransport library that an
// Options field governs (its cause an ocitransport.OptionHint), the flag
// of this CLI that sets the field, where the library names the field
// (its callers set Options; docs/SPEC-DECISIONS.md OCI-25). The error
// name, code and details are kept; any other error is returned as it is.
func ociFlagHint(err error) error {
	var ae *amp.Error
	var h *ocitransport.OptionHint
	if !errors.As(err, &ae) || !errors.As(ae.Err, &h) {
		return err
	}
	host := ""
	if h.Host != "" {
		host = " " + h.Host
	}
	var msg string
	switch h.Field {
	case ocitransport.OptionPlainHTTP:
		msg = h.Refusal + "; for a loopback registry add --plain-http (docs/CLI.md)"
	case ocitransport.OptionPlainHTTPHosts:
		msg = h.Refusal + " (name it with --plain-http-host" + host + ")"
	case ocitransport.OptionAllowRedirectHosts:
		msg = h.Refusal + " (allow it with --allow-redirect" + host + ")"
	case ocitransport.OptionAllowAuthHosts:
		msg = h.Refusal + " (allow it with --allow-auth-host" + host + ")"
	case ocitransport.OptionMaxLayerSize:
		msg = h.Refusal + " (a larger --max-layer-size cuts fewer)"
	default:
		return err
	}
	hinted := *ae
	hinted.Message, hinted.Err = msg, nil
	return &hinted
}

// timeoutContext is the command's context with --timeout, or with def
// when --timeout is not given and def is not 0 (a limit of 0: none).
func timeoutContext(c *cli.Context, def time.Duration) (context.Context, context.CancelFunc) {
	d := c.Duration("timeout")
	if !c.IsSet("timeout") && def != 0 {
		d = def
	}
	if d > 0 {
		return context.WithTimeout(c.Context, d)
	}
	return context.WithCancel(c.Context)
}

// openOCI opens loc in mode within the command's timeout (timeoutContext
// with def); done closes the endpoint, then ends the context.
func openOCI(c *cli.Context, def time.Duration, loc ocitransport.Location, o ocitransport.Options, mode ocitransport.Mode) (ctx context.Context, ep *ocitransport.Endpoint, done func(), err error) {
	ctx, cancel := timeoutContext(c, def)
	if ep, err = ocitransport.Open(ctx, loc, o, mode); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, ep, func() { ep.Close(); cancel() }, nil
}

// parseOCI parses an OCI location argument; needRef: it must name a tag
// or digest.
func parseOCI(arg, what string, needRef bool) (ocitransport.Location, error) {
	loc, err := ocitransport.ParseLocation(arg)
	if err != nil {
		return loc, err
	}
	if needRef && loc.Reference == "" {
		return loc, cliutil.Usagef("%s names no tag or digest (oci://REGISTRY/REPO:TAG, …@sha256:HEX, oci-layout:DIR:TAG)", what)
	}
	return loc, nil
}

// spoolOCIBundle pulls the bundle a into a temporary file (removed by
// Close) and returns it rewound.
func spoolOCIBundle(ctx context.Context, ep *ocitransport.Endpoint, a *ocitransport.Artifact) (*spooled, error) {
	f, err := bundlebuild.CreateTemp(os.TempDir(), "oci")
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot create a temporary file for the pulled bundle").WithCause(err)
	}
	sp := &spooled{f}
	if err := ep.WriteBundle(ctx, a, f); err != nil {
		sp.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		sp.Close()
		return nil, cliutil.Failf("io_error", "cannot read back the pulled bundle").WithCause(err)
	}
	return sp, nil
}

// importOCI is 'ampbundle import oci://…' (or oci-layout:…): the artifact
// is pulled into a temporary file, checked against its digests, and
// imported from there exactly as a file is; a statement's artifact is
// applied as 'import STATEMENT' applies a file. A layout is read without
// any network call.
func importOCI(env *cliutil.Env, c *cli.Context) (err error) {
	defer func() { err = ociFlagHint(err) }() // the library names its Options, the CLI its flags
	if err := cliutil.ExactArgs(c, 1, "the OCI reference"); err != nil {
		return err
	}
	if err := cliutil.Require(c, "db"); err != nil {
		return err
	}
	loc, err := parseOCI(c.Args().First(), "the import source", true)
	if err != nil {
		return err
	}
	o, err := ociOptions(env, c)
	if err != nil {
		return err
	}
	ctx, ep, done, err := openOCI(c, 0, loc, o, ocitransport.ReadOnly)
	if err != nil {
		return err
	}
	defer done()
	a, err := ep.Resolve(ctx, loc.Reference)
	if err != nil {
		return err
	}
	name := loc.String()
	if a.Kind != ocitransport.KindBundle {
		data, err := ep.Statement(ctx, a)
		if err != nil {
			return err
		}
		return importStatement(env, c, name, data)
	}
	sp, err := spoolOCIBundle(ctx, ep, a)
	if err != nil {
		return err
	}
	defer sp.Close()
	total, err := artifactBytes(sp.File)
	if err != nil {
		return err
	}
	s, err := openStore(env, c, readWrite)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	res, err := importBundle(ctx, env, c, s, importInput{src: sp.File, total: total, fileSum: a.FileSHA256})
	if err != nil {
		return err
	}
	v := importView(name, res)
	// The import stands: the listing runs even when a signal came after
	// its commit, within the endpoint's own bounds and the command's
	// --timeout (carriedContext).
	// The listing keeps ctx's values and deadline (the command's
	// --timeout) but not its cancellation by a signal, which must not make
	// a committed import say its statements were not listed: dropping the
	// deadline with the signal let a registry that stalls the listing hold
	// the command past its --timeout (docs/SPEC-DECISIONS.md CLI-20,
	// OCI-41).
	lctx, lcancel := withDeadlineOf(context.WithoutCancel(ctx), ctx)
	defer lcancel()
	var lerr error
	v.StatementsNotApplied, lerr = carriedStatements(lctx, ep, a)
	v.StatementsUnlisted = lerr != nil
	defer noteCarried(env, v.StatementsNotApplied, lerr, loc)
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, v)
	}
	printImport(env, cliutil.Sanitize(name), res)
	return nil
}

// carriedStatements counts the statements carried with the bundle a
// (its referrers: revocations, trust statements, heartbeats), which an
// import does not apply (docs/SPEC-DECISIONS.md OCI-6, CLI-20). A listing
// that fails is said so (noteCarried): the import stands, verified, but
// a revocation it may carry is unknown.
func carriedStatements(ctx context.Context, ep *ocitransport.Endpoint, a *ocitransport.Artifact) (int, error) {
	stmts, skipped, err := ep.StatementsSkipping(ctx, a)
	if err != nil {
		return 0, err
	}
	return len(stmts) + len(skipped), nil
}

// noteCarried says in one line on stderr that n statements carried with
// the imported artifact were not applied, naming the sync that applies
// them: an operator importing a revoked bundle must not take it for a
// servable one.
func noteCarried(env *cliutil.Env, n int, listErr error, loc ocitransport.Location) {
	if listErr != nil {
		fmt.Fprintf(env.Stderr, "note: the statements carried with this artifact could not be listed (%s); `ampbundle sync %s` applies any it carries\n",
			amp.NameOf(listErr), cliutil.Sanitize(loc.WithReference("").String()))
		return
	}
	if n == 0 {
		return
	}
	what := "statements carried with this artifact were"
	if n == 1 {
		what = "statement carried with this artifact was"
	}
	fmt.Fprintf(env.Stderr, "note: %d %s not applied; `ampbundle sync %s` applies them\n",
		n, what, cliutil.Sanitize(loc.WithReference("").String()))
}

// errName is the error name of err for a report ("error" when it has none).
func errName(err error) string {
	var e *amp.Error
	if errors.As(err, &e) {
		return string(amp.NameOf(e))
	}
	return "error"
}

// errMessage is err's message without its error name; a refusal an
// ocitransport option governs names this CLI's flag (ociFlagHint).
func errMessage(err error) string {
	var e *amp.Error
	if errors.As(ociFlagHint(err), &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}
