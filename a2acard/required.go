package a2acard

import (
	"net/url"
	"strings"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// required checks that a card (its signatures and defaults removed) has
// the members a2a.proto marks REQUIRED, set (a REQUIRED array holds at
// least one element, A2A §5.7), and returns what Verified shows of it.
func required(card jcs.Object) (*Verified, error) {
	v := &Verified{}
	var err error
	if v.Name, err = reqString(card, "name"); err != nil {
		return nil, err
	}
	if v.Version, err = reqString(card, "version"); err != nil {
		return nil, err
	}
	if d, _ := card.Get("description"); !isString(d) {
		return nil, invalid("description")
	}
	if c, _ := card.Get("capabilities"); !isObject(c) {
		return nil, invalid("capabilities")
	}
	for _, name := range []string{"defaultInputModes", "defaultOutputModes"} {
		arr, err := reqArray(card, name)
		if err != nil {
			return nil, err
		}
		for _, x := range arr {
			if !isString(x) {
				return nil, invalid(name)
			}
		}
	}
	ifaces, err := reqArray(card, "supportedInterfaces")
	if err != nil {
		return nil, err
	}
	for _, x := range ifaces {
		o, _ := x.(jcs.Object)
		for _, name := range []string{"url", "protocolBinding", "protocolVersion"} {
			if _, err := reqString(o, name); err != nil {
				return nil, invalid("supportedInterfaces")
			}
		}
	}
	skills, err := reqArray(card, "skills")
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(skills))
	for _, x := range skills {
		id, err := skill(x)
		if err != nil {
			return nil, err
		}
		if ids[id] {
			return nil, twice("skill id")
		}
		ids[id] = true
		v.Skills = append(v.Skills, id)
	}
	if err := uniqueExtensions(card); err != nil {
		return nil, err
	}
	if err := webURLs(card, ifaces); err != nil {
		return nil, err
	}
	return v, nil
}

// webURLs refuses a card whose URL members are not web addresses
// (A2A-14): each interface's url (what a client dials; a 0.3 card's url
// and additionalInterfaces' too, A2A-18), and, when set,
// provider.url, documentationUrl and iconUrl (what a UI links to or
// fetches), and the URLs of securitySchemes (schemeURLs; A2A-16), must be
// an absolute http or https URL with a host and without userinfo (no
// file:, javascript:, "//host", "https://agent.example@evil").
func webURLs(card jcs.Object, ifaces []any) error {
	for _, x := range ifaces {
		u, _ := x.(jcs.Object).Get("url") // required checked it is a string
		if !isWebURL(u) {
			return notWeb("supportedInterfaces url")
		}
	}
	// A 0.3 card's endpoints: its url and additionalInterfaces' urls,
	// which a 1.0 reader ignores and a 0.3 reader dials (A2A-18).
	if u, ok := card.Get("url"); ok && !isWebURL(u) {
		return notWeb("url")
	}
	if more, _ := card.Get("additionalInterfaces"); more != nil {
		list, _ := more.([]any)
		for _, x := range list {
			if o, ok := x.(jcs.Object); ok {
				if u, ok := o.Get("url"); ok && !isWebURL(u) {
					return notWeb("additionalInterfaces url")
				}
			}
		}
	}
	if p, _ := card.Get("provider"); p != nil {
		o, _ := p.(jcs.Object)
		if u, ok := o.Get("url"); ok && !isWebURL(u) {
			return notWeb("provider url")
		}
	}
	for _, name := range []string{"documentationUrl", "iconUrl"} {
		if u, _ := card.Get(name); u != nil && !isWebURL(u) {
			return notWeb(name)
		}
	}
	if schemes, _ := card.Get("securitySchemes"); !schemeURLs(schemes, true) {
		return notWeb("securitySchemes url")
	}
	return nil
}

// schemeURLNames are the URL fields of a2a.proto's security schemes: an
// OAuth 2.0 flow's authorizationUrl (opened in the user's browser),
// tokenUrl and refreshUrl (sent the client's credentials), a device
// flow's deviceAuthorizationUrl, and the oauth2MetadataUrl and
// openIdConnectUrl a client fetches first (A2A-16).
var schemeURLNames = jcs.NewSpellings("authorizationUrl", "tokenUrl", "refreshUrl", "deviceAuthorizationUrl", "oauth2MetadataUrl", "openIdConnectUrl")

