package compat

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// Loader supplies the verified bytes of one bundle's artifacts, by artifact
// key, and maps an absolute "$id" to the key of the artifact that declares
// it. It has the shape of the loader the offline schema compiler uses, so
// one implementation serves both. The checker reads nothing else.
type Loader interface {
	// Load returns the verified bytes of the artifact at key.
	Load(key string) ([]byte, error)
	// KeyForID returns the artifact key whose top-level "$id" is id
	// (absolute URI, no fragment).
	KeyForID(id string) (key string, ok bool)
}

// Schema names one schema: the loader of the bundle that holds it and the
// artifact key of its root document.
type Schema struct {
	Loader Loader
	Key    string
}

// Limits of the checker. They bound what a schema (publisher input) can
// cost; beyond them the verdict is Unknown, never Compatible.
const (
	// MaxDocumentSize bounds one schema document.
	MaxDocumentSize = 4 << 20
	// MaxNesting bounds the JSON nesting of one document.
	MaxNesting = 128
	// MaxSteps bounds the pairwise comparisons of one check.
	MaxSteps = 200000
	// MaxValueWork bounds the passes over listed values (enum, const) of
	// one check, counted apart from MaxSteps: a step more per 64 values
	// passed over and per 128 bytes of a number read exactly, and the
	// regular expressions run on listed values and member names (per 4
	// bytes parsed, what compiling builds, per 256 instructions × bytes
	// matched). Apart, so
	// that no check that stayed within MaxSteps before lists were
	// charged changes its verdict (or a signed claim's) unless its lists
	// alone pass this bound.
	MaxValueWork = 200000
	// MaxDepth bounds the nesting of comparisons (through properties,
	// items, combinators and references).
	MaxDepth = 256
)

const urlScheme = schemagraph.URLScheme

// artifactURL is the synthetic absolute URL of an artifact key, the base
// against which its relative references resolve (the offline schema
// compiler uses the same URLs).
func artifactURL(key string) string { return schemagraph.ArtifactURL(key) }

// document is one parsed schema artifact.
type document struct {
	key   string
	base  string // absolute $id of the root, or the synthetic URL
	root  any
	index *schemagraph.Resource // built on the first anchor reference
	listedCache
}

// node is a schema value inside a document, with the base URI its
// relative references resolve against.
type node struct {
	doc  *document
	ptr  string // JSON pointer of the value inside doc
	base string
	v    any // bool or map[string]any
	uid  string
}

// mkNode builds a node and its identity.
func mkNode(d *document, ptr, base string, v any) node {
	return node{doc: d, ptr: ptr, base: base, v: v, uid: d.key + "#" + ptr}
}

// id identifies the node for memoisation.
func (n node) id() string { return n.uid }

// side is one loader with its parsed documents.
type side struct {
	mu   sync.Mutex
	l    Loader
	docs map[string]*document
	errs map[string]string
	refs map[[2]string]resolved
}

// resolved is a cached reference resolution.
type resolved struct {
	n   node
	err string
}

func newSide(l Loader) *side {
	return &side{l: l, docs: map[string]*document{}, errs: map[string]string{}, refs: map[[2]string]resolved{}}
}

// load parses the artifact at key once. The error text names the key only.
func (s *side) load(key string) (*document, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.docs[key]; ok {
		return d, ""
	}
	if e, ok := s.errs[key]; ok {
		return nil, e
	}
	d, e := s.parse(key)
	if e != "" {
		s.errs[key] = e
		return nil, e
	}
	s.docs[key] = d
	return d, ""
}

func (s *side) parse(key string) (*document, string) {
	if s.l == nil || !schemagraph.ValidKey(key) {
		return nil, fmt.Sprintf("artifact key %q is not a valid bundle key", key)
	}
	b, err := s.l.Load(key)
	if err != nil {
		return nil, fmt.Sprintf("artifact %q cannot be loaded", key)
	}
	if len(b) > MaxDocumentSize {
		return nil, fmt.Sprintf("artifact %q is larger than %d bytes", key, MaxDocumentSize)
	}
	v, err := parseJSON(b)
	if err != nil {
		return nil, fmt.Sprintf("artifact %q is not a json schema document", key)
	}
	switch v.(type) {
	case bool, map[string]any:
	default:
		return nil, fmt.Sprintf("artifact %q is not a json schema document", key)
	}
	base := artifactURL(key)
	if m, ok := v.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok {
			if u, err := url.Parse(id); err == nil {
				u.Fragment = ""
				if u.IsAbs() {
					base = u.String()
				} else if bu, err := url.Parse(base); err == nil {
					base = bu.ResolveReference(u).String()
				}
			}
		}
	}
	return &document{key: key, base: base, root: v}, ""
}

