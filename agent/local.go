package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// LocalCall is one invocation by a local principal: a caller the serving
// process authenticated itself (an MCP session: the user who started the
// stdio server, a bearer token, a client certificate), not by an AMP
// signature. It runs the CAP_INVOKE pipeline of invoke.go unchanged.
type LocalCall struct {
	// Caller is the principal's DID; the policy's allow rules name it,
	// exactly as they name an AMP sender.
	Caller string
	// Capability is the exact capability version to run (by-id form).
	Capability capability.ID
	// Params are the params as CBOR (the JSON data model).
	Params []byte
	// IdempotencyKey, when not empty, makes the call idempotent: every call
	// of Caller for Capability with the same key, for LocalKeyTTL after the
	// first, gets the first one's recorded reply, byte for byte, and the
	// handler runs at most once (the idempotency ledger, as for an AMP
	// message id). Without one, each call is new.
	IdempotencyKey string
	// Timeout bounds the handler's run (0: Config.DefaultTimeout; bounded
	// by Config.MaxTimeout).
	Timeout time.Duration
}

// LocalKeyTTL is how long an idempotency key of a LocalCall is honoured
// (bounded by Config.MaxTTL; with a longer Config.ReplayHorizon, that
// horizon: the call's recorded reply is signed for as long as its ledger
// entry is kept, so a retry within it gets the reply, not a lapsed one).
const LocalKeyTTL = 24 * time.Hour

// MaxIdempotencyKey bounds LocalCall.IdempotencyKey, in bytes.
const MaxIdempotencyKey = 256

// LocalResult is the agent's answer to a LocalCall.
type LocalResult struct {
	// Reply is the agent-signed reply, addressed to the caller with
	// reply_to the call's message id: a CAP_RESULT, or an ERROR for a
	// refusal before the pipeline ran (3001 unauthorized, 4002, 5002 …).
	// Anyone holding the agent's DID document checks it offline.
	Reply []byte
	// Type and Body are Reply's type and body (CBOR), checked: a reply
	// read back from the idempotency ledger is verified under the agent's
	// own key before they are taken from it; a fresh one is the reply
	// this call has just signed.
	Type amp.Type
	Body []byte
	// ID is the id of the CAP_INVOKE the call ran as (derived from the
	// idempotency key, else random).
	ID amp.ID
}

// LocalKeyID is the message id of a keyed LocalCall: the first 16 bytes of
// SHA-256("ampbundle-local-invoke\x00" caller "\x00" capability id "\x00"
// key). A key is thus scoped to its caller and capability version.
func LocalKeyID(caller string, id capability.ID, key string) amp.ID {
	h := sha256.New()
	h.Write([]byte("ampbundle-local-invoke\x00" + caller + "\x00" + id.String() + "\x00" + key))
	var out amp.ID
	copy(out[:], h.Sum(nil))
	return out
}

// InvokeLocal runs call through the agent's CAP_INVOKE pipeline (RFC 004
// §7.2, invoke.go: policy, identity, version, the verified schemas with
// their $ref closure, offline validation of the params, the ledger, the
// handler, validation of the result) as though Caller had sent the
// CAP_INVOKE, and returns the agent's signed reply. A refused call runs
// nothing. The error is for what has no signed reply: the agent closed
// (5002, retryable), a malformed call (4001), a wait given up (5003), a
// reply that does not answer this call (5001 reply_mismatch: its
// reply_to is not the call's id, its to not the caller alone, or its
// from not this agent; a ledger entry corrupted or crossed).
func (a *Agent) InvokeLocal(ctx context.Context, call LocalCall) (LocalResult, error) {
	if !amp.ValidDID(call.Caller) || amp.BareDID(call.Caller) != call.Caller {
		return LocalResult{}, amp.Named(amp.CodeBadRequest, "invalid_caller", "a local caller is a did without fragment")
	}
	if len(call.IdempotencyKey) > MaxIdempotencyKey {
		return LocalResult{}, amp.Named(amp.CodeBadRequest, "idempotency_key_too_long", "an idempotency key has at most %d bytes", MaxIdempotencyKey)
	}
	inv := capability.Invoke{ID: call.Capability, Params: call.Params}
	if call.Timeout > 0 {
		ms := uint64(call.Timeout.Milliseconds())
		inv.TimeoutMS = &ms
	}
	body, err := inv.Encode()
	if err != nil {
		return LocalResult{}, err
	}
	now := a.cfg.Now()
	m := &amp.Message{V: 1, Type: amp.TypeCapInvoke, TS: uint64(now.UnixMilli()), From: call.Caller,
		To: amp.To(a.cfg.Identity.DID), Body: body}
	if call.IdempotencyKey != "" {
		m.ID = LocalKeyID(call.Caller, call.Capability, call.IdempotencyKey)
		m.TTL = uint64(min(max(LocalKeyTTL, a.cfg.ReplayHorizon), a.cfg.MaxTTL).Milliseconds())
	} else if m.ID, err = amp.NewID(a.cfg.Rand, m.TS); err != nil {
		return LocalResult{}, amp.Wrap(amp.CodeInternalError, err, "cannot make a message id")
	}
	out, err := a.handleLocal(ctx, m)
	if err != nil {
		return LocalResult{}, err
	}
	got, err := a.readLocalReply(ctx, out)
	if err != nil {
		return LocalResult{}, err
	}
	// A recorded reply (a keyed retry, or a store shared by a fleet) must
	// answer this very call, from this agent to this caller, or it is not
	// handed out. A fresh one does by construction; the check costs
	// nothing and stays for both.
	if !bytes.Equal(got.ReplyTo, m.ID[:]) || !got.To.Contains(call.Caller) || len(got.To.DIDs) != 1 ||
		amp.BareDID(got.From) != amp.BareDID(a.cfg.Identity.DID) {
		a.log.Error("a recorded reply answers another call; not handed out", "name", "reply_mismatch", "id", m.ID.String())
		return LocalResult{}, amp.Named(amp.CodeInternalError, "reply_mismatch", "internal error")
	}
	return LocalResult{Reply: out.reply, Type: got.Type, Body: got.Body, ID: m.ID}, nil
}

