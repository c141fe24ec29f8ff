package jcs

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// Spellings are the member names a reader knows in one object, with their
// spelling keys (spellingKey), for Variant and Spelt.
type Spellings struct {
	names []string
	keys  []string
	max   int // the longest key, in bytes
}

// NewSpellings returns the spellings of names.
func NewSpellings(names ...string) *Spellings {
	sp := &Spellings{names: names}
	for _, n := range names {
		k, _ := spellingKey(nil, n, len(n)*utf8.UTFMax)
		sp.keys = append(sp.keys, string(k))
		sp.max = max(sp.max, len(k))
	}
	return sp
}

// Variant reports whether o holds a member that is none of sp's names but
// has the spelling key of one (spellingKey): equal to it under Unicode
// simple case folding once every '_' and '-' is left out
// ("contextNeeded", "Context_Needed", "expires-at" or "EXPIRESAT" for
// "expires_at"; "supported_interfaces" for "supportedInterfaces").
// encoding/json takes a case variant for the member, protojson or a
// decoder aliasing snake_case to camelCase the underscore variant, and
// encoding/json/v2 matching names case-insensitively any of them, while
// RFC 8785, a proof or digest over the document, and every exact reader
// see another member: callers reading signed or digested documents refuse
// such a member rather than let member order pick what a folding reader
// sees. A member named exactly as one of the names is never a variant.
// One pass over each member's name, no allocation while the longest of
// the names' keys is at most 60 bytes.
func (sp *Spellings) Variant(o Object) bool {
	var arr [64]byte
	for _, m := range o {
		if slices.Contains(sp.names, m.Name) {
			continue
		}
		if key, fits := spellingKey(arr[:0], m.Name, sp.max); fits && sp.isKey(key) {
			return true
		}
	}
	return false
}

// Spelt reports whether name is one of sp's names or spelt like one but
// for case, underscores and dashes (it has the spelling key of one): every
// name a folding reader may take for one of them. No allocation while the
// longest of the names' keys is at most 60 bytes.
func (sp *Spellings) Spelt(name string) bool {
	var arr [64]byte
	key, fits := spellingKey(arr[:0], name, sp.max)
	return fits && sp.isKey(key)
}

// isKey reports whether key is the spelling key of one of sp's names.
func (sp *Spellings) isKey(key []byte) bool {
	for _, k := range sp.keys {
		if string(key) == k {
			return true
		}
	}
	return false
}

// spellingKey appends to buf the key of name: its runes but '_' and '-',
// each the least rune of its Unicode simple folding orbit ('K' for "k",
// "K" and the Kelvin sign), so that two names have one key exactly when
// they are equal under strings.EqualFold once their underscores and
// dashes are left out ("input_modes", "input-modes", "INPUTMODES" and
// "inputModes" are one): the folded name encoding/json/v2 matches
// case-insensitive names by (its foldName), which encoding/json's
// strings.EqualFold and protojson's two names per field only refine. It
// stops, reporting false, once the key is longer than limit bytes.
func spellingKey(buf []byte, name string, limit int) ([]byte, bool) {
	for _, r := range name {
		switch {
		case r == '_' || r == '-':
			continue
		case 'a' <= r && r <= 'z':
			r -= 'a' - 'A'
		case r >= utf8.RuneSelf:
			least := r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				least = min(least, f)
			}
			r = least
		}
		if buf = utf8.AppendRune(buf, r); len(buf) > limit {
			return buf, false
		}
	}
	return buf, true
}
