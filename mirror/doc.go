// Package mirror distributes the bundles of one store inside a private
// network: a read-only HTTP mirror of an import station's store (Server)
// and the client that pulls from it into another store (Sync).
//
// The mirror is never trusted. It serves exactly the bytes that were
// imported (the signed bundle files, re-created by resolver.Store.Export,
// which checks every artifact hash on the way out), and the syncing side
// verifies each file exactly as 'ampbundle import' does before anything
// reaches its store: a mirror that serves a tampered, truncated or older
// file changes nothing.
//
// Endpoints (docs/FORMAT.md, "Mirror"):
//
//	GET /.well-known/ampbundle-registry.json   the capabilities document
//	GET /.well-known/acdp.json                 the ACDP-0007 §3 document
//	GET /index.json                            what is installed, with hashes
//	GET /bundles/{bundle_id}                   the signed bundle file
//	GET /cap-registry/{name}/{version}/descriptor.cbor   RFC 004 §5.1
//	GET /cap-registry/{name}/{version}/descriptor.json
//	GET /cap-registry/{name}/{version}/input.schema.json
//	GET /cap-registry/{name}/{version}/output.schema.json
//	GET /healthz, GET /readyz                  liveness and readiness (JSON)
//
// MetricsHandler serves the server's Prometheus metrics, for a listener of
// their own.
//
// Every answer carries a strong ETag (the content hash); GET and HEAD
// honour If-None-Match, bundle files honour Range and If-Range. Every
// failure is one JSON error envelope {"error":{"code","message"}} with a
// stable code; request content is never echoed.
//
// The server reads the store through a Source that it opens only while it
// takes a snapshot (at start, then whenever the store generation changes),
// so an import on the station is not blocked by the mirror for longer than
// one snapshot. A Source over a store that a running agent holds (its
// admin socket) is a LiveSource: the server asks it for the generation at
// every refresh, so it serves each of the agent's commits at the next one.
package mirror
