package compat

import (
	"maps"
	"slices"
	"sort"

	"github.com/ampbundle/ampbundle/capability"
)

// Provided is one capability version and the Source its schemas are read
// from (versions of one capability may come from different bundles).
type Provided struct {
	Descriptor capability.Descriptor
	Src        *Source
}

// Levels of a matrix cell (RFC 004 early proposal §3.2).
const (
	// LevelFull: every request of the requester's version is valid for
	// the provider's, and every result of the provider's is valid for the
	// requester's.
	LevelFull = "full"
	// LevelPartial: the pair works without some fields: the requester may
	// send properties the provider refuses, or expects properties the
	// provider does not guarantee (Lost lists them); nothing else breaks.
	LevelPartial = "partial"
	// LevelIncompatible: a rule proves a request or result is lost.
	LevelIncompatible = "incompatible"
	// LevelUnknown: the checker could not decide.
	LevelUnknown = "unknown"
)

// Cell is one requester version × provider version.
type Cell struct {
	Requester string    `json:"requester"`
	Provider  string    `json:"provider"`
	Level     string    `json:"level"`
	Lost      []Finding `json:"lost,omitempty"`
	Input     Report    `json:"input"`
	Output    Report    `json:"output"`
}

// Matrix is the compatibility matrix of one capability: its versions
// ascending, and a cell for every ordered pair (requester-major order).
type Matrix struct {
	Capability string   `json:"capability"`
	Versions   []string `json:"versions"`
	Cells      []Cell   `json:"cells"`
}

// NewestVersions returns the newest n of vs, versions of one capability
// (version gives each one's), oldest first: the versions a matrix of at
// most n versions compares. Newest is the total order matrices sort by
// (capability.OrderOldestFirst: SemVer precedence, then the version text
// bytewise), so versions that differ only in build metadata are cut the
// same way whatever the order of vs (docs/SPEC-DECISIONS.md COMPAT-24).
// n <= 0, or vs of at most n versions: vs itself. vs is not modified.
func NewestVersions[T any](vs []T, n int, version func(T) capability.Version) []T {
	if n <= 0 || len(vs) <= n {
		return vs
	}
	vs = slices.Clone(vs)
	sort.SliceStable(vs, func(i, j int) bool {
		return capability.OrderOldestFirst.CompareVersions(version(vs[i]), version(vs[j])) < 0
	})
	return slices.Clip(vs[len(vs)-n:])
}

// CellAllowance is what Matrices adds to its budget for each cell of the
// matrices it computes: an honest schema of a dozen properties costs
// about 18 units a check, two checks a cell, so a bundle of many honest
// versions is decided whole, where the bundle's MaxBundleSteps alone left
// most of 256 versions' cells unknown (docs/SPEC-DECISIONS.md COMPAT-23).
// A caller bounds the cells (the versions it passes).
const CellAllowance = 32

// Matrices computes the matrix of every capability among ps, by name
// ascending. The checks of all of them share one budget of comparisons:
// MaxBundleSteps for each distinct Source among ps (a bundle's, or a
// store bundle's), what deriving one bundle's claims may spend at import,
// and, for each name, CellAllowance for each of its cells, spent first;
// once it is spent every cell still to check is unknown (too_complex),
// never full, as under MatrixOf's maxSteps. Without it a bundle of a few
// versions sharing one costly schema cost 2n² checks of up to a second
// each (docs/SPEC-DECISIONS.md COMPAT-23).
func Matrices(ps []Provided) []Matrix {
	return matrices(ps, MaxBundleSteps)
}

// matrices is Matrices with bundleSteps for each Source in place of
// MaxBundleSteps (the tests lower it).
func matrices(ps []Provided, bundleSteps int) []Matrix {
	byName := map[string][]Provided{}
	srcs := map[*Source]bool{}
	for _, p := range ps {
		byName[p.Descriptor.Name] = append(byName[p.Descriptor.Name], p)
		srcs[p.Src] = true
	}
	// Each name spends its own cells' allowance first, then the shared
	// pool: a costly capability sorting first cannot leave the names
	// after it nothing (a read of COMPAT-23).
	pool := bundleSteps * max(len(srcs), 1)
	names := slices.Sorted(maps.Keys(byName))
	out := make([]Matrix, 0, len(names))
	for _, n := range names {
		vs := byName[n]
		budget := pool + CellAllowance*len(vs)*len(vs)
		out = append(out, matrixOf(vs, &budget, nil, nil))
		pool = min(pool, budget)
	}
	return out
}

// MatrixOf computes the matrix of vs, versions of one capability, as
// Matrices does for each name, with two bounds for a caller that serves
// it to others. maxSteps, when positive, bounds the comparisons of all
// its checks together (each check is still bounded by MaxSteps alone):
// once they are spent, every cell still to check is unknown
// (too_complex), never full. keep, when not nil, is given each cell as
// soon as its level is decided, before the next is checked, and may drop
// findings from it: the matrix never holds more findings than keep
// leaves. vs is not modified.
func MatrixOf(vs []Provided, maxSteps int, keep func(*Cell)) Matrix {
	var budget *int
	if maxSteps > 0 {
		budget = &maxSteps
	}
	return matrixOf(vs, budget, keep, nil)
}

// matrixOf is MatrixOf taking its comparisons from budget, when not nil
// (shared with other matrices by Matrices), and adding what its checks
// read of listed values to reads, when not nil (the tests read it).
func matrixOf(vs []Provided, budget *int, keep func(*Cell), reads *valueReads) Matrix {
	if len(vs) == 0 {
		return Matrix{}
	}
	vs = slices.Clone(vs)
	sort.SliceStable(vs, func(i, j int) bool {
		return capability.OrderOldestFirst.CompareVersions(vs[i].Descriptor.Version, vs[j].Descriptor.Version) < 0
	})
	m := Matrix{Capability: vs[0].Descriptor.Name}
	for _, v := range vs {
		m.Versions = append(m.Versions, v.Descriptor.Version.String())
	}
	m.Cells = make([]Cell, 0, len(vs)*len(vs))
	for _, r := range vs {
		for _, p := range vs {
			c := cell(r, p, budget, reads)
			if keep != nil {
				keep(&c)
			}
			m.Cells = append(m.Cells, c)
		}
	}
	return m
}

func cell(r, p Provided, budget *int, reads *valueReads) Cell {
	c := Cell{Requester: r.Descriptor.Version.String(), Provider: p.Descriptor.Version.String()}
	pr := versionsWithin(
		Version{Src: r.Src, Input: r.Descriptor.InputSchema.ArtifactKey, Output: r.Descriptor.OutputSchema.ArtifactKey},
		Version{Src: p.Src, Input: p.Descriptor.InputSchema.ArtifactKey, Output: p.Descriptor.OutputSchema.ArtifactKey}, budget, reads)
	c.Input, c.Output = pr.Input, pr.Output
	switch pr.Verdict() {
	case Compatible:
		c.Level = LevelFull
		return c
	case Unknown:
		c.Level = LevelUnknown
		return c
	}
	// Partial when every finding is a field the pair can do without.
	var lost []Finding
	for _, f := range pr.Input.Findings {
		if f.Verdict != Incompatible || (f.Rule != "property_removed" && f.Rule != "additional_properties_closed") {
			c.Level = LevelIncompatible
			return c
		}
		lost = append(lost, f)
	}
	for _, f := range pr.Output.Findings {
		if f.Verdict != Incompatible || f.Rule != "required_added" {
			c.Level = LevelIncompatible
			return c
		}
		lost = append(lost, f)
	}
	c.Level, c.Lost = LevelPartial, lost
	return c
}
