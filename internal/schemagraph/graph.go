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
// does, and returns the target without its fragment, and the fragment
// percent-decoded: "" (the document), a JSON pointer ("/..."), or an
// anchor name. That is RFC 3986 §5.2 (dot segments removed), except
// that a reference beginning "urn:" or parsed as absolute is taken as
// written, and a relative one against a base beginning "urn:" is
// appended to the base without its fragment. ErrSpelling when the
// target's text is not what net/url writes for it: the caller cannot
// name it as the validator does.
func Resolve(base, ref string) (*url.URL, string, error) {
	bu, err := url.Parse(base)
	if err != nil {
		return nil, "", ErrBaseURI
	}
	ru, err := url.Parse(ref)
	if err != nil {
		return nil, "", ErrRefURI
	}
	var s string
	switch {
	case ref == "":
		s = base
	case strings.HasPrefix(ref, "urn:"), ru.IsAbs():
		s = ref
	case strings.HasPrefix(base, "urn:"):
		b, _, _ := strings.Cut(base, "#")
		s = b + ref
	default:
		s = bu.ResolveReference(ru).String()
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

	path  []string            // escaped tokens from the root to the value walked
	plen  int                 // the length of r.path as a pointer
	bytes int                 // pointer text recorded so far
	first map[string]struct{} // anchor names (either kind) declared so far
	inner map[string]struct{} // anchor names declared inside embedded resources
	dups  map[string]struct{} // the names in Duplicates
}

// MaxIndexPointerBytes bounds the pointer text one Index records, in all:
// a document of many anchors under a long member name would otherwise
// cost the name's length for each.
const MaxIndexPointerBytes = DefaultMaxBytes

// Where a keyword's value holds subschemas.
const (
	posSelf = 1 << iota // the value is a schema
	posItem             // the value is an array of schemas
	posProp             // the value is an object whose member values are schemas
)

// subschemaKeywords are the keywords whose values jsonschema v5.3.1
// (its Draft2020 table of subschema keywords, which holds
// every earlier draft's) walks when it lists a document's subschemas,
// which is where it looks for "$id", "$anchor" and "$dynamicAnchor".
// Nothing else is a schema position: an anchor inside "enum", "const",
// "default", "examples" or an unknown keyword is data.
var subschemaKeywords = map[string]int{
	"$defs": posProp, "definitions": posProp, "properties": posProp, "patternProperties": posProp,
	"dependencies": posProp, "dependentSchemas": posProp,
	"not": posSelf, "additionalProperties": posSelf, "additionalItems": posSelf, "propertyNames": posSelf,
	"contains": posSelf, "if": posSelf, "then": posSelf, "else": posSelf, "unevaluatedProperties": posSelf,
	"unevaluatedItems": posSelf, "contentSchema": posSelf,
	"allOf": posItem, "anyOf": posItem, "oneOf": posItem, "prefixItems": posItem,
	"items": posSelf | posItem,
}

// sortedSubschemaKeywords is subschemaKeywords in name order, the order
// Index walks a schema's keywords in.
var sortedSubschemaKeywords = slices.Sorted(maps.Keys(subschemaKeywords))

// refKeywords are the keywords whose value is a reference.
var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// SchemaPosition reports whether the JSON pointer ptr (decoded: its
// tokens escaped as RFC 6901 writes them, "" the root) names, in the
// document root, a place the validator lists as a subschema: each step a
// keyword of subschemaKeywords of a schema object, then for an array of
// schemas an index, for an object of schemas a member name. A pointer to
// anywhere else (an unknown keyword, "$defs" itself, inside "enum") is a
// "non-standard location" to jsonschema v5.3.1 (resolveFragment): it
// lists the subschemas it finds there, and their anchors become the
// resource's. It costs the pointer's length.
func SchemaPosition(root any, ptr string) bool {
	if ptr == "" {
		return true
	}
	if ptr[0] != '/' {
		return false
	}
	v := root
	toks := strings.Split(ptr[1:], "/")
	for i := 0; i < len(toks); i++ {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		kw := UnescapeToken(toks[i])
		pos, ok := subschemaKeywords[kw]
		if !ok {
			return false
		}
		val := m[kw]
		switch x := val.(type) {
		case map[string]any:
			if pos&posProp != 0 {
				if i+1 >= len(toks) {
					return false // the object of schemas itself
				}
				i++
				if v, ok = x[UnescapeToken(toks[i])]; !ok {
					return false
				}
				continue
			}
			if pos&posSelf == 0 {
				return false
			}
			v = x
		case bool:
			if pos&posSelf == 0 {
				return false
			}
			v = x
		case []any:
			if pos&posItem == 0 || i+1 >= len(toks) {
				return false
			}
			i++
			j, err := strconv.Atoi(toks[i])
			if err != nil || j < 0 || j >= len(x) || strconv.Itoa(j) != toks[i] {
				return false
			}
			v = x[j]
		default:
			return false
		}
	}
	switch v.(type) {
	case bool, map[string]any:
		return true
	}
	return false
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
		first: map[string]struct{}{}, inner: map[string]struct{}{}, dups: map[string]struct{}{}}
	r.walk(root, false)
	for _, k := range slices.Sorted(maps.Keys(r.inner)) {
		if _, ok := r.first[k]; ok {
			r.duplicate(k)
		}
	}
	r.path, r.first, r.inner, r.dups = nil, nil, nil, nil
	return r
}

// walk indexes the schema v at r.path; embedded: v is inside an embedded
// resource, whose anchor names are only collected.
func (r *Resource) walk(v any, embedded bool) {
	x, ok := v.(map[string]any)
	if !ok {
		return
	}
	if !embedded && len(r.path) > 0 {
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
	for _, k := range sortedSubschemaKeywords {
		val, ok := x[k]
		if !ok {
			continue
		}
		pos := subschemaKeywords[k]
		r.push(k)
		if pos&posSelf != 0 {
			r.walk(val, embedded)
		}
		if arr, ok := val.([]any); ok && pos&posItem != 0 {
			for i, e := range arr {
				if _, ok := e.(map[string]any); ok {
					r.push(strconv.Itoa(i))
					r.walk(e, embedded)
					r.pop()
				}
			}
		}
		if m, ok := val.(map[string]any); ok && pos&posProp != 0 {
			for _, name := range slices.Sorted(maps.Keys(m)) {
				if _, ok := m[name].(map[string]any); ok {
					r.push(name)
					r.walk(m[name], embedded)
					r.pop()
				}
			}
		}
		r.pop()
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
	if _, listed := r.dups[s]; !listed {
		r.dups[s] = struct{}{}
		r.Duplicates = append(r.Duplicates, s)
	}
}

// push appends the token t to r.path, escaped; pop takes the last off.
func (r *Resource) push(t string) {
	t = EscapeToken(t)
	r.path = append(r.path, t)
	r.plen += 1 + len(t)
}

func (r *Resource) pop() {
	r.plen -= 1 + len(r.path[len(r.path)-1])
	r.path = r.path[:len(r.path)-1]
}

// pointer renders r.path as a JSON pointer, within what is left of
// MaxIndexPointerBytes; false (and Partial) beyond it.
func (r *Resource) pointer() (string, bool) {
	if r.Partial || r.bytes+r.plen > MaxIndexPointerBytes {
		r.Partial = true
		return "", false
	}
	r.bytes += r.plen
	var b strings.Builder
	b.Grow(r.plen)
	for _, t := range r.path {
		b.WriteByte('/')
		b.WriteString(t)
	}
	return b.String(), true
}
