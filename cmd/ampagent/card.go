package main

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
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
agent key given with --key (required with --transfer). Opens the store
read-only, or reads it through the admin socket of the agent holding it.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "registry store `FILE` (required)"},
			&cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` of the agent holding the store (default DB.admin.sock)"},
			&cli.StringFlag{Name: "peer-id", Usage: "the card's peer_id (default: the --key's DID, else ampagent)"},
			&cli.StringFlag{Name: "display-name", Value: agh.DefaultDisplayName, Usage: "the card's display_name"},
			&cli.StringFlag{Name: "key", Usage: "agent key `FILE` (ampagent keygen) that signs the transfer (required with --transfer)"},
			&cli.StringFlag{Name: "did", Usage: "with --key: the agent `DID` (a did:web; default: the key's did:key)"},
			&cli.BoolFlag{Name: "catalog", Usage: "add the rich catalog (agh.capability_catalog)"},
			&cli.StringSliceFlag{Name: "id", Usage: "with --catalog: only this capability `ID` (repeatable)"},
			&cli.StringFlag{Name: "transfer", Usage: "print the signed transfer envelope of `ID` instead (needs --key)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db"); err != nil {
				return err
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
			db := c.String("db")
			var cat *resolver.Catalog
			s, err := resolver.Open(db, resolver.Options{Now: env.Now, ReadOnly: true})
			if err == nil {
				defer s.Close()
				cat, err = s.Catalog()
			} else if errors.Is(err, resolver.ErrStoreInUse) {
				sock := c.String("admin-socket")
				if sock == "" {
					sock = admin.SocketPath(db)
				}
				ac, aerr := admin.Dial(sock)
				if aerr != nil {
					return err
				}
				defer ac.Close()
				cat, err = ac.Catalog()
			}
			if err != nil {
				return err
			}
			caps := agh.FromCatalog(cat)
			if id := c.String("transfer"); id != "" {
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
		},
	}
}
