package bundle

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"sort"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Format is the value of the manifest's "format" field in this version.
const Format = "ampbundle/1"

// Media types with a meaning to the bundle format.
const (
	MediaTypeSchema   = "application/schema+json"
	MediaTypeDID      = "application/did+json"
	MediaTypeBridge   = "application/vnd.amp.bridge+json" // a bridge document (docs/FORMAT.md, "Bridges")
	MediaTypeManifest = "application/ampbundle-manifest+cbor"
)

// Caps of the format (FORMAT.md §6). A reader also takes lower caps from its
// options.
const (
	MaxKeyLen       = 255     // bytes of one artifact key
	maxKeySegments  = 16      // path segments of one artifact key
	MaxArtifacts    = 100_000 // artifacts in one bundle
	MaxCapabilities = 10_000  // descriptors in one bundle
	MaxAliases      = 10_000  // alias entries
	MaxBundleIDLen  = 255
	maxMediaTypeLen = 255
	maxAliasLen     = 255
	timeLayout      = "2006-01-02T15:04:05Z"
)

// ArtifactEntry is one row of the manifest's "artifacts" array.
type ArtifactEntry struct {
	Key       string `cbor:"key"`
	MediaType string `cbor:"media_type"`
	Size      uint64 `cbor:"size"`
	HashAlg   string `cbor:"hash_alg"`
	Hash      []byte `cbor:"hash"`
}

// Manifest is the signed description of a bundle (FORMAT.md §4).
type Manifest struct {
	Format    string
	BundleID  string
	Version   uint64
	CreatedAt time.Time  // UTC, whole seconds
	ExpiresAt *time.Time // nil when the bundle does not expire
	Publisher string     // a DID
	// Artifacts are sorted by key (bytewise) and unique.
	Artifacts []ArtifactEntry
	// Capabilities are sorted by name, then version (ascending precedence).
	Capabilities []capability.Descriptor
	// Aliases maps legacy `type` values to canonical capability names of
	// this bundle. Nil when absent.
	Aliases map[string]string
}

// wireManifest is the CBOR form of a Manifest. Every field is known: the v1
// manifest is closed (FORMAT.md §4), and decoding refuses other fields.
type wireManifest struct {
	Format       string                  `cbor:"format"`
	BundleID     string                  `cbor:"bundle_id"`
	Version      uint64                  `cbor:"version"`
	CreatedAt    string                  `cbor:"created_at"`
	ExpiresAt    string                  `cbor:"expires_at,omitempty"`
	Publisher    string                  `cbor:"publisher"`
	Artifacts    []ArtifactEntry         `cbor:"artifacts"`
	Capabilities []capability.Descriptor `cbor:"capabilities"`
	Aliases      map[string]string       `cbor:"aliases,omitempty"`
}

// manifestField reports whether k is a field of the v1 manifest, and
// whether it is required.
func manifestField(k string) (known, required bool) {
	switch k {
	case "format", "bundle_id", "version", "created_at", "publisher", "artifacts", "capabilities":
		return true, true
	case "expires_at", "aliases":
		return true, false
	}
	return false, false
}

// Encode returns the deterministic CBOR encoding of m, after checking it
// with Validate.
func (m *Manifest) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	w := wireManifest{
		Format: m.Format, BundleID: m.BundleID, Version: m.Version,
		CreatedAt: m.CreatedAt.UTC().Format(timeLayout), Publisher: m.Publisher,
		Artifacts: m.Artifacts, Capabilities: m.Capabilities, Aliases: m.Aliases,
	}
	if w.Artifacts == nil {
		w.Artifacts = []ArtifactEntry{}
	}
	if w.Capabilities == nil {
		w.Capabilities = []capability.Descriptor{}
	}
	if m.ExpiresAt != nil {
		w.ExpiresAt = m.ExpiresAt.UTC().Format(timeLayout)
	}
	return amp.Marshal(w)
}

