package mirror

import (
	"encoding/hex"
	"encoding/json"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// IndexFormat is the "format" of the index document.
const IndexFormat = "ampbundle-mirror-index/1"

// Index is the document at /index.json: what the mirror's store has
// installed, at one store generation, with the hash of every file served
// (docs/FORMAT.md, "Mirror index"). It is a hint, never trusted: 'sync'
// verifies every bundle it downloads as 'import' does.
type Index struct {
	Format       string       `json:"format"`
	Generation   uint64       `json:"generation"`
	Bundles      []IndexEntry `json:"bundles"`
	Capabilities []IndexCap   `json:"capabilities"`
	// Statements lists the signed trust and revocation statements the
	// mirror's store has applied, in the order it applied them. Absent
	// from indexes of older mirrors (read as none).
	Statements []IndexStatement `json:"statements"`
}

// IndexStatement is one signed trust (docs/FORMAT.md §22) or revocation
// (§21) statement, served byte for byte at Href.
type IndexStatement struct {
	ContentType string `json:"content_type"` // application/ampbundle-trust+cbor or application/ampbundle-revocation+cbor
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"` // lowercase hex of the whole file
	Href        string `json:"href"`   // StatementsPrefix + sha256
}

// IndexEntry is one installed bundle: its signed file at Href.
type IndexEntry struct {
	BundleID  string `json:"bundle_id"`
	Version   uint64 `json:"version"`
	ExpiresAt string `json:"expires_at,omitempty"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"` // lowercase hex of the whole file
	Href      string `json:"href"`
}

// IndexCap is one installed capability version and the files of its RFC
// 004 §5.1 paths, each with its hash.
type IndexCap struct {
	ID           string    `json:"id"`
	BundleID     string    `json:"bundle_id"`
	Descriptor   IndexFile `json:"descriptor"`
	InputSchema  IndexFile `json:"input_schema"`
	OutputSchema IndexFile `json:"output_schema"`
}

// IndexFile is a served file and its hash.
type IndexFile struct {
	Href    string `json:"href"`
	HashAlg string `json:"hash_alg"`
	Hash    string `json:"hash"` // lowercase hex
}

// ErrBadIndex names an index document that does not decode or breaks the
// rules of docs/FORMAT.md.
const ErrBadIndex amp.ErrName = "bad_index"

// DecodeIndex reads and checks an index document: the format, every
// bundle_id valid and listed once, hashes of the right length, hrefs of the
// documented form. Unknown keys are ignored (forward compatible).
func DecodeIndex(data []byte) (*Index, error) {
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, amp.Named(0, ErrBadIndex, "the mirror index is not valid JSON of the documented shape")
	}
	if ix.Format != IndexFormat {
		return nil, amp.Named(0, ErrBadIndex, "the mirror index has an unknown format")
	}
	seen := map[string]bool{}
	for i, e := range ix.Bundles {
		if bundle.ValidateBundleID(e.BundleID) != nil {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index lists an invalid bundle_id (entry %d)", i)
		}
		if seen[e.BundleID] {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index lists bundle %s twice", e.BundleID)
		}
		seen[e.BundleID] = true
		if h, err := hex.DecodeString(e.SHA256); err != nil || len(h) != 32 {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has a bad sha256 for %s", e.BundleID)
		}
		if e.Size <= 0 || e.Version == 0 {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has a bad size or version for %s", e.BundleID)
		}
		if e.Href != BundlesPrefix+e.BundleID {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has an unexpected href for %s", e.BundleID)
		}
	}
	if len(ix.Statements) > MaxIndexStatements {
		return nil, amp.Named(0, ErrBadIndex, "the mirror index lists more than %d statements", MaxIndexStatements)
	}
	seenSt := map[string]bool{}
	for i, st := range ix.Statements {
		if !isLowerHex64(st.SHA256) || seenSt[st.SHA256] {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has a bad or repeated sha256 for statement %d", i)
		}
		seenSt[st.SHA256] = true
		if st.ContentType != bundle.MediaTypeRevocation && st.ContentType != bundle.MediaTypeRotation {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has an unknown content_type for statement %d", i)
		}
		if st.Size <= 0 || st.Size > bundle.MaxRevocationSize {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has a bad size for statement %d", i)
		}
		if st.Href != StatementsPrefix+st.SHA256 {
			return nil, amp.Named(0, ErrBadIndex, "the mirror index has an unexpected href for statement %d", i)
		}
	}
	return &ix, nil
}

// MaxIndexStatements bounds the statements an index may list (and so what
// one sync downloads: at most this many files of bundle.MaxRevocationSize).
const MaxIndexStatements = 10000

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
