package offlineschema

import (
	"maps"
	"slices"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// rootDraft reads the root "$schema" of a parsed document as jsonschema
// v5.3.1's findResource does: draft is the built-in draft it names
// (libraryDraft; 2020, the compiler's default, when there is none), or
// that of the vocabulary meta-schema the library serves itself; else
// draft is 0 and meta is the URL (fragment cut) of the meta-schema
// document whose draft the document takes. Both are zero for a "$schema"
// that is not a string (the library refuses it).
func rootDraft(doc any) (draft int, meta string) {
	m, ok := doc.(map[string]any)
	if !ok {
		return 2020, ""
	}
	v, has := m["$schema"]
	if !has {
		return 2020, ""
	}
	s, ok := v.(string)
	if !ok {
		return 0, ""
	}
	if d := libraryDraft(s); d != 0 {
		return d, ""
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if d := libraryVocabDraft(s); d != 0 {
		return d, ""
	}
	return 0, s
}

// libraryVocabDraft returns the draft of a vocabulary meta-schema that
// jsonschema v5.3.1 serves itself for its URL (its vocabSchemas, each
// declaring its draft's meta-schema as "$schema"), or 0.
func libraryVocabDraft(u string) int {
	for _, v := range [...]struct {
		prefix string
		draft  int
		names  []string
	}{
		{"https://json-schema.org/draft/2019-09/meta/", 2019, []string{"core", "applicator", "validation", "meta-data", "format", "content"}},
		{"https://json-schema.org/draft/2020-12/meta/", 2020, []string{"core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation", "format-assertion", "content"}},
	} {
		if name, ok := strings.CutPrefix(u, v.prefix); ok && slices.Contains(v.names, name) {
			return v.draft
		}
	}
	return 0
}

// metaLoop reports whether the meta-schema chain from meta, the
// meta-schema URL of a document being loaded at raw, leads back to raw
// through the documents loaded so far (s.metaOf). jsonschema v5.3.1 finds
// a document's draft right after loading it, through its meta-schema's,
// recursively: a meta-schema it has loaded but whose draft it is still
// looking for sends it around the loop without end, a Go stack overflow
// no recover catches. A loop forms when the last of its documents loads,
// so refusing that load (session.load) is enough. Since no loop is ever
// loaded, the chain from meta leads to raw exactly when it ends there
// (metaEnd), and each loaded document's chain end is remembered, so a
// chain of n documents costs about n steps in all, not n²/2
// (docs/SPEC-DECISIONS.md, SCHEMA-7).
func (s *session) metaLoop(raw, meta string) bool {
	if meta == "" {
		return false
	}
	if _, loaded := s.metaOf[meta]; !loaded {
		return meta == raw
	}
	end, ok := s.metaEnd(meta)
	return !ok || end == raw
}

// metaEnd follows the meta-schema chain from the loaded URL u through
// s.metaOf to its end: the first URL of the chain not loaded, or "" when
// the chain ends in a built-in draft. It then points every URL it passed
// straight at that end (path compression: a chain only ever grows at its
// end, so the end found is on each of their chains for good). ok is false
// when the walk takes more steps than there are loaded documents (a
// loop; none can be loaded, see metaLoop).
func (s *session) metaEnd(u string) (end string, ok bool) {
	end = u
	for hops := 0; ; hops++ {
		s.metaHops++
		next, loaded := s.metaOf[end]
		if !loaded {
			break
		}
		if hops > len(s.metaOf) {
			return "", false
		}
		end = next
		if end == "" {
			break
		}
	}
	for u != end {
		s.metaHops++
		next, loaded := s.metaOf[u]
		if !loaded {
			break
		}
		s.metaOf[u] = end
		u = next
	}
	return end, true
}

// draftOf returns the draft jsonschema v5.3.1 gives the parsed document
// doc: rootDraft's, following the chain of meta-schemas through the
// documents the compile loaded (metaDraft); 0 when the chain leaves them
// (the library then refused the compile).
func (s *session) draftOf(doc any, parsed *parsedDocs) int {
	draft, meta := rootDraft(doc)
	if draft != 0 || meta == "" {
		return draft
	}
	return s.metaDraft(meta, parsed)
}

// metaDraft returns the draft of the document loaded from the URL u, as
// draftOf reads it, and remembers it (s.draftByURL) for every URL of the
// chain it walked, so that each loaded document is read once however
// many documents name it, directly or not, as meta-schema.
func (s *session) metaDraft(u string, parsed *parsedDocs) int {
	if s.draftByURL == nil {
		s.draftByURL = map[string]int{}
	}
	var path []string
	draft := 0
	for hops := 0; hops <= len(s.byURL); hops++ {
		s.metaHops++
		if d, ok := s.draftByURL[u]; ok {
			draft = d
			break
		}
		key, ok := s.byURL[u]
		if !ok {
			break // the chain leaves the loaded documents: 0
		}
		path = append(path, u)
		d, meta := rootDraft(parsed.get(key, s.docs[key]))
		if d != 0 || meta == "" {
			draft = d
			break
		}
		u = meta
	}
	for _, p := range path {
		s.draftByURL[p] = draft
	}
	return draft
}

// mayDeclareAnchor reports whether the JSON text data may declare an
// anchor (scanAnchors): it may name "$anchor", "$dynamicAnchor",
// "$id" or "id" (mayNameKeyword).
func mayDeclareAnchor(data []byte) bool {
	return mayNameKeyword(data, "$anchor") || mayNameKeyword(data, "$dynamicAnchor") ||
		mayNameKeyword(data, "$id") || mayNameKeyword(data, "id")
}

// mayHoldRef reports whether the JSON text data may hold a reference
// jsonschema v5.3.1 resolves: a "$ref", "$dynamicRef" or "$recursiveRef",
// or a "$schema" naming a meta-schema (mayNameKeyword).
func mayHoldRef(data []byte) bool {
	return mayNameKeyword(data, "$ref") || mayNameKeyword(data, "$dynamicRef") ||
		mayNameKeyword(data, "$recursiveRef") || mayNameKeyword(data, "$schema")
}

// parsedDocs parses each loaded document once (parseForMeasure) for the
// walks Compile makes after the library's compile, by key.
type parsedDocs struct{ byKey map[string]any }

func (p *parsedDocs) get(key string, data []byte) any {
	if v, ok := p.byKey[key]; ok {
		return v
	}
	if p.byKey == nil {
		p.byKey = map[string]any{}
	}
	v := parseForMeasure(data)
	p.byKey[key] = v
	return v
}

// checkAnchors refuses (invalid_schema) a compile whose loaded documents
// give a reference more than one possible target (docs/SPEC-DECISIONS.md,
// SCHEMA-6): one anchor name declared twice in one resource
// (scanAnchors), one "$dynamicAnchor" name declared too often
// (ambiguousDynamicAnchor), or a JSON-pointer reference to a place the
// library does not list as a subschema, in a document that may declare an
// anchor (pointerRefsListed). Each document is read with the draft the
// library gives it (draftOf) and parsed once, through parsed. A document
// is counted once per URL the library loaded it from (s.byURL): each is a
// copy of its own to the library. libraryMetas is the number of 2020-12
// meta-schema documents the library served itself that the compiled
// schema reaches (libraryMetaSchemas): each declares one
// "$dynamicAnchor" named libraryMetaAnchor and counts like a loaded
// document that does.
func (s *session) checkAnchors(rootKey string, parsed *parsedDocs, libraryMetas int) error {
	keys := slices.Sorted(maps.Keys(s.docs))
	if !slices.ContainsFunc(keys, func(k string) bool { return mayDeclareAnchor(s.docs[k]) }) {
		return nil // no anchor and no "$id" anywhere: every target is one
	}
	type scanned struct {
		key     string
		anchors bool
		scan    *anchorScan
	}
	var all []scanned
	scans := map[string]*anchorScan{}
	var dynamic []map[string]int
	for range libraryMetas {
		dynamic = append(dynamic, map[string]int{libraryMetaAnchor: 1})
	}
	copies := map[string]int{}
	for _, key := range s.byURL {
		copies[key]++
	}
	for _, key := range keys {
		data := s.docs[key]
		anchors := mayDeclareAnchor(data)
		if !anchors && !mayHoldRef(data) {
			continue
		}
		doc := parsed.get(key, data)
		draft := s.draftOf(doc, parsed)
		if draft == 0 {
			return amp.Named(0, ErrInvalidSchema, "schema %q: the draft of artifact %q cannot be told from its chain of meta-schemas", rootKey, key)
		}
		a := scanAnchors(doc, artifactURL(key), draft)
		if anchors {
			if a.dup {
				return amp.Named(0, ErrInvalidSchema, "schema %q: artifact %q declares one anchor name in two places of one resource, so a reference to it has no single target", rootKey, key)
			}
			for range copies[key] {
				dynamic = append(dynamic, a.dynamic)
			}
			scans[key] = a
		}
		all = append(all, scanned{key, anchors, a})
	}
	if ambiguousDynamicAnchor(dynamic) {
		return amp.Named(0, ErrInvalidSchema, "schema %q declares one $dynamicAnchor name three times in one artifact, or twice in one and again in another, so a $dynamicRef to it has no single target", rootKey)
	}
	for _, d := range all {
		if !s.pointerRefsListed(d.scan, d.anchors, scans) {
			return amp.Named(0, ErrInvalidSchema, "schema %q: artifact %q holds a json pointer reference to a place that is not a subschema, in a document that declares anchors, so the anchors found there compete with the others", rootKey, d.key)
		}
	}
	return nil
}

// libraryMetaAnchor is the "$dynamicAnchor" that each 2020-12 meta-schema
// jsonschema v5.3.1 serves itself declares at its root (the draft's
// meta-schema and its vocabulary meta-schemas).
const libraryMetaAnchor = "meta"

// libraryMetaSchemas counts the 2020-12 meta-schema documents that
// jsonschema v5.3.1 serves itself (libraryDraft, libraryVocabDraft) among
// the compiled schemas reachable from the root, byLocation (index), or
// from the extra "$dynamicRef" targets (dynamicAnchorTargets): a "$ref",
// "$dynamicRef" or "$schema" that names one, however it is reached,
// compiles it into the schema, and its "$dynamicAnchor"s join the
// candidates of a "$dynamicRef" (ambiguousDynamicAnchor). Read from the
// compiled schemas, not the documents, it counts every way the library
// reached them. It costs one pass over the schemas under extra.
func libraryMetaSchemas(byLocation map[string]*jsonschema.Schema, extra []*jsonschema.Schema) int {
	docs := map[string]struct{}{}
	note := func(loc string) {
		u, _ := splitFragment(loc)
		if libraryDraft(u) == 2020 || libraryVocabDraft(u) == 2020 {
			docs[u] = struct{}{}
		}
	}
	for loc := range byLocation {
		note(loc)
	}
	seen := map[*jsonschema.Schema]bool{}
	stack := slices.Clone(extra)
	for len(stack) > 0 {
		sch := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if sch == nil || seen[sch] {
			continue
		}
		seen[sch] = true
		note(sch.Location)
		forEachApplicator(sch, func(t *jsonschema.Schema) { stack = append(stack, t) })
	}
	return len(docs)
}

// anchorScan finds, in one loaded document, an anchor name declared by two
// subschemas of one resource. jsonschema v5.3.1 resolves "#name" against
// a resource by looking through its subschemas (those whose base URI is
// the resource's, embedded resources included when their "$id" resolves
// to the same URI) in Go map order and taking the first that declares
// the name (its resolveFragment): with two, which one a
// reference reaches changes from one compile to the next.
type anchorScan struct {
	draft    int // the draft the library gives the document (session.draftOf)
	keywords map[string]int
	seen     map[anchorKey]struct{}
	dup      bool
	// dynamic counts, by name, the subschemas of the whole document (every
	// resource) that declare a "$dynamicAnchor" (dynamicAnchorCandidates).
	dynamic map[string]int
	// resources maps the base URI of each resource of the document (the
	// root's, then each embedded one's, the first kept) to its schema;
	// rootBase is the root's.
	resources map[string]any
	rootBase  string
	// refs are the references of the walked subschemas (and the root's
	// "$schema" naming a meta-schema), each with the base URI it is
	// resolved against, for pointerRefsListed.
	refs []scannedRef
}

// scannedRef is one reference as written, with the base URI of the
// subschema holding it.
type scannedRef struct{ base, ref string }

// anchorKey is one anchor name of one resource (its base URI).
type anchorKey struct{ base, name string }

// scanAnchors scans the parsed document doc, loaded from docURL and read
// by the library as the given draft, in the schema positions jsonschema
// v5.3.1 walks. dup reports one anchor name declared in two subschemas of
// one resource, with the anchors the library collects (Draft.anchors):
// the fragment of an "$id" ("id" in draft-04; ignored beside "$ref" up to
// draft-07), "$anchor" from 2019-09 and "$dynamicAnchor" from 2020-12.
// One subschema declaring a name with two keywords resolves to itself:
// not a duplicate. dynamic counts, by name, the subschemas of the
// document, of every resource, that declare a "$dynamicAnchor" (nil when
// dup). resources and refs are for pointerRefsListed.
func scanAnchors(doc any, docURL string, draft int) *anchorScan {
	a := &anchorScan{draft: draft, keywords: schemagraph.Subschemas(draft), seen: map[anchorKey]struct{}{},
		dynamic: map[string]int{}, resources: map[string]any{}}
	root, ok := doc.(map[string]any)
	if !ok {
		return a
	}
	base := docURL
	if u, ok := a.resourceURL(docURL, root); ok {
		base = u
	}
	a.resources[base], a.rootBase = root, base
	if s, ok := root["$schema"].(string); ok && libraryDraft(s) == 0 {
		// Compiled as a reference from the root (compileMap).
		a.refs = append(a.refs, scannedRef{base, s})
	}
	a.walk(root, base)
	if a.dup {
		a.dynamic = nil
	}
	return a
}

// walk scans the subschema m, whose base URI is base, and its subschemas.
func (a *anchorScan) walk(m map[string]any, base string) {
	var names [3]string
	n := 0
	if id, ok := a.id(m); ok {
		if i := strings.IndexByte(id, '#'); i >= 0 && id[i:] != "#" && id[i:] != "#/" {
			names[n], n = id[i+1:], n+1
		}
	}
	if s, ok := m["$anchor"].(string); ok && a.draft >= 2019 {
		names[n], n = s, n+1
	}
	if s, ok := m["$dynamicAnchor"].(string); ok && a.draft >= 2020 {
		names[n], n = s, n+1
		a.dynamic[s]++
	}
	for i, name := range names[:n] {
		if isRepeat(names[:i], name) {
			continue // this subschema again: it is the one target
		}
		k := anchorKey{base, name}
		if _, dup := a.seen[k]; dup {
			a.dup = true
			return
		}
		a.seen[k] = struct{}{}
	}
	for _, kw := range a.refKeywords() {
		if r, ok := m[kw].(string); ok {
			a.refs = append(a.refs, scannedRef{base, r})
		}
	}
	for kw, pos := range a.keywords {
		v, ok := m[kw]
		if !ok {
			continue
		}
		if pos&schemagraph.PosSelf != 0 {
			a.child(v, base)
		}
		if arr, ok := v.([]any); ok && pos&schemagraph.PosItem != 0 {
			for _, e := range arr {
				a.child(e, base)
			}
		}
		if obj, ok := v.(map[string]any); ok && pos&schemagraph.PosProp != 0 {
			for _, e := range obj {
				a.child(e, base)
			}
		}
		if a.dup {
			return
		}
	}
	if _, ok := m["contentMediaType"]; ok && a.draft == 7 {
		// Compiled in draft-07 though its table does not list it: the
		// library then adds it as a "non-standard location", and the
		// anchors under it become the resource's (compileMap).
		a.child(m["contentSchema"], base)
	}
}

// refKeywords are the keywords whose value jsonschema v5.3.1 compiles as
// a reference in the document's draft (compileMap).
func (a *anchorScan) refKeywords() []string {
	switch {
	case a.draft >= 2020:
		return []string{"$ref", "$recursiveRef", "$dynamicRef"}
	case a.draft == 2019:
		return []string{"$ref", "$recursiveRef"}
	}
	return []string{"$ref"}
}

// child walks v when it is a schema object, with the base URI its own
// "$id" gives it (Draft.resolveID), else the parent's.
func (a *anchorScan) child(v any, base string) {
	m, ok := v.(map[string]any)
	if !ok || a.dup {
		return
	}
	if u, ok := a.resourceURL(base, m); ok {
		base = u
		if _, seen := a.resources[u]; !seen {
			a.resources[u] = m
		}
	}
	a.walk(m, base)
}

// isRepeat reports whether name is one of names.
func isRepeat(names []string, name string) bool {
	for _, s := range names {
		if s == name {
			return true
		}
	}
	return false
}

// id is Draft.getID: the string id of m ("id" in draft-04, "$id" after),
// none beside "$ref" up to draft-07.
func (a *anchorScan) id(m map[string]any) (string, bool) {
	if _, ref := m["$ref"]; ref && a.draft <= 7 {
		return "", false
	}
	field := "$id"
	if a.draft == 4 {
		field = "id"
	}
	id, ok := m[field].(string)
	return id, ok
}

// resourceURL is Draft.resolveID: the URI (without fragment) that the
// "$id" of m resolved against base gives, when it has one with a part
// other than a fragment; ok is false otherwise (m is not a resource), or
// when the library could not resolve it (it then refuses the schema).
func (a *anchorScan) resourceURL(base string, m map[string]any) (string, bool) {
	id, ok := a.id(m)
	if !ok {
		return "", false
	}
	if i := strings.IndexByte(id, '#'); i >= 0 {
		id = id[:i]
	}
	if id == "" {
		return "", false
	}
	u, err := schemagraph.ResolveURL(base, id)
	if err != nil {
		return "", false
	}
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u = u[:i]
	}
	return u, true
}

// pointerRefsListed reports whether every JSON-pointer reference of the
// scanned document from (and its "$schema") names, in a document that may
// declare an anchor, a place jsonschema v5.3.1 lists as a subschema.
// A pointer to any other place (an unknown keyword, "$defs" in a
// draft-07 document, "$defs" itself, a member spelled otherwise than the
// library spells it) is a "non-standard location" to the library
// (resolveFragment): it adds that place to the resource's subschemas when
// it compiles the reference, and the anchors and "$id"s found under it
// become the resource's, in the middle of the compile, where they compete
// in map order with the ones the scan counted. The target is found as
// the library finds it: a resource of the same document by its base URI
// (compileRef), else the document loaded from that URI, whose own URI
// the fragment is resolved against once more (compileURL). scans holds
// the scans of the documents that may declare an anchor, by key; a
// reference to a document not loaded was never compiled.
func (s *session) pointerRefsListed(from *anchorScan, fromAnchors bool, scans map[string]*anchorScan) bool {
	for _, r := range from.refs {
		u, err := schemagraph.ResolveURL(r.base, r.ref)
		if err != nil {
			continue // the library refused the compile
		}
		u, f := splitFragment(u)
		doc := from
		for hops := 0; strings.HasPrefix(f, "#/"); hops++ {
			if node, ok := doc.resources[u]; ok {
				if (doc != from || fromAnchors) && !schemagraph.SchemaPosition(node, f[1:], doc.draft) {
					return false
				}
				break
			}
			key, ok := s.byURL[u]
			if !ok {
				break // never loaded: never compiled, or a vocabulary
			}
			if doc = scans[key]; doc == nil {
				break // no anchor there: nothing competes
			}
			if hops > len(scans) {
				return false
			}
			v, err := schemagraph.ResolveURL(doc.rootBase, f)
			if err != nil {
				break // the library refused the compile
			}
			u, f = splitFragment(v)
		}
	}
	return true
}

// splitFragment is the library's split: the URI without its fragment, and
// the fragment with its "#" ("#" when there is none, "#/" read as "#").
func splitFragment(u string) (string, string) {
	i := strings.IndexByte(u, '#')
	if i < 0 {
		return u, "#"
	}
	f := u[i:]
	if f == "#/" {
		f = "#"
	}
	return u[:i], f
}

// ambiguousDynamicAnchor reports whether a "$dynamicRef" may resolve, at
// validation, to one of two schemas in Go map order. jsonschema v5.3.1
// gives each compiled schema the list of every subschema under it that
// declares a "$dynamicAnchor", of every resource (compileDynamicAnchors,
// listed in map order), and a "$dynamicRef" whose static target T
// declares the name takes, at each schema of its dynamic scope, the first
// of that list with the name that is not T. That is one
// schema when the document holding the list declares the name at most
// twice and T is one of them; it may be either of two when a document
// declares it three times or more, or twice while another loaded document
// declares it too (T may lie there). perDoc holds, for each loaded
// document, its counts from scanAnchors.
func ambiguousDynamicAnchor(perDoc []map[string]int) bool {
	total := map[string]int{}
	for _, counts := range perDoc {
		for name, n := range counts {
			total[name] += n
		}
	}
	for _, counts := range perDoc {
		for name, n := range counts {
			if n >= 3 || (n == 2 && total[name] > 2) {
				return true
			}
		}
	}
	return false
}
