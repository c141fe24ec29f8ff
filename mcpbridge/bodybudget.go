package mcpbridge

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
)

// ErrBodyTooLarge names a request over its byte bound: an HTTP body over
// MaxBody (413), a stdio message longer than the transport's maximum line
// length (the session ends with it, MCP-44).
const ErrBodyTooLarge = "body_too_large"

// ErrTooManyValues names a request body that holds more JSON values than
// the endpoint lets the SDK decode (docs/SPEC-DECISIONS.md MCP-20):
// more than the agent's item budget in params.arguments, or more than
// MaxEnvelopeValues everywhere else, a number there that strconv may
// round slowly counting SlowNumberValues (docs/SPEC-DECISIONS.md JSON-7).
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

// ErrInvalidRequestID names a JSON-RPC message whose id the SDK would
// not answer as it was sent (docs/SPEC-DECISIONS.md MCP-35): an id that is
// not a string of at most MaxRequestIDBytes (decoded; MaxRequestIDText as
// written), an integer of magnitude at most MaxRequestIDInt written
// without fraction or exponent, or null.
const ErrInvalidRequestID = "invalid_request_id"

// ErrMethodNotServed names a POST body with a message whose method the
// HTTP endpoint does not pass to the SDK (docs/SPEC-DECISIONS.md MCP-36):
// "subscriptions/listen", which go-sdk v1.8.0 answers with an event
// stream held open until the client hangs up, outside the bounds of
// notification streams and unread by the answer rewriting.
const ErrMethodNotServed = "method_not_served"

// ErrDuplicateMetaKey names a message on which readers of its JSON may
// disagree about a call's idempotency key or timeout
// (docs/SPEC-DECISIONS.md MCP-40): one _meta names IdempotencyKey or
// TimeoutKey twice (escapes decoded), or a message holding either has
// more than one member that may be read as params, or its params more
// than one that may be read as _meta (escapes decoded, ASCII letter case
// ignored). The SDK keeps the last of two keys and merges two _meta
// objects, while a proxy or a log in front of the agent may keep the
// first: the key that decides whether a call runs would not be the one
// they saw.
const ErrDuplicateMetaKey = "duplicate_meta_key"

// ErrListBatched names a POST body whose batch holds a tools/list beside
// another request (docs/SPEC-DECISIONS.md MCP-42): go-sdk v1.8.0 holds a
// batch's encoded answers until every request of it is answered, so the
// list answers (each up to MaxToolsBytes, their request slots given
// back) would wait, held, on the slowest request, a tools/call. Over
// stdio a notification beside a tools/list is refused too, and ends the
// session (MCP-48).
const ErrListBatched = "tools_list_batched"

// ErrNotificationBatched names a stdio batch holding a notification (a
// message with a method and no id, or a null one), refused before the
// SDK reads it (docs/SPEC-DECISIONS.md MCP-53): go-sdk v1.8.0's stdio
// connection awaits an answer to a batch's notification too, so it never
// wrote the batch's answer and its host waited for ever. Each request of
// the batch is answered with a JSON-RPC error, code -32600 (invalid
// request), data {"code":4001,"name"}; nothing of it runs, and the
// session goes on.
const ErrNotificationBatched = "notification_batched"

// listenMethod is the method ErrMethodNotServed refuses (SEP-2575; a
// session's notifications come on its GET stream).
const listenMethod = "subscriptions/listen"

// listMethod is the method ErrListBatched keeps alone among a body's
// requests.
const listMethod = "tools/list"

// MaxRequestIDBytes bounds a string id as the SDK decodes it, in bytes of
// UTF-8 (escapes decoded): every answer echoes it.
const MaxRequestIDBytes = 256

// MaxRequestIDText bounds a string id as written, between its quotes: six
// bytes per decoded byte, the longest spelling (\u0041 for A) of an id
// within MaxRequestIDBytes, so no id within that bound is refused for its
// spelling and escapes cannot make its text longer.
const MaxRequestIDText = 6 * MaxRequestIDBytes

// MaxRequestIDInt bounds the magnitude of an integer id, 2^53-1: go-sdk
// v1.8.0 reads a numeric id as a float64, so a larger integer (or a
// fraction, or -0) is answered under another id.
const MaxRequestIDInt = 1<<53 - 1

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

