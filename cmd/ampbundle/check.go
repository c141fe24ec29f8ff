package main

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// errStoreDamaged is the error name of a check that found problems.
const errStoreDamaged amp.ErrName = "store_damaged"

// errStoreNeedsRecovery is the error name of a check that found only an
// interrupted import: nothing is damaged, and the next read-write open (or
// check --repair) rolls it back.
const errStoreNeedsRecovery amp.ErrName = "store_needs_recovery"

// recoverable are the problem kinds that a read-write open repairs by
// itself (an interrupted import is rolled back).
var recoverable = map[string]bool{"pending": true}

// checkReport is the details of store_damaged and store_needs_recovery:
// every problem, and whether all of them are recoverable.
type checkReport struct {
	Problems    []resolver.Problem `json:"problems"`
	Recoverable bool               `json:"recoverable"`
}

func checkCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "check the store: every blob re-hashed, every index cross-checked",
		ArgsUsage: " ",
		Description: `Re-hashes every stored artifact against its content address and checks
every index of the store against every other and against the signed
manifests: bbolt's page consistency, blobs and reference counts, index
entries, descriptors, aliases, DID and $id entries, high-water marks,
interrupted imports, and the audit chain. Opens the store read-only, or
read-write with --repair.

Exit 0 when the store is sound and no installed bundle has expired. A
sound store holding expired bundles (which fail closed) fails with
bundle_expired, listing them ({"expired","revoked","stale"} in the details
with --json). Otherwise the command fails, and each
problem is listed as "problem: [KIND] MESSAGE" on stderr, or with --json in
the error's details ({"problems":[{"kind","message"}],"recoverable"}):

  store_needs_recovery  only interrupted imports (a crash or kill during
                        'ampbundle import'): nothing installed is damaged;
                        'check --repair', or any command that opens the
                        store read-write, rolls them back
  store_damaged         anything else: do not serve from this store

--repair opens the store read-write, which rolls back interrupted imports,
then checks it; it repairs nothing else.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag,
			&cli.BoolFlag{Name: "repair", Usage: "open read-write first: roll back interrupted imports, then check"},
			jsonFlag},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			mode := readOnly
			if c.Bool("repair") {
				mode = readWrite
			}
			s, err := openStore(env, c, mode)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			problems, err := s.Check()
			if err != nil {
				return err
			}
			if len(problems) > 0 {
				return checkFailure(env, c, problems)
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
			// Revoked bundles are sound but fail closed: listed, so that
			// an operator removes them or imports a newer version.
			revoked, stale, expired := []string{}, []string{}, []string{}
			for _, b := range bundles {
				if b.Revoked != "" {
					revoked = append(revoked, fmt.Sprintf("%s@%d", b.BundleID, b.Version))
				}
				if b.Stale != "" {
					stale = append(stale, fmt.Sprintf("%s@%d", b.BundleID, b.Version))
				}
				if b.Expired {
					expired = append(expired, fmt.Sprintf("%s@%d", b.BundleID, b.Version))
				}
			}
			if len(expired) > 0 {
				// Sound, but serving less than it was: the operator must
				// act, so the check fails (exit 1, bundle_expired).
				if !c.Bool("json") {
					fmt.Fprintf(env.Stdout, "store %s is sound: %d bundle(s), %d trusted key(s), generation %d\n", c.String("db"), len(bundles), len(keys), s.Generation())
				}
				return cliutil.WithHint(cliutil.Failf(resolver.ErrBundleExpired, "%d bundle(s) have expired and fail closed (5002 bundle_expired): %s",
					len(expired), strings.Join(expired, ", ")).WithDetails(map[string][]string{"expired": expired, "revoked": revoked, "stale": stale}),
					"import a newer version of each, or remove it with 'ampbundle rm'")
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"ok": true, "store": c.String("db"), "bundles": len(bundles), "trusted_keys": len(keys),
					"generation": s.Generation(), "audit_head": hex.EncodeToString(head), "revoked": revoked, "stale": stale,
				})
			}
			fmt.Fprintf(env.Stdout, "store %s is sound: %d bundle(s), %d trusted key(s), generation %d\n", c.String("db"), len(bundles), len(keys), s.Generation())
			if len(stale) > 0 {
				fmt.Fprintf(env.Stdout, "stale, failing closed (5002 bundle_stale): %s\n", cliutil.SanitizeJoin(stale, ", "))
			}
			if len(revoked) > 0 {
				fmt.Fprintf(env.Stdout, "revoked, failing closed (5002 bundle_revoked): %s\n", cliutil.SanitizeJoin(revoked, ", "))
			}
			return nil
		},
	}
}

// checkFailure is the error of a check that found problems: problems on
// stderr for humans, in the details with --json.
func checkFailure(env *cliutil.Env, c *cli.Context, problems []resolver.Problem) error {
	kinds := map[string]int{}
	all := true
	for _, p := range problems {
		if !c.Bool("json") {
			fmt.Fprintf(env.Stderr, "problem: [%s] %s\n", cliutil.Sanitize(p.Kind), cliutil.Sanitize(p.Message))
		}
		kinds[p.Kind]++
		all = all && recoverable[p.Kind]
	}
	var counts []string
	for k, n := range kinds {
		counts = append(counts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(counts)
	where := "listed on stderr"
	if c.Bool("json") {
		where = "listed in the details"
	}
	report := checkReport{Problems: problems, Recoverable: all}
	if all {
		return cliutil.WithHint(
			cliutil.Failf(errStoreNeedsRecovery, "store check found only what interrupted imports left (%d problem(s), %s): nothing installed is damaged", len(problems), where).WithDetails(report),
			"ampbundle check --repair --db "+c.String("db")+" rolls them back (so does any command that opens the store read-write, or starting the agent)")
	}
	return cliutil.WithHint(
		cliutil.Failf(errStoreDamaged, "store check found %d problem(s) (%s), %s", len(problems), strings.Join(counts, ", "), where).WithDetails(report),
		"do not serve from this store: restore it from a backup, or build a new one by importing the bundle files again")
}
