package offlineschema

import (
	"net/url"
	"strings"
)

// Positions of subschemas in a keyword's value, as jsonschema v5.3.1
// lists them (its draft tables: self, item, prop).
const (
	anchorSelf = 1 << iota // the value is a schema
	anchorItem             // the value is an array of schemas
	anchorProp             // the value is an object whose member values are schemas
)

// librarySubschemas returns the keywords whose values jsonschema v5.3.1
// walks, for a document of the given draft, when it lists the
// subschemas in which it looks for anchors (its Draft.subschemas tables:
// each draft adds to the one before). Any other draft (a meta-schema of
// the bundle) gets the 2020-12 table, which holds every earlier one.
func librarySubschemas(draft int) map[string]int {
	kw := map[string]int{
		"definitions": anchorProp, "not": anchorSelf, "allOf": anchorItem, "anyOf": anchorItem, "oneOf": anchorItem,
		"properties": anchorProp, "additionalProperties": anchorSelf, "patternProperties": anchorProp,
		"items": anchorSelf | anchorItem, "additionalItems": anchorSelf, "dependencies": anchorProp,
	}
	if draft == 4 {
		return kw
	}
	kw["propertyNames"], kw["contains"] = anchorSelf, anchorSelf
	if draft == 6 {
		return kw
	}
	kw["if"], kw["then"], kw["else"] = anchorSelf, anchorSelf, anchorSelf
	if draft == 7 {
		return kw
	}
	kw["$defs"], kw["dependentSchemas"] = anchorProp, anchorProp
	kw["unevaluatedProperties"], kw["unevaluatedItems"], kw["contentSchema"] = anchorSelf, anchorSelf, anchorSelf
	if draft == 2019 {
		return kw
	}
	kw["prefixItems"] = anchorItem
	return kw
}

