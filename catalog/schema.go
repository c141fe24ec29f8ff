package catalog

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// maxRefs bounds the $refs of one schema followed or linked.
const maxRefs = 1024

// maxRefIDs and maxRefIDBytes bound the chain of "$id"s one ref entry
// carries (refsOf): beyond either, the reference is left unresolved.
const (
	maxRefIDs     = 16
	maxRefIDBytes = 2048
)

// schemaID is the top-level absolute $id of a schema document, or "".
func schemaID(doc []byte) string {
	id, err := offlineschema.SchemaID(doc)
	if err != nil {
		return ""
	}
	return id
}

// role is what a JSON container of a schema document is: a schema, a
// holder of schemas, or data. Only a "$ref" member of a schema is a
// reference; one inside "examples", "const", "enum", "default" or an
// unknown keyword is data, never followed nor linked.
type role uint8

const (
	roleData   role = iota
	roleSchema      // an object that is a schema
	roleList        // an array of schemas
	roleMap         // an object whose member values are schemas (or, for "dependencies", names)
)

// childRole is the role of a container opened by open as the value of
// member key (objects) or as an element (arrays) of a parent of role
// parent, in a document of draft d (7 or 2020, as draftOf returns). The
// schema positions are the places jsonschema v5.3.1 lists as subschemas
// (schemagraph.Subschemas), where it reads an "$id" as an embedded
// resource ("additionalItems" of a 2020-12 document included).
func childRole(parent role, d int, key string, open json.Delim) role {
	switch parent {
	case roleSchema:
		pos := schemagraph.Subschemas(d)[key]
		switch {
		case open == '{' && pos&schemagraph.PosProp != 0:
			return roleMap
		case open == '{' && pos&schemagraph.PosSelf != 0:
			return roleSchema
		case open == '[' && pos&schemagraph.PosItem != 0:
			return roleList
		}
	case roleList, roleMap:
		if open == '{' {
			return roleSchema
		}
	}
	return roleData
}

// draftOf is the draft whose keyword table applies to doc: 7 when its
// root "$schema" names draft-07, else 2020 (the default, and the table
// used for the drafts the quick pass leaves to the compiler).
func draftOf(doc []byte) int { return tableOf(docDraft(doc)) }

// table is the keyword table the printer reads s by: the one its refs
// were read by (Schema.draft), the same as draftOf its text when kept
// whole (a truncated text is shown as text, rawText), so that a page
// does not parse the document again for it (docs/SPEC-DECISIONS.md
// CATALOG-44); draftOf its text when not read.
func (s Schema) table() int {
	if s.draft != 0 {
		return s.draft
	}
	return draftOf(s.Text)
}

// tableOf is the keyword table of a document of draft dd (docDraft).
func tableOf(dd int) int {
	if dd == 7 {
		return 7
	}
	return 2020
}

// refsOf lists the "$ref" values of a schema document in schema
// positions, in document order, at most maxRefs, each as a ref entry:
// the chain of "$id" values (as written) from the root to the subschema
// holding it, the ones the validator takes for a base, then the value,
// joined by NUL. resolveRef reads an entry back against the artifact's
// URL, as the validator resolves the reference (schemagraph.ResolveURL):
// through every enclosing "$id", none beside "$ref" up to draft-07
// (jsonschema v5.3.1's getID), a "urn:" base appended to. An entry is ""
// where the validator's base cannot be told: a "$id" that is not a
// string, any "$id" or "id" in a document of a draft the catalog does
// not read (neither 2020-12 nor draft-07), or a NUL in a value; and
// where a later member of the same name overrides the member holding
// the "$ref" (or the "$ref" itself): the validator reads a document as
// encoding/json does, the last member of a name winning (GRAPH-1), so
// it never sees that "$ref". The printer links the i-th "$ref" it meets
// with the i-th entry: both walk the same positions in the same order.
func refsOf(doc []byte) []string {
	refs, _ := refsAndShadowed(doc)
	return refs
}

// refsAndShadowed is refsOf, and the members of the document the
// validator never reads (shadowed): the spans of member ordinals, in the
// order the printer meets the members (every object member of the
// document, nested ones included), of each member a later member of the
// same name in the same object overrides, with everything inside its
// value; sorted and merged. The printer gives no anchor to a member in
// one, so that a link to a pointer ("$ref", a finding) lands on the
// member the validator reads, never on a decoy of the same pointer
// before it. Past maxShadowed spans, the rest of the document is one
// span: no member of it is an anchor.
func refsAndShadowed(doc []byte) ([]string, [][2]int) {
	refs, shadowed, _ := refsShadowedDraft(doc)
	return refs, shadowed
}

