// Package mcpbridge serves an agent's verified catalog over the Model
// Context Protocol (MCP), with github.com/modelcontextprotocol/go-sdk.
//
// Each capability version the agent serves, and the caller's principal may
// use under the agent's allow policy, is one MCP tool:
//
//   - its name is ToolName of the capability id, a reversible mapping into
//     MCP's tool-name alphabet (ParseToolName reverses it);
//   - its inputSchema and outputSchema are the bundle's stored schemas with
//     their whole $ref closure, built from hash-verified bytes once per
//     catalog generation (a compound schema document when the closure
//     has more than the root); a schema the MCP SDK would refuse (an
//     "x-mcp-header" it does not accept) is not offered;
//   - its _meta[MetaKey] names the bundle (id, version), the capability id,
//     the SHA-256 of every schema artifact and the publisher keys whose
//     signatures verified.
//
// tools/call never reaches the SDK's tool dispatch or its validator: a
// receiving middleware hands the arguments to agent.Agent.InvokeLocal,
// the agent's CAP_INVOKE pipeline (our offline validation against the
// verified input schema, the idempotency ledger, the handler, output
// validation). The result is structuredContent plus a text rendering; its
// _meta carries the agent-signed CAP_RESULT (or ERROR), so a caller can
// check offline what ran. A refusal is an isError result with the AMP code
// (5002 for a tool whose bundle was removed, revoked, expired or tampered
// with; no handler runs).
//
// A Bridge keeps one MCP server per principal and compares its tools with
// the store (Run): a verified import or a removal changes them and the
// SDK sends notifications/tools/list_changed to the live sessions.
//
// Transports: ServeStdio (the local user who started the process is the
// principal) and HTTPHandler (streamable HTTP: bearer tokens or client
// certificates mapped to principals, the Origin check, the AMP binding's
// bounds, capped sessions per principal and in all, idle principals
// evicted). The wire details are in docs/FORMAT.md, "MCP tools"; the
// decisions in docs/SPEC-DECISIONS.md, MCP-1 to MCP-13.
package mcpbridge