// SlowNumberValues is what a number of the envelope (and of another
// method's arguments, which are the envelope's) counts against
// MaxEnvelopeValues when jsonnum.StrconvFast does not vouch for it: the
// SDK rounds the numbers it decodes with strconv, which takes 15 to 80
// µs for a subnormal (5e-324) or a 20-digit number near a rounding
// boundary (docs/SPEC-DECISIONS.md AGH-20), some 150 times what a plain
// value costs the SDK. A body holds at most 15 such numbers outside a
// tools/call's arguments (JSON-7).
const SlowNumberValues = 256

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
	// roleParamsAlt is a message's member that may be read as params
	// spelt otherwise ("p\u0061rams", "PARAMS"): charged as roleOther,
	// looked into only for its _meta (ErrDuplicateMetaKey).
	roleParamsAlt
	roleMeta // a member of params that may be read as _meta
)

// metaSeen is what one message holds, so far, of what decides its
// call's idempotency key and timeout (ErrDuplicateMetaKey): the members
// that may be read as params, as params._meta, and the known keys of
// those _meta objects (idempotencyBit, timeoutBit).
type metaSeen struct {
	params, metas int
	keys          uint8
}

const (
	idempotencyBit uint8 = 1 << iota // IdempotencyKey seen
	timeoutBit                       // TimeoutKey seen
)

// bodyCounter reads one JSON text without building it: every value
// (scalar, array, object; member names do not count) is charged to the
// arguments' budget (args) when it lies in a message's params.arguments,
// else to the envelope's (other); depth is bounded. It allocates nothing
// but the ids it compares (at most MaxBatch, each at most
// MaxRequestIDBytes) and, with slowCost, the text of a number of more
// than 32 bytes (jsonnum.StrconvFast's argument).
type bodyCounter struct {
	s           []byte
	i           int
	args, other int // values left
	maxDepth    int
	ids         bool // check each message's id (validRequestID)
	// noListen refuses a message whose method is listenMethod
	// (ErrMethodNotServed): the HTTP endpoint's bodies.
	noListen bool
	// seenIDs are the ids of the body's messages so far, decoded
	// (requestIDKey): two messages of a batch under one id are refused.
	seenIDs []string
	// meta is the message being read's (ErrDuplicateMetaKey).
	meta metaSeen
	// soleList refuses a tools/list beside another request
	// (ErrListBatched): the HTTP endpoint's bodies. msg is the message
	// being read's; requests counts the body's messages that may be
	// requests, listed whether one of them may be a tools/list.
	soleList bool
	// notesCount counts a notification (a message with a method and no
	// id, or a null one) beside a tools/list as soleList counts a
	// request: stdio's bodies (MCP-48), whose batch answer go-sdk v1.8.0
	// never writes when the batch holds a notification.
	notesCount bool
	msg        messageSeen
	requests   int
	listed     bool
	// notesSeen records each message (the body, or an element of a
	// batch): notes counts the notifications (a method, and no id the
	// SDK decodes, or a null one), reqIDs holds the id, as written, of
	// each request; for stdio's ErrNotificationBatched (MCP-53) and the
	// HTTP endpoint's drain (MCP-54).
	notesSeen bool
	notes     int
	reqIDs    [][]byte
	// slowCost, when not 0, is what a number jsonnum.StrconvFast does
	// not vouch for counts against the envelope (SlowNumberValues);
	// slowArgs counts those read in arguments, charged when the
	// message's arguments are charged back to the envelope.
	slowCost, slowArgs int
}

// messageSeen is what one message holds, so far, of what ErrListBatched
// reads: whether it has a member that may be read as id, not null, and
// one that may be read as method (both: it may be a request), and whether
// it may be a tools/list (a method whose string decodes to listMethod).
type messageSeen struct {
	id, method, list bool
}

