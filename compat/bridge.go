package compat

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/strictjson"
)

// BridgeMediaType is the media type of a bridge artifact (docs/FORMAT.md,
// "Bridges: declarative adapters between versions").
const BridgeMediaType = "application/vnd.amp.bridge+json"

// Bounds of a bridge document: what a publisher's bridge can cost.
const (
	// MaxBridgeSize bounds the bytes of one bridge document.
	MaxBridgeSize = 64 << 10
	// MaxBridgeOps bounds the operations of one side (input or output).
	MaxBridgeOps = 64
	// MaxBridgePathDepth bounds the segments of one path.
	MaxBridgePathDepth = 8
	// maxBridgeNesting bounds the JSON nesting of a bridge document
	// (a default value included).
	maxBridgeNesting = 32
)

// Error names of bridges.
const (
	// ErrBridgeMalformed: the bridge document breaks the format.
	ErrBridgeMalformed amp.ErrName = "bridge_malformed"
	// ErrBridgeDropsRequired: an operation would remove a field that the
	// schema it produces for requires, or the builder cannot prove it
	// does not.
	ErrBridgeDropsRequired amp.ErrName = "bridge_drops_required"
	// ErrBridgeConflict: applying the bridge to a value would overwrite a
	// field or descend through a non-object.
	ErrBridgeConflict amp.ErrName = "bridge_conflict"
)

// Bridge operations.
const (
	OpRename       = "rename"        // from, to: same parent object
	OpMove         = "move"          // from, to: anywhere
	OpDefault      = "default"       // path, value: set when absent
	OpDropOptional = "drop-optional" // path: delete when present
)

// BridgeOp is one operation of a bridge. Paths are parsed JSON Pointers
// (RFC 6901) into object members only.
type BridgeOp struct {
	Op    string
	From  []string // rename, move
	To    []string // rename, move
	Path  []string // default, drop-optional
	Value any      // default: a JSON value (encoding/json data model)
}

// Bridge is a parsed bridge document: Input turns a request of the
// caller's (old) shape into the provider's (new) shape; Output turns a
// result of the provider's shape into the caller's shape. Each side's
// operations apply in order.
type Bridge struct {
	Input  []BridgeOp
	Output []BridgeOp
}

func malformed(format string, args ...any) error {
	return amp.Named(0, ErrBridgeMalformed, "bridge: "+format, args...)
}

// ParseBridge parses and checks a bridge document (docs/FORMAT.md): one
// JSON object {"bridge": 1, "input": [op...], "output": [op...]}, no other
// member, no duplicate member, within MaxBridgeSize, MaxBridgeOps per side
// and MaxBridgePathDepth per path. Errors are ErrBridgeMalformed.
func ParseBridge(data []byte) (*Bridge, error) {
	if len(data) > MaxBridgeSize {
		return nil, malformed("larger than %d bytes", MaxBridgeSize)
	}
	if err := strictjson.Check(data, maxBridgeNesting); err != nil {
		return nil, malformed("%s", err.Error())
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, malformed("not a JSON object")
	}
	for k := range doc {
		if k != "bridge" && k != "input" && k != "output" {
			return nil, malformed("unknown member %s", strictjson.QuoteName(k))
		}
	}
	if v, ok := doc["bridge"]; !ok || string(v) != "1" {
		return nil, malformed(`"bridge" must be 1`)
	}
	b := &Bridge{}
	var err error
	if b.Input, err = parseOps(doc["input"], "input"); err != nil {
		return nil, err
	}
	if b.Output, err = parseOps(doc["output"], "output"); err != nil {
		return nil, err
	}
	return b, nil
}

func parseOps(raw json.RawMessage, side string) ([]BridgeOp, error) {
	if raw == nil {
		return nil, nil
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, malformed("%q must be an array of objects", side)
	}
	if len(list) > MaxBridgeOps {
		return nil, malformed("%q has more than %d operations", side, MaxBridgeOps)
	}
	out := make([]BridgeOp, 0, len(list))
	for i, m := range list {
		op, err := parseOp(m)
		if err != nil {
			return nil, malformed("%s[%d]: %s", side, i, err.Error())
		}
		out = append(out, op)
	}
	return out, nil
}

