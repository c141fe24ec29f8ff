package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/trust"
)

func trustCommand(env *cliutil.Env) *cli.Command {
	return cliutil.Group("trust", "manage the publisher keys a store trusts",
		trustAddCommand(env), trustLsCommand(env), trustRmCommand(env),
		trustThresholdCommand(env), trustFreshnessCommand(env),
		cliutil.Group("policy", "apply a trust policy file: keys, scopes and thresholds in one step",
			trustPolicyApplyCommand(env)))
}

// trustJSON is the JSON view of a trusted key.
type trustJSON struct {
	Name    string   `json:"name"`
	Key     string   `json:"key"` // did:key
	Scopes  []string `json:"scopes"`
	AddedAt string   `json:"added_at"`
	Except  []string `json:"except,omitempty"` // scopes it was revoked for
}

func trustView(k resolver.TrustKey) trustJSON {
	return trustJSON{Name: k.Name, Key: k.DID(), Scopes: k.Scopes, AddedAt: k.AddedAt, Except: k.Except}
}

func findTrust(keys []resolver.TrustKey, name string) (resolver.TrustKey, bool) {
	for _, k := range keys {
		if k.Name == name {
			return k, true
		}
	}
	return resolver.TrustKey{}, false
}

func trustAddCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "trust a publisher key for namespaces (creates the store)",
		ArgsUsage: "PUB",
		Description: `Trusts the publisher key PUB (a public key PEM file or a did:key) under
--name for the namespaces given by --scope: "*" for every namespace, or a
reverse-domain prefix such as org.example, which covers org.example and
everything under it at a label boundary (org.example.translate, not
org.examples). A bundle is imported only when a trusted key covers its
bundle_id and every capability and DID it carries.

Creates the store when --db does not exist yet: this is how a store is born.
Names are unique, and a key is trusted under one name only. Audited.`,
		Flags: []cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.StringFlag{Name: "name", Usage: "`NAME` of the key in this store: 1-64 of [A-Za-z0-9._-@] (required)"},
			&cli.StringSliceFlag{Name: "scope", Usage: "namespace `PREFIX` the key may sign for, or * (repeatable, required)"},
			&cli.IntFlag{Name: "threshold", Usage: "also set the threshold of each --scope to `N` distinct trusted signatures (trust threshold) (default: thresholds unchanged)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 1, "the publisher key PUB (a PEM file or a did:key)"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db", "name"); err != nil {
				return err
			}
			if len(c.StringSlice("scope")) == 0 {
				return cliutil.WithHint(cliutil.Usagef("missing required flag --scope"),
					"give the namespaces the key may sign for: --scope org.example (repeatable), or --scope '*' for all")
			}
			if err := checkScopes(c.StringSlice("scope")); err != nil {
				return err
			}
			pub, err := keyfile.ParsePublic(c.Args().First())
			if err != nil {
				return err
			}
			db := c.String("db")
			s, created, discard, err := openCreating(env, c)
			if err != nil {
				return err
			}
			name := c.String("name")
			// The key and its scopes' thresholds in one transaction: a
			// threshold out of range trusts nothing.
			if c.IsSet("threshold") {
				err = s.TrustAddWithThreshold(name, pub, c.StringSlice("scope"), c.Int("threshold"))
			} else {
				err = s.TrustAdd(name, pub, c.StringSlice("scope"))
			}
			if err != nil {
				discard() // leave behind no empty store created for nothing
				return err
			}
			defer closeStore(s, &err)
			keys, err := s.TrustList()
			if err != nil {
				return err
			}
			k, _ := findTrust(keys, name)
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"store": db, "created": created, "trusted": trustView(k)})
			}
			if created {
				fmt.Fprintf(env.Stdout, "created store %s\n", cliutil.Sanitize(db))
			}
			fmt.Fprintf(env.Stdout, "trusted %s (%s) for %s\n", cliutil.Sanitize(k.Name), k.DID(), cliutil.SanitizeJoin(k.Scopes, ", "))
			if c.IsSet("threshold") {
				fmt.Fprintf(env.Stdout, "threshold of %s: %d distinct trusted signatures\n", cliutil.SanitizeJoin(k.Scopes, ", "), c.Int("threshold"))
			}
			return nil
		},
	}
}

func trustLsCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list the trusted publisher keys",
		ArgsUsage: " ",
		Description: `Lists the keys the store trusts, by name: did:key, scopes and when each
was added; then any key the store holds but trusts for nothing (a key of
small order kept by an older store), marked REFUSED: remove it with
'ampbundle trust rm NAME'. Opens the store read-only.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag, jsonFlag},
		Action: storeAction(env, readOnly, 0, "no arguments", func(c *cli.Context, s registry) error {
			keys, err := s.TrustList()
			if err != nil {
				return err
			}
			// The keys held but trusted for nothing (TRUST-21), which
			// an older agent does not list: said, not hidden.
			refused, err := s.TrustRefused()
			if amp.NameOf(err) == resolver.ErrUnsupported {
				fmt.Fprintln(env.Stderr, "note: the running agent is older and does not list the keys it holds but trusts for nothing; restart it with this version to see them")
				refused, err = []resolver.RefusedTrustKey{}, nil
			}
			if err != nil {
				return err
			}
			thresholds, err := s.TrustThresholds()
			if err == nil {
				var chains map[string]uint64
				if chains, err = s.TrustChains(); err == nil {
					return printTrust(env, c, keys, refused, thresholds, chains)
				}
			}
			if amp.NameOf(err) != resolver.ErrUnsupported {
				return err
			}
			// An older agent lists its keys only: say what is missing
			// rather than show a store without thresholds.
			fmt.Fprintln(env.Stderr, "note: the running agent is older and does not list its thresholds or trust statement chains; restart it with this version to see them")
			return printTrust(env, c, keys, refused, map[string]int{}, map[string]uint64{})
		}),
	}
}

// printTrust prints what trust ls lists: the trusted keys, then the keys
// the store holds but trusts for nothing (refused, each marked so, with
// how to remove it; docs/SPEC-DECISIONS.md TRUST-21).
func printTrust(env *cliutil.Env, c *cli.Context, keys []resolver.TrustKey, refused []resolver.RefusedTrustKey, thresholds map[string]int, chains map[string]uint64) error {
	if c.Bool("json") {
		out := []trustJSON{}
		for _, k := range keys {
			out = append(out, trustView(k))
		}
		return cliutil.PrintJSON(env.Stdout, map[string]any{"keys": out, "refused": refused, "thresholds": thresholds, "chains": chains})
	}
	if len(keys) == 0 {
		fmt.Fprintln(env.Stdout, "no trusted keys")
	}
	for _, k := range keys {
		// The store's text (a store, or the agent answering for it, may
		// come from elsewhere): through Sanitize, as the refused keys.
		fmt.Fprintf(env.Stdout, "%s\n  key     %s\n  scopes  %s\n  added   %s\n",
			cliutil.Sanitize(k.Name), k.DID(), cliutil.SanitizeJoin(k.Scopes, ", "), cliutil.Sanitize(k.AddedAt))
		if len(k.Except) > 0 {
			fmt.Fprintf(env.Stdout, "  except  %s (revoked there: counts for nothing under them)\n", cliutil.SanitizeJoin(k.Except, ", "))
		}
	}
	for _, k := range refused {
		name := cliutil.Sanitize(k.Name)
		fmt.Fprintf(env.Stdout, "%s  REFUSED (%s: trusted for nothing; 'ampbundle trust rm %s' removes it)\n  key     %s\n  scopes  %s\n  added   %s\n",
			name, cliutil.Sanitize(k.Refused), name, cliutil.Sanitize(k.Key), cliutil.SanitizeJoin(k.Scopes, ", "), cliutil.Sanitize(k.AddedAt))
	}
	for _, sc := range slices.Sorted(maps.Keys(thresholds)) {
		fmt.Fprintf(env.Stdout, "threshold %s: %d distinct trusted signatures\n", cliutil.Sanitize(sc), thresholds[sc])
	}
	for _, sc := range slices.Sorted(maps.Keys(chains)) {
		fmt.Fprintf(env.Stdout, "trust statements %s: applied up to %d\n", cliutil.Sanitize(sc), chains[sc])
	}
	return nil
}

func trustRmCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "stop trusting a publisher key",
		ArgsUsage: "NAME",
		Description: `Stops trusting the key named NAME. Every installed bundle it signed whose
