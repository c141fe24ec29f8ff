package catalog

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/compat"
)

// maxParam bounds every query parameter but q, in bytes.
const maxParam = 1024

// page is what a template shows; each page sets its own fields.
type page struct {
	Title    string
	Model    *Model
	Query    string
	Err      string
	Pager    pager
	Expiring []Bundle
	Bundles  []Bundle
	Caps     []Capability
	Bundle   Bundle
	Cap      Capability
	Version  versionView
	Matrix   matrixView
	Schema   schemaView
}

// pager is the position in a paged list.
type pager struct {
	Page, Pages, Total int
	Prev, Next         string
}

type versionView struct {
	Name, Version, BundleID, Notes, Policy string
	Supported, Deprecated                  []string
	Input, Output                          schemaView
	HasMatrix                              bool
}

type schemaView struct {
	BundleID, Key, ID, Err string
	Toks                   []Tok
	Truncated, Found       bool
	// Cut: the rendering stopped at MaxRenderBytes.
	Cut bool
}

type matrixView struct {
	Name     string
	Versions []string
	Rows     []matrixRow
	Details  []cellView
	Found    bool
}

type matrixRow struct {
	Version string
	Cells   []cellView
}

type cellView struct {
	Requester, Provider, Level, Anchor string
	Findings                           []findingView
}

type findingView struct {
	Side, Verdict, Rule, Pointer, Artifact, At, Detail string
	// Href links to the keyword in the schema page, when the model holds
	// the artifact.
	Href string
}

// route picks the page of a request and its data.
func route(m *Model, r *http.Request) (string, page, int) {
	q := r.URL.Query()
	for k, vs := range q {
		for _, v := range vs {
			if len(v) > maxParam || len(k) > maxParam {
				return errorPage(m, http.StatusBadRequest, "a query parameter is too long")
			}
		}
	}
	p := page{Model: m}
	switch r.URL.Path {
	case Prefix, strings.TrimSuffix(Prefix, "/"):
		p.Title = "Catalog"
		for _, b := range m.Bundles {
			if b.ExpiresSoon || b.Expired {
				p.Expiring = append(p.Expiring, b)
			}
		}
		var caps []Capability
		caps, p.Pager = paged(m.Capabilities, q, Prefix, nil)
		p.Caps = caps
		p.Bundles = m.Bundles[:min(len(m.Bundles), 20)]
		return "index", p, http.StatusOK
	case Prefix + "bundles":
		p.Title = "Bundles"
		p.Bundles, p.Pager = paged(m.Bundles, q, Prefix+"bundles", nil)
		return "bundles", p, http.StatusOK
	case Prefix + "bundle":
		b, ok := m.Bundle(q.Get("id"))
		p.Title, p.Bundle = "Bundle "+short(b.BundleID), b
		return lookedUp(m, ok, "bundle", p, "no such bundle is installed")
	case Prefix + "cap":
		c, ok := m.Capability(q.Get("name"))
		p.Title, p.Cap = "Capability "+short(c.Name), c
		_, p.Matrix.Found = m.Matrix(c.Name)
		return lookedUp(m, ok, "cap", p, "no such capability is installed")
	case Prefix + "version":
		v, ok := m.versionView(q.Get("name"), q.Get("v"))
		p.Title, p.Version = short(v.Name)+" "+short(v.Version), v
		return lookedUp(m, ok, "version", p, "no such capability version is installed")
	case Prefix + "compat":
		mv, ok := m.matrixView(q.Get("name"))
		p.Title, p.Matrix = "Compatibility of "+short(mv.Name), mv
		return lookedUp(m, ok, "compat", p, "no compatibility matrix for this name")
	case Prefix + "trust":
		p.Title = "Trust"
		return "trust", p, http.StatusOK
	case Prefix + "schema":
		s, ok := m.Schema(SchemaLoc{BundleID: q.Get("b"), Key: q.Get("k")})
		p.Title, p.Schema = "Schema "+short(s.Loc.Key), m.schemaView(s, "s")
		return lookedUp(m, ok, "schema", p, "no such schema in the catalog")
	case Prefix + "search":
		return search(m, q)
	}
	return errorPage(m, http.StatusNotFound, "no such page")
}

// lookedUp is the page tmpl showing p, of the one thing a query names, or
// when the look-up found nothing (ok false) the 404 page saying missing.
// p is filled from the look-up's zero value then, and not shown.
func lookedUp(m *Model, ok bool, tmpl string, p page, missing string) (string, page, int) {
	if !ok {
		return errorPage(m, http.StatusNotFound, missing)
	}
	return tmpl, p, http.StatusOK
}

func errorPage(m *Model, code int, msg string) (string, page, int) {
	return "error", page{Title: http.StatusText(code), Model: m, Err: msg}, code
}

