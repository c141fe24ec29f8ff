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
(catalog order kept; unknown ids give []). --transfer ID prints instead the
body of a kind:"capability" envelope for that capability. Opens the store
read-only, or reads it through the admin socket of the agent holding it.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "registry store `FILE` (required)"},
			&cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` of the agent holding the store (default DB.admin.sock)"},
			&cli.StringFlag{Name: "peer-id", Value: "ampagent", Usage: "the card's peer_id"},
			&cli.StringFlag{Name: "display-name", Usage: "the card's display_name (omitted when empty)"},
			&cli.BoolFlag{Name: "catalog", Usage: "add the rich catalog (agh.capability_catalog)"},
			&cli.StringSliceFlag{Name: "id", Usage: "with --catalog: only this capability `ID` (repeatable)"},
			&cli.StringFlag{Name: "transfer", Usage: "print the capability transfer body of `ID` instead"},
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
						body, err := agh.TransferBody(x)
						if err != nil {
							return err
						}
						return cliutil.PrintJSON(env.Stdout, json.RawMessage(body))
					}
				}
				return cliutil.Failf("unknown_capability", "the store has no capability with that id")
			}
			extra := map[string]json.RawMessage{}
			extra["peer_id"], _ = json.Marshal(c.String("peer-id"))
			if dn := c.String("display-name"); dn != "" {
				extra["display_name"], _ = json.Marshal(dn)
			}
			extra["profiles_supported"] = json.RawMessage(`["agh-network/v0"]`)
			extra["artifacts_supported"] = json.RawMessage(`["capability"]`)
			card := &agh.PeerCard{Extra: extra}
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
