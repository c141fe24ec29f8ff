// Package capability is the RFC 004 (v0.6) capability model, with the
// decisions of docs/SPEC-DECISIONS.md: capability names and ids, SemVer
// versions and the §4.4 range subset, schema descriptors and their
// consistency rules, the four CAP_* message bodies, deterministic
// negotiation, and result ordering. It is pure: no I/O, no database, no
// network, no package-level mutable state. Registries, bundles and agents
// build on it.
//
// # Model
//
//   - A capability name (§4.1) is <reverse-domain namespace> "." <slug>,
//     for example "org.agentries.code-review". ValidateName, SplitName,
//     InNamespace.
//   - A Version is a strict SemVer 2.0.0 version, parsed once (ParseVersion)
//     and compared without allocating (Version.Compare: precedence).
//   - An ID is name ":" version, "org.agentries.code-review:2.1.0" (ParseID).
//   - A Range is a §4.4 semver-range, parsed once (ParseRange) and matched
//     without allocating (Range.Contains).
//   - A Descriptor (§4.2) describes one version of a capability: its input
//     and output SchemaRefs (where the schema is, and the hash its bytes
//     must have) and its compatibility claims (supported and deprecated
//     ranges).
//   - Query, Declare, Invoke and Result are the CAP_QUERY, CAP_DECLARE,
//     CAP_INVOKE and CAP_RESULT bodies (§6.4, §7.4): Decode* parses and
//     checks them, Encode writes deterministic CBOR.
//   - Negotiate picks the concrete ID to invoke (§6.3); MatchExact is the
//     plain exact-version check; Order and SortDescriptors give the §6.5
//     result order; ResolveType maps a legacy type to a canonical name.
//
// # Errors
//
// Every error is an *amp.Error (errors.As works; errors.Is matches codes and
// names). Following §9: bytes that are not one valid CBOR item are 1001
// INVALID_MESSAGE (amp's strict decoder decides); a well-formed body with a
// missing, mistyped or invalid field is 4001 BAD_REQUEST, with a name saying
// which rule failed (ErrMissingField, ErrIdentityConflict, ...); an unknown
// capability is 4002 and an unsatisfiable version request 4003. Messages
// are lowercase and never quote input: they name fields and rules, not
// values.
//
// # Decided rules
//
// Where RFC 004 leaves room, this package decides:
//
// Names (§4.1). A label is 1-63 bytes of [a-z0-9-], not starting or ending
// with "-". The namespace is at least two labels joined by ".". The slug is
// the last dot-separated segment: 1-64 bytes of [a-z0-9_-] starting with
// [a-z0-9]. A whole name is at most 255 bytes. Uppercase is refused, because
// names that differ only in case are a spoofing hazard; comparison is still
// bytewise and case-sensitive (§4.1). A namespace prefix ("org.example",
// "org.example." or "*") matches names strictly under it at a label
// boundary: "org.example.x" and "org.example.sub.x", never "org.examples.x".
//
// Versions (§4.4). SemVer 2.0.0 as parsed by Masterminds/semver
// StrictNewVersion: "2.0" and "v1.2.3" are not versions; at most 256 bytes.
// Precedence follows SemVer §11, prerelease identifiers included (numeric
// identifiers of any length compare numerically). Build metadata is
// ignored for precedence; wherever a total order is needed (sorting,
// "highest") ties are broken by the version string bytewise. A version's
// identity, however, is its whole string: "2.1.0" and "2.1.0+b.7" are
// different versions (and different capability ids) of equal precedence.
// Exact-version checks (a preferred or acceptable version, a by-id or
// by-version invocation, a descriptor's own version) compare identity;
// range comparators compare precedence.
//
// Ranges (§4.4). An exact version "x.y.z", or space-separated comparators
// that must all hold, each "=", ">", ">=", "<" or "<=" directly followed by
// a version; a bare version inside a set means "=". The grammar is parsed
// here, not by Masterminds' NewConstraint (whose grammar is wider). Refused
// (4001, the message naming the form): "||", wildcards ("1.x", "1.X", "*",
// "1.2.*"), "~", "^", hyphen ranges ("1.0.0 - 2.0.0"), "!=", commas,
// partial versions ("1.2"), v-prefixed versions, the empty range. A range is
// at most 256 bytes and 16 comparators.
//
// Prereleases in ranges. A version with a prerelease satisfies a range only
// if at least one comparator of the range carries a prerelease on the same
// major.minor.patch (npm's convention): ">=1.2.3-alpha <2.0.0" contains
// "1.2.3-beta" but not "1.3.0-beta", and ">=1.0.0" never contains
// "2.0.0-rc.1". Otherwise comparisons are plain precedence. (Masterminds
// admits prereleases when any comparator has one, whatever its
// major.minor.patch; this package is stricter.)
//
// Descriptors (§4.2). id must equal name ":" version, byte for byte.
// hash_alg is "sha-256" with a 32-byte hash or "sha-512" with a 64-byte
// hash. A schema-ref has a uri, or both bundle_id and artifact_key; one of
// those two without the other is invalid in every profile; the Offline
// Registry Profile (ProfileOffline) requires both, and refuses an extra
// field that has no JSON form reading back as the same CBOR (a byte
// string, a tag, undefined, NaN, an infinity, an integer below -2^63, a
// non-text map key; docs/SPEC-DECISIONS.md CAP-9). Absent supported_ranges
// means only the exact version is supported; a descriptor always supports
// its own version (Descriptor.Supports). The JSON form writes hashes as
// lowercase hex.
//
// Bodies (§6.4, §7.4). A CAP_QUERY filter needs capability or type, and
// capability takes precedence. A CAP_INVOKE is by id (never with negotiate;
// capability and version, when also present, must agree with the id) or by
// capability/type with exactly one of version and negotiate. CAP_RESULT is
// status "success" with result, or "error" with error (code 1-65535).
// CAP_DECLARE may carry "next_cursor" (docs/SPEC-DECISIONS.md CAP-1). Present text fields are
// never empty, so "" means absent everywhere and every value has one
// encoding. An acceptable list holds at most 64 versions.
//
// Forward compatibility (§10). Fields a body, filter, negotiate hint,
// result error, descriptor or schema-ref does not define are kept in its
// Extra map as deterministic CBOR and written back unchanged. Decoding
// deterministic input and encoding the result reproduces the input byte for
// byte.
//
// Negotiation (§6.3), exactly in this order: the preferred version if the
// provider has it; else the first acceptable version the provider has; else
// the highest provider version in the range; else 4003. A provider with no
// versions is 4002.
//
// Ordering (§6.5). newest-first sorts by (name ASC bytewise, version DESC),
// oldest-first by (name ASC, version ASC), versions in the total order above.
//
// Legacy types. ResolveType: a type that is a known canonical name is
// itself; otherwise an explicit alias wins (4002 if it names an unknown
// capability; ResolveTypeClaims: 4001 ambiguous_type when authorities of
// several namespaces claim it); otherwise the unique known name whose slug
// equals the type; several are 4001 ambiguous_type naming the sorted
// candidates; none is 4002.
package capability
