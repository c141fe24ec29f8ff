package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/a2acard"
	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

func cardCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:  "card",
		Usage: "print the AGH peer card of the store's capabilities (and the rich catalog)",
		Description: `Projects the capabilities installed in the store DB onto the AGH capability
discovery contract (docs/FORMAT.md, "AGH projection") and prints one JSON
document: {"peer_card": {...}} with "capabilities" (ids in catalog order, []
when the store has none) and ext["agh.capabilities_brief"] (omitted when
empty). --catalog adds "agh.capability_catalog", the rich catalog with each
capability's canonical digest, narrowed to the --id values when given
(catalog order kept; unknown ids give []). The card carries every member of
the AGH page's example: peer_id, display_name, profiles_supported,
artifacts_supported and trust_modes_supported ("unverified", and
"ampbundle.ed25519-jcs" with --key). --transfer ID prints instead a
kind:"capability" agh-network/v0 envelope for that capability, signed by the
agent key given with --key (required with --transfer). --a2a prints
instead the A2A 1.0 Agent Card of the capability versions the agent serves
(those with a handler in --config, else all), one skill each, signed by
--key as A2A §8.4 specifies (docs/FORMAT.md, "A2A Agent Card"); 'card
verify' checks one. Opens the store read-only, or reads it through the
admin socket of the agent holding it.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "registry store `FILE` (required)"},
			&cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` of the agent holding the store (default DB.admin.sock)"},
			&cli.StringFlag{Name: "peer-id", Usage: "the card's peer_id (default: the --key's DID, else ampagent)"},
			&cli.StringFlag{Name: "display-name", Value: agh.DefaultDisplayName, Usage: "the card's display_name"},
			&cli.StringFlag{Name: "key", Usage: "agent key `FILE` (ampagent keygen) that signs the transfer or the A2A card (required with --transfer and --a2a)"},
			&cli.StringFlag{Name: "did", Usage: "with --key: the agent `DID` (a did:web; default: the key's did:key)"},
			&cli.BoolFlag{Name: "catalog", Usage: "add the rich catalog (agh.capability_catalog)"},
			&cli.StringSliceFlag{Name: "id", Usage: "with --catalog: only this capability `ID` (repeatable)"},
			&cli.StringFlag{Name: "transfer", Usage: "print the signed transfer envelope of `ID` instead (needs --key)"},
			&cli.BoolFlag{Name: "a2a", Usage: "print instead the A2A Agent Card of the served capabilities, signed by --key (needs --url)"},
			&cli.StringFlag{Name: "url", Usage: "with --a2a: the agent's AMP HTTP `URL`, the card's interface"},
			&cli.StringFlag{Name: "kid", Usage: "with --a2a and --did: the signing key's id in the did:web document (`DIDURL`, did#fragment)"},
			&cli.StringFlag{Name: "config", Usage: "with --a2a: the serve config `FILE`; only capabilities with a handler in it are listed (default: all)"},
			&cli.StringFlag{Name: "description", Usage: "with --a2a: the card's `TEXT` description (default: a sentence saying what the agent serves)"},
			&cli.StringFlag{Name: "agent-version", Value: "1.0.0", Usage: "with --a2a: the card's `VERSION`"},
			jsonFlag,
		},
		Subcommands: []*cli.Command{cardVerifyCommand(env)},
		Action:      func(c *cli.Context) error { return runCard(env, c) },
	}
}

// runCard is 'ampagent card': the A2A card (a2aCard), a capability's
// signed transfer envelope (cardTransfer), or the peer card, with the
// rich catalog on --catalog. Every flag is checked, and the key read,
// before the store is opened.
func runCard(env *cliutil.Env, c *cli.Context) error {
	if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
		return err
	}
	if err := cliutil.Require(c, "db"); err != nil {
		return err
	}
	if c.Bool("a2a") {
		return a2aCard(c, env)
	}
	if err := checkCardFlags(c); err != nil {
		return err
	}
	var signer *agh.Signer
	peerID := "ampagent"
	if kp := c.String("key"); kp != "" {
		id, err := loadIdentity(c, env, kp, c.String("did"))
		if err != nil {
			return err
		}
		signer = &agh.Signer{DID: id.DID, Key: id.SigningKey}
		peerID = id.DID
	}
	if c.IsSet("peer-id") {
		peerID = c.String("peer-id")
	}
	cat, closeStore, err := cardCatalog(c, env)
	if err != nil {
		return err
	}
	defer closeStore()
	caps := agh.FromCatalog(cat)
	if id := c.String("transfer"); id != "" {
		return cardTransfer(env, caps, id, signer, peerID)
	}
	card := &agh.PeerCard{Extra: agh.CardMembers(peerID, c.String("display-name"), signer != nil)}
	if err := agh.ProjectPeerCard(card, caps); err != nil {
		return err
	}
	doc := map[string]any{"peer_card": card}
	if c.Bool("catalog") {
		req := agh.WhoisRequest{Rich: true}
		if c.IsSet("id") {
			req.Filter = true
			for _, id := range c.StringSlice("id") {
				req.IDs = append(req.IDs, strings.TrimSpace(id))
			}
		}
		rich, err := agh.RichCatalog(caps, req, agh.MaxDocumentBytes)
		if err != nil {
			return err
		}
		doc["ext"] = map[string]any{agh.ExtCatalog: rich}
	}
	return cliutil.PrintJSON(env.Stdout, doc)
}

