package trust

import "github.com/ampbundle/ampbundle/amp"

// Error names of trust decisions (package resolver exports the same
// values under the same names).
const (
	ErrTrustExists     amp.ErrName = "trust_exists"
	ErrUnknownTrust    amp.ErrName = "unknown_trust"
	ErrInvalidTrust    amp.ErrName = "invalid_trust"
	ErrKeyRevoked      amp.ErrName = "key_revoked"             // trust add of a revoked key
	ErrRevocationScope amp.ErrName = "revocation_out_of_scope" // a revocation of a key trusted beyond the statement's scope
	ErrHeartbeatOlder  amp.ErrName = "heartbeat_replayed"      // a heartbeat older than the newest the store holds for the line
	ErrHeartbeatTooFar amp.ErrName = "heartbeat_too_far"       // a heartbeat more than bundle.MaxHeartbeatJump versions above what the store knows of the line
	ErrNoHeartbeat     amp.ErrName = "no_heartbeat"            // a heartbeat reset of a line without one
	ErrRotationGap     amp.ErrName = "rotation_gap"            // a trust statement after a missing one
	ErrRotationFork    amp.ErrName = "rotation_fork"           // a trust statement that is not the one the store applied, or chains to another
	ErrInvalidPolicy   amp.ErrName = "invalid_policy"          // a trust policy file the store cannot apply as a whole
	ErrStoreIO         amp.ErrName = "store_io"                // a record of the state is unreadable
	// ErrStatementShare: a statement whose signers' accounts have each
	// had their share of kept statements, or that a store already keeping
	// MaxStatements would keep (ChargeStatement).
	ErrStatementShare amp.ErrName = "statement_share_exhausted"
)

// Audit verdicts of what took effect and of what changed nothing.
const (
	verdictAccepted  = "accepted"
	verdictUnchanged = "unchanged"
)

func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}
