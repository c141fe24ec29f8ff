package agh

import "github.com/ampbundle/ampbundle/internal/jcs"

// Canonical returns the RFC 8785 (JCS) serialization of the JSON text
// data: no whitespace, object members sorted by the UTF-16 code units of
// their names, strings with the minimal escapes, numbers in the ECMAScript
// form. Duplicate member names, invalid UTF-8, lone surrogate escapes,
// nesting deeper than 32 and numbers outside the double range are refused.
// It is the module's one JCS (internal/jcs), kept here for embedders.
func Canonical(data []byte) ([]byte, error) { return jcs.Canonical(data) }