// mayDeclareAnchor reports whether the JSON text data may declare an
// anchor (duplicateAnchor): it may name "$anchor", "$dynamicAnchor",
// "$id" or "id" (mayNameKeyword).
func mayDeclareAnchor(data []byte) bool {
	return mayNameKeyword(data, "$anchor") || mayNameKeyword(data, "$dynamicAnchor") ||
		mayNameKeyword(data, "$id") || mayNameKeyword(data, "id")
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

// anchorScan finds, in one loaded document, an anchor name declared by two
// subschemas of one resource. jsonschema v5.3.1 resolves "#name" against
// a resource by looking through its subschemas (those whose base URI is
// the resource's, embedded resources included when their "$id" resolves
// to the same URI) in Go map order and taking the first that declares
// the name (its resolveFragment): with two, which one a
// reference reaches changes from one compile to the next.
type anchorScan struct {
	draft    int // libraryDraft of the document's "$schema"; 2020 when absent
	keywords map[string]int
	seen     map[anchorKey]struct{}
	dup      bool
	// dynamic counts, by name, the subschemas of the whole document (every
	// resource) that declare a "$dynamicAnchor" (dynamicAnchorCandidates).
	dynamic map[string]int
}

// anchorKey is one anchor name of one resource (its base URI).
type anchorKey struct{ base, name string }

// duplicateAnchor reports whether the parsed document doc, loaded from
// docURL, declares one anchor name in two subschemas of one resource, in
// the schema positions jsonschema v5.3.1 walks and with the anchors it
// collects (Draft.anchors): the fragment of an "$id" ("id" in draft-04;
// ignored beside "$ref" up to draft-07), "$anchor" from 2019-09 and
// "$dynamicAnchor" from 2020-12. One subschema declaring a name with two
// keywords resolves to itself: not a duplicate. A document whose
// "$schema" names no built-in draft is read with every draft's rules at
// once (it can only refuse more).
//
// dynamic counts, by name, the subschemas of the document, of every
// resource, that declare a "$dynamicAnchor" (nil when dup).
func duplicateAnchor(doc any, docURL string) (dup bool, dynamic map[string]int) {
	root, ok := doc.(map[string]any)
	if !ok {
		return false, nil
	}
	draft := 2020
	if s, has := root["$schema"]; has {
		str, _ := s.(string)
		draft = libraryDraft(str)
	}
	a := &anchorScan{draft: draft, keywords: librarySubschemas(draft), seen: map[anchorKey]struct{}{}, dynamic: map[string]int{}}
	base := docURL
	if u, ok := a.resourceURL(docURL, root); ok {
		base = u
	}
	a.walk(root, base)
	if a.dup {
		return true, nil
	}
	return false, a.dynamic
}

// walk scans the subschema m, whose base URI is base, and its subschemas.
func (a *anchorScan) walk(m map[string]any, base string) {
	var names [4]string
	n := 0
	for _, field := range a.idFields() {
		if id, ok := a.id(m, field); ok {
			if i := strings.IndexByte(id, '#'); i >= 0 && id[i:] != "#" && id[i:] != "#/" {
				names[n], n = id[i+1:], n+1
			}
		}
	}
	if s, ok := m["$anchor"].(string); ok && (a.draft >= 2019 || a.draft == 0) {
		names[n], n = s, n+1
	}
	if s, ok := m["$dynamicAnchor"].(string); ok && (a.draft >= 2020 || a.draft == 0) {
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
	for kw, pos := range a.keywords {
		v, ok := m[kw]
		if !ok {
			continue
		}
		if pos&anchorSelf != 0 {
			a.child(v, base)
		}
		if arr, ok := v.([]any); ok && pos&anchorItem != 0 {
			for _, e := range arr {
				a.child(e, base)
			}
		}
		if obj, ok := v.(map[string]any); ok && pos&anchorProp != 0 {
			for _, e := range obj {
				a.child(e, base)
			}
		}
		if a.dup {
			return
		}
	}
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

// idFields are the members that hold a schema's id in the document's
// draft (both for a draft that is not built in).
func (a *anchorScan) idFields() []string {
	switch a.draft {
	case 4:
		return []string{"id"}
	case 0:
		return []string{"$id", "id"}
	}
	return []string{"$id"}
}

// id is Draft.getID: the string id of m in field, none beside "$ref" up
// to draft-07.
func (a *anchorScan) id(m map[string]any, field string) (string, bool) {
	if _, ref := m["$ref"]; ref && a.draft <= 7 && a.draft != 0 {
		return "", false
	}
	id, ok := m[field].(string)
	return id, ok
}

// resourceURL is Draft.resolveID: the URI (without fragment) that the
// "$id" of m resolved against base gives, when it has one with a part
// other than a fragment; ok is false otherwise (m is not a resource), or
// when the library could not resolve it (it then refuses the schema).
func (a *anchorScan) resourceURL(base string, m map[string]any) (string, bool) {
	for _, field := range a.idFields() {
		id, ok := a.id(m, field)
		if !ok {
			continue
		}
		if i := strings.IndexByte(id, '#'); i >= 0 {
			id = id[:i]
		}
		if id == "" {
			continue
		}
		u, err := libraryResolveURL(base, id)
		if err != nil {
			return "", false
		}
		if i := strings.IndexByte(u, '#'); i >= 0 {
			u = u[:i]
		}
		return u, true
	}
	return "", false
}

// libraryResolveURL is jsonschema v5.3.1's resolveURL, spelling for
// spelling, so that two subschemas are one resource here exactly when
// they are one there.
func libraryResolveURL(base, ref string) (string, error) {
	if strings.HasPrefix(ref, "urn:") {
		return ref, nil
	}
	refURL, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	if refURL.IsAbs() {
		return ref, nil
	}
	if strings.HasPrefix(base, "urn:") {
		if i := strings.IndexByte(base, '#'); i >= 0 {
			base = base[:i]
		}
		return base + ref, nil
	}
	baseURL, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	return baseURL.ResolveReference(refURL).String(), nil
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
// document, its counts from duplicateAnchor.
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
