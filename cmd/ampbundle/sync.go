package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// Exit codes of 'ampbundle sync --detailed-exitcode' beyond the CLI
// contract (docs/CLI.md §2.16). Without the flag a sync follows the
// contract: 0 when it ran and refused nothing (imported or not: success is
// success for 'set -e' scripts and 'sync && ...'), 1 when something was
// refused (the report, on stdout, says what) or it could not run.
const (
	syncExitImported = 10 // at least one bundle imported (or, with --dry-run, would be), none refused
	syncExitRefused  = 11 // at least one bundle refused; the store is unchanged by it
)

func syncCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "sync",
		Usage:     "import what a mirror ('ampbundle serve') has that the store lacks, verified like import",
		ArgsUsage: "URL|oci://REGISTRY/REPO|oci-layout:DIR",
		Description: `Pulls from the mirror at URL every bundle it offers that is newer than
what the store DB has installed, and imports each exactly as 'ampbundle import'
does: signature and namespace trust, every artifact's size and hash, rollback;
all or nothing, audited. The mirror is never trusted: its capabilities
document is checked, each file must match the index (bundle_id, version, size,
SHA-256) before it is offered to the import, a version not newer than the
installed one is refused before any download, and a refused file changes
nothing. Only URL is dialled: no proxy, no redirect is followed.

Signed trust and revocation statements the mirror lists are applied first,
in order, exactly as 'ampbundle import FILE' applies one (verified against
the store's own trust), so a revocation reaches the bundles of the same run.
The heartbeat the mirror keeps for each bundle line is applied after the
bundles, the same way, unless the store keeps that one or a newer one that
still counts: a freshness policy (trust freshness) then judges the installed
bundles against it.

Interrupted downloads resume: partial files stay in DB.sync/ (one per bundle
file the mirror offers, each at most the bundle size limit; files the mirror
no longer offers are removed). --dry-run only says what would be imported.
On a terminal, a progress line shows each bundle file as it downloads.

Exit codes: 0 the sync ran and refused nothing, whether it imported
something or not (also --dry-run); 1 at least one bundle, statement or
heartbeat refused (the others may have been imported; the report says
which), or the sync could not run (mirror unreachable or malformed, store
error); 2 usage. With --detailed-exitcode, for timers and scripts that act
on a change: 0 nothing new; 10 imported or applied (with --dry-run: would
import), none refused; 11 at least one refused; 1 the sync could not run;
2 usage.

An OCI source (oci://REGISTRY/REPO, oci-layout:DIR or oci-layout:FILE.tar)
is read tag by tag (--tag-pattern selects): of each bundle_id the highest
version the tags offer is pulled and imported as 'import' does (the others
are reported superseded), and the statements attached to the bundles
(OCI referrers) or tagged on their own are applied, trust and revocations
before the bundles, heartbeats after them.`,
		Flags: append([]cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.BoolFlag{Name: "dry-run", Usage: "only report what would be imported"},
			&cli.BoolFlag{Name: "detailed-exitcode", Usage: fmt.Sprintf("exit %d when something was imported or applied (--dry-run: would be), %d when something was refused (default: 0 and 1)", syncExitImported, syncExitRefused)},
			&cli.StringFlag{Name: "tls-ca", Usage: "CA certificates `PEM` to verify an https mirror with (default: the system roots)"},
			&cli.DurationFlag{Name: "timeout", Value: 0, Usage: fmt.Sprintf("give up after `DURATION` (default: no limit from a mirror, 10m from an OCI source; each answer must arrive at %d KiB/s at least, and a run's answers share 2m of slack past that, MIRROR-26)", admission.MinDataRate>>10)},
			&cli.Int64Flag{Name: "min-rate", Usage: fmt.Sprintf("the slowest an answer may arrive, in `BYTES` per second (default %d, 1 Mbit/s; at least 1024): lower it on a slower link", admission.MinDataRate)},
			jsonFlag,
			&cli.StringFlag{Name: "tag-pattern", Value: "*", Usage: "with an OCI source, sync only the tags matching `GLOB` (path.Match syntax)"},
		}, ociFlags(true)...),
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 1, "the mirror URL"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db"); err != nil {
				return err
			}
			if ocitransport.IsLocation(c.Args().First()) {
				return syncOCI(env, c) // oci_sync.go
			}
			var tlsCfg *tls.Config
			if p := c.String("tls-ca"); p != "" {
				var err error
				if tlsCfg, err = cliutil.ClientTLS(p); err != nil {
					return err
				}
			}
			if _, err := minRate(c); err != nil {
				return err
			}
			s, err := openSyncStore(env, c)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			ctx, cancel := timeoutContext(c, 0)
			defer cancel()
			log := slog.New(slog.DiscardHandler)
			// The bundle id comes from the mirror's index: sanitized
			// before it reaches the terminal.
			update, progressDone := cliutil.Phases(env, c.Bool("json"))
			progress := func(bundleID string, done, total int64) {
				update("downloading "+cliutil.Sanitize(bundleID), done, total)
			}
			rep, err := mirror.Sync(ctx, s, mirror.SyncOptions{URL: c.Args().First(), SpoolDir: c.String("db") + ".sync",
				DryRun: c.Bool("dry-run"), TLS: tlsCfg, Logger: log, MinDataRate: c.Int64("min-rate"), Progress: progress})
			progressDone()
			if err != nil {
				return err
			}
			if err := printReport(env, c, rep, printSync); err != nil {
				return err
			}
			return syncExit(rep, c.Bool("detailed-exitcode"))
		},
	}
}

