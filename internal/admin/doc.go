// Package admin is the local administration socket of a running agent.
//
// A bbolt store has one writer process, and a running agent is it (its
// replay cache writes). So that operators can still import and remove
// bundles, change trust and read the registry without stopping the agent,
// `ampagent serve` listens on a Unix socket next to the store (mode 0600,
// and only connections from the agent's own user are served), and
// `ampbundle` falls back to it when it finds the store in use. Every change
// goes through the very same resolver.Store methods as offline: verified,
// atomic and audited exactly as an offline import.
//
// The protocol is HTTP/1.1 over the socket, JSON in and out (bundle and
// schema bytes raw):
//
//	POST /v1/import?allow_downgrade=1&source=URL   body: the bundle file  -> resolver.ImportResult
//	                                    (both parameters optional; source, URL-encoded, is
//	                                    recorded in the audit entry; an older agent ignores it)
//	POST /v1/remove                     {"bundle_id"}          -> {"bundle_id","version"}
//	POST /v1/trust/add                  {"name","key","scopes"} (key: a did:key)
//	POST /v1/trust/remove               {"name"}
//	GET  /v1/trust                                             -> [TrustKey]
//	GET  /v1/generation                                        -> {"generation"}
//	GET  /v1/bundles                                           -> [resolver.Bundle]
//	GET  /v1/catalog                                           -> Catalog
//	GET  /v1/check                                             -> [resolver.Problem]
//	GET  /v1/audit                                             -> {"entries","head","verified","error"}
//	GET  /v1/export?bundle_id=B                                -> the bundle file
//	POST /v1/resolve                    {"bundle_id","artifact_key","hash_alg","hash"} (hash in hex)
//	                                                           -> {"data"} (the verified bytes, base64)
//
// JSON field names are snake_case (resolver.Bundle, resolver.ImportResult,
// resolver.AuditEntry, resolver.Problem); byte fields of audit entries are
// base64, as encoding/json writes them. Every answer carries the store's
// generation in X-Store-Generation. A Client answers Audit, AuditHead and
// VerifyAudit from one snapshot, taken at the first of them.
// Errors are {"error":{"code","amp_code","message","details"}} with a 4xx or 5xx
// status, and come back to the client as the *amp.Error they were.
package admin
