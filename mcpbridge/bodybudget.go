package mcpbridge

import (
	"bytes"

	"github.com/ampbundle/ampbundle/amp"
)

// ErrTooManyValues names a request body that holds more JSON values than
// the endpoint lets the SDK decode (docs/SPEC-DECISIONS.md MCP-20):
// more than the agent's item budget in params.arguments, or more than
// MaxEnvelopeValues everywhere else.
const ErrTooManyValues = "too_many_json_values"

// ErrTooDeep names a request body that nests arrays and objects more than
// MaxBodyDepth deep.
const ErrTooDeep = "json_too_deep"

// ErrMalformedBody names a request body that is not one JSON text
// (RFC 8259).
const ErrMalformedBody = "malformed_json"

// ErrBatchTooLarge names a JSON-RPC batch of more than MaxBatch
// messages.
const ErrBatchTooLarge = "batch_too_large"

// MaxBatch bounds the messages of one JSON-RPC batch: the SDK decodes
// each message at a fixed cost (about 66 KB) that its JSON values do not
// show, so a body of many tiny messages would cost hundreds of times its
// size. MCP 2025-06-18 has no batches; older hosts send a few.
const MaxBatch = 16

// MaxEnvelopeValues bounds the JSON values of a request body outside
// params.arguments (the JSON-RPC envelope, _meta, the other params): an
// MCP host sends a few dozen; the SDK decodes _meta into maps several
// times, at tens of bytes per value.
const MaxEnvelopeValues = 4096

// MaxBodyDepth bounds the nesting of a request body: twice the nesting
// the agent accepts in a message (amp.DefaultMaxDepth), the root counting
// one.
const MaxBodyDepth = 2 * amp.DefaultMaxDepth

// bodyRole is what a JSON value is to the counting: where its values are
// charged.
type bodyRole uint8

const (
	roleRoot    bodyRole = iota // the body: a message, or a batch of them
	roleMessage                 // a JSON-RPC message object
	roleParams                  // a message's params
	roleArgs                    // params.arguments, and all inside it
	roleOther                   // any other value
)

// bodyCounter reads one JSON text without building it: every value
// (scalar, array, object; member names do not count) is charged to the
// arguments' budget (args) when it lies in a message's params.arguments,
// else to the envelope's (other); depth is bounded. It allocates nothing.
type bodyCounter struct {
	s           []byte
	i           int
	args, other int // values left
	maxDepth    int
}

// checkBody reads data as one JSON text of at most maxArgs values in
// params.arguments (summed over a batch's messages), MaxEnvelopeValues
// elsewhere, and MaxBodyDepth of nesting; the error names the first bound
// met (ErrTooManyValues, ErrTooDeep) or ErrMalformedBody. A member name
// is matched as written ("params", "arguments"): one spelled another way
// (escapes, letter case) is charged to the envelope, the smaller budget.
func checkBody(data []byte, maxArgs int) error {
	c := &bodyCounter{s: data, args: maxArgs, other: MaxEnvelopeValues, maxDepth: MaxBodyDepth}
	return c.text(roleRoot)
}

// checkArgs reads a tools/call's arguments as checkBody reads a body's
// params.arguments: at most maxArgs values, counted as the agent's item
// budget counts the items of CBOR params (offlineschema.ValueFromCBORBudget:
// every scalar, array and object one, member names none), and MaxBodyDepth
// of nesting. It allocates nothing, so that arguments over the budget are
// refused before a tree of them is built, on every transport (MCP-32).
func checkArgs(data []byte, maxArgs int) error {
	c := &bodyCounter{s: data, args: maxArgs, maxDepth: MaxBodyDepth}
	return c.text(roleArgs)
}

// errBody is the named error of a body refused by checkBody.
func errBody(name string) *amp.Error {
	switch name {
	case ErrTooManyValues:
		return amp.Named(amp.CodeInvalidMessage, ErrTooManyValues, "the request holds too many json values")
	case ErrTooDeep:
		return amp.Named(amp.CodeInvalidMessage, ErrTooDeep, "the request nests json more than %d deep", MaxBodyDepth)
	case ErrBatchTooLarge:
		return amp.Named(amp.CodeInvalidMessage, ErrBatchTooLarge, "the request batches more than %d messages", MaxBatch)
	}
	return amp.Named(amp.CodeInvalidMessage, ErrMalformedBody, "the request is not one json text")
}

// text reads the whole of c.s as one value in role.
func (c *bodyCounter) text(role bodyRole) error {
	c.space()
	if err := c.value(1, role); err != nil {
		return err
	}
	if c.space(); c.i != len(c.s) {
		return errBody(ErrMalformedBody)
	}
	return nil
}