func parseOp(m map[string]json.RawMessage) (BridgeOp, error) {
	var op BridgeOp
	if err := json.Unmarshal(m["op"], &op.Op); err != nil || m["op"] == nil {
		return op, errors.New(`"op" must be a string`)
	}
	var allowed []string
	switch op.Op {
	case OpRename, OpMove:
		allowed = []string{"op", "from", "to"}
	case OpDefault:
		allowed = []string{"op", "path", "value"}
	case OpDropOptional:
		allowed = []string{"op", "path"}
	default:
		return op, errors.New(`"op" must be rename, move, default or drop-optional`)
	}
	for k := range m {
		if !contains(allowed, k) {
			return op, errors.New("member " + strictjson.QuoteName(k) + " is not allowed for " + op.Op)
		}
	}
	for _, k := range allowed[1:] {
		if _, ok := m[k]; !ok {
			return op, errors.New(op.Op + " needs " + strictjson.QuoteName(k))
		}
	}
	ptr := func(k string) ([]string, error) {
		var s string
		if err := json.Unmarshal(m[k], &s); err != nil {
			return nil, errors.New(strictjson.QuoteName(k) + " must be a string")
		}
		p, err := parsePointer(s)
		if err != nil {
			return nil, errors.New(strictjson.QuoteName(k) + ": " + err.Error())
		}
		return p, nil
	}
	var err error
	switch op.Op {
	case OpRename, OpMove:
		if op.From, err = ptr("from"); err != nil {
			return op, err
		}
		if op.To, err = ptr("to"); err != nil {
			return op, err
		}
		if samePath(op.From, op.To) {
			return op, errors.New(`"from" and "to" are the same path`)
		}
		if isPrefix(op.From, op.To) {
			return op, errors.New(`"to" is inside "from"`)
		}
		if op.Op == OpRename && !samePath(op.From[:len(op.From)-1], op.To[:len(op.To)-1]) {
			return op, errors.New(`rename keeps the parent object: use move`)
		}
	case OpDefault, OpDropOptional:
		if op.Path, err = ptr("path"); err != nil {
			return op, err
		}
		if op.Op == OpDefault {
			dec := json.NewDecoder(bytes.NewReader(m["value"]))
			dec.UseNumber()
			if err := dec.Decode(&op.Value); err != nil {
				return op, errors.New(`"value" must be a JSON value`)
			}
		}
	}
	return op, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parsePointer parses a non-empty RFC 6901 JSON Pointer of at most
// MaxBridgePathDepth segments, none empty.
func parsePointer(s string) ([]string, error) {
	if s == "" || s[0] != '/' {
		return nil, errors.New("must be a JSON Pointer starting with /")
	}
	segs := strings.Split(s[1:], "/")
	if len(segs) > MaxBridgePathDepth {
		return nil, errors.New("deeper than the path bound")
	}
	for i, seg := range segs {
		if seg == "" {
			return nil, errors.New("has an empty segment")
		}
		for j := 0; j < len(seg); j++ {
			if seg[j] == '~' && (j+1 == len(seg) || (seg[j+1] != '0' && seg[j+1] != '1')) {
				return nil, errors.New("has an invalid ~ escape")
			}
		}
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
	}
	return segs, nil
}

func samePath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isPrefix(p, q []string) bool { return len(p) < len(q) && samePath(p, q[:len(p)]) }

// ApplyInput applies the input side to a request's params (decoded into the
// encoding/json data model: map[string]any objects). v is not modified.
func (b *Bridge) ApplyInput(v any) (any, error) { return applyOps(b.Input, v) }

// ApplyOutput applies the output side to a result. v is not modified.
func (b *Bridge) ApplyOutput(v any) (any, error) { return applyOps(b.Output, v) }

func applyOps(ops []BridgeOp, v any) (any, error) {
	if len(ops) == 0 {
		return v, nil
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, amp.Named(0, ErrBridgeConflict, "bridge: the value is not an object")
	}
	root = deepCopy(root).(map[string]any)
	for i, op := range ops {
		var err error
		switch op.Op {
		case OpRename, OpMove:
			if val, found := take(root, op.From); found {
				err = put(root, op.To, val, false)
			}
		case OpDefault:
			err = put(root, op.Path, deepCopy(op.Value), true)
		case OpDropOptional:
			take(root, op.Path)
		}
		if err != nil {
			return nil, amp.Named(0, ErrBridgeConflict, "bridge: operation %d (%s): %s", i, op.Op, err.Error())
		}
	}
	return root, nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}

// take removes and returns the member at p, if every step is an object and
// it is present.
func take(root map[string]any, p []string) (any, bool) {
	m := root
	for _, seg := range p[:len(p)-1] {
		next, ok := m[seg].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	v, ok := m[p[len(p)-1]]
	if ok {
		delete(m, p[len(p)-1])
	}
	return v, ok
}

// put sets the member at p, creating absent intermediate objects. When it
// is already present: keep it if ifAbsent, else refuse (never overwrite).
func put(root map[string]any, p []string, v any, ifAbsent bool) error {
	m := root
	for _, seg := range p[:len(p)-1] {
		x, ok := m[seg]
		if !ok {
			n := map[string]any{}
			m[seg] = n
			m = n
			continue
		}
		next, ok := x.(map[string]any)
		if !ok {
			return errors.New("a step of the path is not an object")
		}
		m = next
	}
	last := p[len(p)-1]
	if _, ok := m[last]; ok {
		if ifAbsent {
			return nil
		}
		return errors.New("the target member is already present")
	}
	m[last] = v
	return nil
}

// CheckBridge is what a builder and an importer do with a bridge: every
// operation that removes a member (drop-optional's path, rename's and
// move's from) is refused (ErrBridgeDropsRequired) when the schema the
// side produces for requires that member — the provider's input schema
// for the input side, the caller's output schema for the output side —
// or when that schema is not plain enough to prove it does not: a
// keyword of unprovable on the way to the member (a reference, a
// combinator, a conditional, a dependency, listed values), a
// "patternProperties" above the member's parent (it may apply to a
// listed property too), a "minProperties" on its parent, or a boolean
// false schema.
func CheckBridge(b *Bridge, input, output Schema) error {
	left := math.MaxInt // one call's walk is bounded by its two schemas and 2 × MaxBridgeOps
	if err := checkBridgeSide("input", b.Input, input.Key, func() (any, error) { return loadJSON(input) }, &left); err != nil {
		return err
	}
	return checkBridgeSide("output", b.Output, output.Key, func() (any, error) { return loadJSON(output) }, &left)
}

// errWalkSpent is what checkBridgeSide answers when its walks make more
// visits than left allowed (coverIndex.walk: the bundle's budget).
var errWalkSpent = errors.New("the bridge re-check is past the bundle's comparison budget")

// checkBridgeSide is CheckBridge for one side (name) of a bridge: its
// operations ops against the schema at key, which load reads and decodes
// when a first operation removes a member (never otherwise). Each schema
// object and each "required" entry the walks visit (requiredAt) takes
// one from *left; past zero it stops with errWalkSpent.
func checkBridgeSide(name string, ops []BridgeOp, key string, load func() (any, error), left *int) error {
	var root any
	for i, op := range ops {
		var removed []string
		switch op.Op {
		case OpRename, OpMove:
			removed = op.From
		case OpDropOptional:
			removed = op.Path
		default:
			continue
		}
		if root == nil {
			var err error
			if root, err = load(); err != nil {
				return amp.Named(0, ErrBridgeDropsRequired, "bridge %s[%d]: the target schema %s cannot be read", name, i, strictjson.QuoteName(key))
			}
		}
		why, ok := requiredAt(root, removed, left)
		if !ok {
			return errWalkSpent
		}
		if why != "" {
			return amp.Named(0, ErrBridgeDropsRequired, "bridge %s[%d] (%s) removes %s: %s", name, i, op.Op, pointerString(removed), why)
		}
	}
	return nil
}

func loadJSON(s Schema) (any, error) {
	if s.Loader == nil {
		return nil, errors.New("no loader")
	}
	data, err := s.Loader.Load(s.Key)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentSize {
		return nil, errors.New("too large")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// unprovable are the keywords that make requiredAt give up on a schema
// object on the way to a removed member (its parent included): each may
// make the member required, or its removal invalid, in a way the walk
// does not follow. jsonschema v5.3.1 compiles "$recursiveRef" and
// "dependencies" in a draft 2020-12 document too; "enum" and "const"
// list whole values, so removing a member of one of them refuses it.
var unprovable = []string{"$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if",
	"dependentRequired", "dependentSchemas", "dependencies", "enum", "const"}

// requiredAt names why the schema root requires (or may require) the
// member at p, or returns "" when it provably does not. Each schema
// object on the way and each "required" entry compared takes one from
// *left; ok is false when that went below zero (the answer is then not
// known).
func requiredAt(root any, p []string, left *int) (why string, ok bool) {
	visit := func(n int) bool {
		*left -= n
		return *left >= 0
	}
	node := root
	for depth := 0; ; depth++ {
		if !visit(1) {
			return "", false
		}
		if b, isBool := node.(bool); isBool {
			if !b {
				return "the target schema is false there", true
			}
			return "", true // true: anything goes, nothing required
		}
		m, isObj := node.(map[string]any)
		if !isObj {
			return "the target schema is not an object there", true
		}
		for _, kw := range unprovable {
			if _, has := m[kw]; has {
				return "the target schema uses " + kw + " on the way, which the builder cannot prove safe", true
			}
		}
		if depth == len(p)-1 {
			if _, has := m["minProperties"]; has {
				return "the target schema bounds the members of the object holding it (minProperties), which the builder cannot prove safe", true
			}
			req, _ := m["required"].([]any)
			for _, r := range req {
				if !visit(1) {
					return "", false
				}
				if r == p[depth] {
					return "the target schema requires it", true
				}
			}
			return "", true
		}
		// A pattern applies to a member listed in "properties" too.
		if _, pat := m["patternProperties"]; pat {
			return "the target schema has patternProperties on the way, which the builder cannot prove safe", true
		}
		props, _ := m["properties"].(map[string]any)
		next, listed := props[p[depth]]
		if !listed {
			_, addl := m["additionalProperties"].(map[string]any)
			_, uneval := m["unevaluatedProperties"].(map[string]any)
			if addl || uneval {
				return "the target schema describes " + strictjson.QuoteName(p[depth]) + " only through additionalProperties or unevaluatedProperties, which the builder cannot prove safe", true
			}
			return "", true // the parent is not described: nothing requires it
		}
		node = next
	}
}

func pointerString(p []string) string {
	var sb strings.Builder
	for _, s := range p {
		sb.WriteByte('/')
		sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return sb.String()
}
