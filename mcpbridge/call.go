package mcpbridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// IdempotencyKey is the _meta key of a tools/call whose value (a string of
// 1 to agent.MaxIdempotencyKey bytes of UTF-8 without U+FFFD) makes the
// call idempotent. The key is never echoed (docs/SPEC-DECISIONS.md
// MCP-39); a message naming it twice, or holding it with params or _meta
// named twice, is refused before the SDK reads it (ErrDuplicateMetaKey,
// MCP-40).
const IdempotencyKey = "io.github.ampbundle/idempotency_key"

// TimeoutKey is the _meta key of a tools/call's timeout in milliseconds
// (bounded by the agent's largest timeout); named twice, refused as
// IdempotencyKey is (ErrDuplicateMetaKey).
const TimeoutKey = "io.github.ampbundle/timeout_ms"

// ResultMeta is a tools/call result's _meta[MetaKey].
type ResultMeta struct {
	// Capability is the capability version that ran (or was refused).
	Capability string `json:"capability,omitempty"`
	// Type is the AMP type of Reply: "CAP_RESULT" or "ERROR".
	Type string `json:"type,omitempty"`
	// Reply is the agent-signed reply (CAP_RESULT or ERROR), base64
	// (standard, padded): anyone with the agent's DID document checks it
	// offline.
	Reply string `json:"reply,omitempty"`
	// MessageID is the hex id of the CAP_INVOKE the call ran as.
	MessageID string `json:"message_id,omitempty"`
	// Agent is the agent's DID.
	Agent string `json:"agent,omitempty"`
	// Code and Name are the error's, for an error result.
	Code uint16 `json:"code,omitempty"`
	Name string `json:"name,omitempty"`
}

// call answers one tools/call: the arguments as they came, to the agent's
// CAP_INVOKE pipeline (our offline validation against the verified input
// schema, the handler, validation of the result). Every outcome is a
// result; a refusal is isError with its AMP code.
func (b *Bridge) call(ctx context.Context, principal string, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	ag := b.opts.Agent()
	name := ""
	if p != nil {
		name = p.Name
	}
	id, err := b.toolID(name)
	var rm *ResultMeta
	if err == nil {
		rm = &ResultMeta{Capability: id.String(), Agent: ag.DID()}
	}
	// The policy first: a principal it refuses gets 3001 whatever the
	// name, well-formed or not (RFC 004 A.9; MCP-3).
	if (err == nil && !ag.Allows(principal, id.Name)) || (err != nil && !mayCallAny(ag, principal)) {
		// Never says whether the tool exists (RFC 004 A.9).
		return errorResult(amp.Named(amp.CodeUnauthorized, "unauthorized", "not authorized"), rm)
	}
	if p == nil {
		return errorResult(amp.Named(amp.CodeBadRequest, "missing_params", "tools/call without params"), nil)
	}
	if err != nil {
		return errorResult(err, nil)
	}
	call := agent.LocalCall{Caller: principal, Capability: id}
	if call.IdempotencyKey, call.Timeout, err = callMeta(p.Meta); err != nil {
		return errorResult(err, rm)
	}
	// The principal's slot, held until InvokeLocal returns (MCP-30):
	// taken before the arguments are parsed, so that parses count too,
	// those of all principals together as well (MCP-47).
	if refused := b.calls.enter(principal); refused != gateOpen {
		return errorResult(tooManyCalls(refused), rm)
	}
	defer b.calls.leave(principal)
	if call.Params, err = b.callParams(p.Arguments); err != nil {
		return errorResult(err, rm)
	}
	res, err := ag.InvokeLocal(ctx, call)
	if err != nil {
		return errorResult(err, rm)
	}
	rm.Reply = encodeReply(res.Reply)
	rm.MessageID = res.ID.String()
	rm.Type = res.Type.Name()
	switch res.Type {
	case amp.TypeError:
		eb, err := amp.DecodeError(res.Body)
		if err != nil {
			return errorResult(amp.Named(amp.CodeInternalError, "invalid_reply", "internal error"), rm)
		}
		return errorResult(eb.AsError(), rm)
	case amp.TypeCapResult:
	default:
		return errorResult(amp.Named(amp.CodeInternalError, "invalid_reply", "internal error"), rm)
	}
	r, err := capability.DecodeResult(res.Body)
	if err != nil {
		return errorResult(amp.Named(amp.CodeInternalError, "invalid_reply", "internal error"), rm)
	}
	if r.Status != capability.StatusSuccess || r.Error != nil {
		e := amp.Named(amp.CodeInternalError, "", "the capability failed")
		if r.Error != nil {
			// The reply's name and message as the Agent signed them:
			// a reply another Agent built, or one the idempotency
			// ledger kept from before TRANSPORT-24, may carry a
			// provider's name as sent; errorResult prints it only
			// when it is a name (amp.SafeName).
			e = amp.Named(r.Error.Code, amp.ErrName(r.Error.Name), "%s", r.Error.Message)
		}
		return errorResult(e, rm)
	}
	out, err := offlineschema.ValueFromCBOR(r.Result)
	var text []byte
	if err == nil {
		text, err = json.Marshal(out)
	}
	if err != nil {
		return errorResult(amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result"), rm)
	}
	cr := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, Meta: mcp.Meta{MetaKey: rm}}
	if _, isObj := out.(map[string]any); isObj {
		cr.StructuredContent = json.RawMessage(text)
	}
	return cr
}