// DecodeManifest decodes and validates a manifest. It must be deterministic
// CBOR with exactly the fields of FORMAT.md §4.
func DecodeManifest(data []byte) (*Manifest, error) {
	lim := amp.Limits{MaxMessageSize: len(data) + 1, MaxArrayLen: MaxArtifacts, MaxMapPairs: MaxAliases}
	err := checkDeterministic(lim, data, "manifest")
	if err != nil {
		return nil, err
	}
	var fields map[string]cbor.RawMessage
	if err := lim.Unmarshal(data, &fields); err != nil {
		return nil, fail(ErrMalformed, "manifest is not a map with text keys").WithCause(err)
	}
	// format first, so that another version is reported as such.
	var format string
	if raw, ok := fields["format"]; !ok || amp.Unmarshal(raw, &format) != nil || format != Format {
		return nil, fail(ErrUnknownFormat, "manifest format is not %s", Format)
	}
	required := 0
	for k := range fields {
		known, req := manifestField(k)
		if !known {
			return nil, fail(ErrMalformed, "manifest has a field that format %s does not define", Format)
		}
		if req {
			required++
		}
	}
	if required != 7 {
		return nil, fail(ErrMalformed, "manifest lacks a required field")
	}
	// Descriptors are decoded under the manifest's size, not amp's default
	// size, so that the reader's manifest cap bounds them too; every other
	// cap is amp's default, the one the store decodes a stored descriptor
	// under (resolver/lookup.go): a descriptor of a 70,000-item array, under
	// the manifest's 100,000-item cap, was imported and then failed every
	// publisher's catalog (docs/SPEC-DECISIONS.md CAP-11, amended).
	var w struct {
		wireManifest
		Capabilities []cbor.RawMessage `cbor:"capabilities"`
	}
	if err := lim.Unmarshal(data, &w); err != nil {
		return nil, fail(ErrMalformed, "manifest has a field of the wrong type").WithCause(err)
	}
	caps := make([]capability.Descriptor, 0, min(len(w.Capabilities), 64))
	for _, raw := range w.Capabilities {
		d, err := capability.DecodeDescriptorLimits(raw, amp.Limits{MaxMessageSize: lim.MaxMessageSize})
		if err != nil {
			return nil, fail(ErrMalformed, "manifest has a field of the wrong type").WithCause(err)
		}
		caps = append(caps, d)
	}
	m := &Manifest{Format: w.Format, BundleID: w.BundleID, Version: w.Version, Publisher: w.Publisher,
		Artifacts: w.Artifacts, Capabilities: caps, Aliases: w.Aliases}
	if m.CreatedAt, err = parseTime(w.CreatedAt, "created_at"); err != nil {
		return nil, err
	}
	if _, ok := fields["expires_at"]; ok {
		t, err := parseTime(w.ExpiresAt, "expires_at")
		if err != nil {
			return nil, err
		}
		m.ExpiresAt = &t
	}
	if _, ok := fields["aliases"]; ok && len(m.Aliases) == 0 {
		return nil, fail(ErrMalformed, "manifest aliases must be omitted rather than empty")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	// Decoding and re-encoding must agree byte for byte: then the signed
	// bytes and the model the registry stores say the same thing.
	again, err := m.Encode()
	if err != nil || !bytes.Equal(again, data) {
		return nil, fail(ErrMalformed, "manifest does not re-encode to the same bytes")
	}
	return m, nil
}

// parseTime reads a timestamp in the one form the format allows:
// RFC 3339, UTC, whole seconds ("2026-11-22T10:00:00Z").
func parseTime(s, field string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil || t.Format(timeLayout) != s {
		return time.Time{}, fail(ErrMalformed, "manifest %s is not an rfc 3339 utc time with whole seconds", field)
	}
	return t, nil
}

// writableYear reports whether t is written in the one form parseTime
// reads back: a year of four digits in UTC. A time past 9999 would be
// signed as "10000-…" and refused by every reader (docs/SPEC-DECISIONS.md
// BUNDLE-24).
func writableYear(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

// ValidateBundleID checks a bundle id: a reverse-domain name of at least two
// labels, each label 1-63 bytes of [a-z0-9-] not starting or ending with
// "-", at most 255 bytes ("org.example.translate-schemas").
func ValidateBundleID(id string) error {
	if id == "*" || strings.HasSuffix(id, ".") || !strings.Contains(id, ".") || len(id) > MaxBundleIDLen {
		return fail(ErrInconsistent, "bundle_id must be a reverse-domain name of at least two labels")
	}
	if err := capability.ValidateNamespacePrefix(id); err != nil {
		return fail(ErrInconsistent, "bundle_id must be a reverse-domain name of at least two labels").WithCause(err)
	}
	return nil
}

// ValidateKey checks that an artifact key is safe to use as a relative path
// on any operating system (docs/FORMAT.md): 1-255 bytes, "/"-separated segments
// of [A-Za-z0-9._-] (at most 16), no empty, "." or ".." segment, no leading
// or trailing "/", no backslash or other separator, no segment starting with
// "." or "-" (hidden files, flags), and no two keys equal ignoring case is
// checked by the manifest rules.
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fail(ErrUnsafeKey, "artifact key must be 1 to %d bytes", MaxKeyLen)
	}
	segs := strings.Split(key, "/")
	if len(segs) > maxKeySegments {
		return fail(ErrUnsafeKey, "artifact key has more than %d path segments", maxKeySegments)
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || s[0] == '.' || s[0] == '-' {
			return fail(ErrUnsafeKey, "artifact key has an empty, hidden, relative or flag-like path segment")
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return fail(ErrUnsafeKey, "artifact key has a character outside [A-Za-z0-9._-/]")
			}
		}
	}
	return nil
}

