package capability

import (
	"slices"
	"sort"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// ResolveType maps a legacy `type` (§6.1, §7.4) to a canonical capability
// name, given an alias table (type -> canonical name, as carried by a
// bundle) and the canonical names the caller knows:
//
//  1. a type that is itself a known canonical name resolves to itself,
//     whatever the aliases say: an alias never redirects a name that
//     exists (RFC 004 §6.1 lets the canonical `capability` take precedence
//     over a legacy `type`; a type that spells a canonical name is that
//     capability, and A.7 asks only that a legacy type be mapped to one);
//  2. otherwise an explicit alias wins: its target is returned if it is
//     known, and 4002 capability_not_found if it is not (an alias is never
//     second-guessed by slug matching);
//  3. otherwise the type must equal the slug of exactly one known name;
//     several matches are 4001 ambiguous_type, whose message and details
//     ("candidates") name the candidates in sorted order; none is 4002.
//
// An empty type is 4001 missing_field. Messages never quote the type.
func ResolveType(typ string, aliases map[string]string, known []string) (string, error) {
	var claims map[string][]string
	if target, ok := aliases[typ]; ok {
		claims = map[string][]string{typ: {target}}
	}
	return ResolveTypeClaims(typ, claims, known)
}

// ResolveTypeClaims is ResolveType where a legacy type may be claimed, by
// bundles of different namespaces, for several canonical names (claims:
// type -> the names claimed). Rule 2 then takes the claimed names that are
// known: one is the answer, several are 4001 ambiguous_type naming them
// as rule 3 does, none is 4002.
func ResolveTypeClaims(typ string, claims map[string][]string, known []string) (string, error) {
	if typ == "" {
		return "", badRequest(ErrMissingField, "legacy type is empty")
	}
	if slices.Contains(known, typ) {
		return typ, nil
	}
	if targets, ok := claims[typ]; ok && len(targets) > 0 {
		var found []string
		for _, t := range targets {
			if slices.Contains(known, t) {
				found = append(found, t)
			}
		}
		if len(found) == 0 {
			return "", amp.NewError(amp.CodeCapabilityNotFound, "the alias of the legacy type names an unknown capability")
		}
		return oneOf(found)
	}
	var found []string
	for _, k := range known {
		if i := strings.LastIndexByte(k, '.'); i >= 0 && k[i+1:] == typ {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return "", amp.NewError(amp.CodeCapabilityNotFound, "no capability matches the legacy type")
	}
	return oneOf(found)
}

// oneOf returns the one name of found (not empty), or 4001
// ambiguous_type naming the distinct names in sorted order.
func oneOf(found []string) (string, error) {
	if len(found) > 1 {
		found = slices.Clone(found)
		sort.Strings(found)
		found = uniq(found)
	}
	if len(found) == 1 {
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
