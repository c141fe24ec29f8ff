package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/resolver"
)

// invoke answers a CAP_INVOKE. The checks run in exactly the order of
// RFC 004 §7.2; a failure before execution is an ERROR reply:
//
//  1. body shape and required fields                     → 1001 / 4001
//  2. coarse policy on the caller                        → 3001
//  3. capability identity (name, legacy type)            → 4002
//     (a caller who could not use the name anyway gets 3001: existence
//     is never revealed to an unauthorized caller, A.9)
//  4. capability-scoped policy                           → 3001
//  5. version: exact, or negotiated (§6.3), else served  → 4003
//     in place by a provided version under policy range
//     with a signed compatible claim (agent/compat.go)
//  6. input and output schemas, each with its whole $ref closure,
//     resolved from verified, hash-checked bytes; params expanded within
//     an item budget and validated                     → 5002 / 1001 / 4004
//  7. the ledger records, durably, that the handler runs, and     → 5004 / 3005
//     reserves the room of its largest result (Config.MaxResultBytes;
//     a larger one is answered 5001 result_too_large): in the budget, the
//     caller's share and on disk (retryable: budget, disk / share
//     used up; docs/CLI.md §3.4, "Room before the run"); before it, a
//     principal whose detached handlers still run past their deadline
//     beyond its share is refused (5004 handlers_overdue, AGENT-15), and
//     an invocation the embedder's Hooks.Admit refuses (AGENT-25)
//
// Nothing runs before all of these pass. Then the handler runs on its own
// context (the request's timeout_ms, bounded by MaxTimeout; not the
// transport's), and exactly one terminal CAP_RESULT answers: success with
// the result, or error: the handler's failure (5001, or the code of an
// *amp.Error it returns), a timeout (5003), a result that violates the
// output schema (5001, logged).
func (a *Agent) invoke(ctx context.Context, m *amp.Message, t *ledger.Ticket) (amp.Type, []byte, error) {
	// 1.
	inv, err := capability.DecodeInvoke(m.Body)
	if err != nil {
		return 0, nil, err
	}
	// 2.
	caller, cat, err := a.callerCatalog(m)
	if err != nil {
		return 0, nil, err
	}
	// 3. to 5.
	tg, err := a.invokeTarget(ctx, cat, caller, inv)
	if err != nil {
		return 0, nil, err
	}
	// 6.
	in, err := a.invokeInput(tg, caller, inv)
	if err != nil {
		return 0, nil, err
	}
	// Streamed params are used once: by the run, or by a final refusal;
	// a retryable refusal before the run puts them back first (invokeRun).
	defer in.use.done()
	return a.invokeRun(ctx, m.ID, t, caller, inv, tg, in)
}

// invokeTarget is what steps 3 to 5 of invoke settle: the capability
// version that runs, the version asked for, and its catalog entry.
type invokeTarget struct {
	id    capability.ID
	asked capability.Version
	entry resolver.Entry
	// askedOut is the output schema of the version the caller asked for
	// when another version serves it in place (nil otherwise, or when the
	// registry has no descriptor of that version).
	askedOut *capability.SchemaRef
	// gen is the generation of the catalog the target was found in, read
	// before any artifact of it (loadBridge keeps its parse under it).
	gen uint64
}

