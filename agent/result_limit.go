package agent

import (
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// ErrResultTooLarge names the CAP_RESULT error (5001, final) that answers
// an invocation whose result is larger than its capability's largest
// result (Config.MaxResultBytes): the handler ran, its result was not
// sent, and the answer is recorded, so that a replay of the message gets
// it again and the handler does not run again (docs/CLI.md §3.4, "Room
// before the run").
const ErrResultTooLarge amp.ErrName = "result_too_large"

// ErrResultExceedsShare names New's refusal of a capability whose largest
// result cannot fit in one caller's share of the idempotency ledger:
// every invocation of it would be refused, retryably, for ever.
const ErrResultExceedsShare amp.ErrName = "result_exceeds_share"

// resultLimits is the largest result of each served capability: the room
// the ledger reserves for its reply before its handler runs.
type resultLimits struct {
	// byID holds the capabilities with a largest result of their own.
	byID map[capability.ID]int64
	// def is the others' (the ledger's Limits.ReplyReserve); 0 when the
	// ledger does not say its limits: its own default is reserved.
	def int64
}

// of is the largest result of id, in bytes of the recorded reply (0: the
// ledger's default).
func (r resultLimits) of(id capability.ID) int64 {
	if n, ok := r.byID[id]; ok {
		return n
	}
	return r.def
}

// ofNamed is of for a capability id in its text form (the default for
// one that does not parse).
func (r resultLimits) ofNamed(s string) int64 {
	id, err := capability.ParseID(s)
	if err != nil {
		return r.def
	}
	return r.of(id)
}

// newResultLimits checks cfg.MaxResultBytes against the handlers and the
// ledger's limits: each names a handler, is at least
// ledger.MinReplyReserve, and (with the default) fits in one caller's
// share of led (ledger.Limits.MaxReserve).
func newResultLimits(cfg Config, led *ledger.Ledger) (resultLimits, error) {
	r := resultLimits{byID: map[capability.ID]int64{}}
	lim, known := led.Limits()
	if known {
		r.def = lim.ReplyReserve
	}
	for idStr, n := range cfg.MaxResultBytes {
		id, err := capability.ParseID(idStr)
		if err != nil {
			return r, misconfigured("a largest result is set for %q, which is not a capability id", idStr)
		}
		if _, ok := cfg.Handlers[idStr]; !ok {
			return r, misconfigured("a largest result is set for %s, which has no handler", id)
		}
		if n < ledger.MinReplyReserve {
			return r, misconfigured("the largest result of %s must be at least %d bytes (a small error result must fit)", id, ledger.MinReplyReserve)
		}
		r.byID[id] = n
	}
	if !known {
		return r, nil
	}
	share := lim.MaxReserve()
	for idStr := range cfg.Handlers {
		id, err := capability.ParseID(idStr)
		if err != nil {
			continue // New refuses it
		}
		if n := r.of(id); n > share {
			return r, amp.Named(0, ErrResultExceedsShare,
				"the largest result of %s (%d bytes) cannot fit in one caller's share of the idempotency ledger (%d bytes, at most %d of it for one result): every invocation would be refused",
				id, n, lim.PerCaller, share)
		}
	}
	return r, nil
}

// resultTooLarge is the final answer to an invocation whose result is over
// max bytes: the handler ran, its result is not sent.
func resultTooLarge(max int64) *amp.Error {
	e := amp.Named(amp.CodeInternalError, ErrResultTooLarge,
		"the capability ran, but its result is larger than this agent records for it (%d bytes); the operator's limit is too small", max)
	e.Details = map[string]any{"max_result_bytes": max}
	e.Final = true
	return e
}

// limitResult replaces a successful result over id's largest result by
// the result_too_large error, before the reply is built: a result that
// large can never be recorded (the reply that carries it is larger
// still).
func (a *Agent) limitResult(res capability.Result, id capability.ID) capability.Result {
	max := a.results.of(id)
	if res.Status != capability.StatusSuccess || max <= 0 || int64(len(res.Result)) <= max {
		return res
	}
	a.log.Error("result larger than its capability's largest result; answering result_too_large (raise max_result_bytes)",
		"capability", id.String(), "bytes", len(res.Result), "max_result_bytes", max)
	return capability.NewErrorResult(resultTooLarge(max))
}
