package mirror

import (
	"bytes"
	"encoding/json"
	"errors"

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
	Format     string `json:"format"`
	Generation uint64 `json:"generation"`
	// Bundles lists each installed bundle once (at most MaxIndexBundles).
	Bundles []IndexEntry `json:"bundles"`
	// Capabilities lists every installed capability version (at most
	// MaxIndexCapabilities). Sync does not use it and does not hold it.
	Capabilities []IndexCap `json:"capabilities"`
	// Statements lists the signed trust and revocation statements the
	// mirror's store has applied, in the order it applied them. Absent
	// from indexes of older mirrors (read as none). At most
	// MaxIndexStatements.
	Statements []IndexStatement `json:"statements"`
	// Heartbeats lists the heartbeat the mirror's store keeps for each
	// bundle line (docs/FORMAT.md §23), by bundle_id. Absent from indexes
	// of older mirrors (read as none). At most MaxIndexHeartbeats.
	Heartbeats []IndexHeartbeat `json:"heartbeats"`
}

// IndexHeartbeat is the heartbeat statement kept for one bundle line,
// served byte for byte at Href. Its bundle_id, version and created_at are
// those of the statement (a syncing store skips one older than its own by
// them, and refuses a file whose statement says otherwise).
type IndexHeartbeat struct {
	BundleID  string `json:"bundle_id"`
	Version   uint64 `json:"version"`
	CreatedAt string `json:"created_at"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"` // lowercase hex of the whole file
	Href      string `json:"href"`   // StatementsPrefix + sha256
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

// Counts an index may list (docs/FORMAT.md §11.1). A reader refuses a
// longer list (bad_index) while it decodes it, before it holds more than
// the limit: what an index costs in memory is bounded by these counts and
// by its size, not by what its entries expand to.
const (
	// MaxIndexBundles bounds the bundles an index may list (and so the
	// bundle files one sync downloads).
	MaxIndexBundles = 10_000
	// MaxIndexCapabilities bounds the capabilities an index may list: more
	// than an index of the default size limit (16 MiB) can hold, since one
	// entry takes at least 400 bytes of JSON, so no real mirror reaches it.
	MaxIndexCapabilities = 100_000
	// MaxIndexStatements bounds the statements an index may list (and so
	// what one sync downloads: at most this many files of
	// bundle.MaxRevocationSize). A store keeps no more
	// (resolver.MaxStatements, equal), each authority at most
	// resolver.StatementShare of them (docs/SPEC-DECISIONS.md TRUST-18).
	MaxIndexStatements = 10_000
	// MaxIndexHeartbeats bounds the heartbeats an index may list (one per
	// bundle line; at most this many files of bundle.MaxHeartbeatSize).
	MaxIndexHeartbeats = 10_000
)

// DecodeIndex reads and checks an index document: the format, every
// bundle_id valid and listed once, hashes of the right length, hrefs of the
// documented form, and at most MaxIndexBundles bundles,
// MaxIndexCapabilities capabilities, MaxIndexStatements statements and
// MaxIndexHeartbeats heartbeats.
// Unknown keys are ignored (forward compatible).
//
// The lists are decoded one entry at a time and each entry is checked as
// it is read, so memory stays within a small multiple of len(data) plus at
// most MaxIndexCapabilities unchecked capability entries (each
// unsafe.Sizeof(IndexCap{}) bytes). Sync does not use the capabilities and
// does not hold them at all.
func DecodeIndex(data []byte) (*Index, error) { return decodeIndex(data, true) }

// decodeIndex is DecodeIndex; with keepCaps false the capabilities are
// counted and checked to be JSON values, never decoded nor held.
func decodeIndex(data []byte, keepCaps bool) (*Index, error) {
	w := indexWire{Capabilities: capList{keep: keepCaps}}
	if err := json.Unmarshal(data, &w); err != nil {
		var ae *amp.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, badShape()
	}
	if w.Format != IndexFormat {
		return nil, amp.Named(0, ErrBadIndex, "the mirror index has an unknown format")
	}
	return &Index{Format: w.Format, Generation: w.Generation, Bundles: w.Bundles.list,
		Capabilities: w.Capabilities.list, Statements: w.Statements.list, Heartbeats: w.Heartbeats.list}, nil
}

func badShape() error {
	return amp.Named(0, ErrBadIndex, "the mirror index is not valid JSON of the documented shape")
}

// indexWire is Index as decoded: each list reads itself entry by entry.
// A member given twice is read twice, the last one kept (as
// encoding/json keeps the last value of the other members).
type indexWire struct {
	Format       string        `json:"format"`
	Generation   uint64        `json:"generation"`
	Bundles      bundleList    `json:"bundles"`
	Capabilities capList       `json:"capabilities"`
	Statements   statementList `json:"statements"`
	Heartbeats   heartbeatList `json:"heartbeats"`
}

type bundleList struct{ list []IndexEntry }

// UnmarshalJSON decodes and checks the bundles one at a time.
func (l *bundleList) UnmarshalJSON(raw []byte) error {
	seen := map[string]bool{}
	return decodeList(raw, &l.list, MaxIndexBundles, "bundles", func(i int, e *IndexEntry) error {
		if bundle.ValidateBundleID(e.BundleID) != nil {
			return amp.Named(0, ErrBadIndex, "the mirror index lists an invalid bundle_id (entry %d)", i)
		}
		if seen[e.BundleID] {
			return amp.Named(0, ErrBadIndex, "the mirror index lists bundle %s twice", e.BundleID)
		}
		seen[e.BundleID] = true
		if !isLowerHex64(e.SHA256) {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad sha256 for %s", e.BundleID)
		}
		if e.Size <= 0 || e.Version == 0 {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad size or version for %s", e.BundleID)
		}
		if e.Href != BundlesPrefix+e.BundleID {
			return amp.Named(0, ErrBadIndex, "the mirror index has an unexpected href for %s", e.BundleID)
		}
		return nil
	})
}

// capList holds the capabilities only when keep is set; otherwise it
// counts them.
type capList struct {
	keep bool
	list []IndexCap
}

// UnmarshalJSON counts the capabilities, checking each is a JSON value,
// then, when they are kept, decodes them into a list of exactly that
// length (no growth: the list is the only memory they take beyond their
// strings).
func (l *capList) UnmarshalJSON(raw []byte) error {
	l.list = nil
	n := 0
	if err := decodeArray(raw, MaxIndexCapabilities, "capabilities", func(_ int, dec *json.Decoder) error {
		n++
		if dec.Decode(&skipValue{}) != nil {
			return badShape()
		}
		return nil
	}); err != nil || !l.keep {
		return err
	}
	l.list = make([]IndexCap, n)
	return decodeArray(raw, n, "capabilities", func(i int, dec *json.Decoder) error {
		if dec.Decode(&l.list[i]) != nil {
			return badShape()
		}
		return nil
	})
}

type statementList struct{ list []IndexStatement }

// UnmarshalJSON decodes and checks the statements one at a time.
func (l *statementList) UnmarshalJSON(raw []byte) error {
	seen := map[string]bool{}
	return decodeList(raw, &l.list, MaxIndexStatements, "statements", func(i int, st *IndexStatement) error {
		if !isLowerHex64(st.SHA256) || seen[st.SHA256] {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad or repeated sha256 for statement %d", i)
		}
		seen[st.SHA256] = true
		if st.ContentType != bundle.MediaTypeRevocation && st.ContentType != bundle.MediaTypeRotation {
			return amp.Named(0, ErrBadIndex, "the mirror index has an unknown content_type for statement %d", i)
		}
		if st.Size <= 0 || st.Size > bundle.MaxRevocationSize {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad size for statement %d", i)
		}
		if st.Href != StatementsPrefix+st.SHA256 {
			return amp.Named(0, ErrBadIndex, "the mirror index has an unexpected href for statement %d", i)
		}
		return nil
	})
}

type heartbeatList struct{ list []IndexHeartbeat }

// UnmarshalJSON decodes and checks the heartbeats one at a time.
func (l *heartbeatList) UnmarshalJSON(raw []byte) error {
	lines, sums := map[string]bool{}, map[string]bool{}
	return decodeList(raw, &l.list, MaxIndexHeartbeats, "heartbeats", func(i int, h *IndexHeartbeat) error {
		hb := bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: h.BundleID, Version: h.Version, CreatedAt: h.CreatedAt}
		if hb.Validate() != nil || lines[h.BundleID] {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad or repeated bundle_id, version or created_at for heartbeat %d", i)
		}
		lines[h.BundleID] = true
		if !isLowerHex64(h.SHA256) || sums[h.SHA256] {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad or repeated sha256 for heartbeat %d", i)
		}
		sums[h.SHA256] = true
		if h.Size <= 0 || h.Size > bundle.MaxHeartbeatSize {
			return amp.Named(0, ErrBadIndex, "the mirror index has a bad size for heartbeat %d", i)
		}
		if h.Href != StatementsPrefix+h.SHA256 {
			return amp.Named(0, ErrBadIndex, "the mirror index has an unexpected href for heartbeat %d", i)
		}
		return nil
	})
}