// encodeReply is the reply in base64 (standard, padded), written once
// into the string it returns: EncodeToString writes it and then copies
// it into a string, one more copy of the signed reply, about 4/3 of the
// result, per answer (docs/SPEC-DECISIONS.md MCP-46).
func encodeReply(reply []byte) string {
	var sb strings.Builder
	sb.Grow(base64.StdEncoding.EncodedLen(len(reply)))
	w := base64.NewEncoder(base64.StdEncoding, &sb)
	w.Write(reply) // a strings.Builder's writes do not fail
	w.Close()
	return sb.String()
}

// callParams turns a call's arguments into CBOR params: parsed
// (offlineschema.ValueFromJSONBudget: their values counted first, nothing
// allocated, against the agent's item budget) and encoded. More items
// than the budget, or nesting past offlineschema.MaxDepth, is the error
// the AMP binding gives (1001 limit_exceeded, MCP-32). Absent arguments
// are {}.
func (b *Bridge) callParams(raw json.RawMessage) ([]byte, error) {
	args := []byte(raw)
	if len(args) == 0 {
		args = []byte("{}") // MCP: arguments may be left out
	}
	v, err := offlineschema.ValueFromJSONBudget(args, b.opts.MaxParamItems)
	if amp.NameOf(err) == offlineschema.ErrLimitExceeded {
		// One message for items and depth: the depth error's pointer
		// would quote the arguments' member names.
		return nil, amp.Named(amp.CodeInvalidMessage, offlineschema.ErrLimitExceeded, "value has more items than this agent accepts")
	} else if err != nil {
		return nil, amp.Named(amp.CodeBadRequest, "invalid_arguments", "the arguments are not valid json")
	}
	params, err := offlineschema.ToCBOR(v)
	if err != nil {
		return nil, amp.Named(amp.CodeBadRequest, "invalid_arguments", "the arguments cannot be carried")
	}
	return params, nil
}

// mayCallAny reports whether the policy lets principal use any capability
// ag serves: one it does not gets 3001 even for a name that names no
// tool.
func mayCallAny(ag Agent, principal string) bool {
	for _, id := range ag.Served() {
		if ag.Allows(principal, id.Name) {
			return true
		}
	}
	return false
}

// callMeta reads the idempotency key and the timeout of a call's _meta.
// A key holding U+FFFD (or a byte that is not UTF-8) is refused: the SDK's
// decoder writes U+FFFD for every lone surrogate escape and every byte
// that is not UTF-8, so different keys a host sent ("\ud800", "\udc00")
// would reach the agent as one, and the second call get the first's
// reply without running (docs/SPEC-DECISIONS.md MCP-39).
func callMeta(m mcp.Meta) (key string, timeout time.Duration, err error) {
	if v, ok := m[IdempotencyKey]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" || len(s) > agent.MaxIdempotencyKey || strings.ContainsRune(s, utf8.RuneError) {
			return "", 0, amp.Named(amp.CodeBadRequest, "invalid_idempotency_key", "the idempotency key is a string of 1 to %d bytes of utf-8 without u+fffd", agent.MaxIdempotencyKey)
		}
		key = s
	}
	if v, ok := m[TimeoutKey]; ok {
		f, isNum := v.(float64)
		if !isNum || f < 1 || f > float64(time.Hour/time.Millisecond) || f != float64(int64(f)) {
			return "", 0, amp.Named(amp.CodeBadRequest, "invalid_timeout", "the timeout is a whole number of milliseconds, 1 to 3600000")
		}
		timeout = time.Duration(f) * time.Millisecond
	}
	return key, timeout, nil
}

// errorResult is an isError result: the text says the code, name and
// message (never raw input), _meta[MetaKey] carries them and, when the
// agent signed one, the reply. The name is amp.SafeName's (a name that
// is not one, a provider's as sent, becomes the code's) and the message
// amp.SafeMessage's (escaped and bounded): both may come from a
// provider's CAP_RESULT error that a handler handed on, and the MCP host
// shows them to a model or a person (docs/SPEC-DECISIONS.md
// TRANSPORT-24).
func errorResult(err error, rm *ResultMeta) *mcp.CallToolResult {
	e := amp.AsError(err)
	if rm == nil {
		rm = &ResultMeta{}
	}
	name := ""
	if e.Name != "" {
		name = string(amp.SafeName(e))
	}
	rm.Code, rm.Name = uint16(e.Code), name
	text := fmt.Sprintf("error %d", e.Code)
	if name != "" {
		text += " " + name
	}
	text += ": " + amp.SafeMessage(e)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, Meta: mcp.Meta{MetaKey: rm}}
}
