package catalog

import (
	"context"
	"errors"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/resolver"
)

// maxParam bounds every query parameter but q, in bytes.
const maxParam = 1024

// Bounds of the lists of a page besides PageSize.
const (
	// RowVersions is the most versions a capability's row in a table
	// links (the first ones); the capability page pages them all.
	RowVersions = 10
	// maxExpiring is the most bundles the index lists as expired or
	// expiring; the bundles page lists them all.
	maxExpiring = 20
	// MaxCellFindings is the most findings the compatibility page shows
	// of one cell; the others are counted.
	MaxCellFindings = 16
	// sectionMarkup and findingMarkup bound from above the page bytes of
	// a cell's findings section and of one finding, their
	// publisher-controlled text not counted (it is counted with
	// textCost).
	sectionMarkup = 512
	findingMarkup = 256
)

// page is what a template shows; each page sets its own fields.
type page struct {
	Title    string
	Model    *Model
	Query    string
	Err      string
	Pager    pager
	Expiring []Bundle
	// MoreExpiring: expired or expiring bundles the index does not list.
	MoreExpiring int
	Bundles      []Bundle
	Caps         []capRow
	Bundle       Bundle
	Lists        bundleLists
	Trust        trustLists
	Cap          Capability
	Versions     []Version
	Version      versionView
	Matrix       matrixView
	Schema       schemaView
	// Continue, on the refusal of a navigation of another site, is the
	// catalog's own link to the page it asked for (continueLink).
	Continue string
	// retryAfter, when positive, is sent as Retry-After (a refusal).
	retryAfter time.Duration
}

// pager is the position in a paged list; Label names the list when a
// page has several.
type pager struct {
	Page, Pages, Total int
	Prev, Next, Label  string
}

// capRow is a capability's row in a table: its first RowVersions
// versions, how many more it has, and the bundle of its first.
type capRow struct {
	Name     string
	Versions []Version
	More     int
	BundleID string
}

// bundleLists are the paged lists of a bundle page: the signed
// manifest's artifacts, capabilities and aliases, or without the
// manifest the ids of the capabilities the store lists for it.
type bundleLists struct {
	Artifacts                               []ManifestArtifact
	Capabilities                            []ManifestCapability
	Aliases                                 []alias
	IDs                                     []string
	ArtPager, CapPager, AliasPager, IDPager pager
}

// alias is an alias entry of a manifest.
type alias struct{ Type, Name string }

type versionView struct {
	Name, Version, BundleID, Notes, Policy string
	Supported, Deprecated                  []string
	Input, Output                          schemaView
	HasMatrix                              bool
	// InMatrix: the version is one its capability's matrix compares;
	// Compared: how many versions that matrix compares (the newest,
	// ReadOptions.MaxMatrixVersions).
	InMatrix bool
	Compared int
}

// schemaView is a schema shown in a page; its rendering (Body) is done
// when the page is written, for a client still there.
type schemaView struct {
	BundleID, Key, ID, Err string
	Truncated, Found       bool
	// OverBudget: the model did not keep the schema, its bundle's share
	// of the schema budget spent (ErrOverSchemaBudget, CATALOG-45).
	OverBudget bool
	m          *Model
	s          Schema
	prefix     string
	ctx        context.Context
}

type matrixView struct {
	Name     string
	Versions []string
	Rows     []matrixRow
	Details  []cellView
	Found    bool
	// MoreCells and MoreFindings: the cells whose findings the page has
	// no room left for, and their findings.
	MoreCells, MoreFindings int
	// Of: the versions the capability has; Omitted: those of them the
	// matrix does not compare (older than the newest it keeps,
	// ReadOptions.MaxMatrixVersions), which the page names so that its
	// verdict is not read as the capability's (CATALOG-42).
	Of, Omitted int
}

type matrixRow struct {
	Version string
	Cells   []cellView
}

type cellView struct {
	Requester, Provider, Level, Anchor string
	Findings                           []findingView
	// More: the findings of the cell not shown.
	More int
}

