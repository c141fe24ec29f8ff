// Package client calls AMP agents: Client builds, signs (optionally
// encrypts) and sends PING, CAP_QUERY and CAP_INVOKE over a Transport,
// verifies each reply (signature against the provider's key, sender,
// recipient, reply_to: a mismatch is 4001, RFC 004 A.12/A.13; no DID
// but the provider's is ever resolved, docs/SPEC-DECISIONS.md
// TRANSPORT-17), and retries delivery failures and retryable ERRORs
// with the same message, with exponential backoff and jitter (RFC 001
// §16.3).
//
// Transports: amphttp.Transport (HTTP binding) and ampstcp.Transport
// (AMPS/TCP binding) from the transport packages, Loopback into an
// agent in the same process, or any TransportFunc.
//
// Post sends a message that may get no reply (a report, a stream chunk),
// without waiting on a transport that can (OneWay: ampstcp.Transport).
// SendStream sends content as an RFC 001 §6.2 stream and returns its
// verified ACK; InvokeLarge streams the params of a CAP_INVOKE too large
// for one message and then invokes (docs/SPEC-DECISIONS.md STREAM-6).
//
// Outbox keeps outbound messages until they are answered, confirmed by a
// report (ACK, PROC_OK, PROC_FAIL, ERROR: RFC 001 §16.1 ack_source rules),
// refused for good by the relay they went through (docs/SPEC-DECISIONS.md
// TRANSPORT-25) or expired (§16.5), and exposes their state; its Receive
// method takes the Receipts an agent hands over (agent.Config.Receipts).
// A relay ACK counts only from a relay that the sender's or the
// recipient's DID document lists as an AgentMessagingRelay service
// (ReadDIDDocuments reads the operator's files; docs/SPEC-DECISIONS.md
// REPORT-2).
//
// The package depends on amp and capability only: a program that only
// calls agents links neither the agent runtime, nor the registry's
// database (bbolt), nor the JSON Schema compiler. A test keeps it so.
package client