// messageCounter returns the counter of a JSON-RPC body: the check of a
// stdio message (ServeStdio) and, with post, of an HTTP POST's body. Its
// text(roleRoot) reads data as one JSON text of at most maxArgs values in params.arguments (summed
// over a batch's messages), MaxEnvelopeValues elsewhere, and
// MaxBodyDepth of nesting; the error names the first bound met
// (ErrTooManyValues, ErrTooDeep), ErrMalformedBody, ErrInvalidRequestID
// for a message (the body, or an element of a batch) with an id member
// the SDK would not answer as sent (validRequestID), or ErrListBatched
// for a batch holding a message the SDK may read as a tools/list beside
// any other message with a method, a request or a notification (MCP-48:
// go-sdk v1.8.0's stdio connection, mcp/transport.go ioConn.Read, also
// tracks a batch's notifications as requests awaiting an answer, so it
// never writes the answer of a batch holding one, and holds a list's
// answer until the session ends). A member name is matched as written
// ("params", "arguments"): one spelled another way (escapes, letter
// case) is charged to the envelope, the smaller budget; an id and a
// method are found under any spelling the SDK may decode to "id" or
// "method" (escapes decoded, letter case folded). A listen
// (ErrMethodNotServed) passes: over stdio it is one parked request of
// the peer's own session.
//
// With post it also refuses a message (the body, or an element of a
// batch) whose method the SDK may read as "subscriptions/listen" (ErrMethodNotServed): the
// method member under any spelling the SDK may decode to "method",
// its string value with escapes decoded; and whose ErrListBatched
// refuses a tools/list beside another request only, a request being a
// message with a member the SDK may read as id that is not null (the
// SDK's HTTP transport answers a batch beside its notifications).
//
// It records each message's notifications and request ids (noteMessage)
// for stdio's ErrNotificationBatched and the HTTP endpoint's drain.
func messageCounter(data []byte, maxArgs int, post bool) *bodyCounter {
	return &bodyCounter{s: data, args: maxArgs, other: MaxEnvelopeValues, maxDepth: MaxBodyDepth, ids: true, noListen: post,
		soleList: true, notesCount: !post, slowCost: SlowNumberValues, notesSeen: true}
}

// errBody is the named error of a body refused by messageCounter.
func errBody(name string) *amp.Error {
	switch name {
	case ErrTooManyValues:
		return amp.Named(amp.CodeInvalidMessage, ErrTooManyValues, "the request holds too many json values")
	case ErrTooDeep:
		return amp.Named(amp.CodeInvalidMessage, ErrTooDeep, "the request nests json more than %d deep", MaxBodyDepth)
	case ErrBatchTooLarge:
		return amp.Named(amp.CodeInvalidMessage, ErrBatchTooLarge, "the request batches more than %d messages", MaxBatch)
	case ErrDuplicateMetaKey:
		return amp.Named(amp.CodeBadRequest, ErrDuplicateMetaKey, "a message names the idempotency key or the timeout of _meta more than once, or holds one with params or _meta named more than once")
	case ErrListBatched:
		return amp.Named(amp.CodeBadRequest, ErrListBatched, "a tools/list must be the only request of its batch: a batch's answers are held until its last request is answered")
	case ErrMethodNotServed:
		return amp.Named(amp.CodeBadRequest, ErrMethodNotServed, "subscriptions/listen is not served here: a session's notifications come on its GET stream")
	case ErrInvalidRequestID:
		return amp.Named(amp.CodeInvalidMessage, ErrInvalidRequestID, "a json-rpc id must be a string of at most %d bytes, an integer of magnitude at most 2^53-1 without fraction or exponent, or null", MaxRequestIDBytes)
	}
	return amp.Named(amp.CodeInvalidMessage, ErrMalformedBody, "the request is not one json text")
}

// bodyStatus is the HTTP status of a body refused by messageCounter: 400 for
// one that is not a JSON-RPC text the endpoint passes on, 413 for one
// over a bound.
func bodyStatus(refused *amp.Error) int {
	switch refused.Name {
	case ErrMalformedBody, ErrInvalidRequestID, ErrMethodNotServed, ErrDuplicateMetaKey, ErrListBatched:
		return http.StatusBadRequest
	}
	return http.StatusRequestEntityTooLarge
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
		start := c.i
		if !c.number() {
			return errBody(ErrMalformedBody)
		}
		return c.slowNumber(role, c.s[start:c.i])
	}
	return errBody(ErrMalformedBody)
}

