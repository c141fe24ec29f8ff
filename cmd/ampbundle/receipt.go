package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

func receiptCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "receipt",
		Usage:     "export a signed receipt of the audit log (or verify one)",
		ArgsUsage: " ",
		Description: `Exports audit entries --from N --to M (default: all) as a receipt signed
by the site key --key, to -o FILE: the entries exactly as stored, the hash
the first chains to and the head the last gives (docs/FORMAT.md §20). An
auditor verifies it without the store ('ampbundle receipt verify', or any
implementation of the documented format). The chain is verified before
anything is signed. Opens the store read-only.`,
		Flags: []cli.Flag{dbFlag, adminSocketFlag,
			&cli.StringFlag{Name: "key", Usage: "site private key `FILE` that signs the receipt (required; mode 0600)"},
			cliutil.PassphraseFileFlag(),
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "receipt `FILE` to write (required)"},
			&cli.Uint64Flag{Name: "from", Value: 1, Usage: "first entry `SEQ`"},
			&cli.Uint64Flag{Name: "to", Usage: "last entry `SEQ` (default: the newest)"},
			jsonFlag},
		Subcommands: []*cli.Command{receiptVerifyCommand(env)},
		Action: func(c *cli.Context) (err error) {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db", "key", "out"); err != nil {
				return err
			}
			if err := checkOut(c.String("out")); err != nil { // before the key is read (CLI-105)
				return err
			}
			key, err := cliutil.ReadSigningKey(c, env, c.String("key"))
			if err != nil {
				return err
			}
			s, err := openStore(env, c, readOnly)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			if err := s.VerifyAudit(); err != nil {
				return storeIO("cannot verify the audit log", err)
			}
			log, err := s.Audit()
			if err != nil {
				return err
			}
			data, err := resolver.BuildReceipt(log, c.Uint64("from"), c.Uint64("to"), key, env.Now())
			if err != nil {
				return err
			}
			r, err := resolver.VerifyReceipt(data, key.Public().(ed25519.PublicKey))
			if err != nil {
				return err
			}
			out := c.String("out")
			if err := writeFileAtomic(out, data); err != nil {
				return err
			}
			last := r.FirstSeq + uint64(len(r.Entries)) - 1
			if c.Bool("json") {
				return cliutil.PrintJSON(summaryTo(env, out), map[string]any{"file": out, "site": r.Site, "first_seq": r.FirstSeq,
					"last_seq": last, "head": hex.EncodeToString(r.Head), "size": len(data)})
			}
			fmt.Fprintf(summaryTo(env, out), "wrote %s: entries %d..%d signed by %s\nhead sha256 %s\n", cliutil.Sanitize(out), r.FirstSeq, last, cliutil.Sanitize(r.Site), hex.EncodeToString(r.Head))
			return nil
		},
	}
}

func receiptVerifyCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "verify a receipt without the store",
		ArgsUsage: "FILE",
		Description: `Verifies the receipt FILE (docs/FORMAT.md §20): its signature by the site
key --site (required: a receipt proves only who signed it, so without --site
it fails with site_key_required, naming the key it claims); the chain of its
entries; and, with --expect-head HEX, that a head recorded earlier is one of
its entries' hashes or the hash its first entry chains to. Lists the entries.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "site", Usage: "the site's public key the receipt must be signed by (required): `PUB` PEM file or did:key"},
			&cli.StringFlag{Name: "expect-head", Usage: "audit head `HEX` that must be in the receipt's chain"},
			jsonFlag},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "the receipt FILE"); err != nil {
				return err
			}
			var site ed25519.PublicKey
			if c.IsSet("site") {
				var err error
				if site, err = keyfile.ParsePublic(c.String("site")); err != nil {
					return err
				}
			}
			var expect []byte
			if c.IsSet("expect-head") {
				var err error
				if expect, err = cliutil.DecodeHexN("expect-head", c.String("expect-head"), 32); err != nil {
					return err
				}
			}
			data, err := cliutil.ReadFile(c.Args().First(), resolver.MaxReceiptSize, "receipt")
			if err != nil {
				return err
			}
			if site == nil {
				return siteKeyRequired(data)
			}
			r, err := resolver.VerifyReceipt(data, site)
			if err != nil {
				return err
			}
			// The entry number of the expected head, as the receipt
			// numbers them (uint64: no sign, nor int's 32 bits on 386 and
			// arm, can make a number up to 2^64-1 a miss).
			var expectAt uint64
			found := false
			if expect != nil {
				if bytes.Equal(r.Prev, expect) && r.FirstSeq > 0 {
					expectAt, found = r.FirstSeq-1, true
				}
				for _, e := range r.Entries {
					if bytes.Equal(resolver.AuditEntryHash(e), expect) {
						expectAt, found = e.Seq, true
					}
				}
				if !found {
					return cliutil.Failf(resolver.ErrInvalidReceipt, "the expected head is not in the receipt's chain")
				}
			}
			if c.Bool("json") {
				out := []auditJSON{}
				for _, e := range r.Entries {
					out = append(out, auditView(e))
				}
				doc := map[string]any{"verified": true, "site": r.Site, "site_checked": true, "issued_at": r.IssuedAt,
					"first_seq": r.FirstSeq, "prev": hex.EncodeToString(r.Prev), "head": hex.EncodeToString(r.Head), "entries": out}
				if expect != nil {
					doc["expected_head_seq"] = expectAt
				}
				return cliutil.PrintJSON(env.Stdout, doc)
			}
			for _, e := range r.Entries {
				printAudit(env.Stdout, e)
			}
			fmt.Fprintf(env.Stdout, "receipt verified: %d entries signed by the site key %s\nhead sha256 %s\n", len(r.Entries), cliutil.Sanitize(r.Site), hex.EncodeToString(r.Head))
			return nil
		},
	}
}

// siteKeyRequired is the refusal of 'receipt verify' without --site
// (site_key_required): a receipt proves only who signed it, so without
// the site's key the verdict is this refusal whatever the receipt holds.
// Only what it takes to name the key the receipt claims is done: its
// COSE structure decoded (bounded by resolver.MaxReceiptSize, read
// already), one signature, a kid that is an Ed25519 did:key, named in
// its canonical form (amp.DIDKey), never as the kid's bytes. Its
// signature over the payload, the payload and the chain of its entries
// are not read: resolver.VerifyReceipt without a site key checks them
// all before it refuses (measured: seven times the receipt allocated
// again beyond its COSE structure, and a signature over the payload),
// for a refusal that does not depend on them (docs/SPEC-DECISIONS.md
// CLI-95).
func siteKeyRequired(data []byte) error {
	obj, err := bundle.DecodeObject(data, bundle.MediaTypeReceipt)
	if err != nil {
		return cliutil.Failf(resolver.ErrInvalidReceipt, "not a signed receipt").WithCause(err)
	}
	if len(obj.Signatures) != 1 {
		return cliutil.Failf(resolver.ErrInvalidReceipt, "a receipt carries exactly one signature, by the site key")
	}
	key, ok := bundle.KeyFromKID(obj.Signatures[0].KID)
	if !ok {
		return cliutil.Failf(resolver.ErrInvalidReceipt, "the receipt's kid is not an Ed25519 did:key")
	}
	return cliutil.Failf(resolver.ErrSiteKeyRequired, "the receipt claims to be signed by %s, and nothing says that is the site's key: verify it against the site's public key (receipt verify --site PUB); nothing more of it was checked", amp.DIDKey(key))
}
