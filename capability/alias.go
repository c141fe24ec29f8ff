package capability

import (
	"sort"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// ResolveType maps a legacy `type` (§6.1, §7.4) to a canonical capability
// name, given an alias table (type -> canonical name, as carried by a
// bundle) and the canonical names the caller knows:
//
//  1. an explicit alias wins: its target is returned if it is known, and
//     4002 capability_not_found if it is not (an alias is never second-
//     guessed by slug matching);
//  2. a type that is itself a known canonical name resolves to itself;
//  3. otherwise the type must equal the slug of exactly one known name;
//     several matches are 4001 ambiguous_type, whose message and details
//     ("candidates") name the candidates in sorted order; none is 4002.
//
// An empty type is 4001 missing_field. Messages never quote the type.
func ResolveType(typ string, aliases map[string]string, known []string) (string, error) {
	if typ == "" {
		return "", badRequest(ErrMissingField, "legacy type is empty")
	}
	if target, ok := aliases[typ]; ok {
		for _, k := range known {
			if k == target {
				return target, nil
			}
		}
		return "", amp.NewError(amp.CodeCapabilityNotFound, "the alias of the legacy type names an unknown capability")
	}
	var found []string
	for _, k := range known {
		if k == typ {
			return k, nil
		}
		if i := strings.LastIndexByte(k, '.'); i >= 0 && k[i+1:] == typ {
			found = append(found, k)
		}
	}
	if len(found) > 1 {
		sort.Strings(found)
		found = uniq(found)
	}
	switch len(found) {
	case 0:
		return "", amp.NewError(amp.CodeCapabilityNotFound, "no capability matches the legacy type")
	case 1:
		return found[0], nil
	}
	return "", badRequest(ErrAmbiguousType, "legacy type matches several capabilities: %s", strings.Join(found, ", ")).
		WithDetails(map[string]any{"candidates": found})
}

// uniq removes adjacent duplicates from a sorted slice.
func uniq(s []string) []string {
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}
