// Package jsonnum is the module's one reader of the double value of a
// JSON number (RFC 8259 §6): ParseFloat gives the double nearest the
// number, ties to even, as strconv.ParseFloat specifies, in time linear
// in its text whatever the number.
//
// strconv.ParseFloat rounds most numbers in well under a microsecond,
// but falls back to a decimal algorithm, a thousand times slower, for
// numbers anyone may write: a subnormal (5e-324) and one of more than 19
// digits near a rounding boundary (docs/SPEC-DECISIONS.md AGH-20); and
// that fallback reads a number of more than 800 digits before its
// decimal point 10^k too small (AGH-21). ParseFloat leaves to strconv
// only the numbers it rounds on its fast paths, and rounds the others
// exactly (math/big, pooled: no allocation per number). Every reader of
// a number a peer controls takes its double here (docs/SPEC-DECISIONS.md
// JSON-3): internal/jcs (canonical forms), internal/offlineschema
// (invocation params, MCP arguments, handler results) and
// internal/schemagraph (schema documents read with Options.Float64),
// client (a provider's result, the caller's params) and capability
// (descriptor JSON) (JSON-5, JSON-6).
// StrconvFast is the one rule of which numbers strconv rounds fast
// (JSON-12), and Scanner the one reader of a text's numbers by their
// bytes, for those that count them before a parse: client,
// internal/schemagraph and bundlebuild (JSON-13).
// Errors never quote the input.
package jsonnum