// slowNumber charges the number text, in role, that jsonnum.StrconvFast
// does not vouch for (with c.slowCost): SlowNumberValues in all against
// the envelope, or, in arguments, to slowArgs (object charges them when
// the message is not a tools/call). go-sdk v1.8.0 decodes a request's
// _meta into maps (MCP-16) and rounds each number with strconv
// (docs/SPEC-DECISIONS.md JSON-7).
func (c *bodyCounter) slowNumber(role bodyRole, text []byte) error {
	if c.slowCost == 0 || jsonnum.StrconvFast(string(text)) {
		return nil
	}
	if role == roleArgs {
		c.slowArgs++
		return nil
	}
	if c.other -= c.slowCost - 1; c.other < 0 {
		return errBody(ErrTooManyValues)
	}
	return nil
}

func okOr(ok bool) error {
	if ok {
		return nil
	}
	return errBody(ErrMalformedBody)
}

// memberRole is the role of the member key of an object in role. Only
// "params" and "arguments" written exactly so are charged as such; a
// member that may be read as params or _meta under another spelling
// (escapes decoded, ASCII letter case ignored) is still looked into for
// the known _meta keys (noteMeta).
func memberRole(role bodyRole, key []byte) bodyRole {
	switch {
	case role == roleArgs:
		return roleArgs
	case (role == roleRoot || role == roleMessage) && string(key) == "params":
		return roleParams
	case (role == roleRoot || role == roleMessage) && nameFolds(key, "params"):
		return roleParamsAlt
	case role == roleParams && string(key) == "arguments":
		return roleArgs
	case (role == roleParams || role == roleParamsAlt) && nameFolds(key, "_meta"):
		return roleMeta
	}
	return roleOther
}

// noteMeta records the member key, of role member, of an object in role
// for the message's metaSeen; false when it names a known _meta key
// (IdempotencyKey, TimeoutKey: a map's keys, matched exactly once
// escapes are decoded) the message's _meta objects already named.
func (c *bodyCounter) noteMeta(role, member bodyRole, key []byte) bool {
	bit := uint8(0)
	switch {
	case member == roleParams || member == roleParamsAlt:
		c.meta.params++
	case member == roleMeta:
		c.meta.metas++
	case role == roleMeta && asciiDecodes(key, IdempotencyKey, false):
		bit = idempotencyBit
	case role == roleMeta && asciiDecodes(key, TimeoutKey, false):
		bit = timeoutBit
	}
	if c.meta.keys&bit != 0 {
		return false
	}
	c.meta.keys |= bit
	return true
}

// metaAmbiguous reports whether the message just read holds a known
// _meta key where readers may disagree on it: with params, or params'
// _meta, named more than once (the SDK merges two _meta objects and
// keeps the last params; another reader may keep the first of either).
func (c *bodyCounter) metaAmbiguous() bool {
	return c.meta.keys != 0 && (c.meta.params > 1 || c.meta.metas > 1)
}

// noteRequest records the member key, of value v (one JSON value as
// written), of a message for its messageSeen: a member the SDK may read
// as id (any spelling nameFolds takes, each duplicate) that is not null,
// beside one it may read as method, makes it a request (without a
// method it is a response to the server, which is never answered);
// a method whose string decodes to listMethod makes it a tools/list. It
// records nothing unless c.soleList.
func (c *bodyCounter) noteRequest(key, v []byte) {
	switch {
	case !c.soleList:
	case nameFolds(key, "method"):
		c.msg.method = true
		c.msg.list = c.msg.list || stringIs(v, listMethod)
	case nameFolds(key, "id"):
		c.msg.id = c.msg.id || string(v) != "null"
	}
}

// endRequest counts the message just read among the body's requests;
// false when the body then holds a tools/list beside another request:
// go-sdk v1.8.0 writes a batch's answers only once every request of it
// is answered (mcp/streamable.go, stream.deliverLocked), so the list's
// answer, its request slot given back once marshalled (MCP-41), would be
// held for as long as the slowest other request runs (MCP-42). With
// c.notesCount a notification counts as a request (MCP-48). Always
// true unless c.soleList.
func (c *bodyCounter) endRequest() bool {
	if !c.soleList || !c.msg.method || (!c.msg.id && !c.notesCount) {
		return true // a notification or a response: nothing answered, nothing held
	}
	c.requests++
	c.listed = c.listed || c.msg.list
	return !c.listed || c.requests == 1
}

