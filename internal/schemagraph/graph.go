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
)

// Resolve resolves ref against base (RFC 3986 §5.2, dot segments removed)
// and returns the target without its fragment, and the fragment
// percent-decoded: "" (the document), a JSON pointer ("/..."), or an
// anchor name.
func Resolve(base, ref string) (*url.URL, string, error) {
	bu, err := url.Parse(base)
	if err != nil {
		return nil, "", ErrBaseURI
	}
	ru, err := url.Parse(ref)
	if err != nil {
		return nil, "", ErrRefURI
	}
	u := bu.ResolveReference(ru)
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
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
	// the order of a depth-first walk with members in name order.
	Anchors        map[string]string
	DynamicAnchors map[string]string
	// IDs maps the pointer of each embedded resource to its "$id" as
	// written; the index does not look inside it.
	IDs map[string]string
	// Duplicates lists anchor names declared more than once (either kind).
	Duplicates []string
}

// Index indexes the resource rooted at root. Values of "enum", "const",
// "examples" and "default" are data, not schemas: they are not walked.
func Index(root any) *Resource {
	r := &Resource{Anchors: map[string]string{}, DynamicAnchors: map[string]string{}, IDs: map[string]string{}}
	r.walk(root, "")
	return r
}

func (r *Resource) walk(v any, ptr string) {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["$id"]; ok && ptr != "" {
			s, _ := id.(string)
			r.IDs[ptr] = s
			return
		}
		r.add(r.Anchors, x["$anchor"], ptr)
		r.add(r.DynamicAnchors, x["$dynamicAnchor"], ptr)
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if k != "enum" && k != "const" && k != "examples" && k != "default" {
				r.walk(x[k], ptr+"/"+EscapeToken(k))
			}
		}
	case []any:
		for i, e := range x {
			r.walk(e, ptr+"/"+strconv.Itoa(i))
		}
	}
}

func (r *Resource) add(into map[string]string, name any, ptr string) {
	s, ok := name.(string)
	if !ok {
		return
	}
	if _, dup := into[s]; dup {
		if !slices.Contains(r.Duplicates, s) {
			r.Duplicates = append(r.Duplicates, s)
		}
		return
	}
	into[s] = ptr
}