// localReply is the reply to a local call as handleLocal has it.
type localReply struct {
	// reply is the signed reply's bytes.
	reply []byte
	// sent is the message this call signed as reply (its bytes are
	// reply), nil when the reply was not built by this call's pipeline.
	sent *amp.Message
	// recorded: reply was read back from the idempotency ledger
	// (ledger.Done: a keyed retry, a concurrent call with the same key,
	// or a fleet's shared store).
	recorded bool
}

// readLocalReply reads the type and body of a local call's reply. A reply
// read back from the idempotency ledger (recorded) may be stale, corrupted
// or another agent's (a fleet's shared store): it is verified in full
// (Receive: shape, time, the agent's DID document, the signature). A
// reply this call has just built and signed is not read back at all: the
// message it signed is used as it is (MCP-16); one it built without
// handing the message over (an outcome_unknown answer) is only decoded
// (amp.Limits.DecodeOwn). Verifying the agent's own fresh signature again
// would cost an Ed25519 verification per call and prove nothing
// (docs/SPEC-DECISIONS.md MCP-14).
func (a *Agent) readLocalReply(ctx context.Context, out localReply) (*amp.Message, error) {
	if out.sent != nil && !out.recorded && out.sent.Enc == nil {
		return out.sent, nil
	}
	reply := out.reply
	if !out.recorded {
		got, err := a.recv.Limits().DecodeOwn(reply)
		if err != nil {
			a.log.Error("the agent's own reply does not decode", "err", err)
			return nil, amp.Wrap(amp.CodeInternalError, err, "the reply does not decode")
		}
		return got, nil
	}
	got, err := a.recv.Receive(ctx, reply)
	if err != nil {
		a.log.Error("a recorded reply does not verify; not handed out", "err", err)
		return nil, amp.Wrap(amp.CodeInternalError, err, "the reply does not verify")
	}
	return got, nil
}

// handleLocal is Handle after verification, for a message built here:
// the same slot, the same ledger claim, the same processing.
func (a *Agent) handleLocal(ctx context.Context, m *amp.Message) (localReply, error) {
	if !a.life.enter() {
		return localReply{}, agentClosed()
	}
	defer a.life.leave()
	a.maybeSweep()
	ctx, done, err := a.cpu.Enter(ctx)
	if err != nil {
		return localReply{}, err
	}
	defer done()
	// A writer on its way to the ledger from here, as in Handle once a
	// message verifies: not while it waits for a slot (threat: an MCP
	// client's calls waiting for slots held every group commit to its
	// window for writers who were not coming).
	arrival := a.ledger.Expect()
	defer arrival.Done()
	st, err := a.claim(ctx, m, m.From, &arrival)
	arrival.Done()
	switch {
	case errors.Is(err, errLedgerUnavailable):
		sent, reply, err := a.sealError(ctx, m, unavailable(), true)
		return localReply{reply: reply, sent: sent}, err
	case err != nil:
		return localReply{}, err
	}
	switch st.State {
	case ledger.Done:
		if len(st.Reply) == 0 {
			sent, reply, err := a.sealError(ctx, m, unavailable(), true)
			return localReply{reply: reply, sent: sent}, err
		}
		return localReply{reply: st.Reply, recorded: true}, nil
	case ledger.Lost:
		reply, err := a.answerLost(context.WithoutCancel(ctx), m, st.Ticket)
		return localReply{reply: reply}, err
	}
	reply, sent, err := a.handleClaimed(context.WithoutCancel(ctx), m, m.From, st.Ticket)
	return localReply{reply: reply, sent: sent}, err
}

// Served returns the capability versions this agent has a handler for,
// by name then ascending version: a copy of the list New made once (an
// insertion sort at each call cost 10,000 handlers 25 million
// comparisons, per tools/call with a malformed tool name among them,
// docs/SPEC-DECISIONS.md SCALE-21).
func (a *Agent) Served() []capability.ID {
	if len(a.servedIDs) == 0 {
		return nil
	}
	return slices.Clone(a.servedIDs)
}

// Allows reports whether the policy lets caller use the capability name
// (RFC 004 §7.2 steps 2 and 4).
func (a *Agent) Allows(caller, name string) bool {
	return a.cfg.Policy.AllowCaller(caller) && a.cfg.Policy.AllowCapability(caller, name)
}
