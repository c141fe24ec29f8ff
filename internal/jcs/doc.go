// Package jcs is the module's one implementation of the JSON
// Canonicalization Scheme, RFC 8785 (JCS): no whitespace, object members
// sorted by the UTF-16 code units of their names (§3.2.3), strings with the
// minimal escapes (§3.2.2.2), numbers in ECMAScript's Number.prototype
// .toString form of their IEEE 754 double (§3.2.2.3).
//
// Input is read as I-JSON (RFC 7493), strictly: invalid UTF-8, a lone
// UTF-16 surrogate escape, a duplicate object member name, trailing data,
// a number outside the double range and nesting deeper than the bound are
// refused, each with its own error (ErrMalformed, ErrDuplicateMember,
// ErrNumber, ErrTooDeep), so that two different documents never share one
// canonical form. Parse keeps a document as a tree (objects as ordered
// members) for callers that edit it before writing its canonical form
// (the A2A Agent Card signature excludes a member); Canonical does both
// steps; ParseLimited also bounds the number of values (ErrTooMany), so
// that a caller bounding its input's bytes and values bounds the parse's
// memory. Parsing and writing cost time and memory linear in the input
// (no token per value), sorting an object's n members n log n comparisons
// made in place (no conversion to UTF-16).
// Errors never quote the input.
package jcs
