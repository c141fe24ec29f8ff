package main

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// errStoreDamaged is the error name of a check that found problems.
const errStoreDamaged amp.ErrName = "store_damaged"

func checkCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "check the store: every blob re-hashed, every index cross-checked",
		ArgsUsage: " ",
		Description: `Re-hashes every stored artifact against its content address and checks
every index of the store against every other and against the signed
manifests: bbolt's page consistency, blobs and reference counts, index
entries, descriptors, aliases, DID and $id entries, high-water marks,
interrupted imports, and the audit chain. Opens the store read-only.

Exit 0 when the store is sound. Otherwise each problem is printed on stderr
as "problem: [KIND] MESSAGE" (with --json too) and the command fails with
store_damaged, whose message counts the problems by kind.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag, jsonFlag},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			s, err := openStore(env, c, readOnly)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			problems, err := s.Check()
			if err != nil {
				return err
			}
			if len(problems) > 0 {
				kinds := map[string]int{}
				for _, p := range problems {
					fmt.Fprintf(env.Stderr, "problem: [%s] %s\n", p.Kind, p.Message)
					kinds[p.Kind]++
				}
				var counts []string
				for k, n := range kinds {
					counts = append(counts, fmt.Sprintf("%s %d", k, n))
				}
				sort.Strings(counts)
				return cliutil.WithHint(
					cliutil.Failf(errStoreDamaged, "store check found %d problem(s) (%s), listed on stderr", len(problems), strings.Join(counts, ", ")),
					"do not serve from this store: restore it from a backup, or build a new one by importing the bundle files again")
			}
			bundles, err := s.Bundles()
			if err != nil {
				return err
			}
			keys, err := s.TrustList()
			if err != nil {
				return err
			}
			head, err := s.AuditHead()
			if err != nil {
				return storeIO("cannot read the audit head", err)
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"ok": true, "store": c.String("db"), "bundles": len(bundles), "trusted_keys": len(keys),
					"generation": s.Generation(), "audit_head": hex.EncodeToString(head),
				})
			}
			fmt.Fprintf(env.Stdout, "store %s is sound: %d bundle(s), %d trusted key(s), generation %d\n", c.String("db"), len(bundles), len(keys), s.Generation())
			return nil
		},
	}
}
