// Package offlineschema compiles the JSON Schemas of one bundle and validates
// capability params against them, for agents that must never touch the
// network (RFC 004 §5.3, Offline Registry Profile; docs/ARCHITECTURE.md,
// invariants 1 and 2). It wraps github.com/santhosh-tekuri/jsonschema/v5 (v5.3.1) so that
// no resolution path can open a file or a connection, and so that every
// error is an *amp.Error whose message never echoes schema text or values.
//
// # Model
//
//   - A Loader supplies the bytes of one bundle's artifacts, by artifact key
//     ("capabilities/org.example.translate/2.1.0/input.schema.json"), and
//     maps an absolute "$id" to the key of the artifact that declares it.
//     The caller has verified the hash of every byte it returns (invariant
//     1); this package reads nothing else.
//   - Compile compiles the schema at a root key into a Schema, which is
//     immutable, safe for concurrent use, and meant to be cached: compiling
//     costs about a millisecond, validating microseconds. Schema.Deps lists
//     every artifact key whose bytes were used, root included, so that the
//     cache can be keyed by them and their hashes re-verified.
//   - Schema.Validate checks a value of the JSON data model. A failure is
//     4004 schema_violation with a sorted, deduplicated []Violation
//     (instance location and keyword only) as Details.
//   - ValueFromCBOR turns a CBOR params item into that model, ToCBOR turns a
//     handler's result back into deterministic CBOR, ValueFromJSON reads
//     the model from JSON (command-line params). SchemaID gives the "$id" a
//     resolver indexes for Loader.KeyForID.
//   - QuickCheck checks all the schemas of a bundle (for a builder or an
//     importer) with one linear pass each, and compiles with Compile only
//     the schemas it cannot vouch for, so its verdicts and errors are
//     Compile's (docs/SPEC-DECISIONS.md, SCHEMA-2). Compile's time grows
//     with the square of the number of subschemas of a document;
//     QuickCheck's is about one JSON parse.
//
// # URLs
//
// Every artifact has a synthetic absolute URL, "ampbundle:///" + key, with
// the path percent-encoded as net/url does. A relative "$ref" resolves
// against the URL of the artifact it is written in (RFC 3986), so from
// "ampbundle:///capabilities/x/1.0.0/input.schema.json" the reference
// "../common.json" names the artifact "capabilities/x/common.json", and
// "common.json#/$defs/lang" a subschema of the sibling "common.json".
//
// The compiler's only loader (its per-compiler LoadURL) serves:
//
//   - ampbundle:///<key> by Loader.Load(key): the path without its leading
//     slash, percent-decoded as url.Parse does. Only exactly that form:
//     a host ("ampbundle://other-bundle/x", also what a network-path
//     reference "//host/x" becomes), user info, a query, or a path that
//     still holds "." or ".." segments or empty segments is refused. RFC
//     3986 resolution removes the dot segments of a relative reference
//     and clamps ".." at the root, so "../../../../etc/passwd" from a
//     shallow artifact names the key "etc/passwd" of the same bundle,
//     which is looked up like any other key: nothing can leave the
//     bundle's key space.
//   - any other absolute URI (https, http, urn, file, ...) only through
//     Loader.KeyForID, and only when the artifact it names declares that
//     very "$id" (checked again with SchemaID). This is what a schema with
//     an absolute "$id" needs: its relative references resolve against
//     that "$id" (JSON Schema semantics), so they arrive here as absolute
//     URIs under it.
//
// Everything else is refused: http, https, file (even for a file that
// exists), other schemes, an "$id" that no artifact of the bundle declares,
// a key the Loader cannot supply. Refusals, and JSON pointers or anchors
// that point to nothing in a loaded document, are unresolved_ref (code 0).
// The message names the root key and, when the reference named an artifact
// key, that key; for any other URI it names only its scheme, and only a
// well-known one ("a reference to a https uri is refused"), never the host,
// path or reference text. The full URL is in the cause, for logs. Options.OnExternalLoad sees every
// refused URL that names no artifact of the bundle.
//
// The only schemas that do not come from the Loader are the meta-schemas
// built into the library (drafts 4, 6, 7, 2019-09 and 2020-12, with their
// vocabulary meta-schemas), which it serves from memory: a document with
// "$schema": "https://json-schema.org/draft/2020-12/schema" compiles with
// no load at all.
//
// # Decisions
//
//   - Draft: 2020-12 when "$schema" is absent. Other drafts are honoured
//     when declared.
//   - format is asserted, for every draft (fail closed). A format name the
//     library does not implement is refused at compile time
//     (invalid_schema), since asserting it would accept everything. The
//     implemented names: date-time, date, time, duration, period,
//     hostname, email, ip-address, ipv4, ipv6, uri, iri, uri-reference,
//     uriref, iri-reference, uri-template, regex, json-pointer,
//     relative-json-pointer, uuid.
//   - contentEncoding, contentMediaType and contentSchema are annotations
//     for 2019-09 and 2020-12 schemas, as those drafts specify by default:
//     decoding and parsing embedded documents is the handler's business.
//     The library always asserts them for draft-07 and older (base64 and
//     application/json only); that is left as it is.
//   - pattern and patternProperties are Go regexp (RE2) syntax, not
//     ECMA-262. A pattern Go cannot compile (lookahead, backreferences) is
//     invalid_schema at compile time, never a panic.
//   - Bytes that are not JSON are invalid_schema naming the artifact key;
//     JSON that is not a valid schema is invalid_schema naming the root
//     key (the library does not say which document failed). The library's
//     error is the cause: it may quote schema text, so it is for logs only.
//   - Anchors: a loaded document that declares one anchor name in two
//     subschemas of one resource, or one "$dynamicAnchor" name three times
//     (or twice and again in another loaded document), is invalid_schema:
//     the library would pick the target in map order, so one schema would
//     accept a value on one run and refuse it on the next (anchors.go).
//   - Numbers: integers are exact (int64, uint64, or json.Number beyond),
//     floats are float64; the library compares them as exact rationals, so
//     "maximum": 18446744073709551615 is checked exactly.
//   - Limits: the documents one Compile loads hold at most
//     MaxCompileBytes, MaxCompileObjects JSON objects and boolean subschemas and
//     MaxCompilePatternInsts regular-expression instructions in all (and
//     MaxPatternInsts in any one program, measured without building it)
//     and MaxCompilePatternRanges character-class ranges their compile
//     builds (MaxPatternRanges in any one: MeasurePattern),
//     each document nests at most MaxSchemaNesting deep and its numbers follow
//     the value model's caps (limits.go). Beyond them the schema is
//     invalid_schema before the library reads the document: its compile
//     time grows with the square of the subschemas, and it has no way to
//     stop. A document over MaxCompileBytes on its own is refused from its
//     length by SchemaID, Prepare and QuickCheck.Add too, never parsed
//     (CheckCompileBytes).
//   - Violations: leaves of the library's error tree, except that anyOf,
//     oneOf, not and contains are reported as themselves. "required" points
//     at each missing property. At most MaxViolations, after sorting.
//     Validation errors carry no cause: the library's text quotes values.
//
// # What the model refuses
//
// The JSON data model here is what CBOR params can carry and the library
// can compare: objects with text keys, arrays, text, integers in the CBOR
// range [-2^64, 2^64-1], finite float64, true, false, null, nested at most
// MaxDepth deep. Byte strings, tags, undefined, other simple values, NaN and
// infinities, non-text map keys, and JSON numbers beyond that range or with
// absurd exponents are refused (not_json_compatible) rather than silently
// converted.
//
// There is no package-level mutable state. Note that the library itself
// still reads its own package-level Formats, Decoders and MediaTypes
// registries for the built-in format and content checks; this package never
// writes them, and nothing else in this module may.
package offlineschema