// decodeArray calls each for every element of the JSON array raw, in
// order, with dec positioned at the element (each must read exactly it).
// It refuses (bad_index) an array of more than max elements before it
// reads the one past max; null is an empty array.
func decodeArray(raw []byte, max int, what string, each func(i int, dec *json.Decoder) error) error {
	if string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return badShape()
	}
	for i := 0; dec.More(); i++ {
		if i == max {
			return amp.Named(0, ErrBadIndex, "the mirror index lists more than %d %s", max, what)
		}
		if err := each(i, dec); err != nil {
			return err
		}
	}
	return nil
}

// decodeList decodes the JSON array raw (decodeArray: at most max
// elements) into *list, one element at a time, each decoded in its place
// at the end of the list and then handed to check with its index, so that
// a bad element is refused before the next is read.
func decodeList[T any](raw []byte, list *[]T, max int, what string, check func(i int, e *T) error) error {
	*list = nil
	return decodeArray(raw, max, what, func(i int, dec *json.Decoder) error {
		*list = append(*list, *new(T))
		e := &(*list)[len(*list)-1]
		if dec.Decode(e) != nil {
			return badShape()
		}
		return check(i, e)
	})
}

// skipValue reads a JSON value and keeps nothing of it.
type skipValue struct{}

// UnmarshalJSON keeps nothing.
func (skipValue) UnmarshalJSON([]byte) error { return nil }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