// NewHash returns a hash of the named algorithm ("sha-256" or "sha-512").
func NewHash(alg string) (hash.Hash, error) {
	switch alg {
	case capability.HashSHA256:
		return sha256.New(), nil
	case capability.HashSHA512:
		return sha512.New(), nil
	}
	return nil, fail(ErrInconsistent, "hash algorithm must be sha-256 or sha-512")
}

// Validate checks every rule of FORMAT.md §4 that the manifest alone can
// decide: the header fields and counts, then each artifact, each
// capability (and what its references name among the artifacts), then
// the aliases (what they name among the capabilities), the first broken
// rule reported.
func (m *Manifest) Validate() error {
	if err := m.validateHeader(); err != nil {
		return err
	}
	byKey, err := m.validateArtifacts()
	if err != nil {
		return err
	}
	names, err := m.validateCapabilities(byKey)
	if err != nil {
		return err
	}
	return m.validateAliases(names)
}

// validateHeader checks the manifest's own fields and that its lists
// are within the format's counts, before any list is walked.
func (m *Manifest) validateHeader() error {
	if m.Format != Format {
		return fail(ErrUnknownFormat, "manifest format is not %s", Format)
	}
	if err := ValidateBundleID(m.BundleID); err != nil {
		return err
	}
	if m.Version == 0 {
		return fail(ErrInconsistent, "bundle version must be at least 1")
	}
	if !m.CreatedAt.Equal(m.CreatedAt.Truncate(time.Second)) {
		return fail(ErrInconsistent, "created_at must be whole seconds")
	}
	if !writableYear(m.CreatedAt) || m.ExpiresAt != nil && !writableYear(*m.ExpiresAt) {
		return fail(ErrInconsistent, "created_at and expires_at must lie in the years 0000 to 9999 (utc): rfc 3339 writes four-digit years")
	}
	if m.ExpiresAt != nil && !m.ExpiresAt.After(m.CreatedAt) {
		return fail(ErrInconsistent, "expires_at must be after created_at")
	}
	if !amp.ValidDID(m.Publisher) || amp.BareDID(m.Publisher) != m.Publisher {
		return fail(ErrInconsistent, "publisher must be a did")
	}
	if len(m.Artifacts) > MaxArtifacts || len(m.Capabilities) > MaxCapabilities || len(m.Aliases) > MaxAliases {
		return fail(ErrTooLarge, "manifest lists more artifacts, capabilities or aliases than format %s allows", Format)
	}
	return nil
}