type findingView struct {
	Side, Verdict, Rule, Pointer, Artifact, At, Detail string
	// Href links to the keyword in the schema page, when the model holds
	// the artifact.
	Href string
}

// pageFunc builds the data of one page of the catalog for r, whose
// query q route has checked; admit lets it start a matrix computation
// (Model.lookupMatrixFor).
type pageFunc func(m *Model, r *http.Request, q url.Values, admit func() (func(), *refusal)) (string, page, int)

// pageOf returns the catalog's page at path, and whether there is one:
// the one list of them. route serves a request from the page its path
// names, and continueLink links only to one of them, so that no page can
// be served and not linked back to, or linked and not served
// (CATALOG-40). A switch, not a package map: nothing can change the
// routes of every server at once.
func pageOf(path string) (pageFunc, bool) {
	switch path {
	case Prefix, strings.TrimSuffix(Prefix, "/"):
		return indexPage, true
	case Prefix + "bundles":
		return bundlesPage, true
	case Prefix + "bundle":
		return bundlePage, true
	case Prefix + "cap":
		return capPage, true
	case Prefix + "version":
		return versionPage, true
	case Prefix + "compat":
		return compatPage, true
	case Prefix + "trust":
		return trustPage, true
	case Prefix + "schema":
		return schemaPage, true
	case Prefix + "search":
		return searchPage, true
	}
	return nil, false
}

// searchPage is the search page's pageFunc.
func searchPage(m *Model, r *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	return search(m, q, r.Method == http.MethodHead)
}

// route picks the page of a request (pageOf) and its data; admit
// lets the request start a matrix computation (Model.lookupMatrixFor).
func route(m *Model, r *http.Request, admit func() (func(), *refusal)) (string, page, int) {
	q := r.URL.Query()
	if paramTooLong(q) {
		return errorPage(m, http.StatusBadRequest, "a query parameter is too long")
	}
	if f, ok := pageOf(r.URL.Path); ok {
		return f(m, r, q, admit)
	}
	return errorPage(m, http.StatusNotFound, "no such page")
}

// paramTooLong says whether a name or value of q is longer than
// maxParam: route refuses the request, continueLink keeps no query.
func paramTooLong(q url.Values) bool {
	for k, vs := range q {
		for _, v := range vs {
			if len(v) > maxParam || len(k) > maxParam {
				return true
			}
		}
	}
	return false
}

// indexPage is the index: expiring bundles, the capabilities paged, the
// first bundles.
func indexPage(m *Model, _ *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m, Title: "Catalog"}
	for _, b := range m.Bundles {
		if b.ExpiresSoon || b.Expired {
			if len(p.Expiring) == maxExpiring {
				p.MoreExpiring++
				continue
			}
			p.Expiring = append(p.Expiring, b)
		}
	}
	var caps []Capability
	caps, p.Pager = paged(m.Capabilities, q, "page", Prefix, nil)
	p.Caps = capRows(caps)
	p.Bundles = m.Bundles[:min(len(m.Bundles), 20)]
	return "index", p, http.StatusOK
}

// bundlesPage pages the installed bundles.
func bundlesPage(m *Model, _ *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m, Title: "Bundles"}
	p.Bundles, p.Pager = paged(m.Bundles, q, "page", Prefix+"bundles", nil)
	return "bundles", p, http.StatusOK
}

// bundlePage is the bundle ?id=, its manifest's lists paged (listsOf).
func bundlePage(m *Model, _ *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m}
	b, ok := m.Bundle(q.Get("id"))
	p.Title, p.Bundle, p.Lists = "Bundle "+short(b.BundleID), b, listsOf(b, q)
	// A bundle every use refuses says so first; its signed manifest is
	// still shown as what it was (CATALOG-38).
	if s := b.FailsClosed(); s != "" {
		p.Title += " (" + s + ")"
	}
	return lookedUp(m, ok, "bundle", p, "no such bundle is installed")
}