// refsShadowedDraft is refsAndShadowed, and the keyword table it read the
// document by (tableOf), which the printer reads its kept text by.
func refsShadowedDraft(doc []byte) ([]string, [][2]int, int) {
	dd := docDraft(doc) // the document is parsed once for its draft
	w := &refWalk{d: tableOf(dd), known: dd != 0}
	dec := json.NewDecoder(bytes.NewReader(doc))
	// The whole document is read (refs past maxRefs are not kept), so
	// that a member overriding one that held refs is seen.
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		w.token(tok)
	}
	w.chainIDs()
	own := ownResources(w.d, len(w.nodes), func(i int) (int, string, bool, bool) {
		nd := &w.nodes[i]
		return nd.parent, nd.id, w.readsID(nd), nd.bad
	})
	own.closed = own.closed || w.dataID
	return w.entries(own), mergeSpans(w.shadowed), w.d
}

// maxShadowed bounds the spans of shadowed members a schema keeps
// (refsAndShadowed): at most 16 bytes each (docs/SPEC-DECISIONS.md
// CATALOG-33).
const maxShadowed = 4096

// mergeSpans sorts spans by start and merges those that overlap or
// touch.
func mergeSpans(spans [][2]int) [][2]int {
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return slices.Clip(out)
}

// refWalk is refsOf's state while it reads a document's tokens: the
// schema objects met (nodes, a parent before its children), the "$ref"s
// found in them, and the open containers.
type refWalk struct {
	d     int  // the keyword table (tableOf)
	known bool // the document's draft is one the catalog reads
	refs  []refFound
	nodes []refNode
	stack []refLevel
	// overridden are the spans of refs inside members that a later
	// member of the same name replaces.
	overridden [][2]int
	// dataID: an "$id" in data (noteValue).
	dataID bool
	key    string // the name of the member last read
	// members counts the object members read, nested ones included;
	// shadowed are the spans of member ordinals that a later member
	// of the same name overrides (refsAndShadowed).
	members  int
	shadowed [][2]int
	// names are the members read of the open objects, each object's
	// from its refLevel.first, innermost last: one slice for the whole
	// walk rather than maps in every object (CATALOG-44).
	names []memberRead
}

// memberRead is the last member of a name read in an open object: the
// span of member ordinals of it and everything in its value, and the
// span of the refs its value held (held: some, not yet overridden).
type memberRead struct {
	name string
	ords [2]int
	refs [2]int
	held bool
}

// indexedMembers is how many members an object holds before its names
// are looked up in a map (refLevel.index) rather than one by one.
const indexedMembers = 16

// refLevel is an open container of the document.
type refLevel struct {
	obj, wantKey bool
	role         role
	node         int // the schema object's index in nodes, or -1
	// member is the name of the object's member being read, from
	// refs[start]; ord is its ordinal (-1: none yet). The members
	// already read are refWalk.names from first; index maps their
	// names to their places there once they are over indexedMembers.
	member string
	start  int
	ord    int
	first  int
	index  map[string]int
}

// refNode is a schema object of the document.
type refNode struct {
	parent     int
	id         string
	hasID, bad bool
	hasRef     bool
	// idNode is the nearest node, this one or above, whose "$id"
	// the validator reads (-1: none); ids and idBytes count the
	// chain of them from the root.
	idNode, ids, idBytes int
}

// readsID reports whether the validator reads the "$id" of node nd: it
// has one, and up to draft-07 an "$id" beside "$ref" is not read.
func (w *refWalk) readsID(nd *refNode) bool {
	return nd.hasID && !(w.d == 7 && nd.hasRef)
}

// refFound is a "$ref" value and the schema node holding it.
type refFound struct {
	node int
	ref  string
}

// token reads the document's next token.
func (w *refWalk) token(tok json.Token) {
	n := len(w.stack)
	if n > 0 && w.stack[n-1].wantKey {
		w.memberName(tok)
		return
	}
	in := w.noteValue(tok)
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' || t == '[' {
			w.open(t)
			return
		}
		w.stack = w.stack[:max(n-1, 0)]
	case string:
		if in != nil && w.key == "$ref" && len(w.refs) < maxRefs {
			w.refs = append(w.refs, refFound{w.stack[n-1].node, t})
		}
	}
	w.done()
}

