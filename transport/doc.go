// Package transport holds what the AMP bindings (amphttp, ampstcp) and the
// agent runtime share about one transport request: the peer's address for
// the log lines, and whether the outcome was logged already, so that a
// request is logged once, by whoever refused or answered it.
package transport
