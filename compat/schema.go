package compat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
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
	// matched), and the schemas flattened into conjunctions ("$ref",
	// "allOf": one a schema, and one per 64 of its members). Apart, so
	// that no check that stayed within MaxSteps before lists were
	// charged changes its verdict (or a signed claim's) unless its lists
	// alone pass this bound.
	MaxValueWork = 200000
	// MaxDepth bounds the nesting of comparisons (through properties,
	// items, combinators and references).
	MaxDepth = 256
	// MaxPointerBytes bounds the JSON pointer of every value of a
	// document, and every "$id" in it: the checker names each subschema
	// it compares by its pointer and base, once per comparison, so a
	// long member name above many subschemas would cost its length for
	// each of them. Nor is the base of any subschema, each nested "$id"
	// resolved against the one above, longer than twice it. A document
	// past either is not compared (unreadable_schema).
	MaxPointerBytes = 1024
	// MaxPathBytes bounds the evaluation path of one comparison (what a
	// finding's Pointer holds); beyond, the check is Unknown
	// (too_complex).
	MaxPathBytes = 4096
	// MaxFindings bounds the findings one comparison keeps, an
	// Incompatible one among them when there is one, so that the verdict
	// is the same.
	MaxFindings = 256
)

const urlScheme = schemagraph.URLScheme

// artifactURL is the synthetic absolute URL of an artifact key, the base
// against which its relative references resolve (the offline schema
// compiler uses the same URLs).
func artifactURL(key string) string { return schemagraph.ArtifactURL(key) }

// document is one parsed schema artifact.
type document struct {
	key  string
	base string // absolute $id of the root, or the synthetic URL
	root any
	// index is built on the first reference that needs it (an anchor,
	// or a target outside the document); dups is its Duplicates as a set.
	index *schemagraph.Resource
	dups  map[string]bool
	// dataChecked: dataAnchors is pointsIntoData's answer for d.
	dataChecked, dataAnchors bool
	listedCache
	idCache
}

// idCache is a document's subschema bases (idBase): each "$id" that
// node.child meets resolved once against the base above it, not once
// per call. idMu guards it, a document being shared by the checks of
// its Source. What it holds is bounded by what pointerPast resolved
// when the document was read: one entry a subschema with an "$id"
// (its base is fixed by its pointer: a reference never lands below an
// "$id", entersResource), within maxResolveBytes of bases and "$id"s.
type idCache struct {
	idMu    sync.Mutex
	idBases map[idKey]string
	// idResolved counts the "$id"s resolved: the tests read and bound
	// it.
	idResolved int
}

// idKey names a resolved "$id": the base above it and the "$id", the
// node's and the document's own strings (a key joins no text).
type idKey struct{ base, id string }

// idBase is the base of a subschema of d whose "$id" is id, under a
// subschema whose base is base: id resolved against base as the
// validator does, or base when it does not resolve. Resolving reads
// both (up to 3 × MaxPointerBytes, with an allocation per part of the
// URL), so it is done once per document and pair (idCache): a schema
// whose subschemas with an "$id" were reached at every step (an allOf
// of them behind a "$ref" met from many properties) resolved each at
// each step, uncharged (docs/SPEC-DECISIONS.md COMPAT-18).
func (d *document) idBase(base, id string) string {
	k := idKey{base: base, id: id}
	d.idMu.Lock()
	defer d.idMu.Unlock()
	if b, ok := d.idBases[k]; ok {
		return b
	}
	d.idResolved++
	b := base
	if u, _, err := schemagraph.Resolve(base, id); err == nil {
		b = u.String()
	}
	if d.idBases == nil {
		d.idBases = map[idKey]string{}
	}
	d.idBases[k] = b
	return b
}

// node is a schema value inside a document, with the base URI its
// relative references resolve against.
type node struct {
	doc  *document
	ptr  string // JSON pointer of the value inside doc
	base string
	v    any // bool or map[string]any
	// embedded: the value, or a subschema on the way to it from the
	// document's root, has its own "$id" (an embedded schema resource,
	// JSON Schema 2020-12 §8.2.1); its references are not followed.
	embedded bool
}

// mkNode builds a node.
func mkNode(d *document, ptr, base string, v any) node {
	return node{doc: d, ptr: ptr, base: base, v: v}
}