// memberName reads tok where the innermost object expects a member's
// name or its end.
func (w *refWalk) memberName(tok json.Token) {
	n := len(w.stack)
	lv := &w.stack[n-1]
	w.endMember(lv)
	if dl, ok := tok.(json.Delim); ok && dl == '}' {
		w.names = w.names[:lv.first]
		w.stack = w.stack[:n-1]
		w.done()
		return
	}
	w.key, _ = tok.(string)
	w.shadow(lv)
	lv.member, lv.start = w.key, len(w.refs)
	lv.wantKey = false
}

// shadow notes, as the member w.key of the object lv begins, the refs
// an earlier member of the same name held as overridden, and that
// member's span as shadowed (refsAndShadowed).
func (w *refWalk) shadow(lv *refLevel) {
	if i := w.find(lv, w.key); i >= 0 {
		mr := &w.names[i]
		if mr.held {
			w.overridden = append(w.overridden, mr.refs)
			mr.held = false
		}
		span := mr.ords
		switch {
		case len(w.shadowed) < maxShadowed:
			w.shadowed = append(w.shadowed, span)
		case len(w.shadowed) == maxShadowed:
			w.shadowed = append(w.shadowed, [2]int{span[0], math.MaxInt})
		}
	}
	lv.ord = w.members
	w.members++
}

// endMember notes the member lv was reading: its span of member
// ordinals, and the refs it held.
func (w *refWalk) endMember(lv *refLevel) {
	if lv.start < 0 {
		return
	}
	i := w.find(lv, lv.member)
	if i < 0 {
		i = len(w.names)
		w.names = append(w.names, memberRead{name: lv.member})
		if lv.index != nil {
			lv.index[lv.member] = i
		} else if i-lv.first >= indexedMembers {
			lv.index = make(map[string]int, 2*indexedMembers)
			for j := lv.first; j <= i; j++ {
				lv.index[w.names[j].name] = j
			}
		}
	}
	mr := &w.names[i]
	mr.ords = [2]int{lv.ord, w.members}
	mr.refs, mr.held = [2]int{lv.start, len(w.refs)}, lv.start < len(w.refs)
}

// find is the place in w.names of the member of the object lv named
// name, or -1.
func (w *refWalk) find(lv *refLevel, name string) int {
	if lv.index != nil {
		if i, ok := lv.index[name]; ok {
			return i
		}
		return -1
	}
	for i := lv.first; i < len(w.names); i++ {
		if w.names[i].name == name {
			return i
		}
	}
	return -1
}

// done ends a value: the innermost object, if any, expects a member's
// name next.
func (w *refWalk) done() {
	if n := len(w.stack); n > 0 && w.stack[n-1].obj {
		w.stack[n-1].wantKey = true
	}
}

// noteValue notes what the value tok of member w.key says of its
// object: a "$ref" or "$id" of a schema object (returned, else nil), or
// an "$id" in data.
func (w *refWalk) noteValue(tok json.Token) *refNode {
	n := len(w.stack)
	if n == 0 || !w.stack[n-1].obj {
		return nil
	}
	if w.stack[n-1].role != roleSchema {
		if w.key == "$id" || (w.key == "id" && !w.known) {
			// An "$id" in data: a JSON pointer reference to its spot,
			// from any artifact, makes it a resource of the document
			// (resolveFragment's "non-standard location").
			if id, ok := tok.(string); ok {
				id, _, _ = strings.Cut(id, "#")
				w.dataID = w.dataID || id != ""
			}
		}
		return nil
	}
	in := &w.nodes[w.stack[n-1].node]
	switch w.key {
	case "$ref":
		in.hasRef = true
	case "$id", "id":
		if w.key == "$id" || !w.known {
			in.hasID = true
			id, ok := tok.(string)
			in.id, in.bad = id, !ok || !w.known
		}
	}
	return in
}

// open opens a container: a schema object gets a node.
func (w *refWalk) open(t json.Delim) {
	n := len(w.stack)
	r := roleSchema
	if n > 0 {
		r = childRole(w.stack[n-1].role, w.d, w.key, t)
	} else if t == '[' {
		r = roleData
	}
	lv := refLevel{obj: t == '{', wantKey: t == '{', role: r, node: -1, start: -1, ord: -1, first: len(w.names)}
	if lv.obj && r == roleSchema {
		parent := -1
		for i := n - 1; i >= 0; i-- {
			if w.stack[i].node >= 0 {
				parent = w.stack[i].node
				break
			}
		}
		lv.node = len(w.nodes)
		w.nodes = append(w.nodes, refNode{parent: parent})
	}
	w.stack = append(w.stack, lv)
}

