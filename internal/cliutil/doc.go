// Package cliutil holds what the ampbundle and ampagent commands share: the
// CLI contract of docs/CLI.md (flags before or after positional arguments,
// --json output, exit codes), the I/O environment injected into commands,
// and small input helpers.
//
// Exit codes: 0 success, 1 failure, 2 usage error. With --json, success
// prints one JSON document on stdout and failure prints
//
//	{"error":{"code":"<snake_case>","amp_code":<uint, when one applies>,"message":"..."}}
//
// on stdout. Without --json, output is for humans and errors go to stderr.
package cliutil
