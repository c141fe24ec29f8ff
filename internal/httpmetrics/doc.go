// Package httpmetrics holds the HTTP metrics that the agent's server
// (ampagent serve) and the mirror (ampbundle serve) both keep, each under
// a name prefix of its own: requests by route and status code, latency by
// route, and the requests being served (docs/CLI.md lists them for each
// tool). Metrics.Serve wraps a handler to count its requests. Every label
// value comes from a bounded set: the caller's route names, never the
// peer's path, and HTTP status codes.
package httpmetrics
