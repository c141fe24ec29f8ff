package offlineschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Loader supplies the verified bytes of one bundle's artifacts. It is the
// only source of schema bytes: Compile reads nothing else.
type Loader interface {
	// Load returns the verified bytes of the artifact at key (in the same
	// bundle). Any error refuses the reference; it is kept as the cause of
	// the unresolved_ref error, so an *amp.Error (hash_mismatch, ...) stays
	// visible to errors.Is.
	Load(key string) ([]byte, error)
	// KeyForID returns the artifact key whose top-level "$id" is id
	// (absolute URI, no fragment; SchemaID gives that form).
	KeyForID(id string) (key string, ok bool)
}

// Options tunes Compile. The zero value is the production setting.
type Options struct {
	// OnExternalLoad, if set, is called with any URL the compiler tried to
	// load that is not an artifact of this bundle (tests use it to prove
	// nothing external was attempted; production leaves it nil). The load
	// is refused either way. It is not called for a well-formed synthetic
	// URL whose key the Loader fails to load: that is a missing artifact,
	// not an external load.
	OnExternalLoad func(url string)
}

// Schema is a compiled schema. It is immutable and safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	deps     []string
	// byLocation indexes every reachable compiled (sub)schema by its
	// Location, so that a "required" failure can name the missing property.
	byLocation map[string]*jsonschema.Schema
	// cost bounds the evaluations of one Validate (cost.go).
	cost *costTable
	// onLibrary, if set, is called each time Validate starts the library
	// (tests prove a refused value never reached it).
	onLibrary func()
}

// Deps returns the artifact keys whose bytes this compiled schema used (root
// included), sorted and without duplicates. The slice is the caller's.
func (s *Schema) Deps() []string { return append([]string(nil), s.deps...) }

// URL scheme of the synthetic artifact URLs: "ampbundle:///" + key.
const urlScheme = "ampbundle"

// artifactURL returns the synthetic absolute URL of an artifact key,
// "ampbundle:///" + key with the path percent-encoded as net/url does. It is
// the base URL against which the artifact's relative references resolve.
func artifactURL(key string) string { return schemagraph.ArtifactURL(key) }

// validKey reports whether key is a relative slash path this package
// accepts (schemagraph.ValidKey).
func validKey(key string) bool { return schemagraph.ValidKey(key) }

// keyOfURL maps a synthetic artifact URL back to its key. ok is false for
// anything that is not exactly ampbundle:///<valid key>: another scheme, a
// host (another bundle's or a network-path form), user info, a query, an
// opaque form, or a path that still holds dot segments (only possible when
// written absolute: relative references are resolved by RFC 3986 §5.2,
// which removes dot segments and clamps ".." at the root):
// schemagraph.ArtifactKey, which the checkers share.
func keyOfURL(u *url.URL) (string, bool) { return schemagraph.ArtifactKey(u) }

// session is the state of one Compile: the Loader, the hook, and the keys
// loaded so far. It is the compiler's LoadURL; nothing else loads.
type session struct {
	l      Loader
	opts   Options
	deps   map[string]struct{}
	docs   map[string][]byte // the bytes of every document loaded, by key
	byURL  map[string]string // the key of every document loaded, by the URL the library loaded it from
	metaOf map[string]string // the meta-schema URL (rootDraft) of every document loaded, by that URL, or a URL further along its chain (metaEnd); "" for a built-in draft
	// draftByURL remembers the draft of each document reached through a
	// meta-schema chain, by the URL it was loaded from (metaDraft).
	draftByURL map[string]int
	cost       compileCost            // of every document loaded so far
	patterns   map[string]PatternCost // patternCost cache
	// metaHops counts the steps metaEnd and metaDraft took along
	// meta-schema chains: the tests read and bound it.
	metaHops int
}

// refused is the cause of an unresolved_ref error. Its text names the URL
// and is for logs only; the *amp.Error message never includes the URL.
type refused struct {
	url      string
	key      string // the artifact key the URL named, if any
	external bool   // the URL names no artifact of this bundle
	reason   string
	err      error
}

func (r *refused) Error() string {
	s := "offlineschema: refused to load " + r.url + ": " + r.reason
	if r.err != nil {
		s += ": " + r.err.Error()
	}
	return s
}

func (r *refused) Unwrap() error { return r.err }

// badJSON is the cause of an invalid_schema error for bytes that are not
// JSON.
type badJSON struct {
	key string
	err error
}

func (b *badJSON) Error() string {
	return "offlineschema: artifact " + b.key + " is not json: " + b.err.Error()
}

func (b *badJSON) Unwrap() error { return b.err }

// metaSchemaLoop is the cause of an invalid_schema error for a document
// whose chain of meta-schemas ("$schema") leads back to it (metaLoop).
type metaSchemaLoop struct{ key string }