// checkCardFlags refuses, without --a2a, the flags that only go with it
// and the ones missing what they need (--id without --catalog,
// --transfer or --did without --key).
func checkCardFlags(c *cli.Context) error {
	for _, f := range []string{"url", "kid", "config", "description", "agent-version"} {
		if c.IsSet(f) {
			return cliutil.Usagef("--%s goes with --a2a", f)
		}
	}
	if c.IsSet("id") && !c.Bool("catalog") {
		return cliutil.Usagef("--id narrows the rich catalog: give --catalog too")
	}
	if c.String("transfer") != "" && c.String("key") == "" {
		return cliutil.Usagef("--transfer signs the envelope: give the agent --key")
	}
	if c.IsSet("did") && c.String("key") == "" {
		return cliutil.Usagef("--did names the --key's DID: give --key too")
	}
	return nil
}

// cardTransfer prints the signed agh-network/v0 transfer envelope of the
// capability id among caps.
func cardTransfer(env *cliutil.Env, caps []agh.Capability, id string, signer *agh.Signer, peerID string) error {
	for _, x := range caps {
		if x.ID == id {
			body, err := agh.TransferEnvelope(x, signer, peerID, agh.EnvelopeOptions{Now: env.Now, Rand: env.Rand})
			if err != nil {
				return err
			}
			return cliutil.PrintJSON(env.Stdout, json.RawMessage(body))
		}
	}
	return cliutil.Failf("unknown_capability", "the store has no capability with that id")
}

// cardCatalog opens the store read-only, or asks the agent holding it
// through its admin socket, for the current catalog.
func cardCatalog(c *cli.Context, env *cliutil.Env) (*resolver.Catalog, func(), error) {
	db := c.String("db")
	s, err := resolver.Open(db, resolver.Options{Now: env.Now, ReadOnly: true})
	if err == nil {
		cat, err := s.Catalog()
		return cat, func() { s.Close() }, err
	}
	if !errors.Is(err, resolver.ErrStoreInUse) {
		return nil, func() {}, err
	}
	sock := c.String("admin-socket")
	if sock == "" {
		sock = admin.SocketPath(db)
	}
	ac, aerr := admin.DialStore(sock, db)
	if admin.ReportAsIs(aerr) {
		// Not store_in_use: another user's socket, an agent of another
		// store or a silent process sits where the agent's should be; the
		// refusal carries its hint (docs/SPEC-DECISIONS.md ADMIN-1, ADMIN-5,
		// ADMIN-8, ADMIN-9).
		return nil, func() {}, aerr
	}
	if aerr != nil {
		return nil, func() {}, err
	}
	cat, err := ac.Catalog()
	return cat, func() { ac.Close() }, err
}

// a2aCard prints the signed A2A Agent Card of the served capabilities.
func a2aCard(c *cli.Context, env *cliutil.Env) error {
	for _, f := range []string{"catalog", "id", "transfer", "peer-id"} {
		if c.IsSet(f) {
			return cliutil.Usagef("--%s does not go with --a2a", f)
		}
	}
	if err := cliutil.Require(c, "key", "url"); err != nil {
		return err
	}
	if c.IsSet("did") != c.IsSet("kid") {
		return cliutil.Usagef("a did:web card names its key: give --did and --kid together (a did:key card's kid is the key's own)")
	}
	if !a2acard.WebURL(c.String("url")) { // what Verify accepts (A2A-14)
		return cliutil.Usagef("--url must be an absolute http or https URL with a host and no userinfo")
	}
	id, err := loadIdentity(c, env, c.String("key"), c.String("did"))
	if err != nil {
		return err
	}
	pub := id.SigningKey.Public().(ed25519.PublicKey)
	kid := a2acard.DIDKeyID(pub)
	if c.IsSet("kid") {
		kid = c.String("kid")
		if !amp.ValidDID(kid) || !strings.Contains(kid, "#") || amp.BareDID(kid) != id.DID {
			return cliutil.Usagef("--kid must be a DID URL of the --did with a key fragment (did#fragment)")
		}
	}
	served, err := servedSet(c)
	if err != nil {
		return err
	}
	cat, closeStore, err := cardCatalog(c, env)
	if err != nil {
		return err
	}
	defer closeStore()
	var list []a2acard.Served
	for _, x := range agh.FromCatalog(cat) {
		if served != nil && !served[x.ID] {
			continue
		}
		list = append(list, servedOf(x))
	}
	if len(list) == 0 {
		return cliutil.Failf("no_served_capability", "the agent serves no capability: an A2A card needs at least one skill")
	}
	card, err := a2acard.New(a2acard.Options{Name: c.String("display-name"), Description: c.String("description"),
		Version: c.String("agent-version"), URL: c.String("url")}, list)
	if err != nil {
		return err
	}
	out, err := a2acard.Sign(card, id.SigningKey, kid)
	if err != nil {
		return err
	}
	return cliutil.PrintJSON(env.Stdout, json.RawMessage(out))
}

