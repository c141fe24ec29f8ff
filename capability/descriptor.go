package capability

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"errors"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// Profile selects the schema-ref locator rule a descriptor is validated
// against.
type Profile uint8

const (
	// ProfileDefault is the rule of §4.2 that every profile shares: a
	// schema-ref has a uri, or both bundle_id and artifact_key
	// (schema-ref-online / schema-ref-offline). Decoding applies it.
	ProfileDefault Profile = iota
	// ProfileOffline is the Offline Registry Profile (§2.2, §5.3):
	// bundle_id and artifact_key are required, uri is optional, and every
	// extra field has a JSON form that reads back as the same CBOR (a
	// bundle's descriptors travel as JSON too: the admin socket's
	// catalog, a mirror's descriptor.json). Bundles carry descriptors of
	// this form.
	ProfileOffline
)

// Hash algorithms of a schema-ref (§4.2 hash-alg).
const (
	HashSHA256 = "sha-256" // hash is exactly 32 bytes
	HashSHA512 = "sha-512" // hash is exactly 64 bytes
)

// HashSize returns the digest size in bytes of a §4.2 hash-alg, and false
// for any other string.
func HashSize(alg string) (int, bool) {
	switch alg {
	case HashSHA256:
		return sha256.Size, true
	case HashSHA512:
		return sha512.Size, true
	}
	return 0, false
}

// SchemaRef is a §4.2 schema-ref: where to find a schema document and the
// hash that its bytes must have. Empty strings mean absent fields (present
// text fields are never empty: decoding refuses them).
type SchemaRef struct {
	URI         string // "uri"
	BundleID    string // "bundle_id"
	ArtifactKey string // "artifact_key"
	HashAlg     string // "hash_alg": HashSHA256 or HashSHA512
	Hash        []byte // "hash"
	MediaType   string // "media_type"
	UpdatedAt   string // "updated_at", kept as text
	// Extra holds fields this version does not define (§10), as
	// deterministic CBOR, re-encoded unchanged. Nil when there are none.
	Extra map[string]cbor.RawMessage
}

// Matches reports whether data has the hash of r (under r.HashAlg). It
// says nothing about whether r is otherwise valid.
func (r SchemaRef) Matches(data []byte) bool {
	switch r.HashAlg {
	case HashSHA256:
		h := sha256.Sum256(data)
		return bytes.Equal(h[:], r.Hash)
	case HashSHA512:
		h := sha512.Sum512(data)
		return bytes.Equal(h[:], r.Hash)
	}
	return false
}

// Validate checks r under profile p (§4.2 consistency rules): hash_alg is
// sha-256 with a 32-byte hash or sha-512 with a 64-byte hash; bundle_id and
// artifact_key come together or not at all; under ProfileDefault there is a
// uri or both of them, under ProfileOffline both of them and no extra
// field without a JSON form (see ProfileOffline). Errors are 4001.
func (r SchemaRef) Validate(p Profile) error { return r.validate(p, "schema-ref") }

func (r SchemaRef) validate(p Profile, path string) error {
	size, ok := HashSize(r.HashAlg)
	switch {
	case r.HashAlg == "":
		return badRequest(ErrMissingField, "%s is required", fieldPath(path, "hash_alg"))
	case !ok:
		return badRequest(ErrInvalidField, "%s must be sha-256 or sha-512", fieldPath(path, "hash_alg"))
	case len(r.Hash) != size:
		return badRequest(ErrInvalidField, "%s must be exactly %d bytes for %s", fieldPath(path, "hash"), size, r.HashAlg)
	}
	hasB, hasK := r.BundleID != "", r.ArtifactKey != ""
	switch {
	case hasB != hasK:
		return badRequest(ErrMissingLocator, "%s has only one of bundle_id and artifact_key", path)
	case p == ProfileOffline && !hasB:
		return badRequest(ErrMissingLocator, "%s needs bundle_id and artifact_key in the offline registry profile", path)
	case r.URI == "" && !hasB:
		return badRequest(ErrMissingLocator, "%s needs a uri, or bundle_id and artifact_key", path)
	}
	if err := checkExtra(r.Extra, "schema-ref", path); err != nil {
		return err
	}
	if p == ProfileOffline {
		return checkJSONForm(r.Extra, path, 1)
	}
	return nil
}