// syncExit is the exit status of a sync that ran: with detailed
// (--detailed-exitcode), 0, 10 or 11; without, 0 or 1. A refusal is 1
// without an error document: the report already printed says what was
// refused, and --json prints one document.
func syncExit(rep *mirror.SyncReport, detailed bool) error {
	return syncExitOf(rep.Count(mirror.OutcomeRefused), rep.Count(mirror.OutcomeImported)+rep.Count(mirror.OutcomePlanned), detailed)
}

// syncExitOf is the exit rule of every sync (a mirror's, an OCI
// repository's), from how many things were refused and how many were
// imported, applied or (--dry-run) would be.
func syncExitOf(refused, changed int, detailed bool) error {
	switch {
	case !detailed && refused > 0:
		return cliutil.ExitStatus(1)
	case !detailed:
		return nil
	case refused > 0:
		return cliutil.ExitStatus(syncExitRefused)
	case changed > 0:
		return cliutil.ExitStatus(syncExitImported)
	}
	return nil
}

// printSync writes the report for people. Its text comes from the mirror
// (and from errors that may quote it): each field goes through
// cliutil.Sanitize.
func printSync(env *cliutil.Env, rep *mirror.SyncReport) {
	w := env.Stdout
	S := cliutil.Sanitize
	for _, st := range rep.Statements {
		switch st.Outcome {
		case mirror.OutcomeImported:
			fmt.Fprintf(w, "applied statement %s (%s)\n", S(st.SHA256), S(st.ContentType))
		case mirror.OutcomePlanned:
			fmt.Fprintf(w, "would apply statement %s (%s)\n", S(st.SHA256), S(st.ContentType))
		case mirror.OutcomeRefused:
			fmt.Fprintf(w, "REFUSED statement %s: %s (%s); the store is unchanged by it\n", S(st.SHA256), S(st.Message), S(st.Error))
		}
	}
	for _, it := range rep.Items {
		switch it.Outcome {
		case mirror.OutcomeImported:
			if it.PreviousVersion != 0 {
				fmt.Fprintf(w, "imported %s version %d (was %d)\n", S(it.BundleID), it.Version, it.PreviousVersion)
			} else {
				fmt.Fprintf(w, "imported %s version %d\n", S(it.BundleID), it.Version)
			}
		case mirror.OutcomePlanned:
			fmt.Fprintf(w, "would import %s version %d\n", S(it.BundleID), it.Version)
		case mirror.OutcomeCurrent:
			fmt.Fprintf(w, "up to date %s version %d\n", S(it.BundleID), it.Version)
		case mirror.OutcomeRefused:
			fmt.Fprintf(w, "REFUSED %s version %d: %s (%s); the store is unchanged by it\n", S(it.BundleID), it.Version, S(it.Message), S(it.Error))
		}
	}
	for _, hb := range rep.Heartbeats {
		switch hb.Outcome {
		case mirror.OutcomeImported:
			fmt.Fprintf(w, "applied heartbeat: %s is at version >= %d\n", S(hb.BundleID), hb.Version)
			if hb.Stale != "" {
				fmt.Fprintf(w, "  STALE      %s fails closed (5002 bundle_stale): %s\n", S(hb.BundleID), S(hb.Stale))
			}
		case mirror.OutcomePlanned:
			fmt.Fprintf(w, "would apply heartbeat: %s is at version >= %d\n", S(hb.BundleID), hb.Version)
		case mirror.OutcomeRefused:
			fmt.Fprintf(w, "REFUSED heartbeat of %s version %d: %s (%s); the store is unchanged by it\n", S(hb.BundleID), hb.Version, S(hb.Message), S(hb.Error))
		}
	}
	fmt.Fprintf(w, "%d imported, %d up to date, %d refused (mirror generation %d)\n",
		rep.Count(mirror.OutcomeImported), rep.Count(mirror.OutcomeCurrent), rep.Count(mirror.OutcomeRefused), rep.Generation)
	if rep.DryRun {
		fmt.Fprintf(w, "dry run: %d would be imported, nothing was written\n", rep.Count(mirror.OutcomePlanned))
	}
}

// printReport writes a sync's report: as JSON with --json, else as human
// prints it.
func printReport[R any](env *cliutil.Env, c *cli.Context, rep R, human func(*cliutil.Env, R)) error {
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, rep)
	}
	human(env, rep)
	return nil
}

// openSyncStore opens the store of a sync: read-write, read-only with
// --dry-run.
func openSyncStore(env *cliutil.Env, c *cli.Context) (registry, error) {
	if c.Bool("dry-run") {
		return openStore(env, c, readOnly)
	}
	return openStore(env, c, readWrite)
}