// chainIDs sets each node's chain of "$id"s, by the nearest node
// declaring one (a parent precedes its children in nodes); bad spreads
// to the subschemas below, and so does a chain past maxRefIDs or
// maxRefIDBytes, so that an entry costs at most those bytes more than
// its "$ref" (a document repeating a long "$id" under every "$ref"
// would otherwise cost its size per reference).
func (w *refWalk) chainIDs() {
	for i := range w.nodes {
		nd := &w.nodes[i]
		nd.idNode = -1
		if nd.parent >= 0 {
			up := &w.nodes[nd.parent]
			nd.bad = nd.bad || up.bad
			nd.idNode, nd.ids, nd.idBytes = up.idNode, up.ids, up.idBytes
		}
		if w.readsID(nd) && !nd.bad {
			nd.idNode, nd.ids, nd.idBytes = i, nd.ids+1, nd.idBytes+len(nd.id)
			nd.bad = nd.ids > maxRefIDs || nd.idBytes > maxRefIDBytes || strings.Contains(nd.id, "\x00")
		}
	}
}

// entries are the ref entries of the refs found (refsOf), "" for one
// left unresolved: overridden, below a bad node, holding a NUL, or one
// that may name a resource of the document own lists.
func (w *refWalk) entries(own *resources) []string {
	dead := make([]int, len(w.refs)+1)
	for _, sp := range w.overridden {
		dead[sp[0]]++
		dead[sp[1]]--
	}
	out := make([]string, len(w.refs))
	overriddenHere := 0
	for i, r := range w.refs {
		overriddenHere += dead[i]
		nd := w.nodes[r.node]
		if nd.bad || overriddenHere > 0 || strings.Contains(r.ref, "\x00") || own.mayName(r.node, r.ref) {
			continue // "": unresolved
		}
		out[i] = w.entry(nd, r.ref)
	}
	return out
}

// entry joins the chain of "$id"s of node nd, from the root, and ref.
func (w *refWalk) entry(nd refNode, ref string) string {
	parts := make([]string, nd.ids+1)
	parts[nd.ids] = ref
	for k, j := nd.ids-1, nd.idNode; k >= 0; k-- {
		parts[k] = w.nodes[j].id
		if up := w.nodes[j].parent; up >= 0 {
			j = w.nodes[up].idNode
		}
	}
	return strings.Join(parts, "\x00")
}

// maxOwnResources bounds the "$id"s of one document that refsOf resolves
// to tell its own resources; beyond it, every reference of the document
// is left unresolved.
const maxOwnResources = maxRefs

// ownURL is the URL of a resource of the document, or a base: exact (its
// text) or resolved against the artifact's URL (which refsOf does not
// know: kd, the text unknown).
type ownURL struct {
	url string
	kd  bool
}

// resources are the resources of one document as the validator lists
// them (compileRef: findResource looks a reference's target up among
// them before loading any artifact): the root, named by its "$id" once
// read, and every subschema whose "$id" has a URI part. ctx is the base
// of each schema node (an index into urls; -1: the artifact's URL).
type resources struct {
	closed   bool // an "$id" refsOf cannot read, or too many: nothing is linked
	urls     []ownURL
	ctx      []int
	root     int             // the root's URL in urls, or -1 (the artifact's URL)
	embedded map[string]bool // the exact URLs of the embedded resources
	// kd: some resource's URL is resolved against the artifact's URL;
	// synthetic: some exact URL is an artifact URL (schemagraph.URLScheme).
	kd, synthetic bool
}

// ownResources lists the resources of a document of draft d whose n
// schema nodes node describes (parent first): the parent's index, the
// "$id" (or draft-04 "id") as written, whether the validator reads it,
// and whether refsOf could not read it (bad).
func ownResources(d int, n int, node func(int) (parent int, id string, read, bad bool)) *resources {
	rs := &resources{ctx: make([]int, n), root: -1, embedded: map[string]bool{}}
	for i := range n {
		parent, id, read, bad := node(i)
		rs.ctx[i] = -1
		if parent >= 0 {
			rs.ctx[i] = rs.ctx[parent]
		}
		if !read {
			continue
		}
		if bad || len(rs.urls) >= maxOwnResources {
			rs.closed = true
			return rs
		}
		if id, _, _ = strings.Cut(id, "#"); id == "" {
			continue // no resource to the library (resolveID)
		}
		u, ok := rs.resolve(rs.ctx[i], id)
		if !ok {
			rs.closed = true
			return rs
		}
		rs.urls = append(rs.urls, u)
		rs.ctx[i] = len(rs.urls) - 1
		switch {
		case i == 0:
			rs.root = rs.ctx[i]
		case !u.kd:
			rs.embedded[u.url] = true
		}
		rs.kd = rs.kd || u.kd
		rs.synthetic = rs.synthetic || (!u.kd && syntheticURL(u.url))
	}
	return rs
}

