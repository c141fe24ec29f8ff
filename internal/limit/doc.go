// Package limit holds the one rule every option struct of this module
// follows for its numeric fields (sizes, counts, rates, durations): a
// field left at zero, or set below it, takes its documented default
// (Default). Bounds a caller may not raise, and defaults derived from
// another field, stay with the struct that documents them.
package limit
