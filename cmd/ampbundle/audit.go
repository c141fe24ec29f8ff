package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"

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

--expect-head HEX checks the log against a head recorded earlier: HEX must
be the hash of one of the entries (the log may have grown since), else
audit_broken. 'ampbundle receipt' exports entries signed by a site key.

Exit 1 with audit_broken when the chain does not verify (the entries are
still listed first, without --json). Opens the store read-only.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag,
			&cli.StringFlag{Name: "expect-head", Usage: "audit head `HEX` recorded elsewhere, which must be in the chain"},
			jsonFlag},
		Action: storeAction(env, readOnly, 0, "no arguments", func(c *cli.Context, s registry) error {
			entries, err := s.Audit()
			if err != nil {
				return err
			}
			head, err := s.AuditHead()
			if err != nil {
				return storeIO("cannot read the audit head", err)
			}
			var expect []byte
			if c.IsSet("expect-head") {
				if expect, err = cliutil.DecodeHexN("expect-head", c.String("expect-head"), 32); err != nil {
					return err
				}
			}
			verr := s.VerifyAudit()
			var expectAt int // seq of the entry the expected head names
			if verr == nil && expect != nil {
				for _, e := range entries {
					if bytes.Equal(resolver.AuditEntryHash(e), expect) {
						expectAt = int(e.Seq)
					}
				}
				if expectAt == 0 {
					verr = cliutil.Failf(resolver.ErrAuditBroken, "the expected head is not the hash of any entry of this log (%d entries): the log was rewritten, or the head belongs to another store", len(entries))
				}
			}
			if c.Bool("json") {
				if verr != nil {
					return storeIO("cannot verify the audit log", verr)
				}
				out := []auditJSON{}
				for _, e := range entries {
					out = append(out, auditView(e))
				}
				doc := map[string]any{"verified": true, "count": len(entries), "head": hex.EncodeToString(head), "entries": out}
				if expect != nil {
					doc["expected_head_seq"] = expectAt
				}
				return cliutil.PrintJSON(env.Stdout, doc)
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
			if expect != nil {
				fmt.Fprintf(env.Stdout, "expected head is entry %d; %d entries after it\n", expectAt, len(entries)-expectAt)
			}
			return nil
		}),
	}
}

// auditJSON is an audit entry with its hashes in hex: every key of
// docs/FORMAT.md §20.1's table, spelt as there and absent when the entry
// has none (docs/SPEC-DECISIONS.md CLI-87).
type auditJSON struct {
	Seq             uint64          `json:"seq"`
	At              string          `json:"at"`
	Action          string          `json:"action"`
	BundleID        string          `json:"bundle_id,omitempty"`
	Version         uint64          `json:"version,omitempty"`
	PreviousVersion uint64          `json:"previous_version,omitempty"`
	Signers         []string        `json:"signers,omitempty"`
	ManifestSHA256  string          `json:"manifest_sha256,omitempty"`
	TrustName       string          `json:"trust_name,omitempty"`
	Key             string          `json:"key,omitempty"`
	Scopes          []string        `json:"scopes,omitempty"`
	Threshold       uint64          `json:"threshold,omitempty"`
	RevokedKeys     []string        `json:"revoked_keys,omitempty"`
	RevokedBundles  []string        `json:"revoked_bundles,omitempty"`
	Sequence        uint64          `json:"sequence,omitempty"`
	AddedKeys       []string        `json:"added_keys,omitempty"`
	RetiredKeys     []string        `json:"retired_keys,omitempty"`
	Actor           *resolver.Actor `json:"actor,omitempty"`
	FileSHA256      string          `json:"file_sha256,omitempty"`
	Verdict         string          `json:"verdict,omitempty"`
	Source          string          `json:"source,omitempty"`
	Prev            string          `json:"prev"`
}

func auditView(e resolver.AuditEntry) auditJSON {
	return auditJSON{Seq: e.Seq, At: e.At, Action: e.Action, BundleID: e.BundleID, Version: e.Version,
		PreviousVersion: e.PreviousVersion, Signers: e.Signers, ManifestSHA256: hex.EncodeToString(e.ManifestSHA256),
		TrustName: e.TrustName, Key: e.Key, Scopes: e.Scopes, Threshold: e.Threshold,
		RevokedKeys: e.RevokedKeys, RevokedBundles: e.RevokedBundles, Sequence: e.Sequence, AddedKeys: e.AddedKeys, RetiredKeys: e.RetiredKeys,
		Actor: e.Actor, FileSHA256: hex.EncodeToString(e.FileSHA256), Verdict: e.Verdict, Source: e.Source, Prev: hex.EncodeToString(e.Prev)}
}

// MaxAuditListed is the most items of one list of an audit entry (its
// signers, scopes, keys added, retired or revoked, bundles revoked) that
// the text output shows; the others are counted ("… and N more"). --json
// carries them all (docs/SPEC-DECISIONS.md CLI-89).
const MaxAuditListed = 8

