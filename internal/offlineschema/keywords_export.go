package offlineschema

// Shape says where the value of a keyword of a schema object holds
// subschemas: the positions in which a "$ref" is a reference the compiler
// follows. Everywhere else ("const", "enum", "examples", "default",
// unknown keywords, ...) the value is data.
type Shape uint8

// The shapes of a keyword's value.
const (
	// NoSubschema: the value is data (or a string, a number, ...).
	NoSubschema Shape = iota
	// OneSubschema: the value is a schema.
	OneSubschema
	// SubschemaArray: the value is an array of schemas.
	SubschemaArray
	// SubschemaMap: the value is an object whose member values are
	// schemas.
	SubschemaMap
	// OneOrArray: the value is a schema or an array of schemas (the
	// draft-07 "items").
	OneOrArray
	// SchemaOrStringsMap: the value is an object whose member values are
	// each a schema or an array of property names ("dependencies").
	SchemaOrStringsMap
)

// KeywordShape is the shape of keyword kw's value in a schema object of
// draft d (2020 or 7, as SchemaDraft returns), from the keyword table of
// the quick pass (schemaKw, arrayKw, mapKw): the one list of schema
// positions that the quick pass and its callers share.
func KeywordShape(d int, kw string) Shape {
	switch {
	case kw == "items" && d == 7:
		return OneOrArray
	case schemaKw(d, kw):
		return OneSubschema
	case arrayKw(d, kw):
		return SubschemaArray
	case mapKw(d, kw):
		return SubschemaMap
	case kw == "dependencies":
		return SchemaOrStringsMap
	}
	return NoSubschema
}

// SchemaDraft returns the draft (2020 or 7) that a document's root
// "$schema" value v names (present: the member exists), or 0 for any
// other value; a document without "$schema" is 2020-12.
func SchemaDraft(v any, present bool) int { return quickDraft(v, present) }
