package offlineschema

// SchemaDraft returns the draft (2020 or 7) that a document's root
// "$schema" value v names (present: the member exists), or 0 for any
// other value; a document without "$schema" is 2020-12.
func SchemaDraft(v any, present bool) int { return quickDraft(v, present) }
