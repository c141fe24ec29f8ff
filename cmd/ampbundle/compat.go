package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// fileLoader serves the schema artifacts of a verified bundle file.
type fileLoader struct {
	files map[string][]byte
	ids   map[string]string
}

func (l *fileLoader) Load(key string) ([]byte, error) {
	b, ok := l.files[key]
	if !ok {
		return nil, os.ErrNotExist
	}
	return b, nil
}

func (l *fileLoader) KeyForID(id string) (string, bool) {
	k, ok := l.ids[id]
	return k, ok
}

func compatCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "compat",
		Usage:     "show the compatibility matrix of capability versions",
		ArgsUsage: "[FILE]",
		Description: `For every capability, every requester version × provider version: full
(requests of the requester's version are valid for the provider's, and
results of the provider's valid for the requester's), partial (the pair
works without the listed fields), incompatible (with the rule and the JSON
Pointer where it breaks) or unknown (the checker cannot decide; never read
as compatible). Versions come from a bundle FILE (verified with --trust,
every schema hash-checked), from the store (--db), or both: then the
file's versions are compared with those the store has installed (a version
in both is taken from the file). --capability limits the output to one
name.`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trust", Usage: "trusted publisher key for FILE: `PUB` PEM file or did:key (repeatable; required with FILE)"},
			dbFlag, adminSocketFlag,
			&cli.StringFlag{Name: "capability", Usage: "only this capability `NAME`"},
			jsonFlag,
		},
		Action: func(c *cli.Context) (err error) {
			if c.NArg() > 1 {
				return cliutil.Usagef("at most one bundle FILE")
			}
			if c.NArg() == 0 && c.String("db") == "" {
				return cliutil.WithHint(cliutil.Usagef("give a bundle FILE, --db, or both"), "ampbundle compat bundle.ampb --trust publisher.pub.pem")
			}
			var ps []compat.Provided
			fromFile := map[string]bool{}
			if c.NArg() == 1 {
				if len(c.StringSlice("trust")) == 0 {
					return cliutil.WithHint(cliutil.Usagef("missing required flag --trust"), "give the publisher's public key: --trust publisher.pub.pem or --trust did:key:z6Mk…")
				}
				fps, err := compatFromFile(env, c.Args().First(), c.StringSlice("trust"))
				if err != nil {
					return err
				}
				for _, p := range fps {
					fromFile[p.Descriptor.ID().String()] = true
				}
				ps = append(ps, fps...)
			}
			if c.String("db") != "" {
				reg, err := openStore(env, c, readOnly)
				if err != nil {
					return err
				}
				defer closeStore(reg, &err)
				s, ok := reg.Store()
				if !ok {
					return cliutil.WithHint(cliutil.Failf("store_in_use", "compat reads the store's schemas directly, and a running agent holds it"), "run compat on a copy of the store (ampbundle export, then compat FILE), or stop the agent")
				}
				m, err := catalog.Read(s, catalog.ReadOptions{Now: env.Now, Parts: catalog.Parts{Provided: true}})
				if err != nil {
					return err
				}
				for _, p := range m.Provided() {
					if !fromFile[p.Descriptor.ID().String()] {
						ps = append(ps, p)
					}
				}
			}
			if name := c.String("capability"); name != "" {
				var keep []compat.Provided
				for _, p := range ps {
					if p.Descriptor.Name == name {
						keep = append(keep, p)
					}
				}
				if len(keep) == 0 {
					return cliutil.Failf("capability_not_found", "no version of %s here", name)
				}
				ps = keep
			}
			ps, err = limitCompatVersions(env.Stderr, ps)
			if err != nil {
				return err
			}
			ms := compat.Matrices(ps)
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{"matrices": ms})
			}
			printMatrices(env.Stdout, ms)
			return nil
		},
	}
}

// compatFromFile verifies a bundle file and keeps its schema artifacts.
func compatFromFile(env *cliutil.Env, path string, trust []string) ([]compat.Provided, error) {
	policy, err := trustFlags(trust)
	if err != nil {
		return nil, err
	}
	f, err := bundlebuild.OpenRegular(path)
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot open the bundle").WithCause(err)
	}
	defer f.Close()
	r, err := bundle.NewReader(f, bundle.ReaderOptions{Policy: policy, Now: env.Now})
	if err != nil {
		return nil, err
	}
	l := &fileLoader{files: map[string][]byte{}, ids: map[string]string{}}
	for {
		a, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if a.MediaType != bundle.MediaTypeSchema {
			continue
		}
		l.files[a.Key] = a.Data
		if id := schemaIDOf(a.Data); id != "" {
			l.ids[id] = a.Key
		}
	}
	src := compat.NewSource(l)
	var ps []compat.Provided
	for _, d := range r.Manifest().Capabilities {
		ps = append(ps, compat.Provided{Descriptor: d, Src: src})
	}
	return ps, nil
}

