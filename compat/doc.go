// Package compat decides whether two versions of a capability's JSON
// Schemas (draft 2020-12) are compatible, over each schema's whole "$ref"
// closure inside one bundle, with a verdict a verifier can re-derive:
// Compatible, Incompatible, or Unknown. Unknown is what the checker cannot
// decide; it is never read as compatible.
//
// # Questions
//
// Subsumes(producer, acceptor) asks whether every instance valid under the
// producing schema is valid under the accepting one. For a capability
// (RFC 004 §8, §10):
//
//   - the input side is backward compatible when every request valid for
//     the old input schema is valid for the new one: Backward, that is
//     Subsumes(oldInput, newInput);
//   - the output side is forward compatible when every result valid for
//     the new output schema is valid for the old one: Forward, that is
//     Subsumes(newOutput, oldOutput).
//
// Versions asks both for a caller written for one version served by
// another.
//
// # Schemas
//
// A Source wraps a Loader, the same shape as the offline schema compiler's:
// verified artifact bytes by key, and the key that declares an absolute
// "$id". Each artifact has the synthetic URL "ampbundle:///" + key; a
// relative "$ref" resolves against it (or against the document's absolute
// "$id") as the validator resolves it (RFC 3986, except that a reference
// beginning "urn:" or absolute is taken as written and a relative one is
// appended to a "urn:" base; schemagraph.Resolve), then a fragment that is
// a JSON pointer or a "$anchor" selects the subschema. A reference to anything the bundle does
// not hold is never followed: the check is Unknown (unresolved_ref). So is
// one the offline validator might resolve otherwise: a "$ref" inside a
// subschema with its own "$id" (an embedded schema resource), one out of a
// document that holds embedded resources to another document, a JSON
// pointer that enters an embedded resource, an anchor that does not name
// exactly one subschema of its document, a fragment whose percent
// encoding the validator reads differently, a target the validator spells
// otherwise than net/url, a JSON pointer to a spot that is not a schema
// position as the validator spells its keys (schemagraph.SchemaPosition:
// the validator lists the subschemas it finds there), an anchor of a
// document holding such a pointer reference, and an anchor whose name the
// document also declares in data (a pointer reference in any artifact
// compiled with it may make that declaration the document's). A
// document whose "$schema"
// names another draft than 2020-12 is not compared (unreadable_schema):
// the validator reads it by that draft.
//
// # Method
//
// The checker compares the two schemas structurally. "$ref" and "allOf" are
// flattened into a conjunction on each side. Every assertion of the
// accepting side must be implied by the producing side; keywords of the
// producing side the checker does not use are dropped, which only makes it
// larger (sound). Property, item and union schemas are compared
// recursively; a pair met again while it is being compared is assumed
// (coinduction), which is sound because instances are finite, so recursive
// schemas terminate. anyOf/oneOf on the producing side are split into
// branches (a branch of a producing oneOf that may match another branch
// only yields Unknown: its instances there are not the producer's); an
// acceptor's anyOf needs one branch to cover the producer (or each of the
// producer's listed values, at most 64, or types); an acceptor's oneOf
// needs one branch to cover the producer (or each listed value or type,
// integers apart) and the other branches proven disjoint from it (by type,
// by listed values, or by a required property with disjoint listed values,
// a discriminator). Where all branches but one are disjoint from a listed
// value or type of the producer, that branch decides it: what it loses,
// the union loses.
//
// Some keywords are decided from JSON Schema 2020-12 semantics where what
// the checker proves settles them, and stay Unknown otherwise:
//
//   - oneOf: Incompatible (one_of_ambiguous) when a producer instance is
//     proven to match two branches — the producer (or its part of one type)
//     lies inside both and is inhabited, or inside one while another branch
//     lies inside the producer and is inhabited (anyOf [number, integer]
//     made a oneOf loses every integer).
//   - dependentRequired k → d: Compatible when d is required, implied
//     through the producer's own dependentRequired, or k can never be
//     present; Incompatible (dependency_added) when an object holding k
//     and not d is valid for the producer (k admits a value, nothing
//     requires d, maxProperties allows it).
//   - not: Compatible when the producer is proven disjoint from the negated
//     schema; Incompatible (not_matched) when a producer instance is proven
//     to match it.
//   - if/then/else: when every producer instance is proven to pass "if",
//     "then" is compared; when none can, "else"; otherwise Unknown. The
//     same "if" counts as the same only with the same "then" and "else".
//   - dependentSchemas k → S: Compatible when k can never be present;
//     otherwise the producer's objects holding k are compared with S.
//   - contains counts as the same only with the same minContains and
//     maxContains.
//   - enum or const against a producer of integers in a bounded range of
//     at most 1024 integers: every integer of the range (meeting its
//     multipleOf) must be listed.
//
// "Inhabited" is proven by a witness built from the producer's facts (a
// null, a boolean, a string, a number, {}, [] or a listed scalar); a
// schema with assertions the checker leaves out is never proven inhabited,
// so its verdict stays Unknown.
//
// Findings name a rule and the JSON Pointer of the keyword in the
// accepting schema, as an evaluation path from its root through "$ref"
// and "allOf" ("/properties/lang/$ref/enum"), plus the artifact key and
// pointer inside that artifact. Rules:
//
//	required_added             the acceptor requires a property the producer does not guarantee
//	property_removed           a property the producer allows is refused (false, or additionalProperties/unevaluatedProperties false)
//	additional_properties_closed  unlisted properties the producer allows are refused
//	type_narrowed              a type the producer admits is refused ("type", or no anyOf branch admits it)
//	enum_narrowed, const_changed  a value the producer admits is not listed
//	bounds_tightened           minimum/maximum (exclusive or not), min/maxLength, min/maxItems, min/maxProperties
//	multiple_of_changed        multipleOf not implied by the producer's
//	pattern_changed            a pattern the producer does not carry verbatim (regular expressions are compared as text)
//	format_changed             a format the producer does not carry
//	unique_items_added         uniqueItems the producer does not guarantee
//	dependency_added           dependentRequired the producer does not guarantee, with a producer object that breaks it
//	one_of_ambiguous           a producer instance matches two oneOf branches (Unknown where only exclusivity is unproven)
//	not_matched                a producer instance matches a schema under not
//	ref_target_changed         both sides reference different targets that differ in meaning
//	schema_false               the acceptor is false where the producer admits something
//
// and, always Unknown: unresolved_ref, undecided_keyword (not, if and
// dependentSchemas the rules above leave open; propertyNames, contains,
// regexProperties: accepted only when both sides carry the same value
// with no reference in it; unevaluatedItems: only when one schema object
// of each side carries the same values for it and for every keyword that
// evaluates items (prefixItems, items, contains, the in-place
// applicators), with no reference; unlisted member names where the two
// sides do not carry one and the same patternProperties next to every
// closing keyword of the acceptor; unevaluatedProperties whose own schema
// (its adjacent keywords, and what its $ref and allOf reach: never a
// parent's or a sibling's) holds a conditional applicator;
// $dynamicRef and $recursiveRef always, their targets depending on the
// dynamic scope; every keyword the validator compiles is compared or
// undecided, and only the others are annotations),
// anyOf_not_covered, oneOf_not_covered, enum_not_checked, invalid_keyword,
// unreadable_schema, too_complex. An Incompatible rule becomes Unknown
// where the producer has assertions the checker leaves out (it might be
// the reason the instance cannot occur).
//
// # Bounds
//
// Schemas are publisher input: a document is at most MaxDocumentSize bytes
// and MaxNesting deep, with no JSON pointer nor "$id" longer than
// MaxPointerBytes and no subschema's base (its nested "$id"s resolved)
// longer than twice it (else unreadable_schema), a check at most MaxSteps
// comparisons, MaxDepth nested ones, evaluation paths of MaxPathBytes
// and MaxSplits producers split for unions; beyond, the verdict is
// Unknown (too_complex). A comparison keeps at most MaxFindings findings
// (an Incompatible one among them when there is one). Listed values (enum, const) are
// compared by canonical forms read once per document, and a comparison
// that passes over a list costs a unit of work per 64 values (and per
// 128 bytes of each number it reads exactly), each schema "$ref" and
// "allOf" flatten into a conjunction a unit (and a unit per 64 of its
// members), each walk that finds two schema values equal, or a value
// free of references, a unit per 64 values visited (a pair found equal
// is remembered; each producer part looked up for an acceptor's keyword
// counts as a value of the walk that compares them), each part of a
// conjunction looked up for a property name or an item index a unit per
// 64 counted over the check (an own schema passed over for
// "unevaluatedProperties" a lookup a part, half a unit a part more when
// the pass ends uncertain), and a regular expression
// a unit per 4 bytes of it to parse, what compiling it builds (half a
// unit an instruction, an eighth a character-class range, charged before
// it is built), and per 256 instructions × bytes of each string it is
// matched against (a pattern over the offline compiler's MaxPatternInsts
// or MaxPatternRanges is undecided), at most MaxValueWork a
// check, counted apart from the steps. MatrixOf may also bound the
// comparisons of a whole matrix together, and what findings it keeps,
// for a caller that computes matrices for others. Numbers are
// compared exactly (math/big) and exponents beyond four digits are not
// read. There is no package-level mutable state; a Source caches parsed
// documents and resolved references and is safe for concurrent use.
package compat
