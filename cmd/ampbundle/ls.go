package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func lsCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list installed bundles, capabilities and aliases",
		ArgsUsage: " ",
		Description: `Lists the installed bundles (version, highest version ever imported,
import and expiry times, signers, artifact count and bytes), the
capabilities they provide (each version with its providing bundle; --json
adds the input and output schema references, ready for 'ampbundle
resolve'), and the legacy type aliases. Opens the store read-only.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag, jsonFlag},
		Action: storeAction(env, readOnly, 0, "no arguments", func(c *cli.Context, s registry) error {
			m, err := catalog.Read(s, catalog.ReadOptions{Now: env.Now})
			if err != nil {
				return err
			}
			v := m.Listing()
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, v)
			}
			printListing(env, v)
			return nil
		}),
	}
}

// lsJSON is what 'ls --json' prints: the catalog model's listing view.
type lsJSON = catalog.Listing

// printListing writes the listing for people. Its text comes from the
// installed bundles and statements: each field goes through
// cliutil.Sanitize.
func printListing(env *cliutil.Env, v catalog.Listing) {
	w := env.Stdout
	S := cliutil.Sanitize
	if len(v.Bundles) == 0 {
		fmt.Fprintln(w, "no bundles installed")
	}
	for _, b := range v.Bundles {
		fmt.Fprintf(w, "%s version %d (highest ever %d)\n", S(b.BundleID), b.Version, b.HighestVersion)
		fmt.Fprintf(w, "  imported   %s\n", S(b.ImportedAt))
		if b.ExpiresAt != "" {
			fmt.Fprintf(w, "  expires    %s%s\n", S(b.ExpiresAt), soonNote(env.Now(), b.ExpiresAt))
		}
		fmt.Fprintf(w, "  signed by  %s\n", cliutil.SanitizeJoin(b.Signers, ", "))
		fmt.Fprintf(w, "  artifacts  %d (%d bytes)\n", b.Artifacts, b.Bytes)
		if b.Revoked != "" {
			fmt.Fprintf(w, "  REVOKED    fails closed (5002 bundle_revoked): %s\n", S(b.Revoked))
		}
		if b.Stale != "" {
			fmt.Fprintf(w, "  STALE      fails closed (5002 bundle_stale): %s\n", S(b.Stale))
		}
		if b.Expired {
			fmt.Fprintf(w, "  EXPIRED    fails closed (5002 bundle_expired)\n")
		}
	}
	width := 0
	for _, c := range v.Capabilities {
		width = max(width, len(c.Name))
	}
	if len(v.Capabilities) > 0 {
		fmt.Fprintf(w, "capabilities %d\n", len(v.Capabilities))
	}
	for _, c := range v.Capabilities {
		// Versions grouped by providing bundle, in version order.
		var groups []string
		for i := 0; i < len(c.Versions); {
			j := i
			var vs []string
			for ; j < len(c.Versions) && c.Versions[j].BundleID == c.Versions[i].BundleID; j++ {
				vs = append(vs, c.Versions[j].Version)
			}
			groups = append(groups, fmt.Sprintf("%s (%s)", cliutil.SanitizeJoin(vs, ", "), S(c.Versions[i].BundleID)))
			i = j
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, S(c.Name), strings.Join(groups, "; "))
	}
	types := make([]string, 0, len(v.Aliases))
	for t := range v.Aliases {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(w, "alias  %s -> %s\n", S(t), S(v.Aliases[t]))
	}
}
