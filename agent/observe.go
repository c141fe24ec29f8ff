package agent

import (
	"context"
	"log/slog"
	"time"

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

// request is the request-scoped state a transport attaches with
// WithRemote: where the message came from, and whether the agent logged
// its outcome (so that the transport does not log it again).
type request struct {
	remote string
	logged bool
}

type requestKey struct{}

// WithRemote returns ctx for one transport request from the peer address
// remote: Handle's log lines for the message name it ("remote"), and
// Logged reports afterwards whether Handle logged the message's outcome.
func WithRemote(ctx context.Context, remote string) context.Context {
	return context.WithValue(ctx, requestKey{}, &request{remote: remote})
}

// Logged reports whether Handle, called with ctx from WithRemote, logged
// the outcome of the message (a transport logs the requests it refused
// itself, once).
func Logged(ctx context.Context) bool {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r != nil && r.logged
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
func (a *Agent) reqLog(ctx context.Context) *slog.Logger { return requestLog(ctx, a.log) }

// requestLog returns log for the request of ctx: with the peer's address
// when the transport gave it (WithRemote), and the request marked as
// logged.
func requestLog(ctx context.Context, log *slog.Logger) *slog.Logger {
	r, _ := ctx.Value(requestKey{}).(*request)
	if r == nil {
		return log
	}
	r.logged = true
	return log.With("remote", r.remote)
}

// observe reports o to Config.Observe.
func (a *Agent) observe(o Observation) {
	if a.cfg.Observe != nil {
		a.cfg.Observe(o)
	}
}

// LedgerUsage returns the idempotency ledger's current usage (metrics).
func (a *Agent) LedgerUsage() ledger.Usage { return a.ledger.Usage() }
