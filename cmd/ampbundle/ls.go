package main

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

func lsCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list installed bundles, capabilities and aliases",
		ArgsUsage: " ",
		Description: `Lists the installed bundles (version, highest version ever imported,
import and expiry times, signers, artifact count and bytes), the
capabilities they provide (each version with its providing bundle; --json
adds the input and output schema references, ready for 'ampbundle
resolve'), and the legacy type aliases. Opens the store read-only.`,
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
			bundles, err := s.Bundles()
			if err != nil {
				return err
			}
			cat, err := s.Catalog()
			if err != nil {
				return err
			}
			v := lsView(bundles, cat)
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, v)
			}
			v.print(env)
			return nil
		},
	}
}

type lsJSON struct {
	Generation   uint64            `json:"generation"`
	Bundles      []bundleJSON      `json:"bundles"`
	Capabilities []capJSON         `json:"capabilities"`
	Aliases      map[string]string `json:"aliases"`
}

type bundleJSON struct {
	BundleID       string   `json:"bundle_id"`
	Version        uint64   `json:"version"`
	HighestVersion uint64   `json:"highest_version"`
	ImportedAt     string   `json:"imported_at"`
	ExpiresAt      string   `json:"expires_at,omitempty"`
	Signers        []string `json:"signers"`
	Artifacts      uint64   `json:"artifacts"`
	Bytes          uint64   `json:"bytes"`
	Revoked        string   `json:"revoked,omitempty"` // why it fails closed
	Stale          string   `json:"stale,omitempty"`   // why it fails closed as stale (freshness policy)
	Expired        bool     `json:"expired,omitempty"` // it fails closed as expired
}

type capJSON struct {
	Name     string           `json:"name"`
	Versions []capVersionJSON `json:"versions"`
}

type capVersionJSON struct {
	Version      string  `json:"version"`
	BundleID     string  `json:"bundle_id"`
	InputSchema  refJSON `json:"input_schema"`
	OutputSchema refJSON `json:"output_schema"`
}

// refJSON is a schema reference with the fields 'ampbundle resolve' takes.
type refJSON struct {
	BundleID    string `json:"bundle_id,omitempty"`
	ArtifactKey string `json:"artifact_key,omitempty"`
	HashAlg     string `json:"hash_alg"`
	Hash        string `json:"hash"`
	URI         string `json:"uri,omitempty"`
}

func refView(r capability.SchemaRef) refJSON {
	return refJSON{BundleID: r.BundleID, ArtifactKey: r.ArtifactKey, HashAlg: r.HashAlg, Hash: hex.EncodeToString(r.Hash), URI: r.URI}
}

func lsView(bundles []resolver.Bundle, cat *resolver.Catalog) lsJSON {
	v := lsJSON{Generation: cat.Generation, Bundles: []bundleJSON{}, Capabilities: []capJSON{}, Aliases: map[string]string{}}
	for _, b := range bundles {
		signers := b.Signers
		if signers == nil {
			signers = []string{}
		}
		v.Bundles = append(v.Bundles, bundleJSON{BundleID: b.BundleID, Version: b.Version, HighestVersion: b.Highest,
			ImportedAt: b.ImportedAt, ExpiresAt: b.ExpiresAt, Signers: signers, Artifacts: b.Artifacts, Bytes: b.Bytes, Revoked: b.Revoked, Stale: b.Stale, Expired: b.Expired})
	}
	for _, name := range cat.Names {
		cj := capJSON{Name: name, Versions: []capVersionJSON{}}
		for _, e := range cat.ByName[name] {
			d := e.Descriptor
			cj.Versions = append(cj.Versions, capVersionJSON{Version: d.Version.String(), BundleID: e.BundleID,
				InputSchema: refView(d.InputSchema), OutputSchema: refView(d.OutputSchema)})
		}
		v.Capabilities = append(v.Capabilities, cj)
	}
	for typ, name := range cat.Aliases {
		v.Aliases[typ] = name
	}
	return v
}

// print writes the listing for people. Its text comes from the installed
// bundles and statements: each field goes through cliutil.Sanitize.
func (v lsJSON) print(env *cliutil.Env) {
	w := env.Stdout
	S := cliutil.Sanitize
	if len(v.Bundles) == 0 {
		fmt.Fprintln(w, "no bundles installed")
	}
	for _, b := range v.Bundles {
		fmt.Fprintf(w, "%s version %d (highest ever %d)\n", S(b.BundleID), b.Version, b.HighestVersion)
		fmt.Fprintf(w, "  imported   %s\n", S(b.ImportedAt))
		if b.ExpiresAt != "" {
			fmt.Fprintf(w, "  expires    %s%s\n", S(b.ExpiresAt), soonNote(env.Now(), b.ExpiresAt))
		}
		fmt.Fprintf(w, "  signed by  %s\n", cliutil.SanitizeJoin(b.Signers, ", "))
		fmt.Fprintf(w, "  artifacts  %d (%d bytes)\n", b.Artifacts, b.Bytes)
		if b.Revoked != "" {
			fmt.Fprintf(w, "  REVOKED    fails closed (5002 bundle_revoked): %s\n", S(b.Revoked))
		}
		if b.Stale != "" {
			fmt.Fprintf(w, "  STALE      fails closed (5002 bundle_stale): %s\n", S(b.Stale))
		}
		if b.Expired {
			fmt.Fprintf(w, "  EXPIRED    fails closed (5002 bundle_expired)\n")
		}
	}
	width := 0
	for _, c := range v.Capabilities {
		width = max(width, len(c.Name))
	}
	if len(v.Capabilities) > 0 {
		fmt.Fprintf(w, "capabilities %d\n", len(v.Capabilities))
	}
	for _, c := range v.Capabilities {
		// Versions grouped by providing bundle, in version order.
		var groups []string
		for i := 0; i < len(c.Versions); {
			j := i
			var vs []string
			for ; j < len(c.Versions) && c.Versions[j].BundleID == c.Versions[i].BundleID; j++ {
				vs = append(vs, c.Versions[j].Version)
			}
			groups = append(groups, fmt.Sprintf("%s (%s)", cliutil.SanitizeJoin(vs, ", "), S(c.Versions[i].BundleID)))
			i = j
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, S(c.Name), strings.Join(groups, "; "))
	}
	types := make([]string, 0, len(v.Aliases))
	for t := range v.Aliases {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(w, "alias  %s -> %s\n", S(t), S(v.Aliases[t]))
	}
}