// capPage is the capability ?name=, its versions paged.
func capPage(m *Model, _ *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m}
	c, ok := m.Capability(q.Get("name"))
	p.Title, p.Cap = "Capability "+short(c.Name), c
	p.Versions, p.Pager = paged(c.Versions, q, "page", Prefix+"cap", url.Values{"name": {c.Name}})
	p.Matrix.Found = m.HasMatrix(c.Name)
	return lookedUp(m, ok, "cap", p, "no such capability is installed")
}

// versionPage is the version ?v= of the capability ?name=.
func versionPage(m *Model, r *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m}
	v, ok := m.versionView(r.Context(), q.Get("name"), q.Get("v"))
	p.Title, p.Version = short(v.Name)+" "+short(v.Version), v
	return lookedUp(m, ok, "version", p, "no such capability version is installed")
}

// compatPage is the compatibility matrix of the capability ?name=.
func compatPage(m *Model, r *http.Request, q url.Values, admit func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m}
	if r.Method == http.MethodHead {
		// A HEAD gets no body: its status is the model's answer whether
		// the name has a matrix, with no matrix computed nor its
		// findings built, and nothing taken from either budget
		// (CATALOG-39).
		return lookedUp(m, m.HasMatrix(q.Get("name")), "compat", p, "no compatibility matrix for this name")
	}
	mv, ok, no := m.matrixView(q.Get("name"), admit, pageOutOf(r.Context()))
	if no != nil {
		name, p, code := errorPage(m, no.status, no.text)
		p.retryAfter = no.retry
		return name, p, code
	}
	p.Title, p.Matrix = "Compatibility of "+short(mv.Name), mv
	return lookedUp(m, ok, "compat", p, "no compatibility matrix for this name")
}

// trustPage is the store's trust, its lists paged (trustListsOf).
func trustPage(m *Model, _ *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	return "trust", page{Model: m, Title: "Trust", Trust: trustListsOf(m.Trust, q)}, http.StatusOK
}

