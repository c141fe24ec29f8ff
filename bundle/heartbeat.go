package bundle

import (
	"crypto/ed25519"
	"time"
)

// HeartbeatFormat is the format string of a heartbeat statement
// (FORMAT.md §23).
const HeartbeatFormat = "ampbundle-heartbeat/1"

// MediaTypeHeartbeat is the content type of a heartbeat statement.
const MediaTypeHeartbeat = "application/ampbundle-heartbeat+cbor"

// MaxHeartbeatSize bounds a heartbeat statement file (FORMAT.md §23).
const MaxHeartbeatSize = 64 << 10

// MaxHeartbeatJump bounds how far a heartbeat's version may lie above what
// a store knows of the line (the highest version it imported and the
// version of the heartbeat it keeps), FORMAT.md §23: one heartbeat cannot
// pin a line stale for ever.
const MaxHeartbeatJump = 1_000_000

// Heartbeat is the payload of a heartbeat statement: the publisher says,
// at its signed time CreatedAt, that bundle line BundleID is at version
// Version or later.
type Heartbeat struct {
	Format    string `cbor:"format"`
	BundleID  string `cbor:"bundle_id"`
	Version   uint64 `cbor:"version"`
	CreatedAt string `cbor:"created_at"`
}

// Validate checks the rules of FORMAT.md §23.
func (h *Heartbeat) Validate() error {
	if h.Format != HeartbeatFormat {
		return invalidStatement("not a %s statement", HeartbeatFormat)
	}
	if err := ValidateBundleID(h.BundleID); err != nil {
		return invalidStatement("bundle_id is not a valid bundle id")
	}
	if h.Version < 1 {
		return invalidStatement("version must be >= 1")
	}
	if _, err := h.Created(); err != nil {
		return err
	}
	return nil
}

// Created returns the signed time of the heartbeat.
func (h *Heartbeat) Created() (time.Time, error) { return statementTime(h.CreatedAt) }

// SignHeartbeat validates h and returns the statement signed by keys.
func SignHeartbeat(h *Heartbeat, keys []ed25519.PrivateKey) ([]byte, error) {
	return signStatement(MediaTypeHeartbeat, "heartbeat", h, keys)
}

// ParseHeartbeat decodes a heartbeat statement and checks its form
// (FORMAT.md §23): the COSE_Sign of §2 with the heartbeat content type, a
// closed deterministic payload, the rules of Validate. Signatures are
// checked by VerifyStatement with the bundle_id as the scope.
func ParseHeartbeat(data []byte) (*Heartbeat, *SignedObject, error) {
	return parseStatement[Heartbeat](statementForm{mediaType: MediaTypeHeartbeat, maxSize: MaxHeartbeatSize,
		maxArray: 1, maxPairs: 4, file: "heartbeat statement", name: "heartbeat"}, data)
}
