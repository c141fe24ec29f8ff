package main

import (
	"encoding/hex"
	"fmt"
	"slices"
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
	// RolledBack is what --repair rolled back before the check (absent
	// without --repair), as in the success document.
	RolledBack *resolver.Recovery `json:"rolled_back,omitempty"`
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

Exit 0 when the store is sound and every installed bundle serves. A sound
store holding bundles that fail closed fails: bundle_expired when one has
expired, else bundle_revoked when one is revoked, else bundle_stale when
one's heartbeat is stale, listing them all ({"expired","revoked","stale"}
in the details with --json). Otherwise the command fails, and each
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
			var rolledBack *resolver.Recovery
			if c.Bool("repair") {
				// Through an agent's admin socket, the agent rolled back
				// what it found when it opened the store; this command
				// cannot tell what (nothing is reported).
				if st, ok := s.Store(); ok {
					r := st.Recovered()
					rolledBack = &r
				}
				if !c.Bool("json") {
					printRolledBack(env, rolledBack)
				}
			}
			problems, err := s.Check()
			if err != nil {
				return err
			}
			if len(problems) > 0 {
				return checkFailure(env, c, problems, rolledBack)
			}
			return checkSound(env, c, s, rolledBack)
		},
	}
}

// printRolledBack says what check --repair rolled back when it opened the
// store (an agent holding the store rolled back at its start).
func printRolledBack(env *cliutil.Env, r *resolver.Recovery) {
	if r == nil {
		fmt.Fprintln(env.Stdout, "repair: the agent holding the store rolled back any interrupted import when it opened it")
		return
	}
	if r.Imports == 0 {
		fmt.Fprintln(env.Stdout, "repair: no interrupted import to roll back")
		return
	}
	fmt.Fprintf(env.Stdout, "repair: rolled back %d interrupted import(s): removed their %d staged blob(s) and journal entries\n", r.Imports, r.Blobs)
}

// failingClosed are the installed bundles a sound store does not serve:
// expired, revoked, stale (BUNDLE_ID@VERSION each).
type failingClosed struct {
	Expired []string `json:"expired"`
	Revoked []string `json:"revoked"`
	Stale   []string `json:"stale"`
	// RolledBack is what --repair rolled back before the check (absent
	// without --repair).
	RolledBack *resolver.Recovery `json:"rolled_back,omitempty"`
}

// checkSound reports a store without problems: exit 0 when every installed
// bundle serves; a bundle failing closed (expired, revoked or stale) fails
// the check, named after the first of those kinds it has (CLI-1, CLI-21),
// so that a check run by a timer notices a line the store no longer
// serves. rolledBack is what --repair rolled back (nil without it).
func checkSound(env *cliutil.Env, c *cli.Context, s registry, rolledBack *resolver.Recovery) error {
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
	fc := failingClosed{Expired: []string{}, Revoked: []string{}, Stale: []string{}, RolledBack: rolledBack}
	for _, b := range bundles {
		id := fmt.Sprintf("%s@%d", b.BundleID, b.Version)
		if b.Expired {
			fc.Expired = append(fc.Expired, id)
		}
		if b.Revoked != "" {
			fc.Revoked = append(fc.Revoked, id)
		}
		if b.Stale != "" {
			fc.Stale = append(fc.Stale, id)
		}
	}
	if !c.Bool("json") {
		fmt.Fprintf(env.Stdout, "store %s is sound: %d bundle(s), %d trusted key(s), generation %d\n", cliutil.Sanitize(c.String("db")), len(bundles), len(keys), s.Generation())
	}
	if err := failingClosedError(fc); err != nil {
		return err
	}
	if c.Bool("json") {
		doc := map[string]any{
			"ok": true, "store": c.String("db"), "bundles": len(bundles), "trusted_keys": len(keys),
			"generation": s.Generation(), "audit_head": hex.EncodeToString(head), "revoked": fc.Revoked, "stale": fc.Stale,
		}
		if rolledBack != nil {
			doc["rolled_back"] = rolledBack
		}
		return cliutil.PrintJSON(env.Stdout, doc)
	}
	return nil
}

// failingClosedError is the failure of a sound store some of whose
// bundles fail closed (nil when none does): bundle_expired, else
// bundle_revoked, else bundle_stale, each kind listed in the message and
// all of them in the details.
func failingClosedError(fc failingClosed) error {
	var parts []string
	var name amp.ErrName
	for _, k := range []struct {
		ids  []string
		name amp.ErrName
		why  string
	}{
		{fc.Expired, resolver.ErrBundleExpired, "expired"},
		{fc.Revoked, resolver.ErrBundleRevoked, "revoked"},
		{fc.Stale, resolver.ErrBundleStale, "stale"},
	} {
		if len(k.ids) == 0 {
			continue
		}
		if name == "" {
			name = k.name
		}
		parts = append(parts, fmt.Sprintf("%s (5002 %s): %s", k.why, k.name, strings.Join(k.ids, ", ")))
	}
	if name == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, id := range slices.Concat(fc.Expired, fc.Revoked, fc.Stale) {
		seen[id] = true
	}
	n := len(seen)
	return cliutil.WithHint(cliutil.Failf(name, "%d installed bundle(s) fail closed, so the store serves nothing of them: %s", n, strings.Join(parts, "; ")).WithDetails(fc),
		"import a newer version of each, or remove it with 'ampbundle rm'")
}

// checkFailure is the error of a check that found problems: problems on
// stderr for humans, in the details with --json.
func checkFailure(env *cliutil.Env, c *cli.Context, problems []resolver.Problem, rolledBack *resolver.Recovery) error {
	kinds := map[string]int{}
	all := true
	for _, p := range problems {
		// What an interrupted import left is summed up in one line
		// below; each entry stays in the --json details.
		if !c.Bool("json") && p.Kind != "pending" {
			fmt.Fprintf(env.Stderr, "problem: [%s] %s\n", cliutil.Sanitize(p.Kind), cliutil.Sanitize(p.Message))
		}
		kinds[p.Kind]++
		all = all && recoverable[p.Kind]
	}
	if n := kinds["pending"]; n > 0 && !c.Bool("json") {
		fmt.Fprintf(env.Stderr, "problem: [pending] an import was interrupted: %d pending entries; `ampbundle check --repair` (or the next import) removes them\n", n)
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
	report := checkReport{Problems: problems, Recoverable: all, RolledBack: rolledBack}
	if all {
		return cliutil.WithHint(
			cliutil.Failf(errStoreNeedsRecovery, "store check found only what interrupted imports left (%d problem(s), %s): nothing installed is damaged", len(problems), where).WithDetails(report),
			"ampbundle check --repair --db "+c.String("db")+" rolls them back (so does any command that opens the store read-write, or starting the agent)")
	}
	return cliutil.WithHint(
		cliutil.Failf(errStoreDamaged, "store check found %d problem(s) (%s), %s", len(problems), strings.Join(counts, ", "), where).WithDetails(report),
		"do not serve from this store: restore it from a backup, or build a new one by importing the bundle files again")
}
