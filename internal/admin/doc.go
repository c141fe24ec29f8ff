// Package admin is the local administration socket of a running agent.
//
// A bbolt store has one writer process, and a running agent is it (its
// replay cache writes). So that operators can still import and remove
// bundles, change trust and read the registry without stopping the agent,
// `ampagent serve` listens on a Unix socket next to the store (mode 0600,
// and only connections from the agent's own user are served), and
// `ampbundle` falls back to it when it finds the store in use. Every change
// goes through the very same resolver.Store methods as offline: verified,
// atomic and audited exactly as an offline import.
//
// The protocol is HTTP/1.1 over the socket, JSON in and out (bundle and
// schema bytes raw). One table, Ops, lists every operation: its route, its
// request and answer, and the resolver.Store call that performs it. The
// server (NewHandler) serves each entry, and a Registry runs each on a
// local store or, as a Client, through the socket: a new operation is an
// entry and a Registry method. docs/FORMAT.md, "Admin socket protocol",
// lists the routes (a test keeps the two alike).
//
// JSON field names are snake_case (resolver.Bundle, resolver.ImportResult,
// resolver.AuditEntry, resolver.Problem); byte fields of audit entries are
// base64, as encoding/json writes them. Every answer carries the store's
// generation in X-Store-Generation. A Client answers Audit, AuditHead and
// VerifyAudit from one snapshot, taken at the first of them.
// Errors are {"error":{"code","amp_code","message","details"}} with a 4xx or 5xx
// status, and come back to the client as the *amp.Error they were. A
// Client waits at most DefaultAnswerWait for the agent to take each part
// of a request or to begin its answer, reads the answer at the minimum
// data rate (a JSON answer in at most 64 MiB), and gives DialStore's
// first request ProbeWait: an agent that hangs fails admin_socket (5003,
// ErrNoAnswer).
package admin
