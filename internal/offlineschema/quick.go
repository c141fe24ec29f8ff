package offlineschema

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// QuickCheck checks that the schemas of one bundle compile offline with one
// linear pass each, instead of compiling each (Compile's time grows with
// the square of the number of subschemas of a document; a builder and an
// importer must stay within a small multiple of parsing their files,
// docs/PERFORMANCE.md, P8). It is not a weaker Compile: it vouches for a
// schema only when it is certain Compile accepts it, and whenever the pass
// finds a problem, or meets a construct it does not cover, Check compiles
// that schema with Compile and returns Compile's verdict. So it refuses
// what Compile refuses, never refuses what Compile accepts, and every
// error it returns is Compile's. What the pass vouches for is listed in
// docs/SPEC-DECISIONS.md, SCHEMA-2: JSON, the draft (2020-12 or draft-07),
// every $ref resolving to an artifact of the bundle and, with a fragment,
// to a schema inside it, no $ref naming a schema that applies another $ref
// to the same instance (so no loop), patterns that compile, implemented
// formats, the types of the keywords the meta-schemas constrain, and the
// compile limits (limits.go) over the documents a compile would load.
//
// Use: Add every artifact (each is parsed once and dropped), then Check
// each key. A QuickCheck is not safe for concurrent use, except that
// Prepare (Add's parse and walk) touches none, and that after Resolve
// Check may run on several goroutines.
type QuickCheck struct {
	docs     map[string]*scanned
	ids      map[string]string      // absolute $id -> key
	dupIDs   map[string]struct{}    // $ids declared twice: resolved by no one
	patterns map[string]bool        // pattern -> compiles
	insts    map[string]PatternCost // patternCost cache
	resolved bool
}

// scanned is what the quick pass keeps of one document: its references,
// its anchors (with whether each is hot, see hot), whether its root is
// hot, and why it must be compiled ("" when it need not be).
type scanned struct {
	cost    compileCost // what the document adds to a compile
	draft   int
	rootHot bool
	anchors map[string]bool
	refs    []quickRef
	full    string
}

// quickRef is one reference to another document (or to this one by a
// different URI), kept until every $id is known.
type quickRef struct {
	uri  string // absolute, without fragment
	frag string // "" (the document), a JSON pointer, or an anchor name
}

// NewQuickCheck returns an empty QuickCheck.
func NewQuickCheck() *QuickCheck {
	return &QuickCheck{docs: map[string]*scanned{}, ids: map[string]string{}, dupIDs: map[string]struct{}{}, patterns: map[string]bool{}, insts: map[string]PatternCost{}}
}

// Add parses the schema artifact at key (its bytes as verified by the
// caller) and returns its top-level "$id" exactly as SchemaID does, with
// SchemaID's errors for a document that is not a JSON object or is over
// MaxCompileBytes (that one unparsed, CheckCompileBytes); such a document
// is still added, for Check to compile (a boolean schema document
// compiles). A key added twice is refused (invalid_schema).
// Add(key, data) is Commit(Prepare(key, data)), with caches shared across
// the documents of q.
func (q *QuickCheck) Add(key string, data []byte) (string, error) {
	return q.Commit(prepare(key, data, q.patterns, q.insts))
}

// Prepared is one schema artifact parsed and walked by Prepare, not yet
// added: Commit adds it. It holds what the pass keeps of the document
// (references, anchors, costs), never the parsed document itself.
type Prepared struct {
	key    string
	s      *scanned
	id     string
	err    error
	badKey bool
}

// Prepare does the costly part of Add — the parse and the walk of the
// document — without touching any QuickCheck, so that several documents
// can be prepared at once on different goroutines (bundle builds do,
// docs/PERFORMANCE.md P8). Commit then adds the results, in the order
// that Add would have been called: the outcome is the same as Add's.
func Prepare(key string, data []byte) *Prepared {
	return prepare(key, data, map[string]bool{}, map[string]PatternCost{})
}