// auditList is the first MaxAuditListed of ss, each through
// cliutil.Sanitize, comma-separated, and how many more there are.
func auditList(ss []string) string {
	if len(ss) <= MaxAuditListed {
		return cliutil.SanitizeJoin(ss, ", ")
	}
	return cliutil.SanitizeJoin(ss[:MaxAuditListed], ", ") + fmt.Sprintf(", … and %d more", len(ss)-MaxAuditListed)
}

func printAudit(w io.Writer, e resolver.AuditEntry) {
	// The entry is the store's text (a store may come from elsewhere, to be
	// audited): each field is shown through cliutil.Sanitize on its own, so
	// that a long one is cut alone and the verdict and actor always show,
	// and each list is cut at MaxAuditListed items.
	q := cliutil.Sanitize
	what := auditSubject(e) + auditChanges(e)
	if len(e.Signers) > 0 {
		what += " signed by " + auditList(e.Signers)
	}
	if auditStatementFile(e) && len(e.FileSHA256) > 0 {
		what += " file sha256 " + auditHash(e.FileSHA256) // the statement's
	}
	if e.Verdict != "" && e.Verdict != "accepted" {
		what += " verdict " + q(e.Verdict)
	}
	if e.Actor != nil {
		what += fmt.Sprintf(" by uid %d on %s", e.Actor.UID, q(e.Actor.Host))
	}
	// The action column fits the longest action (import_unchanged).
	fmt.Fprintf(w, "%4d  %s  %-16s  %s\n", e.Seq, q(e.At), q(e.Action), what)
}

// auditStatementFile reports whether the file an entry's file_sha256
// names is a signed statement, which the text line shows by its hash as
// a mirror serves it (/statements/{sha256}, docs/FORMAT.md): a
// revocation or trust statement (a scope, no bundle or trust entry), a
// heartbeat, or the heartbeat a heartbeat_reset forgot (§23;
// docs/SPEC-DECISIONS.md CLI-97).
func auditStatementFile(e resolver.AuditEntry) bool {
	switch e.Action {
	case "heartbeat", "heartbeat_reset":
		return true
	}
	return e.BundleID == "" && e.TrustName == "" && len(e.Scopes) > 0
}

// auditHash is a hash of an entry in hex, for the text line: a SHA-256
// whole; a longer value, which only a store or receipt written
// elsewhere holds, its first 32 bytes and its length, so that one field
// cannot make the line unbounded (docs/SPEC-DECISIONS.md CLI-97).
func auditHash(b []byte) string {
	if len(b) <= sha256.Size {
		return hex.EncodeToString(b)
	}
	return hex.EncodeToString(b[:sha256.Size]) + fmt.Sprintf("… (%d bytes)", len(b))
}

// auditSubject is what an audit entry is about, for printAudit: the
// scope of a threshold, freshness policy or statement, the trust entry,
// the bundle, or else the file.
func auditSubject(e resolver.AuditEntry) string {
	q, qs := cliutil.Sanitize, auditList
	switch {
	case e.Action == "trust_threshold":
		return fmt.Sprintf("%s threshold %d", qs(e.Scopes), e.Threshold)
	case e.Action == "trust_freshness":
		// docs/FORMAT.md §23: threshold is the most versions (2^64-1 for
		// none), version the most age in seconds (absent for none).
		versions, age := "none", "none"
		if e.Threshold != math.MaxUint64 {
			versions = strconv.FormatUint(e.Threshold, 10)
		}
		if e.Version != 0 {
			age = strconv.FormatUint(e.Version, 10) + "s"
		}
		return fmt.Sprintf("%s max versions %s max age %s", qs(e.Scopes), versions, age)
	case e.TrustName != "" && e.Key == "":
		return q(e.TrustName) // fail_closed: the bundles follow
	case e.TrustName != "":
		return fmt.Sprintf("%s %s scopes %s", q(e.TrustName), q(e.Key), qs(e.Scopes))
	case e.BundleID == "" && len(e.Scopes) > 0:
		return "scope " + qs(e.Scopes) // revoke, rotate
	case e.BundleID == "":
		return "file sha256 " + auditHash(e.FileSHA256)
	}
	what := fmt.Sprintf("%s version %d", q(e.BundleID), e.Version)
	if e.PreviousVersion != 0 {
		what += fmt.Sprintf(" (was %d)", e.PreviousVersion)
	}
	return what
}

// auditChanges is what a revocation or a trust statement changed, for
// printAudit: its number, the keys it added, retired and revoked, the
// threshold it set, the bundle versions it revoked or failed closed.
func auditChanges(e resolver.AuditEntry) string {
	var what string
	if e.Sequence != 0 {
		what += fmt.Sprintf(" sequence %d", e.Sequence)
	}
	for _, l := range []struct {
		name string
		keys []string
	}{{"added", e.AddedKeys}, {"retired", e.RetiredKeys}, {"revoked keys", e.RevokedKeys}, {"revoked bundles", e.RevokedBundles}} {
		if len(l.keys) > 0 {
			what += " " + l.name + " " + auditList(l.keys)
		}
	}
	if e.Threshold != 0 && e.Action != "trust_threshold" && e.Action != "trust_freshness" {
		what += fmt.Sprintf(" threshold %d", e.Threshold)
	}
	return what
}
