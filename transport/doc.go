// Package transport holds what the AMP bindings (amphttp, ampstcp) share
// about the connections and requests they serve: the peer a connection
// counts against (Peer) and what each peer may hold (Admission,
// LimitListener); the minimum data rate of a body or frame, read
// (RateReader) or written as a reply (RateWriter);
// closing a refused connection without losing its answer
// (CloseAfterAnswer); the status a wrapped handler answered, for metrics
// (StatusRecorder). What the agent runtime shares with the bindings (the
// peer of a message, the request's log line, the fair processing slots,
// the data deadline) is in package admission, which the agent imports
// without importing this package.
package transport
