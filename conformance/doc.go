// Package conformance is an independent second implementation of the
// verifier side of docs/FORMAT.md, written from that document alone.
//
// Its tests build the project's ampbundle CLI, use it to write real files
// (a co-signed bundle, trust statements, a revocation statement, a signed
// import receipt) and check every byte of them with code of their own: the
// COSE_Sign layout and Sig_structure of §2, the did:key kid form, the
// signature order, deterministic CBOR, the payload fields of §3, §20, §21
// and §22, the audit chain of §20.1 and the statement chain of §22; and it
// writes statements (§21-§23, including the heartbeat version cap) and
// trust policy files of its own for the CLI to apply or refuse. They
// import only the standard library, golang.org/x/crypto and
// github.com/fxamacker/cbor/v2, never a package of this module, so a
// mismatch between the document and the bytes fails here even when the
// reference implementation agrees with itself. Each check is also run on a
// tampered copy, which must be refused, so no check passes vacuously.
// ledgerwal_test.go reads the idempotency ledger's write-ahead log (the
// document's example and one a real `ampagent serve` wrote) and checks
// that tampered and torn copies are refused or truncated as its Damage
// rules say, by its own reader and by the agent. mirror_test.go reads a
// real `ampbundle serve` mirror's heartbeats (§11.1, §23) with its own
// client, and serves a mirror of its own, written from §11 alone, to the
// real `ampbundle sync`, honest and lying.
package conformance