// resolve resolves ref against the base ctx as the validator does
// (schemagraph.ResolveURL), the fragment cut off: exact when ref is
// taken as written or the base is exact. ok is false when the library
// refuses it.
func (rs *resources) resolve(ctx int, ref string) (ownURL, bool) {
	base := ownURL{kd: true}
	if ctx >= 0 {
		base = rs.urls[ctx]
	}
	if base.kd && !absoluteRef(ref) {
		return ownURL{kd: true}, true
	}
	u, err := schemagraph.ResolveURL(base.url, ref)
	if err != nil {
		return ownURL{}, false
	}
	u, _, _ = strings.Cut(u, "#")
	return ownURL{url: u}, true
}

// mayName reports whether the reference ref, written in schema node i,
// may name a resource of the document other than the artifact itself or
// its root by its exact "$id" (which resolveEntry finds): an embedded
// resource, or one whose URL refsOf cannot tell apart from the target.
// The validator reads the document's own subschema there, never the
// artifact another resolution would link.
func (rs *resources) mayName(i int, ref string) bool {
	if rs.closed {
		return true
	}
	t, ok := rs.resolve(rs.ctx[i], ref)
	switch {
	case !ok:
		return false // resolveEntry leaves it unresolved too
	case t.kd:
		// An artifact URL (schemagraph.URLScheme), unknown here.
		return rs.kd || rs.synthetic
	case rs.root >= 0 && !rs.urls[rs.root].kd && t.url == rs.urls[rs.root].url:
		return false
	default:
		return rs.embedded[t.url] || (rs.kd && syntheticURL(t.url))
	}
}

// absoluteRef reports whether the library's resolveURL takes ref as
// written, whatever the base.
func absoluteRef(ref string) bool {
	if strings.HasPrefix(ref, "urn:") {
		return true
	}
	u, err := url.Parse(ref)
	return err == nil && u.IsAbs()
}

// syntheticURL reports whether u may be an artifact's synthetic URL
// (schemagraph.ArtifactURL), its scheme in any case.
func syntheticURL(u string) bool {
	p := schemagraph.URLScheme + ":"
	return len(u) >= len(p) && strings.EqualFold(u[:len(p)], p)
}

// docDraft is offlineschema.SchemaDraft of doc's root "$schema": 2020
// (also when absent), 7, or 0 for any other.
func docDraft(doc []byte) int {
	var root map[string]json.RawMessage
	if json.Unmarshal(doc, &root) != nil {
		return 0
	}
	raw, ok := root["$schema"]
	var v any
	if ok && json.Unmarshal(raw, &v) != nil {
		return 0
	}
	return offlineschema.SchemaDraft(v, ok)
}

// resolveRef finds the artifact key of the document a ref entry of s
// (refsOf) names, as the validator resolves it: from the artifact's URL
// through the entry's "$id"s, then the reference (schemagraph.Resolve:
// jsonschema v5.3.1's resolveURL); the artifact's own synthetic URL names
// its key, any other URL the artifact the loader's $id index names.
func resolveRef(s Schema, entry string, l compat.Loader) (string, bool) {
	key, _, ok := resolveEntry(s, entry, l)
	return key, ok
}

// resolveEntry is resolveRef, with the fragment of the target
// (percent-decoded: "" the document, a JSON pointer, or an anchor name);
// a reference whose fragment the validator reads otherwise
// (schemagraph.SameFragment) is unresolved.
func resolveEntry(s Schema, entry string, l compat.Loader) (string, string, bool) {
	if entry == "" {
		return "", "", false
	}
	parts := strings.Split(entry, "\x00")
	base := schemagraph.ArtifactURL(s.Loc.Key)
	for _, id := range parts[:len(parts)-1] {
		if id, _, _ = strings.Cut(id, "#"); id == "" {
			continue // no "$id" to the library (resolveID)
		}
		b, err := schemagraph.ResolveURL(base, id)
		if err != nil {
			return "", "", false
		}
		base, _, _ = strings.Cut(b, "#")
	}
	ref := parts[len(parts)-1]
	u, frag, err := schemagraph.Resolve(base, ref)
	if err != nil || !schemagraph.SameFragment(ref, frag) {
		// A fragment the validator reads otherwise ("#/$defs/a%2Fb" is
		// the member "a/b" to it) names no place the page can link.
		return "", "", false
	}
	if frag == "/" {
		frag = "" // "#/" is the whole document to the library (split)
	}
	if u.Scheme == schemagraph.URLScheme {
		key, ok := schemagraph.ArtifactKey(u)
		return key, frag, ok
	}
	key, ok := l.KeyForID(u.String())
	return key, frag, ok
}