// schemaPage is the schema ?k= of the bundle ?b=.
func schemaPage(m *Model, r *http.Request, q url.Values, _ func() (func(), *refusal)) (string, page, int) {
	p := page{Model: m}
	s, ok := m.Schema(SchemaLoc{BundleID: q.Get("b"), Key: q.Get("k")})
	p.Title, p.Schema = "Schema "+short(s.Loc.Key), m.schemaView(r.Context(), s, "s")
	return lookedUp(m, ok, "schema", p, "no such schema in the catalog")
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

// maxContinue bounds the query a continueLink keeps, in bytes.
const maxContinue = 4 * maxParam

// continueLink is the catalog's own link to the page r asked for: its
// path when it is a page of the catalog (pageOf, the pages route
// serves; else the index), and its query parameters encoded again
// (url.Values.Encode), dropped when one is longer than route takes
// (paramTooLong) or they are longer than maxContinue in all. Nothing of
// r is shown: the link's text is fixed (catalog/templates/error.html).
func continueLink(r *http.Request) string {
	if _, ok := pageOf(r.URL.Path); !ok {
		return Prefix
	}
	if len(r.URL.RawQuery) > maxContinue {
		// Dropped unread: the refusal takes no page slot, so it parses
		// no query it would drop (CATALOG-41).
		return r.URL.Path
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q) == 0 || paramTooLong(q) {
		return r.URL.Path
	}
	return r.URL.Path + "?" + q.Encode()
}

func errorPage(m *Model, code int, msg string) (string, page, int) {
	return "error", page{Title: http.StatusText(code), Model: m, Err: msg}, code
}

// search lists the capabilities whose name contains q, case-insensitively;
// for a HEAD (head) it looks at no capability: the status does not
// depend on them (CATALOG-39).
func search(m *Model, q url.Values, head bool) (string, page, int) {
	query := q.Get("q")
	if len(query) > MaxQuery {
		return errorPage(m, http.StatusBadRequest, "the search query is longer than "+strconv.Itoa(MaxQuery)+" bytes")
	}
	p := page{Model: m, Title: "Search", Query: query}
	if head {
		return "search", p, http.StatusOK
	}
	needle := strings.ToLower(strings.TrimSpace(query))
	var hits []Capability
	for _, c := range m.Capabilities {
		if needle != "" && strings.Contains(strings.ToLower(c.Name), needle) {
			hits = append(hits, c)
		}
	}
	var caps []Capability
	caps, p.Pager = paged(hits, q, "page", Prefix+"search", url.Values{"q": {query}})
	p.Caps = capRows(caps)
	return "search", p, http.StatusOK
}

// capRows are the table rows of caps.
func capRows(caps []Capability) []capRow {
	out := make([]capRow, 0, len(caps))
	for _, c := range caps {
		r := capRow{Name: c.Name, Versions: c.Versions[:min(len(c.Versions), RowVersions)], More: max(0, len(c.Versions)-RowVersions)}
		if len(c.Versions) > 0 {
			r.BundleID = c.Versions[0].BundleID
		}
		out = append(out, r)
	}
	return out
}

// Query parameters of the bundle page's lists.
const (
	artParam   = "artifacts_page"
	capParam   = "capabilities_page"
	aliasParam = "aliases_page"
)

// listsOf pages the lists of the bundle page of b, each by its own
// parameter; the links of one list keep the pages of the others, as the
// page numbers they show (pageNumber), never the parameters as sent.
func listsOf(b Bundle, q url.Values) bundleLists {
	shown := map[string]int{}
	keep := func(own string) url.Values {
		return keepPages(url.Values{"id": {b.BundleID}}, shown, own)
	}
	path := Prefix + "bundle"
	var l bundleLists
	if b.Manifest == nil {
		l.IDs, l.IDPager = paged(b.Capabilities, q, capParam, path, keep(capParam))
		l.IDPager.Label = "Pages of capabilities"
		return l
	}
	shown[artParam] = pageNumber(q, artParam, len(b.Manifest.Artifacts))
	shown[capParam] = pageNumber(q, capParam, len(b.Manifest.Capabilities))
	shown[aliasParam] = pageNumber(q, aliasParam, len(b.Manifest.Aliases))
	l.Artifacts, l.ArtPager = paged(b.Manifest.Artifacts, q, artParam, path, keep(artParam))
	l.Capabilities, l.CapPager = paged(b.Manifest.Capabilities, q, capParam, path, keep(capParam))
	aliases := make([]alias, 0, len(b.Manifest.Aliases))
	for _, typ := range slices.Sorted(maps.Keys(b.Manifest.Aliases)) {
		aliases = append(aliases, alias{Type: typ, Name: b.Manifest.Aliases[typ]})
	}
	l.Aliases, l.AliasPager = paged(aliases, q, aliasParam, path, keep(aliasParam))
	l.ArtPager.Label, l.CapPager.Label, l.AliasPager.Label = "Pages of artifacts", "Pages of capabilities", "Pages of aliases"
	return l
}

// keepPages is what the links of the list own keep: base, and the page
// each other list of shown shows, as its number (1 left out).
func keepPages(base url.Values, shown map[string]int, own string) url.Values {
	for p, n := range shown {
		if p != own && n > 1 {
			base.Set(p, strconv.Itoa(n))
		}
	}
	return base
}

// Query parameters of the trust page's lists.
const (
	keysParam        = "keys_page"
	thresholdsParam  = "thresholds_page"
	freshnessParam   = "freshness_page"
	revocationsParam = "revocations_page"
)

// trustLists are the paged lists of the trust page.
type trustLists struct {
	Keys                                           []TrustKey
	Thresholds                                     []Threshold
	Freshness                                      []resolver.Freshness
	Revocations                                    []Revocation
	KeyPager, ThresholdPager, FreshPager, RevPager pager
}

// trustListsOf pages the lists of the trust page of t, each by its own
// parameter, as listsOf pages the bundle page's.
func trustListsOf(t Trust, q url.Values) trustLists {
	shown := map[string]int{
		keysParam:        pageNumber(q, keysParam, len(t.Keys)),
		thresholdsParam:  pageNumber(q, thresholdsParam, len(t.Thresholds)),
		freshnessParam:   pageNumber(q, freshnessParam, len(t.Freshness)),
		revocationsParam: pageNumber(q, revocationsParam, len(t.Revocations)),
	}
	keep := func(own string) url.Values { return keepPages(url.Values{}, shown, own) }
	path := Prefix + "trust"
	var l trustLists
	l.Keys, l.KeyPager = paged(t.Keys, q, keysParam, path, keep(keysParam))
	l.Thresholds, l.ThresholdPager = paged(t.Thresholds, q, thresholdsParam, path, keep(thresholdsParam))
	l.Freshness, l.FreshPager = paged(t.Freshness, q, freshnessParam, path, keep(freshnessParam))
	l.Revocations, l.RevPager = paged(t.Revocations, q, revocationsParam, path, keep(revocationsParam))
	l.KeyPager.Label, l.ThresholdPager.Label = "Pages of keys", "Pages of thresholds"
	l.FreshPager.Label, l.RevPager.Label = "Pages of freshness bounds", "Pages of revocations"
	return l
}

// paged cuts the page ?param=N (from 1) of PageSize rows out of rows; its
// links are to path with keep and param.
func paged[T any](rows []T, q url.Values, param, path string, keep url.Values) ([]T, pager) {
	n := pageNumber(q, param, len(rows))
	pages := max(1, (len(rows)+PageSize-1)/PageSize)
	pg := pager{Page: n, Pages: pages, Total: len(rows), Label: "Pages"}
	link := func(i int) string {
		v := url.Values{}
		for k, vs := range keep {
			v[k] = vs
		}
		v.Set(param, strconv.Itoa(i))
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

// pageNumber is the page ?param=N of a list of total rows shows: N within
// the list's pages, else its first or last page.
func pageNumber(q url.Values, param string, total int) int {
	n, err := strconv.Atoi(q.Get(param))
	if err != nil || n < 1 {
		n = 1
	}
	return min(n, max(1, (total+PageSize-1)/PageSize))
}

func (m *Model) versionView(ctx context.Context, name, version string) (versionView, bool) {
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
		vv.Input = m.schemaView(ctx, m.schemas[SchemaLoc{BundleID: v.BundleID, Key: d.InputSchema.ArtifactKey}], "in")
		vv.Output = m.schemaView(ctx, m.schemas[SchemaLoc{BundleID: v.BundleID, Key: d.OutputSchema.ArtifactKey}], "out")
		vv.HasMatrix = m.HasMatrix(c.Name)
		vv.InMatrix, vv.Compared = m.compared(c.Name, v.Version)
		return vv, true
	}
	return versionView{}, false
}

// schemaView is the schema s shown under prefix, for a request of ctx;
// nothing is rendered yet.
func (m *Model) schemaView(ctx context.Context, s Schema, prefix string) schemaView {
	return schemaView{BundleID: s.Loc.BundleID, Key: s.Loc.Key, ID: s.ID, Err: s.Err, Truncated: s.Truncated, Found: s.Loc.Key != "",
		OverBudget: s.Err == string(ErrOverSchemaBudget),
		m:          m, s: s, prefix: prefix, ctx: ctx}
}

// Markup around a rendered schema: its <pre>, and the warning after it
// when the rendering stopped at MaxRenderBytes.
const (
	schemaOpen  = `<pre class="schema" tabindex="0">`
	schemaClose = `</pre>`
	schemaCut   = `<p class="warn">The rendering stops here: this schema renders to more than 1 MiB.</p>`
	// schemaCutBuffered ends a schema of a page that does not stream
	// (HTTP/1.0) cut at maxBufferedSchema.
	schemaCutBuffered = `<p class="warn">The rendering stops here: over HTTP/1.0 a page shows at most 128 KiB of a schema; ask over HTTP/1.1 for up to 1 MiB.</p>`
)

// maxBufferedSchema bounds the markup of one schema in a page that does
// not stream (HTTP/1.0, pageOut.streams): such a page is rendered whole
// before its first byte is written, so no failed write stops the printing
// for a client gone unseen by the request's context (CATALOG-29). The
// printing stops at the first drain past it: at most this plus one
// drain's markup.
const maxBufferedSchema = 128 << 10

// errBufferedCut stops the printing of a schema of a page that does not
// stream once its markup passed maxBufferedSchema.
var errBufferedCut = errors.New("catalog: schema cut in a buffered page")

// Body renders the schema (prettyFor, then schemaHTML), its <pre>
// included, when its page is written: not for a HEAD (render does not
// execute the page), and not once the request's context ended, checked
// before the rendering and every renderCheck tokens of the printing and
// pieces of the markup; the error then stops the page. In a page of the
// handler (pageOutOf) it writes to the page instead (stream): the page
// so far goes out, then the markup every renderCheck tokens, so that a
// client gone fails a write and stops the printing (CATALOG-26), or, in a
// page that does not stream (HTTP/1.0), at most maxBufferedSchema of the
// markup is kept (CATALOG-29); it then returns nothing.
func (v schemaView) Body() (template.HTML, error) {
	if v.s.Err != "" || len(v.s.Text) == 0 {
		return "", nil
	}
	if err := v.ctx.Err(); err != nil {
		return "", err
	}
	if out := pageOutOf(v.ctx); out != nil {
		return "", v.stream(out)
	}
	toks, err := v.m.prettyFor(v.ctx, v.s, v.prefix)
	if err != nil {
		return "", err
	}
	cut := false
	if n := len(toks); n > 0 && toks[n-1].Cut {
		toks, cut = toks[:n-1], true
	}
	html, err := schemaHTML(v.ctx, toks)
	if err != nil {
		return "", err
	}
	b := schemaOpen + string(html) + schemaClose
	if cut {
		b += schemaCut
	}
	return template.HTML(b), nil
}

// stream writes the schema's markup to out as it is printed (printTo).
// The page renders its schemas within its peer's share of the
// rendering time (pageOut.admit); the time the page took from there,
// but for the writes, is charged. A page that does not stream shows at
// most maxBufferedSchema of the markup (schemaCutBuffered).
func (v schemaView) stream(out *pageOut) error {
	if !out.admit() {
		return errRenderRefused
	}
	if out.streams() {
		if err := out.Flush(); err != nil {
			return err
		}
	}
	io.WriteString(out, schemaOpen)
	buffered, written := !out.streams(), 0
	cut, err := v.m.printTo(v.ctx, v.s, v.prefix, func(toks []Tok) error {
		if buffered && written >= maxBufferedSchema {
			return errBufferedCut
		}
		html, err := schemaHTML(v.ctx, toks)
		if err == nil {
			written += len(html)
			_, err = io.WriteString(out, string(html))
		}
		return err
	})
	short := errors.Is(err, errBufferedCut)
	if err != nil && !short {
		return err
	}
	end := schemaClose
	switch {
	case short:
		end += schemaCutBuffered
	case cut:
		end += schemaCut
	}
	_, err = io.WriteString(out, end)
	return err
}

// matrixView is the compatibility page of the capability name. Its
// findings are bounded like a rendered schema: at most MaxCellFindings a
// cell, and MaxRenderBytes of page bytes in all (estimated from above,
// markup and escaping included); the findings past either are counted.
// In a page of the handler (out), the view and the page are rendered
// within the peer's share of the rendering time, as a schema page's
// schemas are, once the matrix is kept (its computation is charged to
// the comparisons' budget): a kept matrix's page costs as much as a
// hostile schema's (CATALOG-30).
func (m *Model) matrixView(name string, admit func() (func(), *refusal), out *pageOut) (matrixView, bool, *refusal) {
	k, ok, no := m.lookupMatrixFor(name, admit)
	if !ok {
		return matrixView{}, false, no
	}
	if out != nil && !out.admit() {
		no, out.refused = out.refused, nil
		return matrixView{}, false, no
	}
	mx := k.mx
	v := matrixView{Name: mx.Capability, Versions: mx.Versions, Found: true}
	if c, ok := m.Capability(mx.Capability); ok {
		v.Of, v.Omitted = len(c.Versions), max(0, len(c.Versions)-len(mx.Versions))
	}
	bundleOf := m.versionBundles(mx)
	budget := MaxRenderBytes
	n := len(mx.Versions)
	for r := range n {
		row := matrixRow{Version: mx.Versions[r]}
		for c := range n {
			i := r*n + c
			cell := mx.Cells[i]
			cv := cellView{Requester: cell.Requester, Provider: cell.Provider, Level: cell.Level}
			total := 0
			if i < len(k.findings) {
				total = k.findings[i]
			}
			if cell.Level == compat.LevelFull {
				row.Cells = append(row.Cells, cv)
				continue
			}
			cost := sectionMarkup + 2*(textCost(cell.Requester)+textCost(cell.Provider))
			if cost > budget {
				budget = 0
				v.MoreCells++
				v.MoreFindings += total
				row.Cells = append(row.Cells, cv)
				continue
			}
			budget -= cost
			cv.Anchor = "cell-" + strconv.Itoa(r) + "-" + strconv.Itoa(c)
			for _, side := range []struct {
				name string
				rep  compat.Report
			}{{"input", cell.Input}, {"output", cell.Output}} {
				// The findings point into the accepting schema: the
				// provider's input, the requester's output.
				owner := cell.Provider
				if side.name == "output" {
					owner = cell.Requester
				}
				for _, f := range side.rep.Findings {
					if len(cv.Findings) == MaxCellFindings || budget == 0 {
						break
					}
					fv := findingView{Side: side.name, Verdict: string(f.Verdict), Rule: f.Rule,
						Pointer: pointerOrRoot(f.Pointer), Artifact: f.Artifact, At: f.At, Detail: f.Detail,
						Href: m.findingHref(bundleOf[owner], f.Artifact, f.At)}
					cost := findingMarkup + textCost(fv.Verdict) + textCost(fv.Rule) + textCost(fv.Pointer) +
						textCost(fv.Artifact) + textCost(fv.At) + textCost(fv.Detail) + renderCost(fv.Href)
					if cost > budget {
						budget = 0
						break
					}
					budget -= cost
					cv.Findings = append(cv.Findings, fv)
				}
			}
			cv.More = max(0, total-len(cv.Findings))
			v.Details = append(v.Details, cv)
			row.Cells = append(row.Cells, cv)
		}
		v.Rows = append(v.Rows, row)
	}
	return v, true, nil
}

// textCost bounds from above the page bytes of s shown with short.
func textCost(s string) int { return renderCost(short(s)) }

// versionBundles are the bundles of the versions of the matrix mx, by
// version.
func (m *Model) versionBundles(mx compat.Matrix) map[string]string {
	out := map[string]string{}
	c, ok := m.Capability(mx.Capability)
	if !ok {
		return out
	}
	in := map[string]bool{}
	for _, v := range mx.Versions {
		in[v] = true
	}
	for _, v := range c.Versions {
		if in[v.Version] {
			out[v.Version] = v.BundleID
		}
	}
	return out
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "(the root)"
	}
	return p
}

// findingHref links a finding to its keyword on the schema page of the
// artifact of bundleID (the version's), or "" when the model lacks it.
func (m *Model) findingHref(bundleID, artifact, at string) string {
	if artifact == "" || bundleID == "" {
		return ""
	}
	if s, ok := m.schemas[SchemaLoc{BundleID: bundleID, Key: artifact}]; !ok || s.Err != "" {
		return ""
	}
	href := Prefix + "schema?b=" + url.QueryEscape(bundleID) + "&k=" + url.QueryEscape(artifact)
	if at != "" {
		href += "#" + anchorID("s", at)
	}
	return href
}
