// Package agent is the embedded AMP agent runtime: give it an identity,
// the local registry and a policy, register handlers, hand it message
// bytes, get signed reply bytes back.
//
//	a, err := agent.New(agent.Config{
//		Core: agent.Core{
//			Identity: id,    // did:key, or a did:web documented in the store
//			Store:    store, // *resolver.Store: schemas, DIDs (ledger beside it)
//			Policy:   agent.Rules{{Caller: "*", Prefix: "org.example"}},
//			Handlers: map[string]agent.Handler{"org.example.translate.text:2.1.0": translate},
//			Now:      time.Now, Rand: rand.Reader,
//		},
//		Bounds: agent.Bounds{MaxTimeout: 2 * time.Minute}, // zero fields: Bounds.WithDefaults
//		Hooks:  agent.Hooks{Logger: logger},
//	})
//	reply, err := a.Handle(ctx, requestBytes)
//
// # Pipeline
//
// Handle validates the message with amp (shape, version, type, fields,
// time, sender keys, decryption, signature); a message that does not verify
// gets no signed answer at all (an *UnverifiedError, which the HTTP binding
// answers 400 with an unsigned CBOR error body). It refuses with 3001 a
// message whose "to" does not name this agent (a message signed for another
// agent is never acted on here), answers a duplicate from the ledger, then
// dispatches by type: PING (PONG), HELLO (HELLO_ACK or
// HELLO_REJECT), CAP_QUERY (CAP_DECLARE, paged) and CAP_INVOKE (CAP_RESULT);
// anything else is ERROR 1005. Every reply is signed by the agent, addressed
// to the sender, carries reply_to = the request's id, and is encrypted when
// the request was (docs/ARCHITECTURE.md, invariant 6).
//
// CAP_INVOKE is checked in the order of RFC 004 §7.2: body shape (4001),
// coarse policy (3001), capability identity (4002), capability policy
// (3001), version and negotiation (4003), input schema (4004), and a caller
// who may not use a capability gets the same 3001 whether it exists or not.
// A legacy type is resolved among the capabilities the caller may use only,
// so no answer, message or candidate list tells it about the others; a type
// that an installed bundle claims is never resolved by its slug, and a
// caller that may use none of its claims gets the 4002 of a type that
// exists nowhere (docs/SPEC-DECISIONS.md CAP-12).
// Both schemas (input and output, each with its whole $ref closure) come
// only from the registry, hash-verified, compiled offline, and are resolved
// before the handler starts; any doubt is 5002 and nothing runs or is
// validated against unverified bytes. Params are expanded within an item
// budget (Config.MaxParamItems). An accepted invocation gets exactly one
// terminal CAP_RESULT (RFC 004 §2.2): the handler's result, validated
// against the output schema, or an error (5001 for a handler failure, an
// invalid result or an outcome lost in a crash, 5003 for a timeout). The
// handler runs on its own context with the invocation's deadline: a caller
// that disconnects changes nothing, and its retry gets the real result.
// By default each handler runs on a goroutine of its own, so that the 5003
// is sent at the deadline even if the handler never returns; with
// Config.InlineHandlers (handlers that honour their context) it runs on
// the goroutine that called Handle, which saves a goroutine start and two
// context switches per invocation, and a late return is still 5003.
// Detached handlers still running past their deadline are counted per
// principal (Bounds.MaxOverdueHandlers): a principal at its share is
// refused further invocations, retryably, until they return
// (docs/SPEC-DECISIONS.md AGENT-15).
//
// # Idempotency
//
// The agent's idempotency ledger (package ledger; by default a write-ahead
// log of its own beside the registry, Store.Path() + ".ledger.wal") keeps the reply
// to (sender, message id) for the message's ttl (RFC 001 §8.4, §16.2): a
// duplicate, concurrent or after a restart, gets the byte-identical reply,
// and a handler never runs twice. Just before a handler runs, the ledger
// records durably that it runs; the reply is durable before it is sent; if
// the process dies in between, a retry gets a final CAP_RESULT 5001
// "outcome unknown" instead of a second execution. Only invocations that
// ran a handler, and stream messages that opened or handed over a stream,
// are written durably: PING, queries, STREAM_DATA and refusals live in a
// bounded memory cache, and retryable refusals are not kept at all, so that
// a retry with the same id (RFC 001 §16.3) is evaluated again. The ledger
// has a byte budget and a per-caller share; beyond them an invocation is
// refused, retryably, before anything runs. A running entry is kept at
// least as long as the handler may run.
//
// # Quotas per principal
//
// The per-caller quotas (the ledger's share, the share of its volatile
// cache, open streams) are charged to the caller's principal, not its DID
// (Principals, PrincipalOf): with Rules, a caller named by a rule is its
// own principal, and every other caller — admitted by a "*" rule, or not at
// all — shares one, SharedPrincipal, since a did:key costs nothing to make.
// A Policy that does not implement Principals charges everyone to
// SharedPrincipal. See docs/SPEC-DECISIONS.md AGENT-7.
//
// # Streams
//
// With Config.Streams set, the agent receives STREAM_START, STREAM_DATA
// and STREAM_END (RFC 001 §6.2–6.3). Each of them goes through the whole
// pipeline alone (signature, recipient, idempotency ledger, the policy's
// AllowCaller); streams are keyed by (sender, stream_id). STREAM_START
// reserves the stream's total_size against StreamLimits (open streams per
// sender and in all, bytes in flight in all and their shares per sender,
// per peer and for unnamed callers: beyond them a retryable 5004 refusal;
// a stalled stream gives back what it did not receive, STREAM-7) before
// any memory or disk is used; content up to
// StreamLimits.SpoolThreshold is held in memory, larger content is written
// to a temporary file in StreamLimits.SpoolDir. Chunks may arrive in any
// order; an identical duplicate is ignored, a different one discards the
// stream. STREAM_START and STREAM_DATA get no reply (HTTP 202, no TCP
// frame); a refusal gets an ERROR. A STREAM_START that opened a stream is
// recorded durably in the ledger: replayed after a restart, or once the
// memory cache forgot it, it opens nothing (docs/SPEC-DECISIONS.md
// STREAM-13). STREAM_END is answered, once, by an ACK
// (stream_id, chunks_received, verified: true) after every chunk arrived,
// the SHA-256 of the content matched and Config.Streams accepted it; or by
// an ERROR whose details.reason names the cause (missing_chunks,
// hash_mismatch, ...). The ACK of an accepted stream is recorded durably
// in the ledger, like a handler's result: a replayed STREAM_END gets the
// same ACK and the application never sees a stream twice. A retryable
// refusal (a spool file error, a retryable *amp.Error of the application)
// keeps the stream, so that the retry can succeed. A stream idle for StreamLimits.Idle (agent clock) is
// reclaimed and its spool file removed (Agent.ReclaimStreams; Handle does
// it too). See docs/SPEC-DECISIONS.md STREAM-1..5.
//
// A stream may also carry the params of a CAP_INVOKE too large for one
// message (Config.ParamStreams; docs/SPEC-DECISIONS.md STREAM-6): a
// stream of content type capability.ParamsContentType is kept, not handed
// to Config.Streams, until a CAP_INVOKE of the same sender names it and
// its SHA-256 in params_stream; its content then goes through the
// pipeline as the invocation's params, validated like inline ones, once.
//
// # Paging
//
// CAP_DECLARE carries next_cursor (docs/SPEC-DECISIONS.md CAP-1) when more pages exist. Cursors
// are opaque, HMAC-protected, bound to the caller, the filter (and the
// name a legacy type resolved to, docs/SPEC-DECISIONS.md CAP-13) and the
// order, and expire; anything else is 4001. Paging is keyset paging: no
// duplicates or skips within an unchanged registry; across an import or
// removal the next page continues after the same position (see query.go).
//
// # Callers and transports
//
// Calling agents is package client (Client, Outbox); the bindings are
// packages transport/amphttp and transport/ampstcp, which serve an *Agent
// and carry a client's messages; client.Loopback is a client.Transport
// into an Agent in the same process. What the bindings and the agent
// share (the peer of a message, its fair processing slot, the request's
// log line) is package admission: the agent imports neither client nor
// transport.
//
// # Embedding
//
// The examples (Example, Example_http) import only public packages and
// can be copied into another module: a local registry (resolver.Open,
// TrustAdd, Import), an Agent with its handlers, served in-process through
// client.Loopback or over HTTP through amphttp.NewHandler and
// amphttp.NewServer, and a client.Client. Key files are read with package
// keyfile.
// A program that embeds the agent holds its store open as `ampagent serve`
// does. The admin socket through which `ampbundle` imports, removes and
// inspects meanwhile (docs/CLI.md §1.7) is not the agent's: `ampagent
// serve` and `ampagent mcp` serve it (internal/admin).
//
// # Shutdown
//
// The agent owns every goroutine it starts: detached handlers (and the
// workers of internal/workers that run them) and background ledger
// sweeps. Shutdown(ctx) refuses every message from its start (5002
// ErrAgentClosed, retryable, before any verification), starts no sweep,
// waits until ctx ends for the calls in progress and those goroutines,
// then closes the open streams and the ledger when the agent opened it
// (after its last sweep: no sweep reaches a closed ledger). It never
// cancels a handler; at its deadline it returns ErrShutdownAbandoned,
// counting what is still running. Close is Shutdown with a deadline of
// Config.MaxTimeout. A message waiting for a processing slot whose
// context ends gives up the wait (5003 admission.ErrSlotWaitEnded,
// retryable): nothing of it ran or was recorded (docs/SPEC-DECISIONS.md
// AGENT-11).
package agent