// invokeTarget runs steps 3 to 5 of invoke for an authorized caller: the
// capability's identity, the capability-scoped policy, the version, and
// its entry in cat.
func (a *Agent) invokeTarget(ctx context.Context, cat *resolver.Catalog, caller string, inv capability.Invoke) (invokeTarget, error) {
	var err error
	// 3.
	name := inv.ID.Name
	if !inv.ByID() {
		if name, err = a.resolveName(cat, caller, inv.Capability, inv.Type); err != nil {
			return invokeTarget{}, err
		}
	}
	versions := a.byName[name]
	if len(versions) == 0 {
		if !a.cfg.Policy.AllowCapability(caller, name) {
			return invokeTarget{}, unauthorized()
		}
		return invokeTarget{}, amp.Named(amp.CodeCapabilityNotFound, "capability_not_found", "no such capability")
	}
	// 4.
	if !a.cfg.Policy.AllowCapability(caller, name) {
		return invokeTarget{}, unauthorized()
	}
	// 5.
	var id capability.ID
	switch {
	case inv.ByID():
		id, err = capability.MatchExact(name, inv.ID.Version, versions)
	case inv.Negotiate != nil:
		id, err = capability.Negotiate(name, *inv.Negotiate, versions)
	default:
		id, err = capability.MatchExact(name, inv.Version, versions)
	}
	asked := id.Version
	if amp.CodeOf(err) == amp.CodeVersionMismatch {
		// The range policy (served in place under a proven claim).
		if served, v, ok := servedInPlace(cat, name, requestedVersions(inv, cat, name), versions); ok {
			id, asked, err = served, v, nil
		}
	}
	if err != nil {
		return invokeTarget{}, err
	}
	if n := noteFrom(ctx); n != nil {
		n.capability = id.String()
	}
	entry, ok := cat.Lookup(id)
	if !ok {
		// Configured, but its bundle is gone: fail closed.
		a.log.Error("capability configured but not in the registry", "capability", id.String())
		return invokeTarget{}, unavailable()
	}
	tg := invokeTarget{id: id, asked: asked, entry: entry, gen: cat.Generation}
	if asked != id.Version {
		if e, ok := cat.Lookup(capability.ID{Name: name, Version: asked}); ok {
			tg.askedOut = &e.Descriptor.OutputSchema
		}
	}
	return tg, nil
}

// invokeInput is what step 6 of invoke settles: the output schema, the
// version bridge (nil when none), the validated params and their use (a
// streamed params' hold; nil-safe).
type invokeInput struct {
	outSchema SchemaValidator
	bridge    *compat.Bridge
	// callerOut is, with a bridge, the output schema of the caller's
	// version, which the bridged result must pass (COMPAT-13).
	callerOut SchemaValidator
	params    any
	use       *paramsUse
}

// invokeInput runs step 6 of invoke: both schemas before anything runs (a
// tampered or missing output schema must not let the handler run and then
// fail; the store's Schema resolves and hash-checks the whole $ref
// closure, offline), the verified bridge of a bridged caller, then the
// params expanded within an item budget and validated. On an error, the
// params' use is done.
func (a *Agent) invokeInput(tg invokeTarget, caller string, inv capability.Invoke) (invokeInput, error) {
	id, desc := tg.id, tg.entry.Descriptor
	inSchema, err := a.reg.Schema(desc.InputSchema)
	if err != nil {
		a.log.Error("input schema unavailable", "capability", id.String(), "err", err)
		return invokeInput{}, unavailable()
	}
	outSchema, err := a.reg.Schema(desc.OutputSchema)
	if err != nil {
		a.log.Error("output schema unavailable", "capability", id.String(), "err", err)
		return invokeInput{}, unavailable()
	}
	// A bridged caller: the verified bridge and the caller's own output
	// schema, before anything runs.
	var bridge *compat.Bridge
	var callerOut SchemaValidator
	if desc.Policy == capability.PolicyBridge && id.Version != tg.asked {
		if bridge, err = a.loadBridge(desc, tg.gen); err != nil {
			return invokeInput{}, err
		}
		if callerOut, err = a.callerOutput(tg); err != nil {
			return invokeInput{}, err
		}
	}
	rawParams, use, err := a.invokeParams(caller, inv)
	if err != nil {
		return invokeInput{}, err
	}
	params, err := offlineschema.ValueFromCBORBudget(rawParams, a.cfg.MaxParamItems)
	if err == nil && bridge != nil {
		// The caller's shape into the provider's, before validation.
		if params, err = bridge.ApplyInput(params); err != nil {
			err = amp.Named(amp.CodeSchemaViolation, compat.ErrBridgeConflict, "the request does not fit the version bridge")
		}
	}
	if err == nil {
		err = inSchema.Validate(params)
	}
	if err != nil {
		use.done()
		return invokeInput{}, err
	}
	return invokeInput{outSchema: outSchema, bridge: bridge, callerOut: callerOut, params: params, use: use}, nil
}