// search lists the capabilities whose name contains q, case-insensitively.
func search(m *Model, q url.Values) (string, page, int) {
	query := q.Get("q")
	if len(query) > MaxQuery {
		return errorPage(m, http.StatusBadRequest, "the search query is longer than "+strconv.Itoa(MaxQuery)+" bytes")
	}
	p := page{Model: m, Title: "Search", Query: query}
	needle := strings.ToLower(strings.TrimSpace(query))
	var hits []Capability
	for _, c := range m.Capabilities {
		if needle != "" && strings.Contains(strings.ToLower(c.Name), needle) {
			hits = append(hits, c)
		}
	}
	p.Caps, p.Pager = paged(hits, q, Prefix+"search", url.Values{"q": {query}})
	return "search", p, http.StatusOK
}

// paged cuts the page ?page=N (from 1) of PageSize rows out of rows.
func paged[T any](rows []T, q url.Values, path string, keep url.Values) ([]T, pager) {
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	pages := max(1, (len(rows)+PageSize-1)/PageSize)
	n = min(n, pages)
	pg := pager{Page: n, Pages: pages, Total: len(rows)}
	link := func(i int) string {
		v := url.Values{}
		for k, vs := range keep {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(i))
		return path + "?" + v.Encode()
	}
	if n > 1 {
		pg.Prev = link(n - 1)
	}
	if n < pages {
		pg.Next = link(n + 1)
	}
	lo := (n - 1) * PageSize
	return rows[lo:min(len(rows), lo+PageSize)], pg
}

func (m *Model) versionView(name, version string) (versionView, bool) {
	c, ok := m.Capability(name)
	if !ok {
		return versionView{}, false
	}
	for _, v := range c.Versions {
		if v.Version != version {
			continue
		}
		d := v.Descriptor
		vv := versionView{Name: c.Name, Version: v.Version, BundleID: v.BundleID, Notes: d.Notes, Policy: string(d.Policy)}
		for _, r := range d.SupportedRanges {
			vv.Supported = append(vv.Supported, r.String())
		}
		for _, r := range d.DeprecatedRanges {
			vv.Deprecated = append(vv.Deprecated, r.String())
		}
		vv.Input = m.schemaView(m.schemas[SchemaLoc{BundleID: v.BundleID, Key: d.InputSchema.ArtifactKey}], "in")
		vv.Output = m.schemaView(m.schemas[SchemaLoc{BundleID: v.BundleID, Key: d.OutputSchema.ArtifactKey}], "out")
		_, vv.HasMatrix = m.Matrix(c.Name)
		return vv, true
	}
	return versionView{}, false
}

func (m *Model) schemaView(s Schema, prefix string) schemaView {
	v := schemaView{BundleID: s.Loc.BundleID, Key: s.Loc.Key, ID: s.ID, Err: s.Err, Truncated: s.Truncated, Found: s.Loc.Key != ""}
	if s.Err == "" && len(s.Text) > 0 {
		v.Toks = m.pretty(s, prefix)
		if n := len(v.Toks); n > 0 && v.Toks[n-1].Cut {
			v.Toks, v.Cut = v.Toks[:n-1], true
		}
	}
	return v
}

func (m *Model) matrixView(name string) (matrixView, bool) {
	mx, ok := m.Matrix(name)
	if !ok {
		return matrixView{}, false
	}
	v := matrixView{Name: mx.Capability, Versions: mx.Versions, Found: true}
	n := len(mx.Versions)
	for r := range n {
		row := matrixRow{Version: mx.Versions[r]}
		for c := range n {
			cell := mx.Cells[r*n+c]
			cv := cellView{Requester: cell.Requester, Provider: cell.Provider, Level: cell.Level}
			if cell.Level != compat.LevelFull {
				cv.Anchor = "cell-" + strconv.Itoa(r) + "-" + strconv.Itoa(c)
				for _, side := range []struct {
					name string
					rep  compat.Report
				}{{"input", cell.Input}, {"output", cell.Output}} {
					for _, f := range side.rep.Findings {
						// The findings point into the accepting schema: the
						// provider's input, the requester's output.
						owner := cell.Provider
						if side.name == "output" {
							owner = cell.Requester
						}
						cv.Findings = append(cv.Findings, findingView{Side: side.name, Verdict: string(f.Verdict), Rule: f.Rule,
							Pointer: pointerOrRoot(f.Pointer), Artifact: f.Artifact, At: f.At, Detail: f.Detail,
							Href: m.findingHref(mx.Capability, owner, f.Artifact, f.At)})
					}
				}
				v.Details = append(v.Details, cv)
			}
			row.Cells = append(row.Cells, cv)
		}
		v.Rows = append(v.Rows, row)
	}
	return v, true
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "(the root)"
	}
	return p
}

// findingHref links a finding to its keyword on the schema page of the
// artifact of the version's bundle, or "" when the model lacks it.
func (m *Model) findingHref(name, version, artifact, at string) string {
	c, ok := m.Capability(name)
	if artifact == "" || !ok {
		return ""
	}
	for _, v := range c.Versions {
		if v.Version != version {
			continue
		}
		if s, ok := m.schemas[SchemaLoc{BundleID: v.BundleID, Key: artifact}]; !ok || s.Err != "" {
			return ""
		}
		href := Prefix + "schema?b=" + url.QueryEscape(v.BundleID) + "&k=" + url.QueryEscape(artifact)
		if at != "" {
			href += "#" + anchorID("s", at)
		}
		return href
	}
	return ""
}