// validateArtifacts checks each artifact entry and their order (sorted
// by key, no two keys equal even in letter case) and returns them by
// key, for the capabilities' references.
func (m *Manifest) validateArtifacts() (map[string]*ArtifactEntry, error) {
	byKey := make(map[string]*ArtifactEntry, len(m.Artifacts))
	folded := make(map[string]bool, len(m.Artifacts))
	for i := range m.Artifacts {
		a := &m.Artifacts[i]
		if err := ValidateKey(a.Key); err != nil {
			return nil, err
		}
		if i > 0 {
			switch c := strings.Compare(m.Artifacts[i-1].Key, a.Key); {
			case c == 0:
				return nil, fail(ErrDuplicateKey, "two artifacts have the same key")
			case c > 0:
				return nil, fail(ErrInconsistent, "artifacts are not sorted by key")
			}
		}
		// Keys that differ only in case collide on case-insensitive file
		// systems when exported.
		if lower := strings.ToLower(a.Key); folded[lower] {
			return nil, fail(ErrDuplicateKey, "two artifact keys differ only in letter case")
		} else {
			folded[lower] = true
		}
		if err := a.validate(); err != nil {
			return nil, err
		}
		byKey[a.Key] = a
	}
	return byKey, nil
}

// validate checks what one artifact entry says of itself: a media type,
// the size a DID document may have, a hash of its algorithm's size.
func (a *ArtifactEntry) validate() error {
	if a.MediaType == "" || len(a.MediaType) > maxMediaTypeLen || !strings.Contains(a.MediaType, "/") {
		return fail(ErrInconsistent, "artifact media_type must be a media type")
	}
	if a.MediaType == MediaTypeDID && a.Size > amp.MaxDIDDocumentSize {
		return fail(ErrTooLarge, "a did document artifact is larger than %d bytes", amp.MaxDIDDocumentSize)
	}
	n, ok := capability.HashSize(a.HashAlg)
	if !ok || len(a.Hash) != n {
		return fail(ErrInconsistent, "artifact hash_alg must be sha-256 or sha-512 with a hash of its size")
	}
	return nil
}