// scopesName is a flow's scopes, a map of scope names to descriptions.
var scopesName = jcs.NewSpellings("scopes")

// schemeURLs reports whether every string member of v, the card's
// securitySchemes at any depth, named in any spelling a folding reader
// takes for one of schemeURLNames (token_url, TokenURL) and set (not "",
// proto3's unset), is a web address (isWebURL); a member of another type
// (a scheme its author named "tokenUrl") is walked into. The members of
// v are scheme names when schemeNames (securitySchemes itself, a map its
// author names), and a scheme named "scopes" is a scheme like any other;
// below it, a member spelt "scopes" is a flow's scopes map (scopeURLs;
// A2A-17).
func schemeURLs(v any, schemeNames bool) bool {
	switch t := v.(type) {
	case jcs.Object:
		for _, m := range t {
			u, isStr := m.Value.(string)
			switch {
			case isStr && u != "" && schemeURLNames.Spelt(m.Name):
				if !isWebURL(u) {
					return false
				}
			case !schemeNames && scopesName.Spelt(m.Name):
				if !scopeURLs(m.Value) {
					return false
				}
			case !schemeURLs(m.Value, false):
				return false
			}
		}
	case []any:
		for _, x := range t {
			if !schemeURLs(x, false) {
				return false
			}
		}
	}
	return true
}

// scopeURLs is schemeURLs of a flow's scopes: a map of scope names to
// descriptions, whose string values are not read (a scope may be named
// "tokenUrl"); any other value is no description and is walked as the
// rest of securitySchemes is, so that nothing a reader may take for a
// scheme hides under the name (docs/SPEC-DECISIONS.md A2A-17).
func scopeURLs(v any) bool {
	o, ok := v.(jcs.Object)
	if !ok {
		return schemeURLs(v, false)
	}
	for _, m := range o {
		if _, isStr := m.Value.(string); !isStr && !schemeURLs(m.Value, false) {
			return false
		}
	}
	return true
}

// notWeb is the refusal of a URL member that is no web address; it
// quotes nothing of the URL.
func notWeb(member string) error {
	return fail(ErrInvalid, "the card's %s is not an absolute http or https URL with a host and no userinfo", member)
}

// isWebURL reports whether v is a string that is a WebURL.
func isWebURL(v any) bool {
	s, ok := v.(string)
	return ok && WebURL(s)
}

// WebURL reports whether s is a URL Verify accepts in a card's URL
// members (A2A-14): an absolute http or https URL with a host name and no
// userinfo.
func WebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Opaque == "" && u.User == nil && u.Hostname() != ""
}

// uniqueExtensions refuses a card whose capabilities list one extension
// uri twice, or whose own extension's params (ExtensionURI) list one
// capability id twice (A2A-13): readers that index them by uri or id
// would take different entries, the first or the last. It refuses too an
// extension uri spelt like ExtensionURI but not exactly it (ownURISpelling;
// A2A-23), and a capability id of those params that is not printable
// ASCII (pinID; A2A-22).
func uniqueExtensions(card jcs.Object) error {
	caps, _ := card.Get("capabilities")
	exts, _ := caps.(jcs.Object).Get("extensions") // required checked capabilities is an object
	list, _ := exts.([]any)
	uris := make(map[string]bool, len(list))
	for _, x := range list {
		ext, _ := x.(jcs.Object)
		uri, ok := ext.Get("uri")
		u, isStr := uri.(string)
		if !ok || !isStr {
			continue
		}
		if uris[u] {
			return twice("extension uri")
		}
		if ownURISpelling(u) {
			return fail(ErrInvalid, "the card names an extension by a uri a reader may take for the %s extension, spelt otherwise", ExtensionURI)
		}
		uris[u] = true
		if u != ExtensionURI {
			continue
		}
		params, _ := ext.Get("params")
		p, _ := params.(jcs.Object)
		entries, _ := p.Get("capabilities")
		arr, _ := entries.([]any)
		ids := make(map[string]bool, len(arr))
		for _, e := range arr {
			o, _ := e.(jcs.Object)
			id, _ := o.Get("id")
			s, isStr := id.(string)
			if !isStr {
				continue
			}
			if !pinID(s) {
				return fail(ErrInvalid, "a capability id in the %s params is not 1 to %d bytes of printable ASCII without spaces", ExtensionURI, maxPinIDBytes)
			}
			if ids[s] {
				return twice("capability id in the " + ExtensionURI + " params")
			}
			ids[s] = true
		}
	}
	return nil
}

