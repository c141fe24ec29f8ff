package a2acard

import (
	"crypto/ed25519"
	"reflect"
	"strings"
	"sync"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
)

// goNames are the member names encoding/json decodes into one struct type
// of Card (Card, Interface, Provider, Capabilities, Extension, Skill,
// Signature), and, by member, those of the struct its value (or each
// element of it) decodes into.
type goNames struct {
	typ       reflect.Type
	spellings *jcs.Spellings // of the names (A2A-10, A2A-12, A2A-15)
	sub       map[string]*goNames
}

// cardNames is goNames of Card, read from its json tags: exactly what a
// caller decoding a verified card into a Card gets.
var cardNames = sync.OnceValue(func() *goNames { return namesOf(reflect.TypeFor[Card]()) })

func namesOf(t reflect.Type) *goNames {
	n := &goNames{typ: t, sub: map[string]*goNames{}}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			n.sub[name] = namesOf(ft)
		}
	}
	n.spellings = jcs.NewSpellings(names...)
	return n
}

// servedNames is goNames of our own extension's params (servedParamsDoc:
// "capabilities", each entry a ServedParams), which a caller decodes with
// encoding/json to read the pins it checks before it invokes.
var servedNames = sync.OnceValue(func() *goNames { return namesOf(reflect.TypeFor[servedParamsDoc]()) })

// caseVariant reports whether v, a card or a member of one, holds an
// object member spelt like a member of the Card struct it decodes into but
// for case ("URL" beside or instead of "url"; A2A-10) or for case and
// underscores ("supported_interfaces", "documentation_url"; A2A-12) or
// dashes ("documentation-url"; A2A-15): encoding/json would read the
// first as that member, the last spelling winning, protojson (which takes
// the proto field name too) the second, and encoding/json/v2 matching
// names case-insensitively any of them, while the signature and Verify
// read the exact name (jcs.Spellings). The params of an extension whose
// uri is ExtensionURI are read the same way, against servedParamsDoc: they
// carry the bundle and schema pins of each skill.
func (n *goNames) caseVariant(v any) bool {
	switch t := v.(type) {
	case jcs.Object:
		if n.spellings.Variant(t) {
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

// endpoint03Names are the A2A 0.3 endpoint members that A2A-18 checks by
// their exact names: a card's url and additionalInterfaces; iface03Names,
// an additionalInterfaces entry's url.
var endpoint03Names, iface03Names = jcs.NewSpellings("url", "additionalInterfaces"), jcs.NewSpellings("url")

// endpoint03Variant reports whether card spells one of the A2A 0.3
// endpoint members another way than webURLs reads them: at its top level
// a member spelt like url or additionalInterfaces, or in an entry of
// additionalInterfaces one spelt like url, but for case, underscores or
// dashes ("URL", "additional_interfaces"; jcs.Spellings). A 0.3 reader
// decoding with encoding/json, protojson or encoding/json/v2 takes such
// a member for the endpoint (the last spelling winning) while Verify
// would read, and check, another or none (A2A-19). Not Card members, so
// caseVariant does not see them.
func endpoint03Variant(card jcs.Object) bool {
	if endpoint03Names.Variant(card) {
		return true
	}
	more, _ := card.Get("additionalInterfaces")
	list, _ := more.([]any)
	for _, x := range list {
		if o, ok := x.(jcs.Object); ok && iface03Names.Variant(o) {
			return true
		}
	}
	return false
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
