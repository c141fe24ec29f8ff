package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

func heartbeatCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "heartbeat",
		Usage:     "write a signed heartbeat: bundle line ID is at version >= N",
		ArgsUsage: " ",
		Description: `Writes to --out FILE a heartbeat statement (docs/FORMAT.md §23), signed by
each --key: at its signed time, the bundle line --bundle-id is at version
--version or later. It travels like a bundle: 'ampbundle import FILE'
applies it to a store, where it is valid when signed by the threshold of
distinct keys trusted for the bundle id ('ampbundle sign' adds a
co-signature). A store keeps the newest heartbeat of each line and refuses
an older one; with a freshness policy ('ampbundle trust freshness'), an
installed bundle too many versions behind fails closed (5002 bundle_stale).`,
		Flags: statementFlags(
			&cli.StringFlag{Name: "bundle-id", Usage: "bundle line `ID` the heartbeat speaks for (required)"},
			&cli.StringFlag{Name: "version", Usage: "the line is at version `N` or later (required, >= 1)"},
		),
		Action: func(c *cli.Context) error {
			var version uint64
			in, err := statementInputs(c, env, []string{"bundle-id", "version"}, func() error {
				var perr error
				if version, perr = strconv.ParseUint(c.String("version"), 10, 64); perr != nil || version < 1 {
					return cliutil.Usagef("--version must be a whole number >= 1")
				}
				return nil
			})
			if err != nil {
				return err
			}
			h := &bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: c.String("bundle-id"), Version: version, CreatedAt: in.created}
			data, err := in.write(bundle.SignHeartbeat(h, in.keys))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(summaryTo(env, in.out), map[string]any{"file": in.out, "bundle_id": h.BundleID, "version": h.Version, "created_at": h.CreatedAt, "signers": signerKIDs(in.keys), "size": len(data)})
			}
			fmt.Fprintf(summaryTo(env, in.out), "wrote %s: heartbeat for %s at version >= %d (signed %s), signed by %d key(s)\n",
				cliutil.Sanitize(in.out), cliutil.Sanitize(h.BundleID), h.Version, h.CreatedAt, len(in.keys))
			return nil
		},
	}
}

// applyHeartbeat applies a heartbeat statement to the store.
func applyHeartbeat(env *cliutil.Env, c *cli.Context, st registry, path string, data []byte) error {
	res, err := st.ApplyHeartbeat(data)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return cliutil.PrintJSON(env.Stdout, map[string]any{"file": path, "heartbeat": res})
	}
	w := env.Stdout
	if res.Unchanged {
		fmt.Fprintf(w, "unchanged: the heartbeat in %s was already applied\n", cliutil.Sanitize(path))
		return nil
	}
	S := cliutil.Sanitize // the statement's text
	fmt.Fprintf(w, "applied heartbeat: %s is at version >= %d (signed %s) by %s\n", S(res.BundleID), res.Version, S(res.CreatedAt), cliutil.SanitizeJoin(res.Signers, ", "))
	if res.Stale != "" {
		fmt.Fprintf(w, "  STALE      %s@%d fails closed (5002 bundle_stale; listed by ls and check): %s\n", S(res.BundleID), res.Installed, S(res.Stale))
	}
	fmt.Fprintf(w, "  generation %d\n", res.Generation)
	return nil
}

func trustFreshnessCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "freshness",
		Usage:     "set how many versions an installed bundle may lag its newest heartbeat",
		ArgsUsage: " ",
		Description: `Sets the freshness policy of --scope ("*", the default, or a
reverse-domain prefix or bundle id): an installed bundle under it whose
line's newest applied heartbeat (docs/FORMAT.md §23) names a version more
than --max-versions above the installed one fails closed at its next use
(5002 bundle_stale) and is listed by ls and check, until a newer version is
imported. The most specific scope wins. It never depends on the local
clock. Without flags, lists the policy. Audited.

--reset LINE forgets the heartbeat kept for the bundle line LINE (a bundle
id): the way out when a heartbeat pins a line stale (a publisher's mistake,
or a key since revoked); the line then takes heartbeats again from the
versions the store knows of it. Audited as heartbeat_reset.

Works through a running agent's admin socket.`,
		Flags: []cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.StringFlag{Name: "scope", Value: "*", Usage: "`SCOPE` the bound applies to"},
			&cli.StringFlag{Name: "max-versions", Usage: "at most `N` versions behind the newest heartbeat (0: must be at it)"},
			&cli.StringFlag{Name: "max-age", Usage: "at most `AGE` (e.g. 30d, 12h) between the last signed time the installed version was vouched for as current and the newest signed time seen"},
			&cli.StringFlag{Name: "reset", Usage: "forget the heartbeat kept for the bundle line `LINE` (audited)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			var maxVersions *uint64
			if c.IsSet("max-versions") {
				n, perr := strconv.ParseUint(c.String("max-versions"), 10, 32)
				if perr != nil {
					return cliutil.Usagef("--max-versions must be a whole number >= 0")
				}
				maxVersions = &n
			}
			var maxAge time.Duration
			if c.IsSet("max-age") {
				d, ok := parseAge(c.String("max-age"))
				if !ok {
					return cliutil.Usagef("--max-age takes a whole number of days (30d) or hours (12h), at least one hour")
				}
				maxAge = d
			}
			reset := c.String("reset")
			if c.IsSet("reset") && (maxVersions != nil || maxAge > 0 || c.IsSet("scope")) {
				return cliutil.Usagef("--reset LINE takes no --max-versions, --max-age or --scope")
			}
			s, err := openStore(env, c, readWrite)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			if c.IsSet("reset") {
				v, err := s.ResetHeartbeat(reset)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return cliutil.PrintJSON(env.Stdout, map[string]any{"reset": reset, "forgotten_version": v})
				}
				fmt.Fprintln(env.Stdout, resetMessage(reset, v))
				return nil
			}
			if maxVersions != nil || maxAge > 0 {
				if err := s.SetFreshnessPolicy(c.String("scope"), maxVersions, maxAge); err != nil {
					return err
				}
			}
			pol, err := s.FreshnessPolicy()
			if err != nil {
				return err
			}
			if pol == nil {
				pol = []resolver.Freshness{}
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"freshness": pol})
			}
			if len(pol) == 0 {
				fmt.Fprintln(env.Stdout, "no freshness policy: heartbeats are recorded but nothing fails closed as stale")
			}
			for _, p := range pol {
				var parts []string
				if p.MaxVersions != nil {
					parts = append(parts, fmt.Sprintf("at most %d version(s) behind the newest heartbeat", *p.MaxVersions))
				}
				if p.MaxAgeSeconds > 0 {
					parts = append(parts, fmt.Sprintf("vouched for as current within %s of the newest signed time", time.Duration(p.MaxAgeSeconds)*time.Second))
				}
				fmt.Fprintf(env.Stdout, "%s: %s\n", cliutil.Sanitize(p.Scope), strings.Join(parts, "; "))
			}
			return nil
		},
	}
}

// resetMessage is what trust freshness --reset prints once the heartbeat
// kept for line is forgotten; version is the forgotten heartbeat's. A
// heartbeat that decodes names a version of at least 1 (docs/FORMAT.md
// §23), so 0 means the kept record was unreadable: it had no version to
// report, and it was what pinned the line stale.
func resetMessage(line string, version uint64) string {
	if version == 0 {
		return fmt.Sprintf("cleared the unreadable heartbeat record of %s; nothing of the line is stale because of it any more", cliutil.Sanitize(line))
	}
	return fmt.Sprintf("forgot the heartbeat of %s (version >= %d); nothing of the line is stale because of it any more", cliutil.Sanitize(line), version)
}

// parseAge reads "30d" or "12h" (whole days or hours, at least one hour,
// at most 100 years).
func parseAge(s string) (time.Duration, bool) {
	if len(s) < 2 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 32)
	if err != nil || n == 0 {
		return 0, false
	}
	switch s[len(s)-1] {
	case 'd':
		if n > 36500 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	case 'h':
		if n > 36500*24 {
			return 0, false
		}
		return time.Duration(n) * time.Hour, true
	}
	return 0, false
}
