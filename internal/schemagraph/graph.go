package schemagraph

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// URLScheme is the scheme of the synthetic URL of a bundle artifact,
// "ampbundle:///" + key: the base of an artifact without an absolute $id.
const URLScheme = "ampbundle"

// ArtifactURL returns the synthetic URL of an artifact key, the path
// percent-encoded as net/url does.
func ArtifactURL(key string) string {
	return (&url.URL{Scheme: URLScheme, Path: "/" + key}).String()
}

// ArtifactKey returns the artifact key that the URL u (as Resolve returns
// it, without its fragment) names by its synthetic form, ArtifactURL:
// scheme URLScheme, no host, user, query (not even an empty "?") or
// fragment, a path "/" + a ValidKey (no dot segments) whose segments are
// those of u's text: no "/" of the key written escaped ("%2F"). ok is
// false for any other URL (an absolute "$id" is looked up by the caller's
// index instead). It is the one test of the offline loader too, so what a
// checker reads as an artifact is what the validator loads, and the
// relative references inside it name the same artifacts for both: the
// validator resolves them against the text it loaded it by, in which
// "ampbundle:///sub%2Fx.json" has no folder "sub", a checker against the
// key's URL, ArtifactURL("sub/x.json") (docs/SPEC-DECISIONS.md GRAPH-4).
// Another spelling with the same segments ("%64.json" for "d.json") names
// the key: its references resolve alike.
func ArtifactKey(u *url.URL) (string, bool) {
	if u.Scheme != URLScheme || u.Host != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || !ValidKey(u.Path[1:]) ||
		strings.Count(u.EscapedPath(), "/") != strings.Count(u.Path, "/") {
		return "", false
	}
	return u.Path[1:], true
}

// MaxKeyLen bounds an artifact key.
const MaxKeyLen = 1024

