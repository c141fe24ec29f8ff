package resolver

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// Records stored in the buckets, as deterministic CBOR.

// trustRecord is a publisher key the operator trusts.
type trustRecord struct {
	Name    string   `cbor:"name"`
	Key     []byte   `cbor:"key"` // Ed25519 public key
	Scopes  []string `cbor:"scopes"`
	AddedAt string   `cbor:"added_at"`
}

// bundleRecord is an installed bundle.
type bundleRecord struct {
	BundleID   string   `cbor:"bundle_id"`
	Version    uint64   `cbor:"version"`
	Signed     []byte   `cbor:"signed"` // the COSE_Sign item exactly as received
	ImportedAt string   `cbor:"imported_at"`
	Signers    []string `cbor:"signers"` // trust names whose signatures verified
	// SignerKeys are the did:keys of the signers that counted at import
	// (absent in records written before they were kept).
	SignerKeys []string `cbor:"signer_keys,omitempty"`
	ExpiresAt  string   `cbor:"expires_at,omitempty"`
	Artifacts  uint64   `cbor:"artifacts"`
	Bytes      uint64   `cbor:"bytes"`
	// Revoked, when set, says why the bundle fails closed (trust.ApplyRevocation, trust.RemoveKey).
	Revoked string `cbor:"revoked,omitempty"`
}

// indexRecord maps (bundle_id, artifact_key) to a blob.
type indexRecord struct {
	Blob      string `cbor:"blob"` // "<hash_alg>:<hex>"
	MediaType string `cbor:"media_type"`
	Size      uint64 `cbor:"size"`
}

// descRecord is one descriptor and the bundle that provides it.
type descRecord struct {
	BundleID   string `cbor:"bundle_id"`
	Descriptor []byte `cbor:"descriptor"` // deterministic CBOR (capability.Descriptor.Encode)
}

// aliasRecord maps a legacy type to the canonical names installed bundles
// claim for it (docs/SPEC-DECISIONS.md BUNDLE-9). The first claim is Name
// and Owners, so that a record of schema version 3, which held one name,
// is read as that one claim and a record of one claim is encoded as
// before; the claims after it are in More. Every bundle that declares the
// alias is an owner of its claim; no two claims name the same capability,
// and no two names of one capability namespace are claimed (that is an
// alias_conflict).
type aliasRecord struct {
	Name   string       `cbor:"name"`
	Owners []string     `cbor:"owners"`
	More   []aliasClaim `cbor:"more,omitempty"`
}

// aliasClaim is one canonical name claimed for a legacy type, and the
// bundles that claim it.
type aliasClaim struct {
	Name   string   `cbor:"name"`
	Owners []string `cbor:"owners"`
}

// claims returns every claim of the record, the first one first.
func (ar *aliasRecord) claims() []aliasClaim {
	return append([]aliasClaim{{Name: ar.Name, Owners: ar.Owners}}, ar.More...)
}

// aliasRecordOf is the record of claims cs, the claims without owners
// left out; ok is false when none is left (the record is deleted).
func aliasRecordOf(cs []aliasClaim) (ar aliasRecord, ok bool) {
	var kept []aliasClaim
	for _, c := range cs {
		if len(c.Owners) > 0 {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return aliasRecord{}, false
	}
	ar = aliasRecord{Name: kept[0].Name, Owners: kept[0].Owners}
	if len(kept) > 1 {
		ar.More = kept[1:]
	}
	return ar, true
}

// didRecord locates a DID document inside an installed bundle.
type didRecord struct {
	BundleID    string `cbor:"bundle_id"`
	ArtifactKey string `cbor:"artifact_key"`
}

// pendingRecord journals an import whose blobs are staged but not yet
// committed: on failure, and on the next open after a crash, the blobs it
// lists that nothing references are deleted.
type pendingRecord struct {
	BundleID string   `cbor:"bundle_id"`
	Version  uint64   `cbor:"version"`
	Started  string   `cbor:"started"`
	Blobs    []string `cbor:"blobs"` // blobs this import created
}

func encode(v any) []byte {
	b, err := amp.Marshal(v)
	if err != nil {
		// Records are plain structs of strings, bytes and integers.
		panic("resolver: cannot encode a record: " + err.Error())
	}
	return b
}

func decode(data []byte, v any) error {
	if err := (amp.Limits{MaxMessageSize: len(data) + 1, MaxArrayLen: 1 << 20, MaxMapPairs: 1 << 20}).Unmarshal(data, v); err != nil {
		return fail(ErrStoreIO, "a store record does not decode").WithCause(err)
	}
	return nil
}

// BlobKey is the content address of bytes: "<hash_alg>:<lowercase hex>".
func BlobKey(alg string, hash []byte) string { return alg + ":" + hex.EncodeToString(hash) }

// parseBlobKey splits a blob key.
func parseBlobKey(k string) (alg string, hash []byte, ok bool) {
	alg, h, found := strings.Cut(k, ":")
	if !found {
		return "", nil, false
	}
	b, err := hex.DecodeString(h)
	return alg, b, err == nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
