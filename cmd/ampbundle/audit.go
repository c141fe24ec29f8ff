package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

func auditCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "list the audit log and verify its hash chain",
		ArgsUsage: " ",
		Description: `Lists the store's audit log, oldest first: every import, downgrade,
removal and trust change with its time, and verifies the hash chain that
links the entries. Prints the head hash (the SHA-256 of the last entry):
record it somewhere else, because someone able to rewrite the store file
could rewrite the whole chain, but not a head kept elsewhere.

Exit 1 with audit_broken when the chain does not verify (the entries are
still listed first, without --json). Opens the store read-only.`,
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
			entries, err := s.Audit()
			if err != nil {
				return err
			}
			head, err := s.AuditHead()
			if err != nil {
				return storeIO("cannot read the audit head", err)
			}
			verr := s.VerifyAudit()
			if c.Bool("json") {
				if verr != nil {
					return storeIO("cannot verify the audit log", verr)
				}
				out := []auditJSON{}
				for _, e := range entries {
					out = append(out, auditView(e))
				}
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"verified": true, "count": len(entries), "head": hex.EncodeToString(head), "entries": out,
				})
			}
			for _, e := range entries {
				printAudit(env.Stdout, e)
			}
			if verr != nil {
				return storeIO("cannot verify the audit log", verr)
			}
			if len(entries) == 0 {
				fmt.Fprintln(env.Stdout, "audit log is empty")
				return nil
			}
			fmt.Fprintf(env.Stdout, "audit chain verified: %d entries\nhead sha256 %s\n", len(entries), hex.EncodeToString(head))
			return nil
		},
	}
}

// auditJSON is an audit entry with its hashes in hex.
type auditJSON struct {
	Seq             uint64   `json:"seq"`
	At              string   `json:"at"`
	Action          string   `json:"action"`
	BundleID        string   `json:"bundle_id,omitempty"`
	Version         uint64   `json:"version,omitempty"`
	PreviousVersion uint64   `json:"previous_version,omitempty"`
	Signers         []string `json:"signers,omitempty"`
	ManifestSHA256  string   `json:"manifest_sha256,omitempty"`
	TrustName       string   `json:"trust_name,omitempty"`
	Key             string   `json:"key,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
	Prev            string   `json:"prev"`
}

func auditView(e resolver.AuditEntry) auditJSON {
	return auditJSON{Seq: e.Seq, At: e.At, Action: e.Action, BundleID: e.BundleID, Version: e.Version,
		PreviousVersion: e.PreviousVersion, Signers: e.Signers, ManifestSHA256: hex.EncodeToString(e.ManifestSHA256),
		TrustName: e.TrustName, Key: e.Key, Scopes: e.Scopes, Prev: hex.EncodeToString(e.Prev)}
}

func printAudit(w io.Writer, e resolver.AuditEntry) {
	var what string
	switch {
	case e.TrustName != "":
		what = fmt.Sprintf("%s %s scopes %s", e.TrustName, e.Key, strings.Join(e.Scopes, ", "))
	default:
		what = fmt.Sprintf("%s version %d", e.BundleID, e.Version)
		if e.PreviousVersion != 0 {
			what += fmt.Sprintf(" (was %d)", e.PreviousVersion)
		}
		if len(e.Signers) > 0 {
			what += " signed by " + strings.Join(e.Signers, ", ")
		}
	}
	fmt.Fprintf(w, "%4d  %s  %-12s  %s\n", e.Seq, e.At, e.Action, what)
}