// parseJSON decodes one JSON value with numbers kept as json.Number,
// refusing trailing data and nesting beyond MaxNesting. A member named
// twice keeps its last value, as the library's decoder does (the fast
// path: the checker decodes each document of a bundle once).
func parseJSON(b []byte) (any, error) {
	return schemagraph.Parse(b, schemagraph.Options{MaxBytes: MaxDocumentSize, MaxDepth: MaxNesting, EncodingJSON: true})
}

// resolve follows a "$ref" (or "$dynamicRef" treated as a plain reference
// is never done: callers only pass "$ref") written in n. It returns the
// target node, or a reason it cannot be resolved inside the bundle.
func (s *side) resolve(n node, ref string) (node, string) {
	k := [2]string{n.doc.key + "\x00" + n.base, ref}
	s.mu.Lock()
	r, ok := s.refs[k]
	s.mu.Unlock()
	if ok {
		return r.n, r.err
	}
	t, e := s.resolveOnce(n, ref)
	s.mu.Lock()
	s.refs[k] = resolved{n: t, err: e}
	s.mu.Unlock()
	return t, e
}

func (s *side) resolveOnce(n node, ref string) (node, string) {
	u, frag, err := schemagraph.Resolve(n.base, ref)
	switch err {
	case schemagraph.ErrBaseURI:
		return node{}, "the base uri is not valid"
	case schemagraph.ErrRefURI:
		return node{}, "the reference is not a valid uri"
	}
	target := u.String()
	var key string
	switch {
	case target == n.doc.base:
		key = n.doc.key
	case u.Scheme == urlScheme:
		if u.Host != "" || u.User != nil || u.RawQuery != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			return node{}, "the reference names no artifact of this bundle"
		}
		key = u.Path[1:]
	default:
		k, ok := s.l.KeyForID(target)
		if !ok {
			return node{}, "the reference names no artifact of this bundle"
		}
		key = k
	}
	d, e := s.load(key)
	if e != "" {
		return node{}, e
	}
	if u.Scheme != urlScheme && d.base != target {
		return node{}, fmt.Sprintf("artifact %q does not declare the referenced $id", key)
	}
	switch {
	case frag == "":
		return mkNode(d, "", d.base, d.root), ""
	case strings.HasPrefix(frag, "/"):
		v, ok := schemagraph.Pointer(d.root, frag)
		if !ok {
			return node{}, fmt.Sprintf("the pointer %q is not in artifact %q", frag, key)
		}
		switch v.(type) {
		case bool, map[string]any:
		default:
			return node{}, fmt.Sprintf("the pointer %q in artifact %q is not a schema", frag, key)
		}
		return mkNode(d, frag, d.base, v), ""
	default:
		s.mu.Lock()
		if d.index == nil {
			d.index = schemagraph.Index(d.root)
		}
		p, ok := d.index.Anchors[frag]
		s.mu.Unlock()
		if ok {
			v, _ := schemagraph.Pointer(d.root, p)
			return mkNode(d, p, d.base, v), ""
		}
		return node{}, fmt.Sprintf("the anchor %q is not in artifact %q", frag, key)
	}
}

// escape escapes one JSON pointer token.
func escape(s string) string { return schemagraph.EscapeToken(s) }

// child returns the subschema of n at the given keyword path tokens.
func (n node) child(tokens ...string) (node, bool) {
	v := n.v
	p := n.ptr
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			nv, ok := x[t]
			if !ok {
				return node{}, false
			}
			v = nv
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return node{}, false
			}
			v = x[i]
		default:
			return node{}, false
		}
		p += "/" + escape(t)
	}
	switch v.(type) {
	case bool, map[string]any:
	default:
		return node{}, false
	}
	base := n.base
	if m, ok := v.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok {
			if u, _, err := schemagraph.Resolve(base, id); err == nil {
				base = u.String()
			}
		}
	}
	return mkNode(n.doc, p, base, v), true
}
