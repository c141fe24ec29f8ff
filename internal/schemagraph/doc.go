// Package schemagraph is the one reader of JSON Schema documents: a strict,
// bounded JSON parser (Parse) that both the offline schema quick check
// (internal/offlineschema) and the compatibility checker (compat) use, an
// index of each schema resource's "$id", "$anchor" and "$dynamicAnchor"
// in the positions the validator reads them (Index, SchemaPosition), and
// the resolution of a "$ref" against a base URI, as the validator
// (jsonschema v5.3.1) resolves it, into a target URI and a fragment
// (Resolve), a JSON pointer (Pointer) or an anchor.
//
// Everything a document's author controls is bounded: bytes, nesting,
// values (Options), pointer length and the pointer text of an index
// (MaxIndexPointerBytes). Nothing here loads a document:
// callers supply the bytes.
package schemagraph