// noteMessage records the object just read, when it is a message (role:
// the body, or an element of a batch) and c.notesSeen: a notification
// when it has a member that may be read as method and id, the value of
// the last member the SDK decodes as "id", is absent or null (go-sdk
// v1.8.0 reads it as a notification, whatever other spellings of id it
// holds), else a request under id. A message without a method is a
// response, never answered: not recorded.
func (c *bodyCounter) noteMessage(role bodyRole, id []byte) {
	switch {
	case !c.notesSeen || (role != roleMessage && role != roleRoot) || !c.msg.method:
	case id == nil || string(id) == "null":
		c.notes++
	default:
		c.reqIDs = append(c.reqIDs, id)
	}
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
	if message {
		c.meta, c.msg = metaSeen{}, messageSeen{}
	}
	// escaped: a member name with an escape, which the SDK decodes (and
	// of duplicates it keeps the last): "m\u0065thod" may be the method
	// it reads, so such a message is never taken for a tools/call.
	argsBefore, slowBefore, isCall, escaped := c.args, c.slowArgs, false, false
	var id []byte // the value of the last member the SDK reads as "id"
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
		member := memberRole(role, key)
		if !c.noteMeta(role, member, key) {
			return errBody(ErrDuplicateMetaKey)
		}
		if err := c.value(depth+1, member); err != nil {
			return err
		}
		if message && string(key) == "method" {
			isCall = string(c.s[start:c.i]) == `"tools/call"`
		}
		if message && c.noListen && nameFolds(key, "method") && stringIs(c.s[start:c.i], listenMethod) {
			return errBody(ErrMethodNotServed)
		}
		if message {
			c.noteRequest(key, c.s[start:c.i])
		}
		if message && c.ids && nameFolds(key, "id") {
			if !validRequestID(c.s[start:c.i]) {
				return errBody(ErrInvalidRequestID)
			}
			if decodesTo(key, "id") {
				id = c.s[start:c.i]
			}
		}
		escaped = escaped || bytes.IndexByte(key, '\\') >= 0
		done, err := c.next('}')
		if err != nil {
			return err
		}
		if done {
			if id != nil && !c.noteID(id) {
				return errBody(ErrInvalidRequestID)
			}
			c.noteMessage(role, id)
			if message && c.metaAmbiguous() {
				return errBody(ErrDuplicateMetaKey)
			}
			if message && !c.endRequest() {
				return errBody(ErrListBatched)
			}
			if used := argsBefore - c.args; message && (!isCall || escaped) && used > 0 {
				c.args += used
				if c.other -= used + (c.slowArgs-slowBefore)*(c.slowCost-1); c.other < 0 {
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
				if c.i+4 >= len(c.s) {
					return nil, false
				}
				if _, ok := hex4(c.s[c.i+1 : c.i+5]); !ok {
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

// nameFolds reports whether the member name key (its text between the
// quotes, escapes as written and already checked by str) decodes to word,
// an ASCII word, under Unicode simple case folding, as encoding/json
// matches a member to a field (so `PARAMS`, and `paramſ` with U+017F
// LATIN SMALL LETTER LONG S, are read as params there; MCP-40, amended).
// It allocates nothing.
func nameFolds(key []byte, word string) bool {
	return asciiDecodes(key, word, true)
}

// stringIs reports whether v, one JSON value as written (checked by
// value), is a string that decodes to exactly word, an ASCII word. It
// allocates nothing.
func stringIs(v []byte, word string) bool {
	return len(v) >= 2 && v[0] == '"' && asciiDecodes(v[1:len(v)-1], word, false)
}

// asciiDecodes reports whether the JSON string text key (between its
// quotes, escapes as written, UTF-8 checked by str) decodes to word, an
// ASCII word, exactly, or, when fold, under Unicode simple case folding
// (foldsTo).
func asciiDecodes(key []byte, word string, fold bool) bool {
	n := 0
	for i := 0; i < len(key); {
		var r rune
		switch ch := key[i]; {
		case ch == '\\':
			i++
			switch key[i] {
			case 'u':
				u, _ := hex4(key[i+1 : i+5])
				r = rune(u) // a surrogate half folds to no ASCII letter
				i += 4
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default: // '"', '\\', '/'
				r = rune(key[i])
			}
			i++
		case ch < utf8.RuneSelf:
			r = rune(ch)
			i++
		default:
			var size int
			r, size = utf8.DecodeRune(key[i:])
			i += size
		}
		if n >= len(word) || (r != rune(word[n]) && (!fold || !foldsTo(r, word[n]))) {
			return false
		}
		n++
	}
	return n == len(word)
}

// foldsTo reports whether r and the ASCII byte w are one letter under
// Unicode simple case folding (unicode.SimpleFold's orbit of r holds w),
// as strings.EqualFold and encoding/json judge them: besides ASCII case,
// U+017F (long s) is s and U+212A (Kelvin sign) is k.
func foldsTo(r rune, w byte) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == rune(w) {
			return true
		}
	}
	return false
}

// hex4 is the UTF-16 code unit the four hexadecimal digits b of a \u
// escape write (encoding/hex: either letter case), false when b is not
// four such digits. It allocates nothing.
func hex4(b []byte) (int, bool) {
	var u [2]byte
	if len(b) != 4 {
		return 0, false
	}
	if _, err := hex.Decode(u[:], b); err != nil {
		return 0, false
	}
	return int(u[0])<<8 | int(u[1]), true
}

// decodesTo reports whether the member name key, as written between its
// quotes, decodes to exactly word: the name go-sdk's decoder matches (it
// decodes escapes and ignores other letter cases).
func decodesTo(key []byte, word string) bool {
	var name string
	return json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &name) == nil && name == word
}

// noteID records a message's id (one validRequestID accepted) and reports
// false when another message of the body carried the same id: go-sdk
// answers a batch by id, so the second of two requests under one id was
// dropped unanswered (and a tools/call among them may still have run).
// MCP forbids a requester to reuse an id. Integers and strings are
// different ids (1 and "1"); a string is compared decoded ("a" and
// "\u0061" are one). A null id is the SDK's to refuse.
func (c *bodyCounter) noteID(v []byte) bool {
	if string(v) == "null" {
		return true
	}
	k := "n" + string(v) // an integer as written is its one spelling
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return false
		}
		k = "s" + s
	}
	if slices.Contains(c.seenIDs, k) {
		return false
	}
	c.seenIDs = append(c.seenIDs, k)
	return true
}