// Bounds of a rendered schema.
const (
	// MaxRenderBytes bounds the page bytes one schema renders to (as
	// escaped in the page, estimated from above); the rendering stops
	// there, with a note saying so.
	MaxRenderBytes = 1 << 20
	// maxIndentDepth is the deepest nesting indented further: below it
	// every line is indented as at this depth, so no line is longer than
	// 2*maxIndentDepth spaces before its text.
	maxIndentDepth = 16
	// anchorBytes is the length of the hash of a pointer an anchor id
	// holds, in bytes (hex in the id): 128 bits, so that a publisher
	// cannot find two pointers of one id (a birthday collision of 64
	// bits is about 2^32 hashes; docs/SPEC-DECISIONS.md CATALOG-43).
	anchorBytes = 16
)

// Tok is one piece of a pretty-printed schema: text, a link when Href is
// set, and an anchor when ID is set. schemaHTML escapes every field and keeps a link only into /ui/ or #.
// Cut marks the end of a rendering stopped at MaxRenderBytes.
type Tok struct {
	Text string
	Href string
	ID   string
	Cut  bool
}

// anchorID is the id of the node at pointer in the schema shown under
// prefix: a short hash of the pointer, so that an id is 32 hex digits
// whatever the depth or the length of the keys on the way.
func anchorID(prefix, pointer string) string {
	h := sha256.Sum256([]byte(pointer))
	return prefix + "-" + hex.EncodeToString(h[:anchorBytes])
}

// The markup around an anchor piece and a link piece of a rendered
// schema (the template "schema"), their id, href and text not counted.
const (
	anchorMarkup = len(`<span id=""></span>`)
	linkMarkup   = len(`<a href=""></a>`)
)

// renderCost bounds from above the bytes s takes in a page once cleaned
// (clean) and escaped by the template: a control character becomes
// \u00XX, an escaped one an entity of at most five bytes, a byte of a
// multi-byte character at most three (a character of two bytes shown as
// \uXXXX takes six, of three \uXXXX six, of four at most \uXXXXXX eight)
// and an invalid byte six (\ufffd).
func renderCost(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '&' || c == '+' || c == '<' || c == '>':
			n += 5
		case (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f:
			n += 6
		case c >= 0x80:
			// An invalid byte is shown as \ufffd.
			if r, size := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size == 1 {
				n += 6
			} else {
				n, i = n+3*size, i+size-1
			}
		default:
			n++
		}
	}
	return n
}

// prettyFor renders the document of s indented, with each "$ref" value
// in a schema position a link: to an anchor in the same document
// ("#/…"), or to the schema page of the document it names when the model
// holds it. Every object member is an anchor. A document that is not JSON
// comes back as one text piece. The rendering stops at MaxRenderBytes:
// its last piece is then a Cut one. It stops with the context's error
// once ctx ends, checked every renderCheck tokens of the document, so
// that a client gone while its page renders stops the printing too.
func (m *Model) prettyFor(ctx context.Context, s Schema, prefix string) ([]Tok, error) {
	p := &printer{ctx: ctx, m: m, s: s, prefix: prefix, draft: s.table()}
	ok := p.run()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.flush()
	if p.cut {
		return append(p.out, Tok{Cut: true}), nil
	}
	if !ok || len(p.out) == 0 {
		return rawText(s.Text), nil
	}
	return p.out, nil
}