// servedSet is the capability ids with a handler in --config, or nil
// (every capability) without it.
func servedSet(c *cli.Context) (map[string]bool, error) {
	if !c.IsSet("config") {
		return nil, nil
	}
	data, err := readConfigFile(c.String("config"))
	if err != nil {
		return nil, err
	}
	cfg := &serveConfig{}
	if err := decodeConfig(data, cfg); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for id := range cfg.Handlers {
		out[id] = true
	}
	return out, nil
}

// servedOf is the card entry of one capability of the agh projection.
func servedOf(x agh.Capability) a2acard.Served {
	str := func(key string) string {
		var s string
		json.Unmarshal(x.Extra[key], &s)
		return s
	}
	name, _, _ := strings.Cut(x.ID, ":")
	return a2acard.Served{ID: x.ID, Name: name, Version: x.Version, Summary: x.Summary,
		BundleID: str(agh.KeyBundleID), InputSchema: str(agh.KeyInputSchema), OutputSchema: str(agh.KeyOutputSchema)}
}

// cardVerifyCommand is 'card verify': check a signed A2A Agent Card.
func cardVerifyCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "verify a signed A2A Agent Card against a public key",
		ArgsUsage: "FILE|-",
		Description: `Checks an A2A Agent Card as A2A 1.0 §8.4.3 specifies: the signature whose
kid names --key (its did:key key id, or --kid for a did:web key), EdDSA,
over the RFC 8785 form of the card without its signatures and defaults
(docs/FORMAT.md, "A2A Agent Card"). The card is read up to 1 MiB, and
refused by name: card_too_large, card_malformed, card_duplicate_member,
card_number_not_canonical, card_unsigned, card_signature_malformed,
card_header_unsupported, card_alg_unsupported, card_kid_mismatch,
card_bad_signature, card_invalid. Exit 0 when it verifies, else 1.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "the signer's Ed25519 public key: a PEM or DER `FILE`, or a did:key (required)"},
			&cli.StringFlag{Name: "kid", Usage: "the key id the signature must carry (`DIDURL`; default: the key's did:key key id)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "one card FILE (or - for stdin)"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "key"); err != nil {
				return err
			}
			pub, err := keyfile.ParsePublic(c.String("key"))
			if err != nil {
				return err
			}
			data, err := readCard(env, c.Args().First())
			if err != nil {
				return err
			}
			v, err := a2acard.Verify(data, pub, c.String("kid"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"valid": true, "kid": v.KeyID, "name": v.Name, "version": v.Version, "skills": v.Skills})
			}
			fmt.Fprintf(env.Stdout, "valid: signed by %s\nname: %s\nversion: %s\nskills: %s\n", cliutil.Sanitize(v.KeyID),
				cliutil.Sanitize(v.Name), cliutil.Sanitize(v.Version), cliutil.SanitizeJoin(v.Skills, ", "))
			return nil
		},
	}
}

// readCard reads a card file, or stdin for "-", at most one byte over
// a2acard.MaxCardBytes: that byte makes Verify refuse it as too large
// without the rest being read. A card comes from a peer, on a medium or
// in a shared folder, so a name is opened only when it leads to a
// regular file (regfile.Open, as key and config files are): a FIFO put
// there is refused at once as io_error, never waited on for a writer,
// and a device is never opened, its driver never run.
func readCard(env *cliutil.Env, name string) ([]byte, error) {
	r := env.Stdin
	if name != "-" {
		f, _, err := regfile.Open(name, regfile.FollowLinks)
		if err != nil && !errors.Is(err, regfile.ErrNotRegular) {
			// A process substitution's /dev/fd link fails its lookup
			// rather than its mode: name it as what it is.
			if st, serr := os.Stat(name); serr == nil && !st.Mode().IsRegular() {
				err = regfile.ErrNotRegular
			}
		}
		if errors.Is(err, regfile.ErrNotRegular) {
			return nil, cliutil.WithHint(cliutil.Failf("io_error", "the card is not a regular file"),
				"give a card from a pipe on standard input: card verify -")
		}
		if err != nil {
			return nil, cliutil.Failf("io_error", "cannot open the card").WithCause(err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, a2acard.MaxCardBytes+1))
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the card").WithCause(err)
	}
	return data, nil
}
