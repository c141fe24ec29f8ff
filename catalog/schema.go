package catalog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"

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

// refsOf lists the "$ref" strings of a JSON document, at most maxRefs.
func refsOf(doc []byte) []string {
	type level struct{ obj, wantKey bool }
	var out []string
	var stack []level
	pending := ""
	done := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
		pending = ""
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for len(out) < maxRefs {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				done()
				continue
			}
			pending, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, level{obj: t == '{', wantKey: t == '{'})
				pending = ""
				continue
			}
			stack = stack[:max(len(stack)-1, 0)]
		case string:
			if pending == "$ref" {
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

// Tok is one piece of a pretty-printed schema: text, a link when Href is
// set, and an anchor when ID is set. The template escapes every field.
type Tok struct {
	Text string
	Href string
	ID   string
}

// anchorID is the id of the node at pointer in the schema shown under
// prefix.
func anchorID(prefix, pointer string) string {
	return prefix + "-" + hex.EncodeToString([]byte(pointer))
}

// pretty renders doc indented, with each "$ref" value a link: to an
// anchor in the same document ("#/…"), or to the schema page of the
// document it names when the model holds it. Every object member is an
// anchor. A document that is not JSON
// comes back as one text piece.
func (m *Model) pretty(s Schema, prefix string) []Tok {
	p := &printer{m: m, s: s, prefix: prefix}
	if !p.run() {
		return []Tok{{Text: string(s.Text)}}
	}
	p.flush()
	if len(p.out) == 0 {
		return []Tok{{Text: string(s.Text)}}
	}
	return p.out
}

type frame struct {
	obj   bool
	count int
	path  string
}

type printer struct {
	m       *Model
	s       Schema
	prefix  string
	out     []Tok
	buf     strings.Builder
	stack   []frame
	key     string // the member key whose value comes next
	haveKey bool
}

func (p *printer) flush() {
	if p.buf.Len() > 0 {
		p.out = append(p.out, Tok{Text: p.buf.String()})
		p.buf.Reset()
	}
}

func (p *printer) indent() {
	p.buf.WriteByte('\n')
	p.buf.WriteString(strings.Repeat("  ", len(p.stack)))
}

// valuePath writes what comes before a value and returns its pointer.
func (p *printer) valuePath() string {
	n := len(p.stack)
	if n == 0 {
		return ""
	}
	top := &p.stack[n-1]
	if top.obj {
		p.haveKey = false
		return top.path + "/" + escapePointer(p.key)
	}
	if top.count > 0 {
		p.buf.WriteByte(',')
	}
	p.indent()
	ptr := top.path + "/" + strconv.Itoa(top.count)
	top.count++
	return ptr
}

func (p *printer) run() bool {
	dec := json.NewDecoder(bytes.NewReader(p.s.Text))
	dec.UseNumber()
	links := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return len(p.stack) == 0
		}
		if err != nil || len(p.out) > 1<<20 {
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
			top := &p.stack[n-1]
			if top.count > 0 {
				p.buf.WriteByte(',')
			}
			top.count++
			p.indent()
			// Every member is an anchor: $refs and the compatibility
			// findings' pointers link to it.
			p.flush()
			p.out = append(p.out, Tok{ID: anchorID(p.prefix, top.path+"/"+escapePointer(k))})
			p.buf.WriteString(quote(k) + ": ")
			p.key, p.haveKey = k, true
			continue
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			p.close(rune(d))
			continue
		}
		isRef := n > 0 && p.stack[n-1].obj && p.key == "$ref"
		ptr := p.valuePath()
		switch t := tok.(type) {
		case json.Delim:
			p.buf.WriteRune(rune(t))
			p.stack = append(p.stack, frame{obj: t == '{', path: ptr})
		case string:
			href := ""
			if isRef && links < maxRefs {
				href = p.refHref(t)
				links++
			}
			if href != "" {
				p.flush()
				p.out = append(p.out, Tok{Text: quote(t), Href: href})
			} else {
				p.buf.WriteString(quote(t))
			}
		case json.Number:
			p.buf.WriteString(t.String())
		case bool:
			p.buf.WriteString(strconv.FormatBool(t))
		case nil:
			p.buf.WriteString("null")
		}
	}
}

func (p *printer) close(d rune) {
	top := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if top.count > 0 {
		p.indent()
	}
	p.buf.WriteRune(d)
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