// printTo is prettyFor streamed: the pieces go to drain as they are
// printed, every renderCheck tokens, and a failed drain stops the
// printing with its error. A document that is not one JSON value goes
// as its text (rawText), decided before any piece went (json.Valid), so
// that what was drained is never taken back. cut: the rendering stopped
// at MaxRenderBytes.
func (m *Model) printTo(ctx context.Context, s Schema, prefix string, drain func([]Tok) error) (cut bool, err error) {
	var toks []Tok
	if !json.Valid(s.Text) {
		toks = rawText(s.Text)
	} else {
		p := &printer{ctx: ctx, m: m, s: s, prefix: prefix, draft: s.table(), drain: drain}
		ok := p.run()
		if p.drainErr != nil {
			return false, p.drainErr
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if !ok && !p.cut {
			// json.Valid and the decoder disagree: cannot happen.
			return false, errUnprintable
		}
		p.flush()
		toks = p.out
		if p.cut {
			toks = append(toks, Tok{Cut: true})
		}
	}
	if n := len(toks); n > 0 && toks[n-1].Cut {
		toks, cut = toks[:n-1], true
	}
	return cut, drain(toks)
}

// errUnprintable: a document json.Valid accepts that the printer did not
// print to its end.
var errUnprintable = errors.New("catalog: a valid schema could not be printed")

// rawText is text as one piece, cut at MaxRenderBytes.
func rawText(text []byte) []Tok {
	n, i := 0, 0
	for ; i < len(text) && n < MaxRenderBytes; i++ {
		n += renderCost(string(text[i : i+1]))
	}
	if i < len(text) {
		return []Tok{{Text: strings.ToValidUTF8(string(text[:i]), "")}, {Cut: true}}
	}
	return []Tok{{Text: string(text)}}
}

type frame struct {
	obj   bool
	count int
	role  role
	// at hashes the frame's pointer; anchors under it clone it, so that
	// an id costs the length of its own key, never of the whole pointer.
	at hash.Hash
}

type printer struct {
	ctx     context.Context
	m       *Model
	s       Schema
	prefix  string
	draft   int
	out     []Tok
	buf     strings.Builder
	stack   []frame
	key     string // the member key whose value comes next
	haveKey bool
	size    int  // renderCost of what is written so far
	cut     bool // stopped at MaxRenderBytes
	// drain, when set, takes the pieces printed so far every renderCheck
	// tokens (printTo); drained: some went; drainErr: the failure that
	// stopped the printing.
	drain    func([]Tok) error
	drained  bool
	drainErr error
	// members counts the object members printed; shadowedAt is the
	// first span of s.shadowed not behind them.
	members, shadowedAt int
}

// write appends text, unless the rendering is over MaxRenderBytes.
func (p *printer) write(text string) bool {
	if p.size += renderCost(text); p.size > MaxRenderBytes {
		p.cut = true
		return false
	}
	p.buf.WriteString(text)
	return true
}

// emit appends a link or anchor piece, within MaxRenderBytes: its text,
// href and id, and the markup around them.
func (p *printer) emit(t Tok) bool {
	cost := renderCost(t.Text)
	if t.ID != "" {
		cost += anchorMarkup + renderCost(t.ID)
	}
	if t.Href != "" {
		cost += linkMarkup + renderCost(t.Href)
	}
	if p.size += cost; p.size > MaxRenderBytes {
		p.cut = true
		return false
	}
	p.flush()
	p.out = append(p.out, t)
	return true
}

func (p *printer) flush() {
	if p.buf.Len() > 0 {
		p.out = append(p.out, Tok{Text: p.buf.String()})
		p.buf.Reset()
	}
}

func (p *printer) indent() bool {
	return p.write("\n" + strings.Repeat("  ", min(len(p.stack), maxIndentDepth)))
}

// child hashes the pointer of the member or element tok under the top
// frame; nil at the root or when the hash cannot be cloned.
func (p *printer) child(tok string) hash.Hash {
	if len(p.stack) == 0 {
		return sha256.New()
	}
	parent, ok := p.stack[len(p.stack)-1].at.(hash.Cloner)
	if !ok {
		return nil
	}
	c, err := parent.Clone()
	if err != nil {
		return nil
	}
	c.Write([]byte("/" + escapePointer(tok)))
	return c
}

// value writes what comes before a value and returns the hash of its
// pointer when it opens a container.
func (p *printer) value(open bool) (hash.Hash, bool) {
	n := len(p.stack)
	if n == 0 {
		if open {
			return sha256.New(), true
		}
		return nil, true
	}
	top := &p.stack[n-1]
	if top.obj {
		p.haveKey = false
		if open {
			return p.child(p.key), true
		}
		return nil, true
	}
	if top.count > 0 && !p.write(",") {
		return nil, false
	}
	if !p.indent() {
		return nil, false
	}
	top.count++
	if open {
		return p.child(strconv.Itoa(top.count - 1)), true
	}
	return nil, true
}

// member writes an object member's key, its anchor first.
func (p *printer) member(k string) bool {
	top := &p.stack[len(p.stack)-1]
	if top.count > 0 && !p.write(",") {
		return false
	}
	top.count++
	if !p.indent() {
		return false
	}
	// Every member the validator reads is an anchor: $refs and the
	// compatibility findings' pointers link to it. A member a later one
	// of the same name overrides (s.shadowed) is not: its id would be
	// the one of the member the validator reads, and a browser goes to
	// the first element of an id.
	read := !p.shadowed()
	if h := p.child(k); h != nil && read {
		if !p.emit(Tok{ID: p.prefix + "-" + hex.EncodeToString(h.Sum(nil)[:anchorBytes])}) {
			return false
		}
	}
	p.key, p.haveKey = k, true
	return p.write(quote(k) + ": ")
}

// shadowed reports whether the member being printed is one the
// validator never reads (refsAndShadowed), and counts it.
func (p *printer) shadowed() bool {
	i := p.members
	p.members++
	sh := p.s.shadowed
	for p.shadowedAt < len(sh) && sh[p.shadowedAt][1] <= i {
		p.shadowedAt++
	}
	return p.shadowedAt < len(sh) && sh[p.shadowedAt][0] <= i
}

func (p *printer) run() bool {
	dec := json.NewDecoder(bytes.NewReader(p.s.Text))
	dec.UseNumber()
	links := 0
	for n := 0; !p.cut; n++ {
		if n%renderCheck == 0 {
			if p.ctx.Err() != nil {
				return false
			}
			if p.drain != nil && n > 0 {
				p.flush()
				if p.drainErr = p.drain(p.out); p.drainErr != nil {
					return false
				}
				p.out, p.drained = nil, true
			}
		}
		tok, err := dec.Token()
		if err == io.EOF {
			return len(p.stack) == 0
		}
		if err != nil {
			return false
		}
		n := len(p.stack)
		if n == 0 && (p.drained || len(p.out) > 0 || p.buf.Len() > 0) {
			return false // a second top-level value: not one JSON document
		}
		if n > 0 && p.stack[n-1].obj && !p.haveKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				p.close('}')
				continue
			}
			k, _ := tok.(string)
			p.member(k)
			continue
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			p.close(rune(d))
			continue
		}
		isRef := n > 0 && p.stack[n-1].obj && p.stack[n-1].role == roleSchema && p.key == "$ref"
		key := p.key
		d, open := tok.(json.Delim)
		at, ok := p.value(open)
		if !ok {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			r := roleSchema
			if n > 0 {
				r = childRole(p.stack[n-1].role, p.draft, key, d)
			} else if d == '[' {
				r = roleData
			}
			p.write(string(rune(t)))
			p.stack = append(p.stack, frame{obj: t == '{', role: r, at: at})
		case string:
			href := ""
			if isRef && links < maxRefs {
				if links < len(p.s.refs) {
					href = p.refHref(p.s.refs[links])
				}
				links++
			}
			if href != "" {
				p.emit(Tok{Text: quote(t), Href: href})
			} else {
				p.write(quote(t))
			}
		case json.Number:
			p.write(t.String())
		case bool:
			p.write(strconv.FormatBool(t))
		case nil:
			p.write("null")
		}
	}
	return false
}

