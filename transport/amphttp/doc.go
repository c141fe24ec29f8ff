// Package amphttp is the HTTP binding of AMP (the public RFC 002 draft,
// Transport Bindings v0.15; docs/TRANSPORT.md and docs/SPEC-DECISIONS.md
// TRANSPORT-1), both sides.
//
// NewHandler serves any Handler (an *agent.Agent is one): POST
// /amp/v1/messages carries one CBOR AMP message and answers 200 with the
// signed reply, or 202 with no body when the message was a report; GET
// /healthz answers the agent's status. Request bodies are bounded (413),
// and so are the requests and request bytes in flight (503 with
// Retry-After, never queued). A message that does not verify is answered
// 400 with an unsigned CBOR error body (docs/FORMAT.md, "Transport error
// body"): nothing is signed in answer to what did not verify. NewServer
// wraps a handler in an http.Server with timeouts on every phase.
//
// Transport is the client side: it satisfies client.Transport, never uses
// a proxy, reuses connections and bounds replies.
//
// The package imports amp only: a program that calls agents links neither
// the agent runtime nor its store.
package amphttp
