package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net/url"
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
	roleMap         // an object whose member values are schemas
	roleDeps        // an object whose member values are schemas or names
)

// childRole is the role of a container opened by open as the value of
// member key (objects) or as an element (arrays) of a parent of role
// parent, in a document of draft d. The schema positions are those of
// offlineschema.KeywordShape, the quick pass's keyword table.
func childRole(parent role, d int, key string, open json.Delim) role {
	switch parent {
	case roleSchema:
		switch offlineschema.KeywordShape(d, key) {
		case offlineschema.OneSubschema:
			if open == '{' {
				return roleSchema
			}
		case offlineschema.SubschemaArray:
			if open == '[' {
				return roleList
			}
		case offlineschema.SubschemaMap:
			if open == '{' {
				return roleMap
			}
		case offlineschema.OneOrArray:
			if open == '{' {
				return roleSchema
			}
			return roleList
		case offlineschema.SchemaOrStringsMap:
			if open == '{' {
				return roleDeps
			}
		}
	case roleList, roleMap, roleDeps:
		if open == '{' {
			return roleSchema
		}
	}
	return roleData
}

// draftOf is the draft whose keyword table applies to doc: 7 when its
// root "$schema" names draft-07, else 2020 (the default, and the table
// used for the drafts the quick pass leaves to the compiler).
func draftOf(doc []byte) int {
	var root map[string]json.RawMessage
	if json.Unmarshal(doc, &root) != nil {
		return 2020
	}
	raw, ok := root["$schema"]
	var v any
	if ok && json.Unmarshal(raw, &v) != nil {
		return 2020
	}
	if offlineschema.SchemaDraft(v, ok) == 7 {
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
// not read (neither 2020-12 nor draft-07), or a NUL in a value. The
// printer links the i-th "$ref" it meets with the i-th entry: both walk
// the same positions in the same order.
func refsOf(doc []byte) []string {
	type level struct {
		obj, wantKey bool
		role         role
		node         int // the schema object's index in nodes, or -1
	}
	type schemaNode struct {
		parent     int
		id         string
		hasID, bad bool
		hasRef     bool
		// idNode is the nearest node, this one or above, whose "$id"
		// the validator reads (-1: none); ids and idBytes count the
		// chain of them from the root.
		idNode, ids, idBytes int
	}
	type found struct {
		node int
		ref  string
	}
	d, known := draftOf(doc), docDraft(doc) != 0
	var refs []found
	var nodes []schemaNode
	var stack []level
	key := ""
	done := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for len(refs) < maxRefs {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		n := len(stack)
		if n > 0 && stack[n-1].wantKey {
			if dl, ok := tok.(json.Delim); ok && dl == '}' {
				stack = stack[:n-1]
				done()
				continue
			}
			key, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		var in *schemaNode
		if n > 0 && stack[n-1].obj && stack[n-1].role == roleSchema {
			in = &nodes[stack[n-1].node]
			switch key {
			case "$ref":
				in.hasRef = true
			case "$id", "id":
				if key == "$id" || !known {
					in.hasID = true
					id, ok := tok.(string)
					in.id, in.bad = id, !ok || !known
				}
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				r := roleSchema
				if n > 0 {
					r = childRole(stack[n-1].role, d, key, t)
				} else if t == '[' {
					r = roleData
				}
				lv := level{obj: t == '{', wantKey: t == '{', role: r, node: -1}
				if lv.obj && r == roleSchema {
					parent := -1
					for i := n - 1; i >= 0; i-- {
						if stack[i].node >= 0 {
							parent = stack[i].node
							break
						}
					}
					lv.node = len(nodes)
					nodes = append(nodes, schemaNode{parent: parent})
				}
				stack = append(stack, lv)
				continue
			}
			stack = stack[:max(n-1, 0)]
		case string:
			if in != nil && key == "$ref" {
				refs = append(refs, found{stack[n-1].node, t})
			}
		}
		done()
	}
	// Each node's chain of "$id"s, by the nearest node declaring one (a
	// parent precedes its children in nodes); bad spreads to the
	// subschemas below, and so does a chain past maxRefIDs or
	// maxRefIDBytes, so that an entry costs at most those bytes more than
	// its "$ref" (a document repeating a long "$id" under every "$ref"
	// would otherwise cost its size per reference).
	for i := range nodes {
		nd := &nodes[i]
		nd.idNode = -1
		if nd.parent >= 0 {
			up := &nodes[nd.parent]
			nd.bad = nd.bad || up.bad
			nd.idNode, nd.ids, nd.idBytes = up.idNode, up.ids, up.idBytes
		}
		// Up to draft-07 an "$id" beside "$ref" is not read.
		if nd.hasID && !nd.bad && !(d == 7 && nd.hasRef) {
			nd.idNode, nd.ids, nd.idBytes = i, nd.ids+1, nd.idBytes+len(nd.id)
			nd.bad = nd.ids > maxRefIDs || nd.idBytes > maxRefIDBytes || strings.Contains(nd.id, "\x00")
		}
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		nd := nodes[r.node]
		if nd.bad || strings.Contains(r.ref, "\x00") {
			continue // "": unresolved
		}
		parts := make([]string, nd.ids+1)
		parts[nd.ids] = r.ref
		for k, j := nd.ids-1, nd.idNode; k >= 0; k-- {
			parts[k] = nodes[j].id
			if up := nodes[j].parent; up >= 0 {
				j = nodes[up].idNode
			}
		}
		out[i] = strings.Join(parts, "\x00")
	}
	return out
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
// (percent-decoded: "" the document, a JSON pointer, or an anchor name).
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
	u, frag, err := schemagraph.Resolve(base, parts[len(parts)-1])
	if err != nil {
		return "", "", false
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
	// holds, in bytes (hex in the id).
	anchorBytes = 8
)

// Tok is one piece of a pretty-printed schema: text, a link when Href is
// set, and an anchor when ID is set. The template escapes every field.
// Cut marks the end of a rendering stopped at MaxRenderBytes.
type Tok struct {
	Text string
	Href string
	ID   string
	Cut  bool
}

// anchorID is the id of the node at pointer in the schema shown under
// prefix: a short hash of the pointer, so that an id is 16 hex digits
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

// pretty renders doc indented, with each "$ref" value in a schema
// position a link: to an anchor in the same document ("#/…"), or to the
// schema page of the document it names when the model holds it. Every
// object member is an anchor. A document that is not JSON comes back as
// one text piece. The rendering stops at MaxRenderBytes: its last piece
// is then a Cut one.
func (m *Model) pretty(s Schema, prefix string) []Tok {
	p := &printer{m: m, s: s, prefix: prefix, draft: draftOf(s.Text)}
	ok := p.run()
	p.flush()
	if p.cut {
		return append(p.out, Tok{Cut: true})
	}
	if !ok || len(p.out) == 0 {
		return rawText(s.Text)
	}
	return p.out
}

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
	// Every member is an anchor: $refs and the compatibility findings'
	// pointers link to it.
	if h := p.child(k); h != nil {
		if !p.emit(Tok{ID: p.prefix + "-" + hex.EncodeToString(h.Sum(nil)[:anchorBytes])}) {
			return false
		}
	}
	p.key, p.haveKey = k, true
	return p.write(quote(k) + ": ")
}

func (p *printer) run() bool {
	dec := json.NewDecoder(bytes.NewReader(p.s.Text))
	dec.UseNumber()
	links := 0
	for !p.cut {
		tok, err := dec.Token()
		if err == io.EOF {
			return len(p.stack) == 0
		}
		if err != nil {
			return false
		}
		n := len(p.stack)
		if n == 0 && (len(p.out) > 0 || p.buf.Len() > 0) {
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