func (p *printer) close(d rune) {
	top := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if top.count > 0 && !p.indent() {
		return
	}
	p.write(string(d))
}

// refHref is the link of a "$ref" value, from its ref entry (refsOf),
// resolved as the validator resolves it (resolveEntry): an in-page
// anchor when it names this document, the schema page of the document it
// names when the model holds it, "" otherwise. A JSON pointer fragment
// links to its member's anchor.
func (p *printer) refHref(entry string) string {
	key, frag, ok := resolveEntry(p.s, entry, &keptLoader{m: p.m, bundle: p.s.Loc.BundleID})
	if !ok {
		return ""
	}
	if key == p.s.Loc.Key {
		if frag == "" || strings.HasPrefix(frag, "/") {
			return "#" + anchorID(p.prefix, frag)
		}
		return ""
	}
	if _, held := p.m.schemas[SchemaLoc{BundleID: p.s.Loc.BundleID, Key: key}]; !held {
		return ""
	}
	href := "/ui/schema?b=" + url.QueryEscape(p.s.Loc.BundleID) + "&k=" + url.QueryEscape(key)
	if strings.HasPrefix(frag, "/") {
		href += "#" + anchorID("s", frag)
	}
	return href
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// quote is s as a JSON string, without HTML escaping (the template
// escapes).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
