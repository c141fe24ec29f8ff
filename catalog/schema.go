package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// maxRefs bounds the $refs of one schema followed or linked.
const maxRefs = 1024

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

// refsOf lists the "$ref" strings of a schema document in schema
// positions, at most maxRefs.
func refsOf(doc []byte) []string {
	type level struct {
		obj, wantKey bool
		role         role
	}
	d := draftOf(doc)
	var out []string
	var stack []level
	key := ""
	done := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for len(out) < maxRefs {
		tok, err := dec.Token()
		if err != nil {
			return out
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
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				r := roleSchema
				if n > 0 {
					r = childRole(stack[n-1].role, d, key, t)
				} else if t == '[' {
					r = roleData
				}
				stack = append(stack, level{obj: t == '{', wantKey: t == '{', role: r})
				continue
			}
			stack = stack[:max(n-1, 0)]
		case string:
			if n > 0 && stack[n-1].obj && stack[n-1].role == roleSchema && key == "$ref" {
				out = append(out, t)
			}
		}
		done()
	}
	return out
}

// resolveRef finds the artifact key of the document a $ref names, outside
// the schema s itself: through the loader's $id index, then as a path
// relative to s's key.
func resolveRef(s Schema, ref string, l compat.Loader) (string, bool) {
	base, _, _ := strings.Cut(ref, "#")
	if base == "" {
		return "", false
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", false
	}
	if s.ID != "" {
		if id, err := url.Parse(s.ID); err == nil {
			if key, ok := l.KeyForID(id.ResolveReference(u).String()); ok {
				return key, true
			}
		}
	}
	if u.IsAbs() {
		return l.KeyForID(base)
	}
	if u.Path == "" || strings.HasPrefix(u.Path, "/") || u.RawQuery != "" {
		return "", false
	}
	key := path.Clean(path.Join(path.Dir(s.Loc.Key), u.Path))
	if strings.HasPrefix(key, "../") || key == ".." {
		return "", false
	}
	return key, true
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
				href = p.refHref(t)
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

// refHref is the in-page link of a $ref value, or "" when it names
// nothing the model holds.
func (p *printer) refHref(ref string) string {
	if frag, ok := strings.CutPrefix(ref, "#"); ok {
		if ptr, err := url.PathUnescape(frag); err == nil && (ptr == "" || strings.HasPrefix(ptr, "/")) {
			return "#" + anchorID(p.prefix, ptr)
		}
		return ""
	}
	key, ok := resolveRef(p.s, ref, &keptLoader{m: p.m, bundle: p.s.Loc.BundleID})
	if !ok {
		return ""
	}
	if _, held := p.m.schemas[SchemaLoc{BundleID: p.s.Loc.BundleID, Key: key}]; !held {
		return ""
	}
	href := "/ui/schema?b=" + url.QueryEscape(p.s.Loc.BundleID) + "&k=" + url.QueryEscape(key)
	if _, frag, ok := strings.Cut(ref, "#"); ok {
		if ptr, err := url.PathUnescape(frag); err == nil && strings.HasPrefix(ptr, "/") {
			href += "#" + anchorID("s", ptr)
		}
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
