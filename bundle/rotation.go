package bundle

import (
	"bytes"
	"crypto/ed25519"
	"sort"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// RotationFormat is the format string of a trust statement (a key
// rotation, FORMAT.md §22).
const RotationFormat = "ampbundle-trust/1"

// MediaTypeRotation is the content type of a trust statement.
const MediaTypeRotation = "application/ampbundle-trust+cbor"

// MaxRotationKeys bounds the keys a trust statement adds or retires.
const MaxRotationKeys = 64

// Rotation is the payload of a trust statement: for Scope, the statement
// number Sequence of a chain (Prev is the SHA-256 of the payload of
// statement Sequence-1, SignedObject.PayloadSHA256, which writers before
// it gave as the SHA-256 of that statement's whole file, and readers still
// accept; 32 zero bytes for the first), adding keys, retiring keys and
// setting the scope's threshold.
type Rotation struct {
	Format    string     `cbor:"format"`
	Scope     string     `cbor:"scope"`
	Sequence  uint64     `cbor:"sequence"`
	Prev      []byte     `cbor:"prev"`
	CreatedAt string     `cbor:"created_at"`
	Threshold uint64     `cbor:"threshold"`
	Add       []NamedKey `cbor:"add,omitempty"`    // sorted by key, unique
	Retire    []string   `cbor:"retire,omitempty"` // did:keys, sorted, unique
}

// NamedKey is a key a trust statement adds, with the name the store gives
// it.
type NamedKey struct {
	Name string `cbor:"name"`
	Key  string `cbor:"key"` // did:key
}

// Validate checks the rules of FORMAT.md §22.
func (r *Rotation) Validate() error {
	if r.Format != RotationFormat {
		return invalidStatement("not a %s statement", RotationFormat)
	}
	if err := ValidateScope(r.Scope); err != nil || strings.HasSuffix(r.Scope, ".") {
		return invalidStatement("the scope must be * or a reverse-domain prefix such as org.example")
	}
	if r.Sequence < 1 || len(r.Prev) != 32 {
		return invalidStatement("sequence is 1 or more and prev a 32-byte SHA-256")
	}
	if r.Sequence == 1 && !bytes.Equal(r.Prev, make([]byte, 32)) {
		return invalidStatement("the first statement of a chain has prev = 32 zero bytes")
	}
	if _, err := statementTime(r.CreatedAt); err != nil {
		return err
	}
	if r.Threshold < 1 || r.Threshold > MaxSignatures {
		return invalidStatement("threshold is 1 to %d", MaxSignatures)
	}
	if len(r.Add) > MaxRotationKeys || len(r.Retire) > MaxRotationKeys {
		return fail(ErrTooLarge, "a trust statement adds and retires at most %d keys each", MaxRotationKeys)
	}
	for i, k := range r.Add {
		if _, ok := KeyFromKID(k.Key); !ok || amp.BareDID(k.Key) != k.Key {
			return invalidStatement("added key %d is not an ed25519 did:key", i+1)
		}
		if !validName(k.Name) {
			return invalidStatement("added key %d needs a name of 1-64 characters of [A-Za-z0-9._-@]", i+1)
		}
		if i > 0 && r.Add[i-1].Key >= k.Key {
			return invalidStatement("added keys must be sorted by key and unique")
		}
	}
	for i, k := range r.Retire {
		if err := checkKeyAt(r.Retire, i, "retired"); err != nil {
			return err
		}
		for _, a := range r.Add {
			if a.Key == k {
				return invalidStatement("a key is both added and retired")
			}
		}
	}
	return nil
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-@", c) >= 0) {
			return false
		}
	}
	return true
}

// Normalize sorts the added and retired keys.
func (r *Rotation) Normalize() {
	sort.Slice(r.Add, func(i, j int) bool { return r.Add[i].Key < r.Add[j].Key })
	sort.Strings(r.Retire)
	r.Retire = uniqStrings(r.Retire)
}

// SignRotation validates r and returns the trust statement signed by keys.
func SignRotation(r *Rotation, keys []ed25519.PrivateKey) ([]byte, error) {
	return signStatement(MediaTypeRotation, "trust statement", r, keys)
}

// ParseRotation decodes a trust statement and checks its form (FORMAT.md
// §22); signatures are checked with VerifyStatement.
func ParseRotation(data []byte) (*Rotation, *SignedObject, error) {
	return parseStatement[Rotation](statementForm{mediaType: MediaTypeRotation, maxSize: MaxRevocationSize,
		maxArray: MaxRotationKeys, maxPairs: 8, file: "trust statement", name: "trust statement"}, data)
}