// ValidKey reports whether key is a relative slash path: not empty, at
// most MaxKeyLen bytes, UTF-8, no backslash or control character, no
// empty, "." or ".." segment.
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKeyLen || !utf8.ValidString(key) {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Errors of Resolve.
var (
	ErrBaseURI = errors.New("schemagraph: the base uri is not valid")
	ErrRefURI  = errors.New("schemagraph: the reference is not a valid uri")
	// ErrSpelling: the validator resolves the reference to a URI whose
	// spelling is not the one net/url gives it (an upper-case scheme, an
	// escape it rewrites), so the two could name different resources.
	ErrSpelling = errors.New("schemagraph: the reference resolves to a uri spelled otherwise by the validator")
)

// Resolve resolves ref against base as jsonschema v5.3.1 (resolveURL)
// does (ResolveURL), and returns the target without its fragment, and
// the fragment percent-decoded: "" (the document), a JSON pointer
// ("/..."), or an anchor name. ErrSpelling when the target's text is not
// what net/url writes for it: the caller cannot name it as the validator
// does.
func Resolve(base, ref string) (*url.URL, string, error) {
	if _, err := url.Parse(base); err != nil {
		return nil, "", ErrBaseURI
	}
	if _, err := url.Parse(ref); err != nil {
		return nil, "", ErrRefURI
	}
	s := base
	if ref != "" {
		var err error
		if s, err = ResolveURL(base, ref); err != nil {
			return nil, "", err
		}
	}
	target, _, _ := strings.Cut(s, "#")
	u, err := url.Parse(s)
	if err != nil {
		return nil, "", ErrSpelling
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	if u.String() != target {
		return nil, "", ErrSpelling
	}
	return u, frag, nil
}

// ResolveURL is jsonschema v5.3.1's resolveURL, spelling for spelling:
// RFC 3986 §5.2 (dot segments removed, the text as net/url writes it),
// except that a reference beginning "urn:" or parsed as absolute is
// taken as written, and a relative one against a base beginning "urn:"
// is appended to the base without its fragment. The result keeps the
// fragment as the library writes it (a JSON pointer's member names
// percent-encoded where net/url encodes them): two references name one
// place to the library exactly when their results are equal.
// ErrRefURI or ErrBaseURI when net/url cannot parse one the library
// must parse (the library then refuses the schema).
func ResolveURL(base, ref string) (string, error) {
	if ref == "" {
		return base, nil // as written, its fragment kept
	}
	if strings.HasPrefix(ref, "urn:") {
		return ref, nil
	}
	ru, err := url.Parse(ref)
	if err != nil {
		return "", ErrRefURI
	}
	if ru.IsAbs() {
		return ref, nil
	}
	if strings.HasPrefix(base, "urn:") {
		b, _, _ := strings.Cut(base, "#")
		return b + ref, nil
	}
	bu, err := url.Parse(base)
	if err != nil {
		return "", ErrBaseURI
	}
	return bu.ResolveReference(ru).String(), nil
}

// SameFragment reports whether jsonschema v5.3.1 reads the fragment of
// ref as frag (its percent-decoded form, as Resolve returns it): the
// validator splits a JSON pointer at "/" and undoes "~1" and "~0" before
// percent-decoding each token, and compares an anchor undecoded, so a
// fragment whose encoding differs from frag is only the same where no
// "%" is decoded into a "/", a "~" or an anchor.
func SameFragment(ref, frag string) bool {
	i := strings.IndexByte(ref, '#')
	if i < 0 {
		return frag == ""
	}
	raw := ref[i+1:]
	if !strings.Contains(raw, "%") {
		return true
	}
	if !strings.HasPrefix(frag, "/") {
		return raw == frag
	}
	var toks []string
	for tok := range strings.SplitSeq(strings.TrimPrefix(raw, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		t, err := url.PathUnescape(tok)
		if err != nil {
			return false
		}
		toks = append(toks, EscapeToken(t))
	}
	return "/"+strings.Join(toks, "/") == frag
}

// Pointer follows the JSON pointer ptr (RFC 6901: "" is the whole value,
// "~1" is "/", "~0" is "~"; an array index is decimal without a leading
// zero) from v. A pointer that leaves the value names nothing.
func Pointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		tok = UnescapeToken(tok)
		switch x := v.(type) {
		case map[string]any:
			nv, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = nv
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != tok {
				return nil, false // also "-1", "+1", "01"
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Resource indexes one schema resource: the document root and what it
// holds outside embedded resources (subschemas with their own "$id").
type Resource struct {
	// Anchors and DynamicAnchors map each "$anchor" and "$dynamicAnchor"
	// name to the JSON pointer of the first subschema declaring it, in
	// the order of a depth-first walk with keywords and members in name
	// order.
	Anchors        map[string]string
	DynamicAnchors map[string]string
	// IDs maps the pointer of each embedded resource to its "$id" as
	// written; its anchors are not the document's.
	IDs map[string]string
	// Duplicates lists, in the order found, the anchor names that do not
	// name one subschema of the document: declared by two subschemas
	// (either keyword, either kind), or also declared inside an embedded
	// resource (whose "$id" may resolve to the document's own URI, when
	// the validator counts its anchors as the document's: Index does not
	// know the document's URI).
	Duplicates []string
	// DataID reports an object outside the schema positions Index walks
	// (data: an unknown keyword, "enum", "$defs" itself, a member of an
	// "allOf" that is not an object) with an "$id" of a URI part. A JSON
	// pointer reference into such a spot, written in any artifact the
	// validator compiles with this one, makes the validator list it as a
	// resource of its own ("non-standard location"); a name declared by
	// "$anchor" or "$dynamicAnchor" in data and also in a schema position
	// is in Duplicates for the same reason.
	DataID bool
	// Partial reports that the pointers to record passed
	// MaxIndexPointerBytes: the anchors and IDs met after that are left
	// out (their names still count for Duplicates).
	Partial bool
	// PointerRefs lists the "$ref", "$dynamicRef" and "$recursiveRef"
	// values, as written, whose fragment is a JSON pointer (begins "/"
	// after its "#"), met in the schemas Index walks outside embedded
	// resources; EmbeddedPointerRef reports one met inside an embedded
	// resource. A pointer into a spot that is not a schema position
	// (SchemaPosition) makes the validator list the subschemas found
	// there, and their anchors become the resource's.
	PointerRefs        []string
	EmbeddedPointerRef bool

	path  PointerStack        // the pointer of the value walked
	first map[string]struct{} // anchor names (either kind) declared so far
	inner map[string]struct{} // anchor names declared inside embedded resources
	dups  map[string]struct{} // the names in Duplicates
	data  map[string]struct{} // anchor names declared in data (DataID)
	// dupCompared counts the listed names duplicate compared s with (one
	// lookup in dups a call), for the tests that bound it.
	dupCompared int
}

// MaxIndexPointerBytes bounds the pointer text one Index records, in all:
// a document of many anchors under a long member name would otherwise
// cost the name's length for each.
const MaxIndexPointerBytes = DefaultMaxBytes

// Where a keyword's value holds subschemas (the values of Subschemas).
const (
	PosSelf = 1 << iota // the value is a schema
	PosItem             // the value is an array of schemas
	PosProp             // the value is an object whose member values are schemas
)

// The drafts of JSON Schema that jsonschema v5.3.1 knows, as Subschemas
// and SchemaPosition take them.
const (
	Draft4    = 4
	Draft6    = 6
	Draft7    = 7
	Draft2019 = 2019
	Draft2020 = 2020
)

// subschemaTables holds Subschemas' answer for each draft, built once.
var subschemaTables = func() map[int]map[string]int {
	kw := map[string]int{
		"definitions": PosProp, "not": PosSelf, "allOf": PosItem, "anyOf": PosItem, "oneOf": PosItem,
		"properties": PosProp, "additionalProperties": PosSelf, "patternProperties": PosProp,
		"items": PosSelf | PosItem, "additionalItems": PosSelf, "dependencies": PosProp,
	}
	t := map[int]map[string]int{Draft4: maps.Clone(kw)}
	kw["propertyNames"], kw["contains"] = PosSelf, PosSelf
	t[Draft6] = maps.Clone(kw)
	kw["if"], kw["then"], kw["else"] = PosSelf, PosSelf, PosSelf
	t[Draft7] = maps.Clone(kw)
	kw["$defs"], kw["dependentSchemas"] = PosProp, PosProp
	kw["unevaluatedProperties"], kw["unevaluatedItems"], kw["contentSchema"] = PosSelf, PosSelf, PosSelf
	t[Draft2019] = maps.Clone(kw)
	kw["prefixItems"] = PosItem
	t[Draft2020] = kw
	return t
}()

// Subschemas returns the keywords whose values jsonschema v5.3.1 walks,
// for a document of the given draft (Draft4 .. Draft2020; any other is
// read as Draft2020), when it lists a document's subschemas (its
// Draft.subschemas tables: each draft adds to the one before), which is
// where it looks for "$id", "$anchor" and "$dynamicAnchor", with where
// each holds subschemas (PosSelf, PosItem, PosProp). Nothing else is a
// schema position: an anchor inside "enum", "const", "default",
// "examples" or an unknown keyword is data. The map is shared: the
// caller must not modify it.
func Subschemas(draft int) map[string]int {
	if t, ok := subschemaTables[draft]; ok {
		return t
	}
	return subschemaTables[Draft2020]
}

// subschemaKeywords is the draft 2020-12 table, the one Index walks (it
// holds every earlier draft's positions).
var subschemaKeywords = Subschemas(Draft2020)

// sortedSubschemaKeywords is subschemaKeywords in name order, the order
// Index walks a schema's keywords in.
var sortedSubschemaKeywords = slices.Sorted(maps.Keys(subschemaKeywords))

// refKeywords are the keywords whose value is a reference.
var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// LibraryEscape is jsonschema v5.3.1's escape of a member name into the
// JSON pointer token of a subschema's key: RFC 6901 ("~0", "~1"), then
// url.PathEscape.
func LibraryEscape(name string) string {
	name = strings.ReplaceAll(name, "~", "~0")
	name = strings.ReplaceAll(name, "/", "~1")
	return url.PathEscape(name)
}

// SchemaPosition reports whether the JSON pointer ptr, as written in the
// fragment of a reference the library resolved (ResolveURL; "" or a
// pointer beginning "/"), names from the schema node, in a document of
// the given draft, a place jsonschema v5.3.1 lists as a subschema
// (Draft.listSubschemas), spelled exactly as the library spells that
// place's key: each step a keyword of Subschemas(draft) as it is, then
// for an array of schemas an index written as strconv.Itoa writes it, for
// an object of schemas a member name escaped as LibraryEscape does; a
// boolean in a schema position only from draft-06. Any other place (an
// unknown keyword, "$defs" itself or in a draft-07 document, inside
// "enum", a member spelled otherwise, "#/%24defs/a") is a "non-standard
// location" to the library (resolveFragment): it lists the subschemas it
// finds there when it compiles the reference, and their anchors and
// "$id"s become the resource's. What stands at the place is not judged
// (the library lists a member of "$defs" whatever its type; a caller
// that needs a schema there checks it). It costs the pointer's length.
func SchemaPosition(node any, ptr string, draft int) bool {
	if ptr == "" {
		return true
	}
	if ptr[0] != '/' {
		return false
	}
	keywords := Subschemas(draft)
	toks := strings.Split(ptr[1:], "/")
	for i := 0; i < len(toks); i++ {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		pos, ok := keywords[toks[i]]
		if !ok {
			return false
		}
		switch v := m[toks[i]].(type) {
		case map[string]any:
			if pos&PosProp == 0 {
				if pos&PosSelf == 0 {
					return false
				}
				node = v
				continue
			}
			if i+1 >= len(toks) {
				return false // the object of schemas itself
			}
			i++
			name, err := url.PathUnescape(toks[i])
			if err != nil {
				return false
			}
			name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
			if LibraryEscape(name) != toks[i] {
				return false
			}
			if node, ok = v[name]; !ok {
				return false
			}
		case bool:
			if pos&PosSelf == 0 || draft == Draft4 {
				return false // draft-04 has no boolean schemas
			}
			node = v
		case []any:
			if pos&PosItem == 0 || i+1 >= len(toks) {
				return false
			}
			i++
			j, err := strconv.Atoi(toks[i])
			if err != nil || j < 0 || j >= len(v) || strconv.Itoa(j) != toks[i] {
				return false
			}
			node = v[j]
		default:
			return false
		}
	}
	return true
}

// Index indexes the resource rooted at root, read as draft 2020-12: it
// walks only the subschemas the validator walks (subschemaKeywords),
// visits no scalar, and builds a JSON pointer only for a subschema it
// records, so its time and memory are linear in the document (pointer
// text at most MaxIndexPointerBytes). A subschema whose "$id" has a URI
// part (not "" nor a bare fragment, which the validator ignores) is an
// embedded resource: recorded in IDs, its anchors are not the
// document's.
func Index(root any) *Resource {
	r := &Resource{Anchors: map[string]string{}, DynamicAnchors: map[string]string{}, IDs: map[string]string{},
		first: map[string]struct{}{}, inner: map[string]struct{}{}, dups: map[string]struct{}{}, data: map[string]struct{}{}}
	r.walk(root, false)
	for _, k := range slices.Sorted(maps.Keys(r.inner)) {
		if _, ok := r.first[k]; ok {
			r.duplicate(k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.data)) {
		if _, ok := r.first[k]; ok {
			r.duplicate(k)
		}
	}
	r.path.tokens, r.first, r.inner, r.dups, r.data = nil, nil, nil, nil, nil
	return r
}

// walk indexes the schema v at r.path; embedded: v is inside an embedded
// resource, whose anchor names are only collected.
func (r *Resource) walk(v any, embedded bool) {
	x, ok := v.(map[string]any)
	if !ok {
		return
	}
	if !embedded && r.path.Depth() > 0 {
		if id, ok := x["$id"].(string); ok && !strings.HasPrefix(id, "#") && id != "" {
			if p, ok := r.pointer(); ok {
				r.IDs[p] = id
			}
			embedded = true
		}
	}
	for _, kw := range refKeywords {
		if ref, ok := x[kw].(string); ok {
			if _, frag, found := strings.Cut(ref, "#"); found && strings.HasPrefix(frag, "/") {
				if embedded {
					r.EmbeddedPointerRef = true
				} else {
					r.PointerRefs = append(r.PointerRefs, ref)
				}
			}
		}
	}
	a, isAnchor := x["$anchor"].(string)
	r.declare(a, isAnchor, r.Anchors, embedded, false)
	d, isDynamic := x["$dynamicAnchor"].(string)
	r.declare(d, isDynamic, r.DynamicAnchors, embedded, isAnchor && a == d)
	for k, val := range x {
		if _, ok := subschemaKeywords[k]; !ok {
			r.scanData(val)
		}
	}
	for _, k := range sortedSubschemaKeywords {
		val, ok := x[k]
		if !ok {
			continue
		}
		pos := subschemaKeywords[k]
		r.push(k)
		switch v := val.(type) {
		case map[string]any:
			switch {
			case pos&PosProp != 0:
				for _, name := range slices.Sorted(maps.Keys(v)) {
					if _, ok := v[name].(map[string]any); ok {
						r.push(name)
						r.walk(v[name], embedded)
						r.pop()
					} else {
						r.scanData(v[name])
					}
				}
			case pos&PosSelf != 0:
				r.walk(v, embedded)
			default:
				r.scanData(v)
			}
		case []any:
			if pos&PosItem == 0 {
				r.scanData(v)
				break
			}
			for i, e := range v {
				if _, ok := e.(map[string]any); ok {
					r.push(strconv.Itoa(i))
					r.walk(e, embedded)
					r.pop()
				} else {
					r.scanData(e)
				}
			}
		}
		r.pop()
	}
}

// scanData notes, in the data value v (no schema position: the validator
// lists no subschema there unless a JSON pointer reference names the
// spot), every "$anchor" and "$dynamicAnchor" name (r.data) and any
// "$id" with a URI part (DataID). It visits each value once, no scalar
// but the three keywords' values.
func (r *Resource) scanData(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, kw := range [...]string{"$anchor", "$dynamicAnchor"} {
			if s, ok := x[kw].(string); ok {
				r.data[s] = struct{}{}
			}
		}
		if id, ok := x["$id"].(string); ok && id != "" && !strings.HasPrefix(id, "#") {
			r.DataID = true
		}
		for _, e := range x {
			r.scanData(e)
		}
	case []any:
		for _, e := range x {
			r.scanData(e)
		}
	}
}

// declare records the anchor name s (ok: declared, as a string) of the
// schema at r.path into the map of its kind. A name declared before by
// another subschema, of either kind, is a duplicate (again: this
// subschema declared it already, as its other kind); one inside an
// embedded resource is only collected.
func (r *Resource) declare(s string, ok bool, into map[string]string, embedded, again bool) {
	if !ok {
		return
	}
	if embedded {
		r.inner[s] = struct{}{}
		return
	}
	if _, seen := r.first[s]; seen && !again {
		r.duplicate(s)
	}
	r.first[s] = struct{}{}
	if _, ok := into[s]; ok {
		return
	}
	if p, ok := r.pointer(); ok {
		into[s] = p
	}
}

// duplicate lists the anchor name s in Duplicates, once.
func (r *Resource) duplicate(s string) {
	r.dupCompared++
	if _, listed := r.dups[s]; !listed {
		r.dups[s] = struct{}{}
		r.Duplicates = append(r.Duplicates, s)
	}
}

// push appends the token t to r.path, escaped; pop takes the last off.
func (r *Resource) push(t string) { r.path.Push(EscapeToken(t)) }

func (r *Resource) pop() { r.path.Pop() }

// pointer renders r.path as a JSON pointer, within what is left of
// MaxIndexPointerBytes; false (and Partial) beyond it.
func (r *Resource) pointer() (string, bool) {
	if r.Partial {
		return "", false
	}
	p, ok := r.path.Render(MaxIndexPointerBytes)
	r.Partial = !ok
	return p, ok
}