// validRequestID reports whether v, one JSON value as written, is an id
// go-sdk v1.8.0 answers exactly as it was sent: null, a string of at most
// MaxRequestIDBytes decoded and MaxRequestIDText as written, or an
// integer written without sign of zero, fraction or exponent, of
// magnitude at most MaxRequestIDInt (the
// SDK carries a number as a float64 and answers int64 of it, so 1.5 is
// answered as 1, 1e300 as an arbitrary integer, 2^53+1 as 2^53, -0 as 0).
// MCP allows only strings and integers, null being JSON-RPC's id of an
// answer to a request whose id could not be read.
func validRequestID(v []byte) bool {
	switch {
	case string(v) == "null":
		return true
	case v[0] == '"':
		// JSON-1: go-sdk decodes a byte that is not UTF-8 and a lone
		// surrogate escape as U+FFFD, and would answer under that other
		// id ("\ud800" and "\udc00" as one).
		body := v[1 : len(v)-1]
		return len(body) <= MaxRequestIDText && jcs.ExactStrings(v) && decodedLen(body) <= MaxRequestIDBytes
	}
	digits := v
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 || (digits[0] == '0' && len(v) > 1) {
		return false // -0, a leading zero, or beyond 2^53 by its length
	}
	n := int64(0)
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return false // fraction, exponent, or not a number
		}
		n = n*10 + int64(ch-'0')
	}
	return n <= MaxRequestIDInt
}

// decodedLen is the length in bytes of the UTF-8 text the JSON string
// body b (between its quotes, as written, checked by str and
// jcs.ExactStrings) decodes to: an escape counts the bytes of what it
// stands for (a surrogate pair four), every other byte one. It allocates
// nothing.
func decodedLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			n++
			continue
		}
		i++
		if b[i] != 'u' {
			n++
			continue
		}
		r, _ := hex4(b[i+1 : i+5])
		i += 4
		switch {
		case 0xd800 <= r && r <= 0xdbff:
			n += 4 // with its low surrogate, checked by jcs.ExactStrings
			i += 6
		case r < 0x80:
			n++
		case r < 0x800:
			n += 2
		default:
			n += 3
		}
	}
	return n
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