other still-trusted signers are fewer than its threshold fails closed from
now on (5002 bundle_revoked at every use, listed by ls and check), in the
same transaction: a bundle nobody trusted vouches for any more is not
served. With --keep-serving such bundles stay installed and served (they
were verified when they were imported) and only future imports need
another key; the command lists them, and 'ampbundle rm BUNDLE_ID' removes
one. Audited.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag,
			&cli.BoolFlag{Name: "keep-serving", Usage: "keep serving the installed bundles that depended on this key (default: they fail closed)"},
			// --fail-closed was the opt-in before it became the default;
			// it is still accepted, and changes nothing.
			&cli.BoolFlag{Name: "fail-closed", Hidden: true, Usage: "the default; kept for scripts written before it was"},
			jsonFlag},
		Action: storeAction(env, readWrite, 1, "the NAME of a trusted key", func(c *cli.Context, s registry) error {
			name := c.Args().First()
			keys, err := s.TrustList()
			if err != nil {
				return err
			}
			k, _ := findTrust(keys, name)
			failed := []string{}
			keepServing := c.Bool("keep-serving")
			if keepServing && c.Bool("fail-closed") {
				return cliutil.Usagef("--keep-serving and --fail-closed contradict each other (failing closed is the default)")
			}
			if !keepServing {
				// The store itself, or the admin socket of the agent
				// holding it: the agent fails the bundles closed at once.
				f, err := s.TrustRemoveFailClosed(name)
				if err != nil {
					return err
				}
				failed = append(failed, f...)
			} else if err := s.TrustRemove(name); err != nil {
				return err
			}
			bundles, err := s.Bundles()
			if err != nil {
				return err
			}
			signed := []string{}
			for _, b := range bundles {
				if slices.Contains(b.Signers, name) && b.Revoked == "" {
					signed = append(signed, b.BundleID)
				}
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"removed": trustView(k), "still_installed": signed, "failed_closed": failed})
			}
			shown := cliutil.Sanitize(name)
			fmt.Fprintf(env.Stdout, "no longer trusting %s (%s)\n", shown, k.DID())
			if len(failed) > 0 {
				fmt.Fprintf(env.Stdout, "failed closed (5002 bundle_revoked from now on): %s\n", cliutil.SanitizeJoin(failed, ", "))
			}
			if len(signed) > 0 {
				hint := "kept by --keep-serving: remove with 'ampbundle rm BUNDLE_ID'"
				if !keepServing {
					hint = "other trusted signers still meet their threshold"
				}
				fmt.Fprintf(env.Stdout, "still installed and served, signed by %s: %s (%s)\n", shown, cliutil.SanitizeJoin(signed, ", "), hint)
			}
			return nil
		}),
	}
}

func trustThresholdCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "threshold",
		Usage:     "set how many distinct trusted keys must sign a scope",
		ArgsUsage: "SCOPE N",
		Description: `Sets the threshold of SCOPE ("*" or a reverse-domain prefix) to N: a
bundle whose bundle_id, a capability namespace or a did:web host lies under
SCOPE is imported only when at least N distinct keys, each trusted for the
bundle_id and every namespace it carries, signed it with a valid signature
(docs/FORMAT.md §5). A name under several scopes needs the largest of
their thresholds; N=1 is the default and removes the setting. Applies to
imports from now on. Audited. Works through a running agent's admin
socket.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag, jsonFlag},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 2, "the SCOPE and the threshold N"); err != nil {
				return err
			}
			n, perr := strconv.Atoi(c.Args().Get(1))
			if perr != nil || n < 1 || n > bundle.MaxSignatures {
				return cliutil.Usagef("the threshold N must be a whole number from 1 to %d", bundle.MaxSignatures)
			}
			s, err := openStore(env, c, readWrite)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			scope := c.Args().First()
			if err := s.TrustSetThreshold(scope, n); err != nil {
				return err
			}
			keys, err := s.TrustList()
			if err != nil {
				return err
			}
			covering, under := 0, strings.TrimSuffix(scope, ".")
			for _, k := range keys {
				for _, sc := range k.Scopes {
					if sc == "*" || sc == under || strings.HasPrefix(under, sc+".") {
						covering++
						break
					}
				}
			}
			warning := ""
			if covering < n {
				warning = fmt.Sprintf("only %d trusted key(s) cover %s: imports under it fail until more are trusted", covering, scope)
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"scope": scope, "threshold": n, "covering_keys": covering, "warning": warning})
			}
			fmt.Fprintf(env.Stdout, "threshold of %s: %d distinct trusted signatures (%d trusted key(s) cover it)\n", cliutil.Sanitize(scope), n, covering)
			if warning != "" {
				fmt.Fprintf(env.Stderr, "WARNING: %s\n", cliutil.Sanitize(warning))
			}
			return nil
		},
	}
}

// checkScopes refuses a --scope that is no trust scope before the store is
// opened, saying once what a scope must be and then why this one is not
// (the store's own error says the first part twice).
func checkScopes(scopes []string) error {
	for _, sc := range scopes {
		_, err := trust.CleanScope(sc) // the store's own rule, before the store is opened
		if err == nil {
			continue
		}
		why := err
		for u := errors.Unwrap(why); u != nil; u = errors.Unwrap(why) {
			why = u
		}
		return cliutil.Failf(resolver.ErrInvalidTrust, "--scope %s: a trust scope must be * or a reverse-domain prefix such as org.example (%s)",
			cliutil.Sanitize(strconv.Quote(sc)), errMessage(why))
	}
	return nil
}