// validateCapabilities checks each descriptor under the offline profile,
// their order, and that every artifact a descriptor references (a
// bridge, its schemas) is carried with the same hash; it returns the
// capability names, for the aliases.
func (m *Manifest) validateCapabilities(byKey map[string]*ArtifactEntry) (map[string]bool, error) {
	names := make(map[string]bool, len(m.Capabilities))
	for i := range m.Capabilities {
		d := &m.Capabilities[i]
		if err := d.Validate(capability.ProfileOffline); err != nil {
			return nil, fail(ErrInconsistent, "capability descriptor is not valid under the offline registry profile").WithCause(err)
		}
		if i > 0 {
			p := &m.Capabilities[i-1]
			if c := compareDescriptors(p, d); c == 0 {
				return nil, fail(ErrInconsistent, "two capability descriptors have the same id")
			} else if c > 0 {
				return nil, fail(ErrInconsistent, "capabilities are not sorted by name and version")
			}
		}
		names[d.Name] = true
		if err := m.validateBridgeRef(d, byKey); err != nil {
			return nil, err
		}
		if err := m.validateSchemaRefs(d, byKey); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// validateBridgeRef checks that the bridge d references, if any, is an
// artifact of this bundle with the media type of a bridge and the hash
// the reference names.
func (m *Manifest) validateBridgeRef(d *capability.Descriptor, byKey map[string]*ArtifactEntry) error {
	if d.Bridge == nil {
		return nil
	}
	a, ok := byKey[d.Bridge.ArtifactKey]
	switch {
	case d.Bridge.BundleID != m.BundleID || !ok:
		return fail(ErrInconsistent, "a bridge reference names an artifact the bundle does not carry")
	case a.MediaType != MediaTypeBridge:
		return fail(ErrInconsistent, "a bridge reference names an artifact that is not a bridge")
	case d.Bridge.HashAlg != a.HashAlg || !bytes.Equal(d.Bridge.Hash, a.Hash):
		return fail(ErrInconsistent, "a bridge reference's hash differs from its artifact's")
	case d.Bridge.MediaType != "" && d.Bridge.MediaType != a.MediaType:
		return fail(ErrInconsistent, "a bridge reference's media type differs from its artifact's")
	}
	return nil
}

// validateSchemaRefs checks that d's input and output schemas are
// artifacts of this bundle, with the hash (and media type, when given)
// the references name.
func (m *Manifest) validateSchemaRefs(d *capability.Descriptor, byKey map[string]*ArtifactEntry) error {
	for _, ref := range []capability.SchemaRef{d.InputSchema, d.OutputSchema} {
		if ref.BundleID != m.BundleID {
			return fail(ErrInconsistent, "a schema reference names another bundle")
		}
		a, ok := byKey[ref.ArtifactKey]
		if !ok {
			return fail(ErrInconsistent, "a schema reference names an artifact the bundle does not carry")
		}
		if ref.HashAlg != a.HashAlg || !bytes.Equal(ref.Hash, a.Hash) {
			return fail(ErrInconsistent, "a schema reference's hash differs from its artifact's")
		}
		if ref.MediaType != "" && ref.MediaType != a.MediaType {
			return fail(ErrInconsistent, "a schema reference's media type differs from its artifact's")
		}
	}
	return nil
}

// validateAliases checks each alias: printable text of bounded length
// naming a capability this bundle carries. An alias key that is a valid
// capability name is scoped like one by Namespaces, when the signers are
// admitted (docs/SPEC-DECISIONS.md BUNDLE-7).
func (m *Manifest) validateAliases(names map[string]bool) error {
	for typ, target := range m.Aliases {
		if typ == "" || len(typ) > maxAliasLen || strings.ContainsFunc(typ, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			return fail(ErrInconsistent, "an alias must be 1 to %d bytes of printable text without spaces", maxAliasLen)
		}
		if !names[target] {
			return fail(ErrInconsistent, "an alias points at a capability this bundle does not carry")
		}
	}
	return nil
}

// compareDescriptors is the manifest order of descriptors: RFC 004 §6.5
// oldest-first, (name ASC, version ASC), ties of precedence broken by the
// version string.
func compareDescriptors(a, b *capability.Descriptor) int {
	return capability.OrderOldestFirst.CompareIDs(a.ID(), b.ID())
}

// SortCapabilities puts descriptors in manifest order.
func SortCapabilities(ds []capability.Descriptor) {
	capability.SortDescriptors(ds, capability.OrderOldestFirst)
}

// Artifact returns the manifest entry of key.
func (m *Manifest) Artifact(key string) (ArtifactEntry, bool) {
	i := sort.Search(len(m.Artifacts), func(i int) bool { return m.Artifacts[i].Key >= key })
	if i < len(m.Artifacts) && m.Artifacts[i].Key == key {
		return m.Artifacts[i], true
	}
	return ArtifactEntry{}, false
}

// Namespaces returns the capability namespaces a signer must be trusted
// for besides the bundle id: the namespace of every capability, and of
// every alias key that is itself a valid capability name (sorted,
// unique). An alias key is a legacy type a caller may send, and a type
// that spells a capability name claims that name in its namespace
// (docs/SPEC-DECISIONS.md BUNDLE-7): a bundle may not reach into a
// namespace its signers are not trusted for through its aliases.
func (m *Manifest) Namespaces() []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		ns, _, err := capability.SplitName(name)
		if err == nil && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	for _, d := range m.Capabilities {
		add(d.Name)
	}
	for typ := range m.Aliases {
		add(typ)
	}
	sort.Strings(out)
	return out
}