// prepare is Prepare with the pattern caches given (q's for Add).
func prepare(key string, data []byte, patterns map[string]bool, insts map[string]PatternCost) *Prepared {
	p := &Prepared{key: key, s: &scanned{}}
	if !validKey(key) {
		p.badKey = true
		return p
	}
	if p.err = CheckCompileBytes(data); p.err != nil {
		// Never parsed: Check compiles it, and Compile refuses it from
		// its size (docs/SPEC-DECISIONS.md SCHEMA-12).
		p.s.full = "it is over a compile limit: " + overBytes
		return p
	}
	v, err := parseSchema(data)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		p.s.full = "it is not a json object"
		p.err = amp.Named(0, ErrInvalidSchema, "schema document is not a json object").WithCause(err)
		return p
	}
	cost, over := measureSchema(data, func() any { return m }, insts)
	p.s.cost = cost
	if p.id, p.err = idOf(m); p.err != nil {
		p.s.full = "its $id is not a string"
		return p
	}
	if over != "" {
		p.s.full = "it is over a compile limit: " + over
		return p
	}
	p.s.scan(patterns, key, m)
	return p
}

// Commit adds a prepared document to q and returns what Add returns for
// it. A Prepared is committed once; a key committed twice is refused.
func (q *QuickCheck) Commit(p *Prepared) (string, error) {
	if _, dup := q.docs[p.key]; dup || p.badKey {
		return "", amp.Named(0, ErrInvalidSchema, "artifact key is invalid or added twice")
	}
	s := p.s
	q.docs[p.key] = s
	q.resolved = false
	if p.err != nil {
		return "", p.err
	}
	id := p.id
	if id != "" {
		// Which of two documents a loader serves for one $id is the
		// loader's choice: the pass resolves such an $id for no one, so
		// that both documents and every reference to it are compiled.
		if prev, dup := q.ids[id]; dup {
			q.docs[prev].full = "another document declares the same $id"
			delete(q.ids, id)
			q.dupIDs[id] = struct{}{}
		}
		if _, dup := q.dupIDs[id]; dup {
			// As Add always did: such a document is not walked.
			*s = scanned{cost: s.cost, full: "another document declares the same $id"}
			return id, nil
		}
		q.ids[id] = p.key
	}
	return id, nil
}

// Resolve does what the first Check does: resolve every cross-document
// reference (it may read a document through l again). After Resolve, and
// until the next Add or Commit, Check may be called from several
// goroutines at once.
func (q *QuickCheck) Resolve(l Loader) {
	if !q.resolved {
		q.resolve(l)
	}
}

// Check returns nil when the quick pass vouches for the schema at key,
// and otherwise the result of Compile(l, key, opts) (also for a key that
// was not added). l serves the same bytes that were added; it is used only
// for a document that another one references with a JSON pointer, and for
// Compile.
func (q *QuickCheck) Check(l Loader, key string, opts Options) error {
	if !q.resolved {
		q.resolve(l)
	}
	if s, ok := q.docs[key]; ok && s.full == "" {
		return nil
	}
	_, err := Compile(l, key, opts)
	return err
}