// nodeID identifies a node for memoisation: its base, artifact and
// pointer, so that one value met under two bases is two nodes (its
// references resolve differently). The strings are the node's own: an
// id joins no text (a base is up to 2 × MaxPointerBytes).
type nodeID struct{ base, key, ptr string }

// id identifies the node for memoisation (nodeID).
func (n node) id() nodeID { return nodeID{base: n.base, key: n.doc.key, ptr: n.ptr} }

// side is one loader with its parsed documents.
type side struct {
	mu   sync.Mutex
	l    Loader
	docs map[string]*document
	errs map[string]string
	refs map[refKey]resolved
	// plain holds the schemas a bridge re-check decoded by loadJSON
	// (bridgeTarget) that docs does not hold, or why they could not be.
	plain map[string]plainDoc
	// bridges holds the bridges a re-check parsed (bridge), by the
	// reference that located and hash-checked them.
	bridges map[bridgeRef]*Bridge
}

// errBridgeUnmatched: a bridge artifact is missing or does not have the
// hash its reference gives.
var errBridgeUnmatched = errors.New("the bridge artifact is missing or does not match its hash")

// bridgeRef names a bridge artifact and the hash it was checked against.
type bridgeRef struct{ key, alg, hash string }

// bridge is the parsed bridge ref locates, read, hash-checked and parsed
// (ParseBridge) at most once per side: descriptors that share a bridge
// artifact (up to bundle.MaxCapabilities of them) parse its up to
// MaxBridgeSize bytes once (docs/SPEC-DECISIONS.md COMPAT-22). Only a
// bridge that passed is kept; a failure fails the whole re-check.
func (s *side) bridge(ref capability.SchemaRef) (*Bridge, error) {
	k := bridgeRef{key: ref.ArtifactKey, alg: ref.HashAlg, hash: string(ref.Hash)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bridges[k]; ok {
		return b, nil
	}
	data, err := s.l.Load(ref.ArtifactKey)
	if err != nil || !ref.Matches(data) {
		return nil, errBridgeUnmatched
	}
	b, err := ParseBridge(data)
	if err != nil {
		return nil, err
	}
	if s.bridges == nil {
		s.bridges = map[bridgeRef]*Bridge{}
	}
	s.bridges[k] = b
	return b, nil
}

// plainDoc is one schema decoded for a bridge re-check, or its error.
type plainDoc struct {
	root any
	err  error
}

// bridgeTarget is the decoded schema at key for a bridge re-check
// (requiredAt), read and decoded at most once per side: the document the
// checker already parsed when there is one (the same members, read more
// strictly), else loadJSON's answer, kept.
func (s *side) bridgeTarget(key string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.docs[key]; ok {
		return d.root, nil
	}
	if p, ok := s.plain[key]; ok {
		return p.root, p.err
	}
	root, err := loadJSON(Schema{Loader: s.l, Key: key})
	if s.plain == nil {
		s.plain = map[string]plainDoc{}
	}
	s.plain[key] = plainDoc{root: root, err: err}
	return root, err
}

// refKey names a cached reference resolution: the artifact and base of
// the node the reference is written in, and the reference. The strings
// are the node's and the document's own, as nodeID's: a key joins no
// text (a base is up to 2 × MaxPointerBytes).
type refKey struct{ doc, base, ref string }

// resolved is a cached reference resolution.
type resolved struct {
	n   node
	err string
}

func newSide(l Loader) *side {
	return &side{l: l, docs: map[string]*document{}, errs: map[string]string{}, refs: map[refKey]resolved{}}
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
	if pointerPast(v, base, MaxPointerBytes) {
		return nil, fmt.Sprintf("artifact %q holds a json pointer or an $id longer than %d bytes, or $ids that resolve to a base longer than %d bytes or too many bytes to resolve, which the checker does not compare", key, MaxPointerBytes, maxBase(MaxPointerBytes))
	}
	if m, ok := v.(map[string]any); ok {
		if sv, present := m["$schema"]; offlineschema.SchemaDraft(sv, present) != 2020 {
			// The validator reads other drafts otherwise (before
			// 2019-09 a "$ref" hides its siblings).
			return nil, fmt.Sprintf("artifact %q is not a draft 2020-12 schema (its $schema), which the checker does not compare", key)
		}
		if id, ok := m["$id"].(string); ok {
			// As the validator reads it (resolveID): the fragment
			// stripped, then resolved against the artifact's URL.
			if id, _, _ = strings.Cut(id, "#"); id != "" {
				u, _, err := schemagraph.Resolve(base, id)
				if err != nil {
					return nil, fmt.Sprintf("artifact %q has an $id the checker does not resolve as the validator does", key)
				}
				base = u.String()
			}
		}
	}
	return &document{key: key, base: base, root: v}, ""
}

// pointerPast reports whether a value of the document v, whose base
// before its own "$id" is base, has a pointer longer than max bytes, a
// member "$id" holds a string longer than max, or a subschema's base is
// longer than maxBase(max), or whether resolving its "$id"s would read
// more than maxResolveBytes: a walk linear in the document that builds
// no pointer (escaped lengths are counted) and resolves the "$id" of a
// subschema only, once, against the base of the subschema above, as
// node.child does.
func pointerPast(v any, base string, max int) bool {
	w := boundWalk{max: max, resolve: maxResolveBytes}
	return w.past(v, 0, base, atSchema)
}

// Where the bounding walk (boundWalk.past) meets a value: node.child
// reads an "$id" only of a subschema, a value reached from the root
// through keywords that hold subschemas (schemaKeywords), never one
// in data (examples, default, const, enum, an unknown keyword).
const (
	atData   = iota // not a subschema: an "$id" there is not resolved
	atSchema        // a subschema: its "$id" sets the base below it
	atProps         // an object whose members are subschemas (PosProp)
	atItems         // an array whose elements are subschemas (PosItem)
)

// boundWalk is one walk of pointerPast: resolve is what is left of the
// bytes of bases and "$id"s it may resolve.
type boundWalk struct{ max, resolve int }

// past is pointerPast for the value v, whose own JSON pointer is plen
// bytes long, met where at says (atSchema, atProps, atItems, atData).
// Every "$id" string is held to max; only a subschema's is resolved.
func (w *boundWalk) past(v any, plen int, base string, at int) bool {
	if plen > w.max {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["$id"].(string); ok {
			if len(id) > w.max {
				return true
			}
			if at == atSchema {
				if w.resolve -= len(base) + len(id); w.resolve < 0 {
					return true
				}
				if u, _, err := schemagraph.Resolve(base, id); err == nil {
					base = u.String()
				}
				if len(base) > maxBase(w.max) {
					return true
				}
			}
		}
		for k, e := range x {
			if w.past(e, plen+1+len(k)+strings.Count(k, "~")+strings.Count(k, "/"), base, memberAt(at, k, e)) {
				return true
			}
		}
	case []any:
		in := atData
		if at == atItems {
			in = atSchema
		}
		for i, e := range x {
			if w.past(e, plen+1+len(strconv.Itoa(i)), base, in) {
				return true
			}
		}
	}
	return false
}

// memberAt is where the member k, valued e, of an object met at at is
// met: under a subschema, a keyword's value as schemaKeywords says; a
// member of an object of subschemas (atProps) is one itself; anything
// else is data.
func memberAt(at int, k string, e any) int {
	switch at {
	case atProps:
		return atSchema
	case atSchema:
		pos := schemaKeywords[k]
		switch e.(type) {
		case map[string]any:
			if pos&schemagraph.PosSelf != 0 {
				return atSchema
			}
			if pos&schemagraph.PosProp != 0 {
				return atProps
			}
		case []any:
			if pos&schemagraph.PosItem != 0 {
				return atItems
			}
		}
	}
	return atData
}

// maxResolveBytes bounds the bytes of bases and "$id"s that resolving
// one document's "$id"s reads (pointerPast): many "$id"s under a long
// base would otherwise cost the base's length each, before any
// comparison.
const maxResolveBytes = MaxDocumentSize

// maxBase bounds the base of every subschema of a document, each nested
// "$id" resolved against the one above (COMPAT-14): twice the bound of
// one "$id" (a relative "$id" appended to a base of its own length).
func maxBase(max int) int { return 2 * max }

// schemaKeywords is where draft 2020-12 holds subschemas
// (schemagraph.Subschemas).
var schemaKeywords = schemagraph.Subschemas(schemagraph.Draft2020)

// parseJSON decodes one JSON value with numbers kept as json.Number,
// refusing trailing data and nesting beyond MaxNesting. A member named
// twice keeps its last value, as the library's decoder does (the fast
// path: the checker decodes each document of a bundle once).
func parseJSON(b []byte) (any, error) {
	return schemagraph.Parse(b, schemagraph.Options{MaxBytes: MaxDocumentSize, MaxDepth: MaxNesting, EncodingJSON: true})
}

// resolve follows a "$ref" (or "$dynamicRef" treated as a plain reference
// is never done: callers only pass "$ref") written in n. It returns the
// target node, or a reason it cannot be resolved inside the bundle as the
// validator resolves it.
//
// A reference written under an embedded schema resource is refused
// (whyEmbeddedRef) before any key is built or anything is kept: such a
// node's base is its own "$id"s resolved (up to 2 × MaxPointerBytes),
// and the cache lives as long as the Source, across a bundle's checks.
func (s *side) resolve(n node, ref string) (node, string) {
	if n.embedded {
		return node{}, whyEmbeddedRef
	}
	k := refKey{doc: n.doc.key, base: n.base, ref: ref}
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

// The checker follows a reference only where it resolves it as the
// offline validator (jsonschema v5.3.1) does; where an embedded schema
// resource (a subschema with its own "$id") could make the two differ,
// or an anchor names more than one subschema, it does not follow it and
// the check is Unknown (unresolved_ref). The validator resolves a
// "$ref" against the base of the nearest enclosing "$id", looks the
// target up first among the embedded resources of the document that
// holds the "$ref", and reads a JSON pointer from the resource it found;
// the checker knows only artifacts and their roots.
const (
	whyEmbeddedRef    = "the reference is inside a subschema with its own $id (an embedded schema resource), which the checker does not follow"
	whyEmbeddedTarget = "the document holds subschemas with their own $id (embedded schema resources), one of which the reference may name, which the checker does not follow"
	whyEmbeddedPath   = "the pointer %q in artifact %q enters a subschema with its own $id (an embedded schema resource), which the checker does not follow"
	whyFragmentForm   = "the fragment %q is read differently by the validator (percent-encoded)"
	whyAnchorAmbig    = "the anchor %q does not name one subschema of artifact %q"
	whyDataPointer    = "the pointer %q in artifact %q names a spot that is not a schema position, where the validator takes the anchors found for the document's"
)

func (s *side) resolveOnce(n node, ref string) (node, string) {
	if n.embedded {
		return node{}, whyEmbeddedRef
	}
	u, frag, err := schemagraph.Resolve(n.base, ref)
	switch err {
	case schemagraph.ErrBaseURI:
		return node{}, "the base uri is not valid"
	case schemagraph.ErrRefURI:
		return node{}, "the reference is not a valid uri"
	case nil:
	default:
		return node{}, "the validator resolves the reference to a uri the checker does not spell as it does"
	}
	if !schemagraph.SameFragment(ref, frag) {
		return node{}, fmt.Sprintf(whyFragmentForm, frag)
	}
	target := u.String()
	var key string
	switch {
	case target == n.doc.base:
		key = n.doc.key
	case s.embeds(n.doc):
		return node{}, whyEmbeddedTarget
	case u.Scheme == urlScheme:
		k, ok := schemagraph.ArtifactKey(u)
		if !ok {
			return node{}, "the reference names no artifact of this bundle"
		}
		key = k
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
		if !schemagraph.SchemaPosition(d.root, libraryFragment(n.base, ref), schemagraph.Draft2020) {
			return node{}, fmt.Sprintf(whyDataPointer, frag, key)
		}
		if entersResource(d.root, frag) {
			return node{}, fmt.Sprintf(whyEmbeddedPath, frag, key)
		}
		return mkNode(d, frag, d.base, v), ""
	default:
		idx, dups := s.indexOf(d)
		if dups[frag] || s.pointsIntoData(d) {
			return node{}, fmt.Sprintf(whyAnchorAmbig, frag, key)
		}
		p, ok := idx.Anchors[frag]
		if dp, dok := idx.DynamicAnchors[frag]; dok && ok && dp != p {
			// The validator reads a "$dynamicAnchor" as an anchor too
			// (one alone is not followed: not in Anchors).
			return node{}, fmt.Sprintf(whyAnchorAmbig, frag, key)
		}
		if ok {
			if v, found := schemagraph.Pointer(d.root, p); found && !entersResource(d.root, p) {
				return mkNode(d, p, d.base, v), ""
			}
			return node{}, fmt.Sprintf(whyAnchorAmbig, frag, key)
		}
		return node{}, fmt.Sprintf("the anchor %q is not in artifact %q", frag, key)
	}
}

// indexOf returns d's index (schemagraph.Index, built once) and its
// Duplicates as a set.
func (s *side) indexOf(d *document) (*schemagraph.Resource, map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.index == nil {
		d.index = schemagraph.Index(d.root)
		d.dups = make(map[string]bool, len(d.index.Duplicates))
		for _, k := range d.index.Duplicates {
			d.dups[k] = true
		}
	}
	return d.index, d.dups
}

// pointsIntoData reports whether a reference written in d may make the
// validator take anchors of d from a spot that is not a schema position
// (schemagraph.SchemaPosition): a pointer reference of d that names d
// there, written percent-encoded (the validator then looks the pointer
// up by its text), not resolved as the validator resolves it, or inside
// an embedded resource (another base). Then an anchor of d may name a
// schema the index did not walk: the checker does not follow it. It is
// computed once per document, a pass over its pointer references.
func (s *side) pointsIntoData(d *document) bool {
	idx, _ := s.indexOf(d)
	s.mu.Lock()
	done, v := d.dataChecked, d.dataAnchors
	s.mu.Unlock()
	if done {
		return v
	}
	v = idx.EmbeddedPointerRef
	for _, ref := range idx.PointerRefs {
		if v {
			break
		}
		u, _, err := schemagraph.Resolve(d.base, ref)
		switch {
		case err != nil:
			v = true
		case u.String() != d.base:
			// Into another document: followed (or not) where it
			// is resolved, its own pointer checked there.
		default:
			v = strings.Contains(ref[strings.IndexByte(ref, '#'):], "%") || !schemagraph.SchemaPosition(d.root, libraryFragment(d.base, ref), schemagraph.Draft2020)
		}
	}
	s.mu.Lock()
	d.dataChecked, d.dataAnchors = true, v
	s.mu.Unlock()
	return v
}

// libraryFragment is the fragment of ref resolved against base as the
// validator writes it (schemagraph.ResolveURL), without its "#": the
// spelling schemagraph.SchemaPosition reads. A reference the validator
// cannot resolve has none ("x", which names no schema position).
func libraryFragment(base, ref string) string {
	s, err := schemagraph.ResolveURL(base, ref)
	if err != nil {
		return "x"
	}
	_, f, _ := strings.Cut(s, "#")
	return f
}

// embeds reports whether d may hold an embedded schema resource the
// validator would find a reference's target among: one its index lists,
// one past what the index recorded, or an "$id" in data, which a JSON
// pointer reference written in any artifact (one the checker may never
// read) makes a resource of d (schemagraph.Resource.DataID).
func (s *side) embeds(d *document) bool {
	idx, _ := s.indexOf(d)
	return len(idx.IDs) > 0 || idx.Partial || idx.DataID
}

// entersResource reports whether the JSON pointer ptr (which names a
// value of root) passes through or ends at an object, below root, that
// has an "$id" member: there the validator resolves against that "$id"
// (or, in a position that is not a subschema, in an order the checker
// does not model).
func entersResource(root any, ptr string) bool {
	if ptr == "" {
		return false
	}
	v := root
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		var ok bool
		if v, ok = schemagraph.Pointer(v, "/"+tok); !ok {
			return true
		}
		if m, ok := v.(map[string]any); ok {
			if _, ok := m["$id"]; ok {
				return true
			}
		}
	}
	return false
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
	base, embedded := n.base, n.embedded
	if m, ok := v.(map[string]any); ok {
		if raw, ok := m["$id"]; ok {
			embedded = true
			if id, ok := raw.(string); ok {
				base = n.doc.idBase(base, id)
			}
		}
	}
	c := mkNode(n.doc, p, base, v)
	c.embedded = embedded
	return c, true
}
