// Package transport holds what the AMP bindings (amphttp, ampstcp) and the
// agent runtime share about one transport request: the peer's address for
// the log lines, and whether the outcome was logged already, so that a
// request is logged once, by whoever refused or answered it; the peer a
// request counts against (Peer, WithPeer) and what each peer may hold
// (Admission, LimitListener); the minimum data rate of a body or frame
// (RateReader); and the agent's processing slots, handed out fairly by
// peer (Fair).
package transport
