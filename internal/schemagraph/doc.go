// Package schemagraph is the one reader of JSON Schema documents: a strict,
// bounded JSON parser (Parse) that both the offline schema quick check
// (internal/offlineschema) and the compatibility checker (compat) use, an
// index of each schema resource's "$id", "$anchor" and "$dynamicAnchor"
// in the positions the validator reads them (Index), and the resolution of a "$ref" against a base URI into a target
// URI and a fragment (Split), a JSON pointer (Pointer) or an anchor.
//
// Everything a document's author controls is bounded: bytes, nesting,
// values (Options), pointer length and the pointer text of an index
// (MaxIndexPointerBytes). Nothing here loads a document:
// callers supply the bytes.
package schemagraph