func (m *metaSchemaLoop) Error() string {
	return "offlineschema: artifact " + m.key + ": its chain of meta-schemas leads back to itself"
}

// load is the per-compiler LoadURL. It serves synthetic artifact URLs by key
// and every other absolute URI only through Loader.KeyForID; everything else
// is refused. It never opens a file or a connection.
func (s *session) load(raw string) (io.ReadCloser, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, s.external(raw, "not a valid uri")
	}
	var key string
	if u.Scheme == urlScheme {
		var ok bool
		if key, ok = keyOfURL(u); !ok {
			return nil, s.external(raw, "not a synthetic artifact url of this bundle")
		}
	} else {
		var ok bool
		if key, ok = s.l.KeyForID(raw); !ok {
			return nil, s.external(raw, "no artifact of this bundle has this $id")
		}
		if !validKey(key) {
			return nil, &refused{url: raw, reason: "the loader mapped the $id to an invalid key"}
		}
	}
	b, err := s.l.Load(key)
	if err != nil {
		return nil, &refused{url: raw, key: key, reason: "the loader could not supply the artifact", err: err}
	}
	if !json.Valid(b) {
		// Checked here, where the key is known; the library would only
		// name the URL.
		var v any
		return nil, &badJSON{key: key, err: json.Unmarshal(b, &v)}
	}
	// Counted per load: the library loads a document once per URI.
	var root any
	c, why := measureSchema(b, func() any { root = parseForMeasure(b); return root }, s.patterns)
	if why == "" {
		why = s.cost.plus(c).over()
	}
	if why != "" {
		return nil, &overLimit{key: key, why: why}
	}
	s.cost = s.cost.plus(c)
	if u.Scheme != urlScheme {
		// Served by $id: the artifact must really declare it.
		if id, err := SchemaID(b); err != nil || id != raw {
			return nil, &refused{url: raw, key: key, reason: "the artifact does not declare this $id"}
		}
	}
	_, meta := rootDraft(root)
	if s.metaLoop(raw, meta) {
		return nil, &metaSchemaLoop{key: key}
	}
	s.metaOf[raw], s.byURL[raw] = meta, key
	s.deps[key] = struct{}{}
	s.docs[key] = b
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *session) external(raw, reason string) error {
	if s.opts.OnExternalLoad != nil {
		s.opts.OnExternalLoad(raw)
	}
	return &refused{url: raw, external: true, reason: reason}
}

// Compile compiles the schema at rootKey, loading it and everything it
// references through l only (see the package documentation for the URL
// model and the decisions). Errors: unresolved_ref and invalid_schema, both
// code 0.
func Compile(l Loader, rootKey string, opts Options) (*Schema, error) {
	return newSession(l, opts).compile(rootKey)
}

// newSession is the state of a Compile through l.
func newSession(l Loader, opts Options) *session {
	return &session{l: l, opts: opts, deps: make(map[string]struct{}), docs: map[string][]byte{},
		byURL: map[string]string{}, metaOf: map[string]string{}, patterns: map[string]PatternCost{}}
}