var levelMark = map[string]string{
	compat.LevelFull: "✅ full", compat.LevelPartial: "⚠️ partial", compat.LevelIncompatible: "❌ incompatible", compat.LevelUnknown: "? unknown",
}

// printMatrices writes the matrices for people. Versions, pointers and
// details come from the bundles' descriptors and schemas: each goes
// through cliutil.Sanitize.
func printMatrices(w io.Writer, ms []compat.Matrix) {
	S := cliutil.Sanitize
	for i, m := range ms {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (rows: requester version, columns: provider version)\n", S(m.Capability))
		width := 16
		fmt.Fprintf(w, "%-12s", "")
		for _, v := range m.Versions {
			fmt.Fprintf(w, " %-*s", width, S(v))
		}
		fmt.Fprintln(w)
		n := len(m.Versions)
		for r := 0; r < n; r++ {
			fmt.Fprintf(w, "%-12s", S(m.Versions[r]))
			for p := 0; p < n; p++ {
				mark := levelMark[m.Cells[r*n+p].Level]
				fmt.Fprintf(w, " %s%s", mark, strings.Repeat(" ", max(0, width-len([]rune(mark)))))
			}
			fmt.Fprintln(w)
		}
		for _, cell := range m.Cells {
			if cell.Level == compat.LevelFull {
				continue
			}
			fmt.Fprintf(w, "  %s caller on %s provider: %s\n", S(cell.Requester), S(cell.Provider), S(cell.Level))
			for _, side := range []struct {
				name string
				r    compat.Report
			}{{"input", cell.Input}, {"output", cell.Output}} {
				for _, f := range side.r.Findings {
					fmt.Fprintf(w, "    %s %s %s at %s", side.name, f.Verdict, S(f.Rule), S(pointerOrRoot(f.Pointer)))
					if f.Detail != "" {
						fmt.Fprintf(w, " (%s)", S(f.Detail))
					}
					fmt.Fprintln(w)
				}
			}
		}
	}
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// schemaIDOf is the top-level absolute $id of a schema document, or "".
func schemaIDOf(doc []byte) string {
	id, err := offlineschema.SchemaID(doc)
	if err != nil {
		return ""
	}
	return id
}

// maxCompatVersions bounds the versions of one capability compat
// compares, the newest kept (as the catalog page keeps its newest 32):
// a matrix holds n² cells, and a bundle may carry 10,000 versions of one
// name (10^8 cells, tens of GB), which compat.Matrices' budget decides
// cheaply but still builds (docs/SPEC-DECISIONS.md COMPAT-23).
const maxCompatVersions = 64

// maxCompatCells bounds the cells of all the matrices compat builds
// (about 450 bytes each, and as much printed): 156 names of 64 versions
// (a bundle's 10,000 capabilities) would be 640,000.
const maxCompatCells = 1 << 18

// limitCompatVersions keeps the newest maxCompatVersions versions of
// each capability among ps (compat.NewestVersions, the catalog's rule),
// noting on w each name cut, and refuses, limit_exceeded, what would
// still build more than maxCompatCells cells, before any matrix is built.
func limitCompatVersions(w io.Writer, ps []compat.Provided) ([]compat.Provided, error) {
	byName := map[string][]compat.Provided{}
	for _, p := range ps {
		byName[p.Descriptor.Name] = append(byName[p.Descriptor.Name], p)
	}
	var kept []compat.Provided
	cells := 0
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		vs := byName[name]
		if len(vs) > maxCompatVersions {
			fmt.Fprintf(w, "note: %s: the newest %d of its %d versions are compared\n", cliutil.Sanitize(name), maxCompatVersions, len(vs))
			vs = compat.NewestVersions(vs, maxCompatVersions, func(p compat.Provided) capability.Version { return p.Descriptor.Version })
		}
		cells += len(vs) * len(vs)
		kept = append(kept, vs...)
	}
	if cells > maxCompatCells {
		return nil, cliutil.WithHint(cliutil.Failf("limit_exceeded", "the matrices would hold %d cells, more than %d", cells, maxCompatCells),
			"pass --capability NAME to compare one capability's versions")
	}
	return kept, nil
}
