package main

import (
	"fmt"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

func trustPolicyApplyCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "make the store trust what a trust policy file says",
		ArgsUsage: "FILE",
		Description: `Applies the trust policy FILE (docs/FORMAT.md, "Trust policy files"): a
JSON document of keys (name, did:key, scopes) and thresholds per scope. In
one transaction, or not at all: each key is trusted under its name for
exactly its scopes (kept when already so; a name or key trusted otherwise is
trust_exists, a revoked key key_revoked), each threshold is set, and every
threshold must then be reachable by the keys that cover its scope
(invalid_policy otherwise). Keys the file does not list stay trusted and are
listed. Each change is audited. Creates the store when --db does not exist
yet (and removes it again if the policy is refused). Works through a
running agent's admin socket.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag, jsonFlag},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 1, "the trust policy FILE"); err != nil {
				return err
			}
			data, err := cliutil.ReadFile(c.Args().First(), resolver.MaxTrustPolicySize, "trust policy")
			if err != nil {
				return err
			}
			// Refused here before any store is opened or created; the
			// store (or the agent holding it) parses it again.
			if _, err := resolver.ParseTrustPolicy(data); err != nil {
				return err
			}
			s, created, discard, err := openCreating(env, c)
			if err != nil {
				return err
			}
			res, err := s.ApplyTrustPolicyFile(data)
			if err != nil {
				discard() // leave behind no empty store created for nothing
				return err
			}
			defer closeStore(s, &err)
			if created {
				fmt.Fprintf(env.Stderr, "created store %s\n", cliutil.Sanitize(c.String("db")))
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, res)
			}
			w := env.Stdout
			if res.Unchanged {
				fmt.Fprintf(w, "trust policy applied: nothing to change (%d key(s) already trusted as it says)\n", len(res.Kept))
			} else {
				fmt.Fprintf(w, "trust policy applied: %d key(s) added, %d kept, %d threshold(s) set\n", len(res.Added), len(res.Kept), len(res.Thresholds))
			}
			for _, n := range res.Added {
				fmt.Fprintf(w, "  trusted    %s\n", cliutil.Sanitize(n))
			}
			scopes := make([]string, 0, len(res.Thresholds))
			for sc := range res.Thresholds {
				scopes = append(scopes, sc)
			}
			sort.Strings(scopes)
			for _, sc := range scopes {
				fmt.Fprintf(w, "  threshold  %s: %d distinct trusted signatures\n", cliutil.Sanitize(sc), res.Thresholds[sc])
			}
			if len(res.NotInPolicy) > 0 {
				fmt.Fprintf(w, "  not in the policy, left trusted: %s (trust rm removes them)\n", cliutil.SanitizeJoin(res.NotInPolicy, ", "))
			}
			fmt.Fprintf(w, "  generation %d\n", res.Generation)
			return nil
		},
	}
}