// callerOutput resolves the output schema of the version a bridged caller
// asked for (hash-checked, offline, like the others): what the bridge
// hands it must be valid there. Missing or unreadable: 5002, logged.
func (a *Agent) callerOutput(tg invokeTarget) (SchemaValidator, error) {
	asked := capability.ID{Name: tg.id.Name, Version: tg.asked}
	if tg.askedOut == nil {
		a.log.Error("bridged caller's output schema unavailable", "capability", tg.id.String(), "asked", asked.String(), "err", "the registry has no descriptor of the asked version")
		return nil, unavailable()
	}
	v, err := a.reg.Schema(*tg.askedOut)
	if err != nil {
		a.log.Error("bridged caller's output schema unavailable", "capability", tg.id.String(), "asked", asked.String(), "err", err)
		return nil, unavailable()
	}
	return v, nil
}

// invokeRun is step 7 of invoke and the run: the ledger records, durably,
// that the handler runs (and reserves the room of its largest result),
// then the handler runs and exactly one terminal CAP_RESULT answers.
func (a *Agent) invokeRun(ctx context.Context, msgID amp.ID, t *ledger.Ticket, caller string, inv capability.Invoke, tg invokeTarget, in invokeInput) (amp.Type, []byte, error) {
	id := tg.id
	timeout := a.cfg.DefaultTimeout
	if inv.TimeoutMS != nil {
		// Compared in milliseconds: a product past int64 would wrap to a
		// short deadline the caller did not ask for.
		timeout = a.cfg.MaxTimeout
		if ms := *inv.TimeoutMS; ms > 0 && ms <= uint64(a.cfg.MaxTimeout/time.Millisecond) {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	// Before the record: a principal whose detached handlers overran their
	// deadlines and still run is refused another one (AGENT-15).
	if !a.cfg.InlineHandlers {
		if err := a.overdue.admit(a.principal(caller)); err != nil {
			in.use.putBack() // nothing ran: the sender's retry finds its params
			a.log.Warn("invocation refused: too many handlers still running past their deadline", "name", string(ErrHandlersOverdue), "from", caller, "capability", id.String())
			return 0, nil, err
		}
	}
	// Before the record: the embedder's admission (Hooks.Admit), whose
	// refusal is unrecorded and retryable.
	release, err := a.admit(ctx, id, caller)
	if err != nil {
		in.use.putBack() // nothing ran: the sender's retry finds its params
		return 0, nil, err
	}
	// 7. Accepted: record, durably, that the handler is about to run. From
	// here on, exactly one CAP_RESULT. The entry outlives the handler's
	// longest run (a ttl = 0 message's own expiry may come first).
	t.Extend(a.cfg.Now().Add(timeout + a.cfg.MaxClockSkew))
	t.Reserve(a.results.of(id)) // its largest result (result_limit.go)
	var rerr error
	a.durable(ctx, func() {
		// Until its handler starts, a writer expected soon (its reply),
		// also while it waits for a slot (ledger.Ticket.Handling), unless
		// its peer is at its share: held there (admission.Fair.Park), it
		// may not write for long, and a group commit waiting for it would
		// stall (threat: a flood of slow invocations held at its share
		// made the ledger expect about 120 writers at every group). Then
		// from when its slot is back.
		if rerr = t.Running(); rerr == nil && a.cpu.Resumable(ctx) {
			t.Handling(false)
		}
	})
	if rerr == nil {
		t.Handling(false)
	}
	if err := rerr; err != nil {
		release()
		in.use.putBack() // nothing ran: the sender's retry finds its params
		if ledger.NoRoom(err) {
			// Before the handler runs: nothing ran, the sender retries.
			a.log.Warn("invocation refused: no room in the idempotency ledger", "name", string(amp.NameOf(err)), "from", caller, "usage", fmt.Sprint(a.ledger.Usage()))
			return 0, nil, err
		}
		a.log.Error("idempotency ledger unavailable", "err", err)
		return 0, nil, unavailable()
	}
	res := a.limitResult(a.execute(ctx, &invocation{caller: caller, id: msgID, release: release}, t, id, in, timeout), id)
	if extra, deprecated := compatExtra(tg.entry.Descriptor, id, tg.asked); extra != nil {
		if deprecated {
			a.reqLog(ctx).Warn("deprecated version requested", "capability", id.String(), "requested", tg.asked.String(), "from", caller)
		}
		if res.Extra == nil {
			res.Extra = map[string]cbor.RawMessage{}
		}
		for k, v := range extra {
			res.Extra[k] = v
		}
	}
	if n := noteFrom(ctx); n != nil && res.Error != nil {
		n.code, n.name = res.Error.Code, amp.ErrName(res.Error.Name)
	}
	body, err := res.Encode()
	if err != nil {
		a.log.Error("cannot encode a result", "capability", id.String(), "err", err)
		body, err = capability.NewErrorResult(amp.NewError(amp.CodeInternalError, "internal error")).Encode()
		if err != nil {
			return 0, nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode a result")
		}
	}
	return amp.TypeCapResult, body, nil
}

// execute runs the handler and checks its result; it always returns a
// terminal result.
// A bridge (in.bridge) turns the validated result into the caller's
// shape, which must then pass the caller's output schema (in.callerOut).
// t counts as in its handler while the handler runs, and only then
// (ledger.Ticket.Handling).
func (a *Agent) execute(ctx context.Context, inv *invocation, t *ledger.Ticket, id capability.ID, in invokeInput, timeout time.Duration) capability.Result {
	outSchema, bridge, params := in.outSchema, in.bridge, in.params
	log := a.reqLog(ctx)
	var out any
	var err error
	a.idle(ctx, func() {
		t.Handling(true)
		out, err = a.runHandler(log, inv, id, params, timeout)
		t.Handling(false)
	})
	if err != nil {
		return capability.NewErrorResult(err)
	}
	enc, err := offlineschema.ToCBOR(out)
	if err == nil {
		var model any
		if model, err = offlineschema.ValueFromCBORBudget(enc, a.cfg.MaxParamItems); err == nil {
			err = outSchema.Validate(model)
		}
	}
	if err != nil {
		log.Error("handler result does not match the output schema", "id", inv.msgID(), "capability", id.String(), "err", err,
			"details", fmt.Sprint(amp.AsError(err).Details))
		return capability.NewErrorResult(amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result"))
	}
	if bridge != nil {
		// After output validation: the provider's shape into the caller's.
		var model, bridged any
		if model, err = offlineschema.ValueFromCBORBudget(enc, a.cfg.MaxParamItems); err == nil {
			if bridged, err = bridge.ApplyOutput(model); err == nil {
				// What a bridge writes (a default, a renamed or moved
				// member) is not proven at build time: the caller's
				// schema judges it here (docs/SPEC-DECISIONS.md COMPAT-13).
				if verr := in.callerOut.Validate(bridged); verr != nil {
					log.Error("bridged result does not match the caller's output schema", "id", inv.msgID(), "capability", id.String(), "err", verr)
					return capability.NewErrorResult(amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result"))
				}
				enc, err = offlineschema.ToCBOR(bridged)
			}
		}
		if err != nil {
			log.Error("handler result does not fit the version bridge", "id", inv.msgID(), "capability", id.String(), "err", err)
			return capability.NewErrorResult(amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result"))
		}
	}
	return capability.Result{Status: capability.StatusSuccess, Result: enc}
}

// runHandler runs the handler on its own context, detached from the
// transport's, with the invocation's deadline, turning a panic into 5001
// and the deadline into 5003. With Config.InlineHandlers the handler runs
// on this goroutine (it honours its context: no goroutine start, no
// context switch); otherwise on a goroutine of its own, so that a handler
// that ignores its context cannot hold the reply past the deadline: it
// keeps running in the background, counted overdue for its caller's
// principal until it returns (overdueHandlers), and its result is
// dropped.
func (a *Agent) runHandler(log *slog.Logger, inv *invocation, id capability.ID, params any, timeout time.Duration) (any, error) {
	h := a.handlers[id]
	hctx, cancel := context.WithTimeout(context.WithValue(context.Background(), invocationKey{}, inv), timeout)
	defer cancel()
	if a.cfg.InlineHandlers {
		defer inv.release() // when it returns, runtime.Goexit included
		v, err := callHandler(hctx, log, inv, id, h, params)
		if hctx.Err() != nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
			// Returned after its deadline: the same outcome as detached.
			log.Warn("handler timed out", "id", inv.msgID(), "capability", id.String(), "timeout", timeout)
			return nil, amp.Named(amp.CodeTimeout, "timeout", "the capability did not finish in time")
		}
		return handlerOutcome(log, inv, id, hctx, v, err)
	}
	type outcome struct {
		v   any
		err error
	}
	done := make(chan outcome, 1)
	a.workers.Go(func() {
		defer func() { // deferred: a handler that calls runtime.Goexit returns too
			inv.release() // its admission ends when it returns, even late
			if inv.late.Swap(lateReturned) == lateOverdue {
				a.overdue.add(inv.overdueAs, -1)
			}
		}()
		v, err := callHandler(hctx, log, inv, id, h, params)
		done <- outcome{v, err}
	})
	select {
	case o := <-done:
		return handlerOutcome(log, inv, id, hctx, o.v, o.err)
	case <-hctx.Done():
		// Counted before it is marked, so that the worker, which
		// uncounts only what it finds marked, never uncounts first.
		// Uncounted under the principal it was counted under, whatever
		// an embedder's Policy says of the caller by then.
		inv.overdueAs = a.principal(inv.caller)
		a.overdue.add(inv.overdueAs, 1)
		if !inv.late.CompareAndSwap(lateRunning, lateOverdue) {
			a.overdue.add(inv.overdueAs, -1) // it has just returned
		}
		log.Warn("handler timed out", "id", inv.msgID(), "capability", id.String(), "timeout", timeout)
		return nil, amp.Named(amp.CodeTimeout, "timeout", "the capability did not finish in time")
	}
}

// ErrNotAdmitted names the refusal of an invocation by Hooks.Admit with
// an error that is not a retryable *amp.Error: 5004, retryable, with
// details {"reason": "not_admitted"}, before anything ran, not recorded
// (AGENT-25).
const ErrNotAdmitted amp.ErrName = "not_admitted"

// admit asks Hooks.Admit whether the handler of capability id may start
// now for caller: its release (never nil), or the retryable refusal to
// answer, logged. Without the hook, everything is admitted.
func (a *Agent) admit(ctx context.Context, id capability.ID, caller string) (func(), error) {
	if a.cfg.Admit == nil {
		return func() {}, nil
	}
	release, err := a.cfg.Admit(ctx, Admission{Capability: id.String(), Caller: caller, Principal: a.principal(caller)})
	if err != nil {
		if release != nil {
			release() // a refusal holds nothing
		}
		if ae := (*amp.Error)(nil); !errors.As(err, &ae) || !ae.Code.Retryable() {
			// Fail closed, but never recorded: a final refusal would answer
			// the sender's retries without asking again.
			a.log.Error("admission refused with an error that is not retryable; answering not_admitted", "capability", id.String(), "err", err)
			err = amp.Named(amp.CodeOverloaded, ErrNotAdmitted, "the invocation cannot start now; retry later").
				WithDetails(map[string]any{"reason": string(ErrNotAdmitted)})
		}
		a.log.Warn("invocation refused: not admitted", "name", string(amp.NameOf(err)), "from", caller, "capability", id.String())
		return nil, err
	}
	if release == nil {
		return func() {}, nil
	}
	var once sync.Once
	return func() { once.Do(release) }, nil
}

// DefaultMaxOverdueHandlers is the default of Bounds.MaxOverdueHandlers.
const DefaultMaxOverdueHandlers = 256

// ErrHandlersOverdue names the refusal of an invocation while its caller's
// principal has its share of detached handlers still running past their
// deadline, or every principal together has Bounds.MaxOverdueHandlers:
// 5004, retryable, with details {"reason": "handlers_overdue"}, before
// anything ran, not recorded (AGENT-15).
const ErrHandlersOverdue amp.ErrName = "handlers_overdue"

// overdueHandlers counts the detached handlers still running past their
// invocation's deadline, in all and per principal: a handler that ignores
// its context keeps its goroutine and what it holds after its 5003 was
// sent and its ledger entry finished, so without this count a caller
// could leave any number of them running (threat: a stuck handler
// invoked in a loop with a short timeout_ms). The total counts each
// principal's up to its share: a burst admitted before any overran can
// put one principal past its share, and its excess must not refuse the
// other principals (threat: a burst of hung invocations with a long
// timeout_ms filled the total at once; AGENT-16).
type overdueHandlers struct {
	most, share int // in all; per principal
	mu          sync.Mutex
	total       int // the sum of min(by[p], share)
	by          map[string]int
}

func newOverdueHandlers(most int) *overdueHandlers {
	return &overdueHandlers{most: most, share: max(most/8, 1), by: map[string]int{}}
}

// admit refuses (ErrHandlersOverdue) a principal at its share, or anyone
// once the total (each principal's counted up to its share) is reached.
func (o *overdueHandlers) admit(principal string) error {
	o.mu.Lock()
	full := o.total >= o.most || o.by[principal] >= o.share
	o.mu.Unlock()
	if full {
		return amp.Named(amp.CodeOverloaded, ErrHandlersOverdue,
			"too many earlier invocations are still running past their deadline; retry later").
			WithDetails(map[string]any{"reason": string(ErrHandlersOverdue)})
	}
	return nil
}

// add counts d more overdue handlers of principal.
func (o *overdueHandlers) add(principal string, d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	was := o.by[principal]
	o.total += min(was+d, o.share) - min(was, o.share)
	if n := was + d; n > 0 {
		o.by[principal] = n
	} else {
		delete(o.by, principal)
	}
}

// callHandler calls h, turning a panic into 5001.
func callHandler(ctx context.Context, log *slog.Logger, inv *invocation, id capability.ID, h Handler, params any) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("handler panicked", "id", inv.msgID(), "capability", id.String(), "panic", fmt.Sprint(p))
			v, err = nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
		}
	}()
	return h(ctx, params)
}

// handlerOutcome maps what a handler returned to the invocation's outcome.
func handlerOutcome(log *slog.Logger, inv *invocation, id capability.ID, hctx context.Context, v any, err error) (any, error) {
	if err == nil {
		return v, nil
	}
	if errors.Is(err, context.DeadlineExceeded) && hctx.Err() != nil {
		return nil, amp.Named(amp.CodeTimeout, "timeout", "the capability did not finish in time")
	}
	var ae *amp.Error
	if errors.As(err, &ae) && ae.Code != 0 {
		return nil, ae
	}
	log.Warn("handler failed", "id", inv.msgID(), "capability", id.String(), "err", err)
	return nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
}
