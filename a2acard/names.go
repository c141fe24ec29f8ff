package a2acard

import (
	"crypto/ed25519"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
)

// goNames are the member names encoding/json decodes into one struct type
// of Card (Card, Interface, Provider, Capabilities, Extension, Skill,
// Signature), and, by member, those of the struct its value (or each
// element of it) decodes into.
type goNames struct {
	typ    reflect.Type
	names  []string
	keys   []string // the names' spelling keys (spellingKey; A2A-12)
	maxKey int      // the longest of keys, in bytes
	sub    map[string]*goNames
}

// cardNames is goNames of Card, read from its json tags: exactly what a
// caller decoding a verified card into a Card gets.
var cardNames = sync.OnceValue(func() *goNames { return namesOf(reflect.TypeFor[Card]()) })

func namesOf(t reflect.Type) *goNames {
	n := &goNames{typ: t, sub: map[string]*goNames{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		n.names = append(n.names, name)
		key, _ := spellingKey(nil, name, len(name)*utf8.UTFMax)
		n.keys = append(n.keys, string(key))
		n.maxKey = max(n.maxKey, len(key))
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			n.sub[name] = namesOf(ft)
		}
	}
	return n
}

// servedNames is goNames of our own extension's params (servedParamsDoc:
// "capabilities", each entry a ServedParams), which a caller decodes with
// encoding/json to read the pins it checks before it invokes.
var servedNames = sync.OnceValue(func() *goNames { return namesOf(reflect.TypeFor[servedParamsDoc]()) })

// caseVariant reports whether v, a card or a member of one, holds an
// object member spelt like a member of the Card struct it decodes into but
// for case ("URL" beside or instead of "url"; A2A-10) or for case and
// underscores ("supported_interfaces", "documentation_url"; A2A-12):
// encoding/json would read the first as that member, the last spelling
// winning, and protojson (which takes the proto field name too) the
// second, while the signature and Verify read the exact name. The params of an extension whose uri is
// ExtensionURI are read the same way, against servedParamsDoc: they carry
// the bundle and schema pins of each skill.
func (n *goNames) caseVariant(v any) bool {
	switch t := v.(type) {
	case jcs.Object:
		if n.spellingVariant(t) {
			return true
		}
		for _, m := range t {
			if s := n.sub[m.Name]; s != nil && s.caseVariant(m.Value) {
				return true
			}
		}
		if n.typ == reflect.TypeFor[Extension]() {
			if uri, _ := t.Get("uri"); uri == ExtensionURI {
				if params, _ := t.Get("params"); servedNames().caseVariant(params) {
					return true
				}
			}
		}
	case []any:
		for _, x := range t {
			if n.caseVariant(x) {
				return true
			}
		}
	}
	return false
}

// spellingVariant reports whether o holds a member that is none of n's
// names but has the spelling key of one (spellingKey): equal to it under
// Unicode simple case folding once every '_' is left out. One pass over
// each member's name, no allocation but one key buffer.
func (n *goNames) spellingVariant(o jcs.Object) bool {
	var buf []byte
	for _, m := range o {
		if slices.Contains(n.names, m.Name) {
			continue
		}
		var fits bool
		if buf, fits = spellingKey(buf[:0], m.Name, n.maxKey); fits && slices.Contains(n.keys, string(buf)) {
			return true
		}
	}
	return false
}

// spellingKey appends to buf the key of name: its runes but '_', each the
// least rune of its Unicode simple folding orbit ('K' for "k", "K" and the
// Kelvin sign), so that two names have one key exactly when they are equal
// under strings.EqualFold once their underscores are left out
// ("input_modes", "INPUTMODES" and "inputModes" are one). It stops,
// reporting false, once the key is longer than limit bytes.
func spellingKey(buf []byte, name string, limit int) ([]byte, bool) {
	for _, r := range name {
		switch {
		case r == '_':
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

// checkKid refuses a kid that is not a DID or DID URL with a fragment
// (amp.ValidDID: "did:", a method name of ASCII lowercase letters and
// digits; "did:kеy:" with a Cyrillic е, a fullwidth colon, "did%3Akey%3A"
// or "DID:KEY:" only look like one), and a did:key kid other than pub's
// own: "did:key:<pub>" or DIDKeyID(pub) (A2A-3, A2A-11). A did:key is its
// key, so a did:key kid naming another key would report a card signed by
// pub as signed by that key's holder.
func checkKid(pub ed25519.PublicKey, kid string) error {
	if !amp.ValidDID(kid) {
		return fail(ErrKidMismatch, "the kid is not a DID or a DID URL")
	}
	did, frag, hasFrag := strings.Cut(kid, "#")
	const method = "did:key:"
	if !strings.HasPrefix(did, method) {
		return nil
	}
	own := amp.DIDKey(pub)
	if did != own || (hasFrag && frag != strings.TrimPrefix(own, method)) {
		return fail(ErrKidMismatch, "the kid is a did:key that does not name the given key")
	}
	return nil
}
