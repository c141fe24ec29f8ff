package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// Observation is one message Handle processed, for metrics (Config.Observe).
type Observation struct {
	// Type is the request's type; 0 when the message did not verify.
	Type amp.Type
	// Code is the outcome: 0 for success, else the code of the signed
	// ERROR, of the CAP_RESULT error (a handler's failure, 5001; its
	// timeout, 5003), or of the unsigned refusal of an unverified message.
	Code amp.Code
	// Name is the outcome's error name, when there is one.
	Name amp.ErrName
	// Capability is the capability id ("name:version") an invocation ran
	// or was refused for, once the version was chosen.
	Capability string
	// Duration is the time Handle spent on the message.
	Duration time.Duration
	// Duplicate reports a reply answered from the idempotency ledger.
	Duplicate bool
}

// note collects what handling one message found out, for its log line and
// the Observation: the capability and the result's code and name.
type note struct {
	capability string
	code       amp.Code
	name       amp.ErrName
}

type noteKey struct{}

func noteFrom(ctx context.Context) *note {
	n, _ := ctx.Value(noteKey{}).(*note)
	return n
}

// reqLog returns the agent's request-scoped logger for ctx.
func (a *Agent) reqLog(ctx context.Context) *slog.Logger { return admission.Log(ctx, a.log) }

// observe reports o to Config.Observe.
func (a *Agent) observe(o Observation) {
	if a.cfg.Observe != nil {
		a.cfg.Observe(o)
	}
}

// LedgerUsage returns the idempotency ledger's current usage (metrics).
func (a *Agent) LedgerUsage() ledger.Usage { return a.ledger.Usage() }