// compile is Compile in the session s (the tests read its counts).
func (s *session) compile(rootKey string) (sch *Schema, err error) {
	if s.l == nil {
		return nil, amp.Named(0, ErrUnresolvedRef, "no loader")
	}
	if !validKey(rootKey) {
		return nil, amp.Named(0, ErrUnresolvedRef, "root artifact key is not a valid bundle key")
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.AssertContent = false
	c.LoadURL = s.load
	// Formats whose library check costs more than a pass over the string
	// ("regex" compiles it, "duration" and "period" are quadratic):
	// checked here by our own bounded code (formats.go).
	for name, check := range boundedFormats {
		c.Formats[name] = check
	}

	defer func() {
		// The library panics on a few inputs its metaschema validation
		// should have refused (regexp.MustCompile, type assertions); a
		// schema must never crash the agent.
		if r := recover(); r != nil {
			sch = nil
			err = amp.Named(0, ErrInvalidSchema, "schema %q cannot be compiled", rootKey).
				WithCause(fmt.Errorf("offlineschema: jsonschema panicked: %v", r))
		}
	}()
	compiled, cerr := c.Compile(artifactURL(rootKey))
	if cerr != nil {
		return nil, compileError(rootKey, cerr)
	}
	byLocation, err := index(compiled, rootKey)
	if err != nil {
		return nil, err
	}
	// The worst case of one Validate, from the compiled schema, and the
	// $dynamicRef targets no applicator leads to.
	parsed := &parsedDocs{}
	extra, allFound := dynamicAnchorTargets(c, s.docs, parsed)
	// Every document the compile loaded, the targets' included: one
	// anchor name with two possible targets is resolved by the library in
	// map order, so the schema would not mean one thing.
	if err := s.checkAnchors(rootKey, parsed, libraryMetaSchemas(byLocation, extra)); err != nil {
		return nil, err
	}
	cost := analyzeCost(compiled, extra, !allFound)
	deps := slices.Sorted(maps.Keys(s.deps))
	return &Schema{compiled: compiled, deps: deps, byLocation: byLocation, cost: cost}, nil
}

// compileError maps a library compile error to an *amp.Error whose message
// names the root key (and the artifact key where it is known), never URL
// text or schema text. The library error stays the cause.
func compileError(rootKey string, err error) *amp.Error {
	var r *refused
	if errors.As(err, &r) {
		switch {
		case r.external:
			return amp.Named(0, ErrUnresolvedRef, "schema %q: a reference to a %s is refused: only artifacts of this bundle can be referenced", rootKey, describeURL(r.url)).WithCause(err)
		case r.key != "":
			return amp.Named(0, ErrUnresolvedRef, "schema %q: referenced artifact %q is not available", rootKey, r.key).WithCause(err)
		default:
			return amp.Named(0, ErrUnresolvedRef, "schema %q: a reference cannot be resolved in this bundle", rootKey).WithCause(err)
		}
	}
	var bj *badJSON
	if errors.As(err, &bj) {
		return amp.Named(0, ErrInvalidSchema, "artifact %q is not valid json", bj.key).WithCause(err)
	}
	var ml *metaSchemaLoop
	if errors.As(err, &ml) {
		return amp.Named(0, ErrInvalidSchema, "schema %q: the chain of meta-schemas (\"$schema\") of artifact %q leads back to itself", rootKey, ml.key).WithCause(err)
	}
	var ol *overLimit
	if errors.As(err, &ol) {
		// The limit's own error is the cause (it says the same again:
		// the CLI shows a cause only for what the message lacks).
		return amp.Named(0, ErrInvalidSchema, "schema %q is over a compile limit loading %q: %s", rootKey, ol.key, ol.why).WithCause(ol)
	}
	var loop jsonschema.InfiniteLoopError
	if errors.As(err, &loop) {
		return amp.Named(0, ErrInvalidSchema, "schema %q has a reference loop", rootKey).WithCause(err)
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// jsonschema v5.3.1 reports a JSON pointer or anchor that does
		// not exist in a loaded document as the untyped error
		// "jsonschema: <ref> not found" (compileRef); TestRefNotFound pins it.
		var se *jsonschema.SchemaError
		if errors.As(err, &se) && se.Err != nil {
			if msg := se.Err.Error(); strings.HasPrefix(msg, "jsonschema: ") && strings.HasSuffix(msg, " not found") {
				return amp.Named(0, ErrUnresolvedRef, "schema %q: a reference points to nothing in its document", rootKey).WithCause(err)
			}
		}
	}
	return amp.Named(0, ErrInvalidSchema, "schema %q is not a valid json schema", rootKey).WithCause(err)
}

// describeURL names the kind of a refused URL for a message: its scheme,
// when it is one of a few well-known ones. Anything else from the URL comes
// from schema text and is never shown.
func describeURL(raw string) string {
	u, err := url.Parse(raw) // lowercases the scheme
	if err != nil || u.Scheme == "" {
		return "malformed uri"
	}
	switch u.Scheme {
	case urlScheme:
		return "malformed or foreign ampbundle url"
	case "http", "https", "file", "urn", "data", "ftp", "ftps", "ws", "wss", "tag", "did", "mailto", "jar":
		return u.Scheme + " uri"
	}
	return "uri of another scheme"
}

// knownFormat reports whether name is one of the formats jsonschema v5.3.1
// implements (its Formats registry at init). Compile refuses any other
// format name: with assertion on, an unknown format would silently accept
// everything (fail open).
func knownFormat(name string) bool {
	switch name {
	case "date-time", "date", "time", "duration", "period", "hostname",
		"email", "ip-address", "ipv4", "ipv6", "uri", "iri", "uri-reference",
		"uriref", "iri-reference", "uri-template", "regex", "json-pointer",
		"relative-json-pointer", "uuid":
		return true
	}
	return false
}

// index walks every compiled schema reachable from root through the
// library's exported fields, refuses unknown formats, and returns the
// schemas by Location.
func index(root *jsonschema.Schema, rootKey string) (map[string]*jsonschema.Schema, error) {
	out := make(map[string]*jsonschema.Schema)
	seen := make(map[*jsonschema.Schema]bool)
	stack := []*jsonschema.Schema{root}
	push := func(s *jsonschema.Schema) {
		if s != nil && !seen[s] {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	seen[root] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, dup := out[s.Location]; !dup {
			out[s.Location] = s
		}
		if s.Format != "" && !knownFormat(s.Format) {
			return nil, amp.Named(0, ErrInvalidSchema, "schema %q uses a format this validator does not implement", rootKey).
				WithCause(fmt.Errorf("offlineschema: unknown format %q at %s", s.Format, s.Location))
		}
		forEachApplicator(s, push)
	}
	return out, nil
}

// SchemaID returns the top-level "$id" of a schema document, in the form
// Loader.KeyForID is asked for: fragment removed, and only when it is an
// absolute URI ("" when there is none, or when it is relative: a relative
// $id resolves against the artifact's own synthetic URL and adds no name).
// A draft-04 document ("$schema" draft-04) uses "id" instead. It errors
// (invalid_schema, code 0) when doc is not a JSON object or the id is not a
// string, and, unparsed, when doc is larger than a compile loads
// (CheckCompileBytes).
func SchemaID(doc []byte) (string, error) {
	if err := CheckCompileBytes(doc); err != nil {
		return "", err
	}
	v, err := parseSchema(doc)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return "", amp.Named(0, ErrInvalidSchema, "schema document is not a json object").WithCause(err)
	}
	return idOf(m)
}

// CheckCompileBytes refuses (invalid_schema, code 0) a schema document
// of more than MaxCompileBytes, from its length alone: no compile loads
// it (Compile refuses it before parsing it), so SchemaID, Prepare and
// QuickCheck.Add refuse it unparsed, and a caller that reads a schema for
// itself asks here first (docs/SPEC-DECISIONS.md SCHEMA-12). nil when doc
// is within the limit.
func CheckCompileBytes(doc []byte) error {
	if len(doc) <= MaxCompileBytes {
		return nil
	}
	return amp.Named(0, ErrInvalidSchema, "schema document is over a compile limit: %s", overBytes)
}

// overBytes is why a document over MaxCompileBytes is over a compile
// limit, as compileCost.over says it.
const overBytes = "more than 4 MiB in all"

// parseSchema parses a schema document as the library's decoder reads it
// (a member named twice keeps its last value; nesting bounded as
// encoding/json bounds it), with numbers as float64 as encoding/json
// gives them: one out of float64 range refuses the document. Its size is
// bounded by the caller (an artifact of a verified bundle).
func parseSchema(data []byte) (any, error) {
	return schemagraph.Parse(data, schemagraph.Options{MaxBytes: max(len(data), 1), MaxDepth: 10000, Float64: true, EncodingJSON: true})
}

// idOf is SchemaID over a parsed document.
func idOf(m map[string]any) (string, error) {
	field := "$id"
	if s, ok := m["$schema"].(string); ok && isDraft4(s) {
		field = "id"
	}
	raw, ok := m[field]
	if !ok {
		return "", nil
	}
	id, ok := raw.(string)
	if !ok {
		return "", amp.Named(0, ErrInvalidSchema, "schema document has a %s that is not a string", field)
	}
	if i := strings.IndexByte(id, '#'); i >= 0 {
		id = id[:i]
	}
	u, err := url.Parse(id)
	if err != nil || !u.IsAbs() {
		return "", nil
	}
	return id, nil
}

// isDraft4 reports whether a $schema value names draft-04, as jsonschema
// v5.3.1 recognises it (libraryDraft).
func isDraft4(s string) bool {
	return libraryDraft(s) == 4
}

// libraryDraft returns the draft (4, 6, 7, 2019 or 2020) of the
// meta-schema built into jsonschema v5.3.1 that a "$schema" value names,
// or 0 for any other value. It is the library's findDraft, spelling for
// spelling: "http://" (lower case, exactly) is read as "https://"; a
// trailing "#" or "#/" cuts the value at its first "#"; then only the
// exact URIs below match, so a value without a scheme ("json-schema.org/
// draft/2020-12/schema"), with an upper-case scheme or host, or with
// another fragment names none (the library then loads it as a URI, and
// refuses one that is not absolute: "$schema must be uri").
func libraryDraft(s string) int {
	if rest, ok := strings.CutPrefix(s, "http://"); ok {
		s = "https://" + rest
	}
	if strings.HasSuffix(s, "#") || strings.HasSuffix(s, "#/") {
		s = s[:strings.IndexByte(s, '#')]
	}
	switch s {
	case "https://json-schema.org/schema", "https://json-schema.org/draft/2020-12/schema":
		return 2020
	case "https://json-schema.org/draft/2019-09/schema":
		return 2019
	case "https://json-schema.org/draft-07/schema":
		return 7
	case "https://json-schema.org/draft-06/schema":
		return 6
	case "https://json-schema.org/draft-04/schema":
		return 4
	}
	return 0
}