// maxPinIDBytes bounds a capability id of our extension's params, as the
// AGH projection bounds the same ids (agh/envelope.go, maxIDBytes).
const maxPinIDBytes = 512

// pinID reports whether id may be a capability id of our extension's
// params (A2A-22): 1 to maxPinIDBytes bytes of printable ASCII other than
// space (0x21 to 0x7e), as a store's ids ("name:version") and the AGH
// projection's are (docs/SPEC-DECISIONS.md AGH-15). A pin is found by its
// id, and a non-ASCII id is another id to an exact reader and the same
// one to a folding reader (the long s is "s" and the Kelvin sign "k" to
// strings.EqualFold, a fullwidth letter its ASCII one to NFKC, a
// zero-width space dropped): a card pinning "build-site:1" and
// "build-\u017fite:1" gave such a reader two pins for one id, the one it
// kept picked by their order. Within ASCII every folding agrees, and ids
// stay compared byte for byte.
func pinID(id string) bool {
	if id == "" || len(id) > maxPinIDBytes {
		return false
	}
	for i := range len(id) {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// ownURI is ExtensionURI parsed, for ownURISpelling.
var ownURI, _ = url.Parse(ExtensionURI)

// ownURISpelling reports whether u is not ExtensionURI byte for byte but
// a reader may take it for it (A2A-23): once white space around it is
// trimmed, equal to it under Unicode simple case folding
// (strings.EqualFold: "HTTPS://GITHUB.COM/...", a long s or a Kelvin
// sign), or so once its octets are percent-decoded ("%61mpbundle") and
// an empty or default port (":443") is dropped, as RFC 3986 §6.2.2 and
// §6.2.3 normalize. Our extension's params carry the pins, and Verify
// checks their spellings (A2A-10), ids (A2A-13, A2A-22) and that the
// extension is listed once by the exact uri: under another spelling a
// second, unchecked set of pins would be the extension to a reader that
// folds or normalizes the uri. No spelling is shorter than ExtensionURI
// (ASCII), and only one holding a '%' or a port is parsed, so other uris
// cost no allocation.
func ownURISpelling(u string) bool {
	if u == ExtensionURI || len(u) < len(ExtensionURI) {
		return false
	}
	s := strings.TrimSpace(u)
	if strings.EqualFold(s, ExtensionURI) {
		return true
	}
	if !strings.Contains(s, "%") && strings.Count(s, ":") < 2 {
		return false
	}
	p, err := url.Parse(s)
	if err != nil || p.Opaque != "" || p.User != nil || p.RawQuery != "" || p.ForceQuery {
		return false
	}
	host := p.Host
	if port := p.Port(); port == "" || port == "443" {
		host = p.Hostname()
	}
	return strings.EqualFold(p.Scheme, ownURI.Scheme) && strings.EqualFold(host, ownURI.Host) &&
		strings.EqualFold(p.Path, ownURI.Path) && strings.EqualFold(p.Fragment, ownURI.Fragment)
}

// twice is the refusal of a card that lists one id twice.
func twice(what string) error {
	return fail(ErrInvalid, "the card lists one %s twice", what)
}

func skill(x any) (string, error) {
	o, _ := x.(jcs.Object)
	id, err := reqString(o, "id")
	if err != nil {
		return "", invalid("skills")
	}
	for _, name := range []string{"name", "description"} {
		if v, _ := o.Get(name); !isString(v) {
			return "", invalid("skills")
		}
	}
	tags, err := reqArray(o, "tags")
	if err != nil {
		return "", invalid("skills")
	}
	for _, t := range tags {
		if !isString(t) {
			return "", invalid("skills")
		}
	}
	return id, nil
}

func invalid(member string) error {
	return fail(ErrInvalid, "the card's %s is missing, empty or of the wrong type", member)
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isObject(v any) bool { _, ok := v.(jcs.Object); return ok }

// reqString returns a REQUIRED string member, non-empty.
func reqString(o jcs.Object, name string) (string, error) {
	v, _ := o.Get(name)
	s, ok := v.(string)
	if !ok || s == "" {
		return "", invalid(name)
	}
	return s, nil
}

// reqArray returns a REQUIRED array member, non-empty.
func reqArray(o jcs.Object, name string) ([]any, error) {
	v, _ := o.Get(name)
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, invalid(name)
	}
	return arr, nil
}
