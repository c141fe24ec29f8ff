// Command ampagent is the AMP agent tool: the agent daemon (serve), its
// client (query, invoke), identities (keygen), message inspection and
// verification (msg), and a self-contained demo of the whole job (demo).
//
// See docs/CLI.md for every command's contract, docs/reference/ for its flags.
package main
