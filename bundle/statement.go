package bundle

import (
	"bytes"
	"crypto/ed25519"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// signStatement is SignRevocation, SignRotation and SignHeartbeat: s is
// validated, encoded and signed by keys as a COSE_Sign of content type
// mediaType; name is the statement in a message ("cannot encode the
// revocation").
func signStatement(mediaType, name string, s interface{ Validate() error }, keys []ed25519.PrivateKey) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	payload, err := amp.Marshal(s)
	if err != nil {
		return nil, invalidStatement("cannot encode the %s", name)
	}
	return SignObject(mediaType, payload, keys)
}

// statementForm is what parseStatement checks of one kind of statement:
// its content type, the caps on the file and on its payload's arrays and
// maps, and how its messages name it.
type statementForm struct {
	mediaType string
	maxSize   int    // bytes of the file
	maxArray  int    // elements of an array of the payload
	maxPairs  int    // pairs of a map of the payload
	file      string // "a revocation statement is at most ... bytes"
	name      string // "the revocation payload does not decode"
}

// parseStatement is ParseRevocation, ParseRotation and ParseHeartbeat:
// it decodes a statement of form f and checks its form (FORMAT.md §21 to
// §23): at most f.maxSize bytes, the COSE_Sign of §2 with f's content
// type, a closed deterministic payload within f's caps, the rules of T's
// Validate. Signatures are checked by VerifyStatement.
func parseStatement[T any, P interface {
	*T
	Validate() error
}](f statementForm, data []byte) (*T, *SignedObject, error) {
	if len(data) > f.maxSize {
		return nil, nil, fail(ErrTooLarge, "a %s is at most %d bytes", f.file, f.maxSize)
	}
	obj, err := DecodeObject(data, f.mediaType)
	if err != nil {
		return nil, nil, err
	}
	var s T
	lim := amp.Limits{MaxMessageSize: len(obj.Payload) + 1, MaxArrayLen: f.maxArray, MaxMapPairs: f.maxPairs}
	if err := lim.Unmarshal(obj.Payload, &s); err != nil {
		return nil, nil, invalidStatement("the %s payload does not decode", f.name).WithCause(err)
	}
	if enc, err := amp.Marshal(&s); err != nil || !bytes.Equal(enc, obj.Payload) {
		return nil, nil, invalidStatement("the %s payload is not in its one allowed form (closed, deterministic)", f.name)
	}
	if err := P(&s).Validate(); err != nil {
		return nil, nil, err
	}
	return &s, obj, nil
}

// statementTime parses the created_at of a statement: an RFC 3339 UTC
// time in whole seconds, written as time.RFC3339 writes it.
func statementTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.UTC().Format(time.RFC3339) != s {
		return time.Time{}, invalidStatement("created_at must be an RFC 3339 UTC time in whole seconds")
	}
	return t, nil
}

// checkKeyAt checks keys[i] of a sorted list of keys a statement names:
// an ed25519 did:key with nothing after the DID, after keys[i-1]; what
// names the list in the message ("revoked").
func checkKeyAt(keys []string, i int, what string) error {
	k := keys[i]
	if _, ok := KeyFromKID(k); !ok || amp.BareDID(k) != k {
		return invalidStatement("%s key %d is not an ed25519 did:key", what, i+1)
	}
	if i > 0 && keys[i-1] >= k {
		return invalidStatement("%s keys must be sorted and unique", what)
	}
	return nil
}
