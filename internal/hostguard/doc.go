// Package hostguard is the module's one rule against DNS rebinding for
// the HTTP listeners that serve the operator rather than the network
// (docs/SPEC-DECISIONS.md CATALOG-20, MCP-5): the agent's
// catalog and metrics listeners, the mirror of 'ampbundle serve' on
// loopback and its metrics listener, and the MCP endpoint of
// 'ampagent serve --mcp-listen'.
//
// A page of rebind.attacker.example whose name then resolves to 127.0.0.1
// reaches a loopback listener with "Host: rebind.attacker.example:PORT"
// and reads the answer as its own origin's. A Guard refuses such a Host
// before the route runs: it serves "localhost", a name the operator gave
// (--allow-host), or an IP literal (a loopback one on a connection that
// arrived on a loopback address).
package hostguard