// resolve maps every cross-document reference to its artifact, checks
// the JSON pointers by reading each referenced document once more, and
// marks for compilation every document that references one the quick
// pass could not vouch for (to a fixed point).
func (q *QuickCheck) resolve(l Loader) {
	q.resolved = true
	type ptrRef struct {
		from string
		ptr  string
	}
	pointers := map[string][]ptrRef{} // target key -> pointers into it
	for _, from := range slices.Sorted(maps.Keys(q.docs)) {
		s := q.docs[from]
		if s.full != "" {
			continue
		}
		for _, r := range s.refs {
			to, ok := q.keyOf(r.uri)
			if !ok {
				s.full = "a reference names no artifact of the bundle"
				break
			}
			t := q.docs[to]
			switch {
			case r.frag == "":
				if t.rootHot {
					s.full = possibleLoop
				}
			case r.frag[0] == '/':
				pointers[to] = append(pointers[to], ptrRef{from, r.frag})
			case t.draft != 2020:
				s.full = "an anchor reference into a document that is not draft 2020-12"
			default:
				if isHot, ok := t.anchors[r.frag]; !ok {
					s.full = "a reference names an anchor that does not exist"
				} else if isHot {
					s.full = possibleLoop
				}
			}
			if s.full != "" {
				break
			}
		}
	}
	for _, to := range slices.Sorted(maps.Keys(pointers)) {
		refs := pointers[to]
		var root any
		data, err := l.Load(to)
		if err == nil {
			root, err = parseSchema(data)
		}
		problems := map[string]string{}
		for _, r := range refs {
			why, seen := problems[r.ptr]
			switch {
			case err != nil:
				why = "a json pointer reference names a document that cannot be read"
			case !seen:
				why = pointerProblem(root, r.ptr, q.docs[to].draft)
				problems[r.ptr] = why
			}
			if why != "" {
				q.docs[r.from].full = why
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, from := range slices.Sorted(maps.Keys(q.docs)) {
			s := q.docs[from]
			if s.full != "" {
				continue
			}
			for _, r := range s.refs {
				if to, _ := q.keyOf(r.uri); to != from && q.docs[to].full != "" {
					s.full = "it references a document that must be compiled"
					changed = true
					break
				}
			}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(q.docs)) {
		if s := q.docs[from]; s.full == "" && len(s.refs) > 0 {
			s.full = q.closureOver(from)
		}
	}
}

// maxQuickClosure bounds the documents the pass adds up for one schema's
// compile limits; a schema whose references reach more is compiled.
const maxQuickClosure = 256

// closureOver adds up the cost of every document a compile of the vouched
// schema at key loads, each once per URI it is loaded by (the library
// loads a document once per URI, and Compile counts every load), and
// says why that is over a compile limit ("" when it is not). Every
// document reached is vouched for, so all its references are known.
func (q *QuickCheck) closureOver(key string) string {
	seen := map[string]struct{}{artifactURL(key): {}}
	total := q.docs[key].cost
	for stack := []string{key}; len(stack) > 0; {
		s := q.docs[stack[len(stack)-1]]
		stack = stack[:len(stack)-1]
		for _, r := range s.refs {
			if _, dup := seen[r.uri]; dup {
				continue
			}
			seen[r.uri] = struct{}{}
			to, ok := q.keyOf(r.uri)
			if !ok || len(seen) > maxQuickClosure {
				return "its references reach too many documents for the quick pass"
			}
			total = total.plus(q.docs[to].cost)
			if why := total.over(); why != "" {
				return "with the documents it references, it is over a compile limit: " + why
			}
			stack = append(stack, to)
		}
	}
	return ""
}

// keyOf maps an absolute URI without fragment to the key of an added
// document: a synthetic artifact URL, or an absolute $id.
func (q *QuickCheck) keyOf(uri string) (string, bool) {
	if u, err := url.Parse(uri); err == nil && u.Scheme == urlScheme {
		k, ok := keyOfURL(u)
		if _, added := q.docs[k]; !ok || !added {
			return "", false
		}
		return k, true
	}
	k, ok := q.ids[uri]
	return k, ok
}

// quickDraft returns the draft (2020 or 7) a "$schema" value names, or 0
// for any other value: exactly the spellings the library reads as those
// drafts' built-in meta-schemas (libraryDraft).
func quickDraft(v any, present bool) int {
	if !present {
		return 2020 // the default, see Compile
	}
	s, ok := v.(string)
	if !ok {
		return 0
	}
	switch d := libraryDraft(s); d {
	case 2020, 7:
		return d
	}
	return 0
}

// schemaKw reports whether the value of kw is one schema in draft d (the
// draft-07 "items" may also be an array: the callers handle it).
func schemaKw(d int, kw string) bool {
	switch kw {
	case "additionalProperties", "propertyNames", "contains", "not", "if", "then", "else":
		return true
	case "items", "unevaluatedItems", "unevaluatedProperties", "contentSchema":
		return d == 2020
	case "additionalItems":
		return d == 7
	}
	return false
}

// arrayKw reports whether the value of kw is a non-empty array of schemas
// in draft d.
func arrayKw(d int, kw string) bool {
	switch kw {
	case "allOf", "anyOf", "oneOf":
		return true
	case "prefixItems":
		return d == 2020
	}
	return false
}

// mapKw reports whether the value of kw is an object of schemas in draft
// d. Both drafts' meta-schemas describe "definitions" (and "dependencies",
// handled apart); the walk visits them too.
func mapKw(d int, kw string) bool {
	switch kw {
	case "properties", "patternProperties", "definitions":
		return true
	case "$defs", "dependentSchemas":
		return d == 2020
	}
	return false
}

// leftToCompile reports whether kw is a keyword the quick pass does not
// cover (dynamic scope, vocabularies): a document using it is compiled.
func leftToCompile(kw string) bool {
	switch kw {
	case "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$vocabulary":
		return true
	}
	return false
}

// anchorName is the grammar of a 2020-12 "$anchor".
var anchorName = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)

// scan walks one parsed document: draft, base URI, every subschema. It
// sets s.full at the first thing it does not vouch for, and stops there.
func (s *scanned) scan(patterns map[string]bool, key string, root map[string]any) {
	sv, has := root["$schema"]
	s.draft = quickDraft(sv, has)
	if s.draft == 0 {
		s.full = "its $schema is not draft 2020-12 or draft-07"
		return
	}
	base, _ := url.Parse(artifactURL(key))
	_, ref := root["$ref"]
	if _, id := root["$id"]; ref && id && s.draft != 2020 {
		// Up to draft-07 a "$ref" hides its siblings, "$id" among them
		// (the library reads no id beside a $ref): the base is then the
		// artifact's own url, not the $id, which the quick walk does not
		// model.
		s.full = "its root has $id beside $ref in a draft that ignores the siblings of $ref"
		return
	}
	if v, ok := root["$id"]; ok {
		// Only the plain form: http(s), a host, no fragment, and stable
		// under resolution (the library resolves references against it).
		id, _ := v.(string)
		u, err := url.Parse(id)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ToLower(u.Host) != u.Host ||
			strings.Contains(id, "#") || !quickURIChars(id) || u.ResolveReference(&url.URL{}).String() != id {
			s.full = "its $id is not a plain absolute http(s) uri"
			return
		}
		base = u
	}
	s.rootHot = hot(root)
	w := &walker{patterns: patterns, s: s, base: base, self: base.String(), local: map[string]struct{}{}, refs: map[quickRef]struct{}{}}
	if w.schema(root, true); s.full != "" {
		return
	}
	s.refs = slices.SortedFunc(maps.Keys(w.refs), func(a, b quickRef) int {
		return strings.Compare(a.uri+"#"+a.frag, b.uri+"#"+b.frag)
	})
	for p := range w.local {
		if why := pointerProblem(root, p, s.draft); why != "" {
			s.full = why
			return
		}
	}
}

// pointerProblem is why the JSON pointer p into the document root of the
// given draft cannot be vouched for ("" when it can): it names no schema
// the walk visited, or a hot one.
func pointerProblem(root any, p string, draft int) string {
	node, ok := schemaAt(root, p, draft)
	switch {
	case !ok:
		return "a json pointer reference does not name a schema"
	case hot(node):
		return possibleLoop
	}
	return ""
}

// possibleLoop is why a document whose $ref names a hot schema is compiled.
const possibleLoop = "a $ref names a schema that applies another $ref to the same instance (a possible loop)"

// hot reports whether applying the schema v applies a "$ref" to the same
// instance: v has one, or one of its subschemas that apply to the same
// instance (not, allOf, anyOf, oneOf, if, then, else, dependencies,
// dependentSchemas, contentSchema: the keywords along which the library
// looks for loops) is hot. A reference loop is a cycle of references each
// naming a hot schema, so a document none of whose references names a hot
// schema has no loop; one that has such a reference is compiled, and the
// library decides.
func hot(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if _, ok := m["$ref"]; ok {
		return true
	}
	for _, kw := range [...]string{"not", "if", "then", "else", "contentSchema"} {
		if hot(m[kw]) {
			return true
		}
	}
	for _, kw := range [...]string{"allOf", "anyOf", "oneOf"} {
		arr, _ := m[kw].([]any)
		for _, x := range arr {
			if hot(x) {
				return true
			}
		}
	}
	for _, kw := range [...]string{"dependencies", "dependentSchemas"} {
		obj, _ := m[kw].(map[string]any)
		for _, x := range obj {
			if hot(x) {
				return true
			}
		}
	}
	return false
}

// walker is the state of one document's walk.
type walker struct {
	patterns map[string]bool // pattern -> compiles
	s        *scanned
	base     *url.URL
	self     string                // base.String(): references to it are local
	local    map[string]struct{}   // JSON pointers into this document
	refs     map[quickRef]struct{} // references kept for resolve, each once
	keys     []string              // member names of the objects being walked
}

func (w *walker) stop(why string) bool {
	w.s.full = why
	return false
}

// schema checks one (sub)schema and walks its subschemas; false stops the
// walk (w.s.full says why).
func (w *walker) schema(v any, root bool) bool {
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok {
			return true
		}
		return w.stop("a subschema is neither an object nor a boolean")
	}
	// In name order, so that the reason to compile does not depend on
	// map order (Add and Prepare must report the same one); the names are
	// sorted in one buffer shared by the whole walk.
	start := len(w.keys)
	for kw := range m {
		w.keys = append(w.keys, kw)
	}
	slices.Sort(w.keys[start:])
	for i := start; i < start+len(m); i++ {
		if !w.keyword(m, w.keys[i], root) {
			return false
		}
	}
	w.keys = w.keys[:start]
	return true
}

// keyword checks one keyword kw of the schema object m: a keyword left to
// the library's compile stops the walk, the identifying keywords are
// checked where they may stand, the ones holding subschemas are walked
// (by the shape of their value: one schema, an array, a map), the others
// must have a value of their type. false stops the walk.
func (w *walker) keyword(m map[string]any, kw string, root bool) bool {
	d, val := w.s.draft, m[kw]
	switch {
	case leftToCompile(kw):
		return w.stop("it uses " + kw)
	case kw == "$id" || kw == "$schema":
		if !root {
			return w.stop("a subschema has its own " + kw)
		}
	case kw == "$anchor" && d == 2020:
		return w.anchor(m, val)
	case kw == "additionalItems" && d == 2020:
		// Not applied in 2020-12, but the library still lists its
		// subschemas, and their anchors (Compile refuses one declared
		// twice, anchors.go): left to it.
		return w.stop("it uses additionalItems in a draft 2020-12 schema")
	case kw == "contentSchema" && d == 7:
		// Compiled beside "contentMediaType" though draft-07 does not
		// list it, so its anchors join the resource's (anchors.go): left
		// to the library.
		return w.stop("it uses contentSchema in a draft-07 schema")
	case kw == "$ref":
		return w.ref(val)
	case kw == "format":
		if f, ok := val.(string); !ok || !knownFormat(f) {
			return w.stop("a format is not one this validator implements")
		}
	case kw == "pattern":
		if p, ok := val.(string); !ok || !compiles(w.patterns, p) {
			return w.stop("a pattern does not compile")
		}
	case schemaKw(d, kw) || (kw == "items" && d == 7):
		if arr, ok := val.([]any); ok && kw == "items" && d == 7 {
			return w.schemas(arr)
		}
		return w.schema(val, false)
	case arrayKw(d, kw):
		arr, ok := val.([]any)
		if !ok || len(arr) == 0 {
			return w.stop(kw + " is not a non-empty array")
		}
		return w.schemas(arr)
	case mapKw(d, kw):
		return w.schemaMap(kw, val)
	case kw == "dependencies":
		return w.dependencies(val)
	default:
		if !keywordValueOK(kw, val) {
			return w.stop(kw + " has a value of the wrong type")
		}
	}
	return true
}

// anchor records the "$anchor" val of the schema m (draft 2020-12): a
// plain name, declared once in the document.
func (w *walker) anchor(m map[string]any, val any) bool {
	a, ok := val.(string)
	if !ok || !anchorName.MatchString(a) {
		return w.stop("an $anchor is not a plain name")
	}
	if w.s.anchors == nil {
		w.s.anchors = map[string]bool{}
	}
	if _, dup := w.s.anchors[a]; dup {
		return w.stop("an $anchor is declared twice")
	}
	w.s.anchors[a] = hot(m)
	return true
}

// schemas walks each subschema of an array keyword's value.
func (w *walker) schemas(arr []any) bool {
	for _, x := range arr {
		if !w.schema(x, false) {
			return false
		}
	}
	return true
}

// schemaMap walks the subschemas of a keyword whose value maps names to
// subschemas (properties, patternProperties, …); the names of
// patternProperties are patterns, which must compile.
func (w *walker) schemaMap(kw string, val any) bool {
	obj, ok := val.(map[string]any)
	if !ok {
		return w.stop(kw + " is not an object")
	}
	for name, x := range obj {
		if kw == "patternProperties" && !compiles(w.patterns, name) {
			return w.stop("a pattern does not compile")
		}
		if !w.schema(x, false) {
			return false
		}
	}
	return true
}

// dependencies walks draft 7's "dependencies": each value is an array of
// unique property names or a subschema.
func (w *walker) dependencies(val any) bool {
	obj, ok := val.(map[string]any)
	if !ok {
		return w.stop("dependencies is not an object")
	}
	for _, x := range obj {
		if arr, ok := x.([]any); ok {
			if !stringArray(arr) {
				return w.stop("dependencies holds an array that is not of unique strings")
			}
		} else if !w.schema(x, false) {
			return false
		}
	}
	return true
}

// ref records one "$ref", resolved against the document's base URI as the
// library resolves it (an absolute reference is kept as written): local
// when it names this document, else kept for resolve.
func (w *walker) ref(v any) bool {
	r, ok := v.(string)
	if !ok || !quickURIChars(r) {
		return w.stop("a $ref is not a plain uri reference")
	}
	u, err := url.Parse(r)
	if err != nil || (u.Scheme != "" && !strings.HasPrefix(r, u.Scheme+":")) || strings.ToLower(u.Host) != u.Host {
		// Not parsed, or a scheme or host a resolver may normalise.
		return w.stop("a $ref is not a plain uri reference")
	}
	uri, frag, _ := strings.Cut(r, "#")
	if !u.IsAbs() {
		t := w.base.ResolveReference(u)
		t.Fragment, t.RawFragment = "", ""
		uri = t.String()
	}
	if uri == w.self {
		switch {
		case frag == "":
			if w.s.rootHot {
				return w.stop(possibleLoop)
			}
		case frag[0] == '/':
			w.local[frag] = struct{}{}
		default:
			// Anchors are checked when the whole document is known.
			return w.keep(quickRef{uri: uri, frag: frag})
		}
		return true
	}
	return w.keep(quickRef{uri: uri, frag: frag})
}

// maxQuickRefs bounds the distinct references the pass keeps for one
// document until resolve; a document with more is compiled instead.
const maxQuickRefs = 4096

// keep records a reference for resolve, once.
func (w *walker) keep(r quickRef) bool {
	if _, dup := w.refs[r]; !dup && len(w.refs) >= maxQuickRefs {
		return w.stop("it has too many distinct references for the quick pass")
	}
	w.refs[r] = struct{}{}
	return true
}

// compiles reports whether pattern compiles as the library compiles it
// (Go regexp) within MaxPatternInsts (CompilePattern), once per distinct
// pattern in cache.
func compiles(cache map[string]bool, pattern string) bool {
	ok, seen := cache[pattern]
	if !seen {
		_, _, err := CompilePattern(pattern)
		ok = err == nil
		cache[pattern] = ok
	}
	return ok
}

// quickURIChars reports whether s holds only characters whose meaning in
// a URI reference is unambiguous (no percent-encoding, no spaces, no
// characters a resolver might encode differently): anything else is left
// to Compile.
func quickURIChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~:/#$@+,;=", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// schemaAt returns the schema the JSON pointer p names in the document
// root of the given draft, if it is one the walk visited: every step goes
// through a subschema keyword, each member name spelled as the library
// spells it (schemagraph.LibraryEscape), and the value there is an object or a
// boolean.
func schemaAt(root any, p string, draft int) (any, bool) {
	if p == "/" {
		return nil, false
	}
	segs := strings.Split(p, "/")[1:]
	node := root
	for i := 0; i < len(segs); i++ {
		m, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		kw := schemagraph.UnescapeToken(segs[i])
		if kw == "$id" || kw == "$schema" {
			return nil, false
		}
		val, ok := m[kw]
		if !ok {
			return nil, false
		}
		switch {
		case schemaKw(draft, kw) || (kw == "items" && draft == 7 && !isArray(val)):
			node = val
		case arrayKw(draft, kw) || (kw == "items" && draft == 7):
			arr, ok := val.([]any)
			if !ok || i+1 >= len(segs) {
				return nil, false
			}
			i++
			n, err := strconv.Atoi(segs[i])
			if err != nil || n < 0 || n >= len(arr) || strconv.Itoa(n) != segs[i] {
				return nil, false
			}
			node = arr[n]
		case mapKw(draft, kw) || kw == "dependencies":
			obj, ok := val.(map[string]any)
			if !ok || i+1 >= len(segs) {
				return nil, false
			}
			i++
			name := schemagraph.UnescapeToken(segs[i])
			x, ok := obj[name]
			if !ok || isArray(x) || schemagraph.LibraryEscape(name) != segs[i] {
				// Spelled otherwise than the library keys it, the
				// place is a "non-standard location" (anchors.go).
				return nil, false
			}
			node = x
		default:
			return nil, false
		}
	}
	switch node.(type) {
	case map[string]any, bool:
		return node, true
	}
	return nil, false
}

func isArray(v any) bool {
	_, ok := v.([]any)
	return ok
}

// simpleType reports whether s is a name "type" accepts.
func simpleType(s string) bool {
	switch s {
	case "null", "boolean", "object", "array", "number", "string", "integer":
		return true
	}
	return false
}

// keywordValueOK checks the type of the common keywords' values as the
// meta-schemas of both drafts require; other keywords are not checked.
func keywordValueOK(kw string, v any) bool {
	switch kw {
	case "type":
		if s, ok := v.(string); ok {
			return simpleType(s)
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 || !stringArray(arr) {
			return false
		}
		for _, x := range arr {
			if !simpleType(x.(string)) {
				return false
			}
		}
		return true
	case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains":
		f, ok := v.(float64)
		return ok && f >= 0 && f == float64(int64(f))
	case "multipleOf":
		f, ok := v.(float64)
		return ok && f > 0
	case "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum":
		_, ok := v.(float64)
		return ok
	case "required":
		arr, ok := v.([]any)
		return ok && stringArray(arr)
	case "enum", "examples":
		_, ok := v.([]any)
		return ok
	case "uniqueItems", "readOnly", "writeOnly", "deprecated":
		_, ok := v.(bool)
		return ok
	case "title", "description", "$comment", "contentEncoding", "contentMediaType":
		_, ok := v.(string)
		return ok
	case "dependentRequired":
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, x := range obj {
			if arr, ok := x.([]any); !ok || !stringArray(arr) {
				return false
			}
		}
	}
	return true
}

// stringArray reports whether arr holds only strings, each once.
func stringArray(arr []any) bool {
	seen := make(map[string]bool, len(arr))
	for _, x := range arr {
		s, ok := x.(string)
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}
