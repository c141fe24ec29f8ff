package bundle

import (
	"bytes"
	"crypto/ed25519"
	"time"

	"github.com/ampbundle/ampbundle/amp"
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
func (h *Heartbeat) Created() (time.Time, error) {
	t, err := time.Parse(time.RFC3339, h.CreatedAt)
	if err != nil || t.UTC().Format(time.RFC3339) != h.CreatedAt {
		return time.Time{}, invalidStatement("created_at must be an RFC 3339 UTC time in whole seconds")
	}
	return t, nil
}

// SignHeartbeat validates h and returns the statement signed by keys.
func SignHeartbeat(h *Heartbeat, keys []ed25519.PrivateKey) ([]byte, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	payload, err := amp.Marshal(h)
	if err != nil {
		return nil, invalidStatement("cannot encode the heartbeat")
	}
	return SignObject(MediaTypeHeartbeat, payload, keys)
}

// ParseHeartbeat decodes a heartbeat statement and checks its form
// (FORMAT.md §23): the COSE_Sign of §2 with the heartbeat content type, a
// closed deterministic payload, the rules of Validate. Signatures are
// checked by VerifyStatement with the bundle_id as the scope.
func ParseHeartbeat(data []byte) (*Heartbeat, *SignedObject, error) {
	if len(data) > MaxHeartbeatSize {
		return nil, nil, fail(ErrTooLarge, "a heartbeat statement is at most %d bytes", MaxHeartbeatSize)
	}
	obj, err := DecodeObject(data, MediaTypeHeartbeat)
	if err != nil {
		return nil, nil, err
	}
	var h Heartbeat
	lim := amp.Limits{MaxMessageSize: len(obj.Payload) + 1, MaxArrayLen: 1, MaxMapPairs: 4}
	if err := lim.Unmarshal(obj.Payload, &h); err != nil {
		return nil, nil, invalidStatement("the heartbeat payload does not decode").WithCause(err)
	}
	if enc, err := amp.Marshal(&h); err != nil || !bytes.Equal(enc, obj.Payload) {
		return nil, nil, invalidStatement("the heartbeat payload is not in its one allowed form (closed, deterministic)")
	}
	if err := h.Validate(); err != nil {
		return nil, nil, err
	}
	return &h, obj, nil
}
