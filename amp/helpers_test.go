package amp

import (
	"bytes"
	"sort"
)

// field is one encoded key/value pair of a map under construction.
type field struct{ k, v []byte }

// appendMap appends a map of the given pairs, sorted by encoded key (RFC 8949
// §4.2.1). Keys must be distinct.
func appendMap(dst []byte, fields []field) []byte {
	sort.Slice(fields, func(i, j int) bool { return bytes.Compare(fields[i].k, fields[j].k) < 0 })
	dst = AppendHead(dst, MajorMap, uint64(len(fields)))
	for _, f := range fields {
		dst = append(append(dst, f.k...), f.v...)
	}
	return dst
}

func textKey(s string) []byte { return appendText(nil, s) }