func (c *bodyCounter) space() {
	for c.i < len(c.s) {
		switch c.s[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value reads one value at depth (the root is 1) in role.
func (c *bodyCounter) value(depth int, role bodyRole) error {
	if depth > c.maxDepth {
		return errBody(ErrTooDeep)
	}
	left := &c.other
	if role == roleArgs {
		left = &c.args
	}
	if *left <= 0 {
		return errBody(ErrTooManyValues)
	}
	*left--
	if c.i >= len(c.s) {
		return errBody(ErrMalformedBody)
	}
	switch ch := c.s[c.i]; {
	case ch == '{':
		return c.object(depth, role)
	case ch == '[':
		return c.array(depth, role)
	case ch == '"':
		_, ok := c.str()
		return okOr(ok)
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || ('0' <= ch && ch <= '9'):
		return okOr(c.number())
	}
	return errBody(ErrMalformedBody)
}

func okOr(ok bool) error {
	if ok {
		return nil
	}
	return errBody(ErrMalformedBody)
}

// memberRole is the role of the member key of an object in role.
func memberRole(role bodyRole, key []byte) bodyRole {
	switch {
	case role == roleArgs:
		return roleArgs
	case (role == roleRoot || role == roleMessage) && string(key) == "params":
		return roleParams
	case role == roleParams && string(key) == "arguments":
		return roleArgs
	}
	return roleOther
}

// elementRole is the role of an element of an array in role: a batch's
// elements are messages.
func elementRole(role bodyRole) bodyRole {
	switch role {
	case roleRoot:
		return roleMessage
	case roleArgs:
		return roleArgs
	}
	return roleOther
}

// object reads an object in role. A message's params.arguments are
// charged to the item budget while they are read, whatever the order of
// its members; when the message turns out not to be a tools/call (its
// "method", written exactly so, is another), they are charged back to
// the envelope: the SDK decodes other methods' arguments (prompts/get)
// into maps.
func (c *bodyCounter) object(depth int, role bodyRole) error {
	c.i++ // '{'
	c.space()
	if c.i < len(c.s) && c.s[c.i] == '}' {
		c.i++
		return nil
	}
	message := role == roleRoot || role == roleMessage
	// escaped: a member name with an escape, which the SDK decodes (and
	// of duplicates it keeps the last): "m\u0065thod" may be the method
	// it reads, so such a message is never taken for a tools/call.
	argsBefore, isCall, escaped := c.args, false, false
	for {
		if c.i >= len(c.s) || c.s[c.i] != '"' {
			return errBody(ErrMalformedBody)
		}
		key, ok := c.str()
		if !ok {
			return errBody(ErrMalformedBody)
		}
		c.space()
		if c.i >= len(c.s) || c.s[c.i] != ':' {
			return errBody(ErrMalformedBody)
		}
		c.i++
		c.space()
		start := c.i
		if err := c.value(depth+1, memberRole(role, key)); err != nil {
			return err
		}
		if message && string(key) == "method" {
			isCall = string(c.s[start:c.i]) == `"tools/call"`
		}
		escaped = escaped || bytes.IndexByte(key, '\\') >= 0
		done, err := c.next('}')
		if err != nil {
			return err
		}
		if done {
			if used := argsBefore - c.args; message && (!isCall || escaped) && used > 0 {
				c.args += used
				if c.other -= used; c.other < 0 {
					return errBody(ErrTooManyValues)
				}
			}
			return nil
		}
		c.space()
	}
}

// array reads an array in role; a batch (the root array) holds at most
// MaxBatch messages.
func (c *bodyCounter) array(depth int, role bodyRole) error {
	c.i++ // '['
	c.space()
	if c.i < len(c.s) && c.s[c.i] == ']' {
		c.i++
		return nil
	}
	for n := 1; ; n++ {
		if role == roleRoot && n > MaxBatch {
			return errBody(ErrBatchTooLarge)
		}
		if err := c.value(depth+1, elementRole(role)); err != nil {
			return err
		}
		if done, err := c.next(']'); done || err != nil {
			return err
		}
		c.space()
	}
}

// next reads what follows a member or an element: a comma (false) or
// the closing byte (true).
func (c *bodyCounter) next(closing byte) (bool, error) {
	c.space()
	if c.i >= len(c.s) {
		return false, errBody(ErrMalformedBody)
	}
	switch c.s[c.i] {
	case ',':
		c.i++
		return false, nil
	case closing:
		c.i++
		return true, nil
	}
	return false, errBody(ErrMalformedBody)
}

// str reads a string; it returns its text between the quotes, escapes
// as written.
func (c *bodyCounter) str() ([]byte, bool) {
	start := c.i + 1
	for c.i++; c.i < len(c.s); c.i++ {
		switch ch := c.s[c.i]; {
		case ch == '"':
			c.i++
			return c.s[start : c.i-1], true
		case ch < 0x20:
			return nil, false
		case ch == '\\':
			c.i++
			if c.i >= len(c.s) {
				return nil, false
			}
			switch c.s[c.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if c.i+4 >= len(c.s) || !isHex4(c.s[c.i+1:c.i+5]) {
					return nil, false
				}
				c.i += 4
			default:
				return nil, false
			}
		}
	}
	return nil, false
}

func isHex4(b []byte) bool {
	for _, ch := range b {
		if !('0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F') {
			return false
		}
	}
	return true
}

func (c *bodyCounter) literal(word string) error {
	if len(c.s)-c.i < len(word) || string(c.s[c.i:c.i+len(word)]) != word {
		return errBody(ErrMalformedBody)
	}
	c.i += len(word)
	return nil
}

// number reads a number (RFC 8259 §6).
func (c *bodyCounter) number() bool {
	if c.s[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(c.s) && c.s[c.i] == '0':
		c.i++
	case c.digits() == 0:
		return false
	}
	if c.i < len(c.s) && c.s[c.i] == '.' {
		c.i++
		if c.digits() == 0 {
			return false
		}
	}
	if c.i < len(c.s) && (c.s[c.i] == 'e' || c.s[c.i] == 'E') {
		c.i++
		if c.i < len(c.s) && (c.s[c.i] == '+' || c.s[c.i] == '-') {
			c.i++
		}
		if c.digits() == 0 {
			return false
		}
	}
	return true
}

func (c *bodyCounter) digits() int {
	n := 0
	for c.i < len(c.s) && '0' <= c.s[c.i] && c.s[c.i] <= '9' {
		c.i++
		n++
	}
	return n
}
