package agent

import (
	"context"
	"encoding/json"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// ErrParamsType names a refusal of Func: params that passed the
// capability's input schema but do not decode into the handler's input
// type (4004: the schema allows more than the handler's type holds).
const ErrParamsType amp.ErrName = "params_type_mismatch"

// ErrResultType names a result of Func that has no JSON form (5001; the
// caller sees only that the capability failed).
const ErrResultType amp.ErrName = "result_not_json"

// Func adapts a typed function to a Handler. The params, already valid
// against the capability's input schema, are decoded into In as
// encoding/json decodes them (In's json tags name the fields; fields In
// does not have are ignored); the Out that f returns is encoded as
// encoding/json encodes it and then validated against the output schema
// like any Handler's result. Errors f returns are treated as a Handler's
// are: an *amp.Error keeps its code and message, any other error is 5001.
//
// Params that fit the schema but not In (a number for a string field,
// say, where the schema allows both) are refused with 4004
// params_type_mismatch before f runs; the message does not quote them.
func Func[In, Out any](f func(ctx context.Context, in In) (Out, error)) Handler {
	return func(ctx context.Context, params any) (any, error) {
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, amp.Named(amp.CodeSchemaViolation, ErrParamsType, "the params have no json form")
		}
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, amp.Named(amp.CodeSchemaViolation, ErrParamsType, "the params do not fit the capability's input type")
		}
		out, err := f(ctx, in)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(out)
		if err != nil {
			return nil, amp.Named(amp.CodeInternalError, ErrResultType, "the capability failed")
		}
		v, err := offlineschema.ValueFromJSON(data)
		if err != nil {
			return nil, amp.Named(amp.CodeInternalError, ErrResultType, "the capability failed")
		}
		return v, nil
	}
}