func decodeSchemaRef(raw []byte, path string) (SchemaRef, error) {
	o, err := decodeObject(raw, path, "schema-ref")
	if err != nil {
		return SchemaRef{}, err
	}
	var r SchemaRef
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"uri", &r.URI}, {"bundle_id", &r.BundleID}, {"artifact_key", &r.ArtifactKey},
		{"hash_alg", &r.HashAlg}, {"media_type", &r.MediaType}, {"updated_at", &r.UpdatedAt},
	} {
		if *f.dst, _, err = o.text(f.key); err != nil {
			return SchemaRef{}, err
		}
	}
	if r.HashAlg == "" {
		return SchemaRef{}, o.missing("hash_alg")
	}
	if r.Hash, err = o.bytes("hash"); err != nil {
		return SchemaRef{}, err
	}
	r.Extra = o.extra()
	if err := r.validate(ProfileDefault, path); err != nil {
		return SchemaRef{}, err
	}
	return r, nil
}

func (r SchemaRef) cborMap() map[string]any {
	m := map[string]any{"hash_alg": r.HashAlg, "hash": r.Hash}
	for k, v := range map[string]string{
		"uri": r.URI, "bundle_id": r.BundleID, "artifact_key": r.ArtifactKey,
		"media_type": r.MediaType, "updated_at": r.UpdatedAt,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Caps on the lists of one descriptor (this project's; RFC 004 sets none).
// A peer's descriptor is checked against every list on each CAP_QUERY
// answer, bundle import and invocation, so each list has a cap far above
// what a publisher writes and far below amp's 65,536 items per array
// (docs/SPEC-DECISIONS.md CAP-7). Beyond a cap decoding, Validate and
// Encode refuse the descriptor with 4001 invalid_field.
const (
	// MaxDescriptorRanges caps supported_ranges, and separately
	// deprecated_ranges. Ranges are written by hand, a few per version.
	MaxDescriptorRanges = 64
	// MaxCompatClaims caps compat_claims: one claim per other version of
	// the capability that the bundle carries and supported_ranges cover.
	MaxCompatClaims = 256
)

// Descriptor is a §4.2 capability-descriptor: one version of a capability,
// its input and output schema references, and its compatibility claims.
// Its id is not stored: it is always Name ":" Version (ID), which decoding
// checks and encoding writes.
type Descriptor struct {
	Name         string    // "name"
	Version      Version   // "version"
	InputSchema  SchemaRef // "input_schema"
	OutputSchema SchemaRef // "output_schema"
	// SupportedRanges are the ranges of versions this provider accepts
	// for invocations of this descriptor ("supported_ranges"). Nil means
	// the field is absent: only Version itself is supported (§4.2). An
	// empty non-nil slice is a present, empty array. At most
	// MaxDescriptorRanges.
	SupportedRanges []Range
	// DeprecatedRanges ("deprecated_ranges"); nil means absent. At most
	// MaxDescriptorRanges.
	DeprecatedRanges []Range
	Notes            string // "notes"; empty means absent
	// Policy is the provider's compatibility policy ("policy", RFC 004
	// §8); empty means absent, which behaves as PolicyStrict.
	Policy Policy
	// CompatClaims ("compat_claims") are the verdicts, computed and signed
	// by the bundle builder, for callers of the other versions of this
	// capability in the bundle that SupportedRanges cover. Sorted by
	// version, one per version, at most MaxCompatClaims; nil means absent.
	CompatClaims []CompatClaim
	// Bridge ("bridge") references the bridge artifact (a declarative
	// adapter, docs/FORMAT.md "Bridges") that serves callers of the
	// versions SupportedRanges cover under PolicyBridge, located and
	// hash-checked like a schema. Nil means absent; present only with
	// PolicyBridge, which requires it.
	Bridge *SchemaRef
	// Extra holds fields this version does not define (§10), as
	// deterministic CBOR, re-encoded unchanged. Nil when there are none.
	Extra map[string]cbor.RawMessage
}

// ID returns the descriptor's capability id, Name ":" Version.
func (d Descriptor) ID() ID { return ID{Name: d.Name, Version: d.Version} }

// ServesInRange reports whether d serves a version in r: its own Version
// is in r, or it serves one in place, as an agent's CAP_INVOKE would:
// under policy range it holds a compatible claim for a version in r that
// it supports; under policy bridge, with its bridge, any such claim. An
// agent lists d for a CAP_QUERY whose filter has range r exactly when
// this holds, and a client checks what it was sent by the same rule.
//
// Its cost is n·log n in the numbers of claims and supported ranges, never
// their product: the claims that could serve are collected in one pass,
// and each supported range is then matched against them by binary search
// (anyContained). A descriptor built in Go, which no cap applies to, is
// no more expensive.
func (d Descriptor) ServesInRange(r Range) bool {
	if r.Contains(d.Version) {
		return true
	}
	var serving func(CompatClaim) bool
	switch d.Policy {
	case PolicyRange:
		serving = CompatClaim.Compatible
	case PolicyBridge:
		if d.Bridge == nil {
			return false
		}
		serving = func(CompatClaim) bool { return true }
	default:
		return false // strict or absent: no claim serves
	}
	// A claim in r can never name d.Version (r does not contain it), so
	// Supports reduces to "a supported range contains it".
	var vs []Version
	for i := range d.CompatClaims {
		if c := &d.CompatClaims[i]; serving(*c) && r.contains(&c.Version) {
			vs = append(vs, c.Version)
		}
	}
	return anyContained(d.SupportedRanges, vs)
}

// Supports reports whether the descriptor declares support for v: v is its
// own Version (the same string), or v is contained in one of its
// SupportedRanges. With SupportedRanges absent, only the exact Version is
// supported (§4.2).
func (d Descriptor) Supports(v Version) bool {
	if v.IsZero() {
		return false
	}
	if v == d.Version {
		return true
	}
	for _, r := range d.SupportedRanges {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// Deprecated reports whether v is contained in one of DeprecatedRanges.
func (d Descriptor) Deprecated(v Version) bool {
	for _, r := range d.DeprecatedRanges {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// Validate checks every §4.2 consistency rule that does not need the
// schema bytes, under profile p: a valid name and version (the id is then
// consistent by construction), valid schema-refs (see SchemaRef.Validate),
// parsed ranges, and Extra fields that do not shadow defined ones (under
// ProfileOffline, that have a JSON form that reads back as the same CBOR:
// no byte string, tag, undefined, NaN, infinity, integer below -2^63 or
// non-text map key). Errors are 4001.
//
// Checking the hashes against the schema bytes (§4.2, §5.2) needs the
// bytes: see SchemaRef.Matches.
func (d Descriptor) Validate(p Profile) error { return d.validate(p, "descriptor") }

func (d Descriptor) validate(p Profile, path string) error {
	if why := nameProblem(d.Name); why != "" {
		return badRequest(ErrInvalidName, "%s: capability name %s", fieldPath(path, "name"), why)
	}
	if d.Version.IsZero() {
		return badRequest(ErrMissingField, "%s is required", fieldPath(path, "version"))
	}
	if err := d.InputSchema.validate(p, fieldPath(path, "input_schema")); err != nil {
		return err
	}
	if err := d.OutputSchema.validate(p, fieldPath(path, "output_schema")); err != nil {
		return err
	}
	if err := checkListCaps(path, len(d.SupportedRanges), len(d.DeprecatedRanges)); err != nil {
		return err
	}
	for i, r := range d.SupportedRanges {
		if r.IsZero() {
			return badRequest(ErrInvalidRange, "%s is not a parsed range", indexPath(fieldPath(path, "supported_ranges"), i))
		}
	}
	for i, r := range d.DeprecatedRanges {
		if r.IsZero() {
			return badRequest(ErrInvalidRange, "%s is not a parsed range", indexPath(fieldPath(path, "deprecated_ranges"), i))
		}
	}
	if err := d.validateCompat(path); err != nil {
		return err
	}
	if d.Bridge != nil {
		if err := d.Bridge.validate(p, fieldPath(path, "bridge")); err != nil {
			return err
		}
	}
	if err := checkExtra(d.Extra, "descriptor", path); err != nil {
		return err
	}
	if p == ProfileOffline {
		return checkJSONForm(d.Extra, path, 0)
	}
	return nil
}

// validateCompat checks policy and compat_claims.
func (d Descriptor) validateCompat(path string) error {
	if !d.Policy.Valid() {
		return badRequest(ErrInvalidField, "%s must be strict, range or bridge", fieldPath(path, "policy"))
	}
	if (d.Policy == PolicyBridge) != (d.Bridge != nil) {
		return badRequest(ErrInvalidField, "%s: policy bridge and a bridge reference come together", fieldPath(path, "bridge"))
	}
	if len(d.CompatClaims) > MaxCompatClaims {
		return tooMany(fieldPath(path, "compat_claims"), MaxCompatClaims, "claims")
	}
	for i, c := range d.CompatClaims {
		ip := indexPath(fieldPath(path, "compat_claims"), i)
		switch {
		case c.Version.IsZero():
			return badRequest(ErrMissingField, "%s.version is required", ip)
		case c.Version == d.Version:
			return badRequest(ErrInvalidField, "%s names the descriptor's own version", ip)
		case !validVerdict(c.Input) || !validVerdict(c.Output):
			return badRequest(ErrInvalidField, "%s: input and output must be compatible, incompatible or unknown", ip)
		case i > 0 && d.CompatClaims[i-1].Version.Compare(c.Version) >= 0:
			return badRequest(ErrInvalidField, "%s: claims must be sorted by version, one per version", ip)
		}
	}
	return nil
}

// DecodeDescriptor decodes one capability-descriptor from CBOR and checks
// it under ProfileDefault (call Validate(ProfileOffline) for the offline
// profile). Bytes that are not one valid CBOR item are 1001; a missing,
// mistyped or inconsistent field is 4001 (the name says which rule).
func DecodeDescriptor(data []byte) (Descriptor, error) {
	return DecodeDescriptorLimits(data, amp.Limits{})
}

// DecodeDescriptorLimits is DecodeDescriptor with the caps on the CBOR
// item that the caller chose (a zero field is amp's default, so
// amp.Limits{} is DecodeDescriptor's 16 MiB): a bundle's manifest passes
// its own, so that a reader's raised or lowered manifest cap is the one
// that bounds a descriptor too (docs/SPEC-DECISIONS.md CAP-11). The caps
// of RFC 004 bodies (MaxDescriptorRanges, MaxCompatClaims) hold whatever
// lim says.
func DecodeDescriptorLimits(data []byte, lim amp.Limits) (Descriptor, error) {
	canon, err := canonicalBodyLimits(lim, data)
	if err != nil {
		return Descriptor{}, err
	}
	return decodeDescriptor(canon, "")
}

func decodeDescriptor(raw []byte, path string) (Descriptor, error) {
	o, err := decodeObject(raw, path, "descriptor")
	if err != nil {
		return Descriptor{}, err
	}
	var d Descriptor
	id, err := o.requiredText("id")
	if err != nil {
		return Descriptor{}, err
	}
	if d.Name, err = o.requiredText("name"); err != nil {
		return Descriptor{}, err
	}
	version, err := o.requiredText("version")
	if err != nil {
		return Descriptor{}, err
	}
	if why := nameProblem(d.Name); why != "" {
		return Descriptor{}, badRequest(ErrInvalidName, "%s: capability name %s", fieldPath(path, "name"), why)
	}
	var why string
	if d.Version, why = parseVersion(version); why != "" {
		return Descriptor{}, badRequest(ErrInvalidVersion, "%s: version %s", fieldPath(path, "version"), why)
	}
	if id != d.Name+":"+version {
		return Descriptor{}, badRequest(ErrIdentityMismatch, "%s must equal name:version", fieldPath(path, "id"))
	}
	for _, f := range []struct {
		key string
		dst *SchemaRef
	}{{"input_schema", &d.InputSchema}, {"output_schema", &d.OutputSchema}} {
		raw, ok := o.raw(f.key)
		if !ok {
			return Descriptor{}, o.missing(f.key)
		}
		if *f.dst, err = decodeSchemaRef(raw, fieldPath(path, f.key)); err != nil {
			return Descriptor{}, err
		}
	}
	if d.SupportedRanges, err = o.ranges("supported_ranges", MaxDescriptorRanges); err != nil {
		return Descriptor{}, err
	}
	if d.DeprecatedRanges, err = o.ranges("deprecated_ranges", MaxDescriptorRanges); err != nil {
		return Descriptor{}, err
	}
	if d.Notes, _, err = o.text("notes"); err != nil {
		return Descriptor{}, err
	}
	policy, _, err := o.text("policy")
	if err != nil {
		return Descriptor{}, err
	}
	d.Policy = Policy(policy)
	if d.CompatClaims, err = o.claims("compat_claims", MaxCompatClaims); err != nil {
		return Descriptor{}, err
	}
	if raw, ok := o.raw("bridge"); ok {
		ref, err := decodeSchemaRef(raw, fieldPath(path, "bridge"))
		if err != nil {
			return Descriptor{}, err
		}
		d.Bridge = &ref
	}
	d.Extra = o.extra()
	if err := d.validateCompat(path); err != nil {
		return Descriptor{}, err
	}
	return d, nil
}

// checkListCaps refuses supported_ranges or deprecated_ranges longer than
// MaxDescriptorRanges.
func checkListCaps(path string, supported, deprecated int) error {
	switch {
	case supported > MaxDescriptorRanges:
		return tooMany(fieldPath(path, "supported_ranges"), MaxDescriptorRanges, "ranges")
	case deprecated > MaxDescriptorRanges:
		return tooMany(fieldPath(path, "deprecated_ranges"), MaxDescriptorRanges, "ranges")
	}
	return nil
}

// tooMany is the 4001 invalid_field of a list over its cap.
func tooMany(path string, limit int, what string) error {
	return badRequest(ErrInvalidField, "%s has more than %d %s", path, limit, what)
}

// ranges takes an optional array of at most limit ranges; nil when absent.
// The count is checked before any item is parsed.
func (o *object) ranges(key string, limit int) ([]Range, error) {
	items, ok, err := o.array(key)
	if err != nil || !ok {
		return nil, err
	}
	p := fieldPath(o.path, key)
	if len(items) > limit {
		return nil, tooMany(p, limit, "ranges")
	}
	out := make([]Range, len(items))
	for i, it := range items {
		ip := func() string { return indexPath(p, i) }
		s, err := textItem(it, ip)
		if err != nil {
			return nil, err
		}
		if out[i], err = ParseRange(s); err != nil {
			return nil, at(ip(), err)
		}
	}
	return out, nil
}

// claims takes an optional array of at most limit compat claims; nil when
// absent. The count is checked before any item is decoded.
func (o *object) claims(key string, limit int) ([]CompatClaim, error) {
	items, ok, err := o.array(key)
	if err != nil || !ok {
		return nil, err
	}
	p := fieldPath(o.path, key)
	if len(items) > limit {
		return nil, tooMany(p, limit, "claims")
	}
	out := make([]CompatClaim, len(items))
	for i, it := range items {
		c, err := decodeObject(it, indexPath(p, i), "compat claim")
		if err != nil {
			return nil, err
		}
		v, err := c.requiredText("version")
		if err != nil {
			return nil, err
		}
		var why string
		if out[i].Version, why = parseVersion(v); why != "" {
			return nil, badRequest(ErrInvalidVersion, "%s.version: version %s", indexPath(p, i), why)
		}
		if out[i].Input, err = c.requiredText("input"); err != nil {
			return nil, err
		}
		if out[i].Output, err = c.requiredText("output"); err != nil {
			return nil, err
		}
		if len(c.extra()) != 0 {
			return nil, badRequest(ErrInvalidField, "%s has an unknown field", indexPath(p, i))
		}
	}
	return out, nil
}

// at prefixes the message of an *amp.Error with a field path.
func at(path string, err error) error {
	var e *amp.Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Message = path + ": " + e.Message
	return &c
}

// Encode returns the deterministic CBOR encoding of d (RFC 8949 §4.2.1),
// with id = Name ":" Version. It refuses a descriptor that fails
// Validate(ProfileDefault).
func (d Descriptor) Encode() ([]byte, error) {
	m, err := d.cborMap("descriptor")
	if err != nil {
		return nil, err
	}
	return amp.Marshal(m)
}

func (d Descriptor) cborMap(path string) (map[string]any, error) {
	if err := d.validate(ProfileDefault, path); err != nil {
		return nil, err
	}
	m := map[string]any{
		"id":            d.ID().String(),
		"name":          d.Name,
		"version":       d.Version.String(),
		"input_schema":  d.InputSchema.cborMap(),
		"output_schema": d.OutputSchema.cborMap(),
	}
	if d.SupportedRanges != nil {
		m["supported_ranges"] = rangeStrings(d.SupportedRanges)
	}
	if d.DeprecatedRanges != nil {
		m["deprecated_ranges"] = rangeStrings(d.DeprecatedRanges)
	}
	if d.Notes != "" {
		m["notes"] = d.Notes
	}
	if d.Policy != "" {
		m["policy"] = string(d.Policy)
	}
	if d.CompatClaims != nil {
		cs := make([]any, len(d.CompatClaims))
		for i, c := range d.CompatClaims {
			cs[i] = map[string]any{"version": c.Version.String(), "input": c.Input, "output": c.Output}
		}
		m["compat_claims"] = cs
	}
	if d.Bridge != nil {
		b := d.Bridge.cborMap()
		if err := putExtra(b, d.Bridge.Extra, "schema-ref"); err != nil {
			return nil, err
		}
		m["bridge"] = b
	}
	// validate checked both schema-refs' Extra and d.Extra.
	if err := putExtra(m["input_schema"].(map[string]any), d.InputSchema.Extra, "schema-ref"); err != nil {
		return nil, err
	}
	if err := putExtra(m["output_schema"].(map[string]any), d.OutputSchema.Extra, "schema-ref"); err != nil {
		return nil, err
	}
	if err := putExtra(m, d.Extra, "descriptor"); err != nil {
		return nil, err
	}
	return m, nil
}

func rangeStrings(rs []Range) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// checkExtra refuses Extra fields that would shadow a defined field or that
// hold no value.
func checkExtra(extra map[string]cbor.RawMessage, kind, path string) error {
	for k, v := range extra {
		if isKnownField(kind, k) {
			return badRequest(ErrInvalidField, "%s: an extra field has the name of a defined field", path)
		}
		if len(v) == 0 {
			return badRequest(ErrInvalidField, "%s: an extra field has an empty value", path)
		}
	}
	return nil
}

// MarshalCBOR implements cbor.Marshaler with Encode, so that a Descriptor
// can sit inside other CBOR structures (a bundle manifest).
func (d Descriptor) MarshalCBOR() ([]byte, error) { return d.Encode() }

// UnmarshalCBOR implements cbor.Unmarshaler with the rules of
// DecodeDescriptor.
func (d *Descriptor) UnmarshalCBOR(data []byte) error {
	dd, err := DecodeDescriptor(data)
	if err != nil {
		return err
	}
	*d = dd
	return nil
}
