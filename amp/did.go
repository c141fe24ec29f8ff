package amp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// KeyType is the curve of a verification method's public key.
type KeyType string

// Key types this package understands.
const (
	KeyEd25519 KeyType = "Ed25519"
	KeyX25519  KeyType = "X25519"
)

// VerificationMethod is one verification method of a DID document with its
// public key decoded. ID is absolute ("did:web:example.com#key-1").
type VerificationMethod struct {
	ID         string
	Type       string // as written: Multikey, JsonWebKey2020, ...
	Controller string
	KeyType    KeyType
	PublicKey  []byte // 32 bytes
	Revoked    *time.Time
	Expires    *time.Time
}

// Active reports whether the method is usable at now: not revoked and not
// expired at that instant. DID Core has no "active" flag; the `revoked` and
// `expires` properties of the W3C Data Integrity vocabulary are what make a
// method inactive.
func (vm VerificationMethod) Active(now time.Time) bool {
	if vm.Revoked != nil && !now.Before(*vm.Revoked) {
		return false
	}
	if vm.Expires != nil && !now.Before(*vm.Expires) {
		return false
	}
	return true
}

// DIDDocument is the part of a W3C DID Core document that AMP uses: the
// verification methods and the three relationships that select keys
// (RFC 001 §8.9). Relationship entries are absolute method ids; methods
// embedded in a relationship are also listed in Methods.
type DIDDocument struct {
	ID              string
	Methods         []VerificationMethod
	Authentication  []string
	AssertionMethod []string
	KeyAgreement    []string
	// Relays are the bare DIDs of the relays the document's
	// AgentMessagingRelay services name (didservice.go).
	Relays []string
}

// Caps on DID documents, checked before and while parsing.
const (
	MaxDIDDocumentSize = 256 << 10
	maxDIDMethods      = 256
	// maxDIDDepth caps the nesting of arrays and objects, the document
	// itself at level 1 (docs/SPEC-DECISIONS.md AMP-27): the cap
	// DefaultMaxDepth puts on CBOR items, far above the 6 or so levels
	// of a JSON-LD context with scoped terms.
	maxDIDDepth = 32
	// maxDIDIDBytes caps the bytes of the ids a parsed document holds,
	// its methods' and its relationship entries' made absolute: a
	// relative reference ("#k") costs the document a few bytes and the
	// parse a copy of the DID, up to 2,048 bytes (docs/SPEC-DECISIONS.md
	// AMP-35). The cap is the document's own.
	maxDIDIDBytes = MaxDIDDocumentSize
)

func errDIDDoc(format string, args ...any) *Error {
	return Named(CodeUnauthorized, "invalid_did_document", format, args...)
}

// jsonDoc and jsonMethod mirror the JSON of a DID document.
type jsonDoc struct {
	Context            json.RawMessage   `json:"@context,omitempty"`
	ID                 string            `json:"id"`
	VerificationMethod []json.RawMessage `json:"verificationMethod,omitempty"`
	Authentication     []json.RawMessage `json:"authentication,omitempty"`
	AssertionMethod    []json.RawMessage `json:"assertionMethod,omitempty"`
	KeyAgreement       []json.RawMessage `json:"keyAgreement,omitempty"`
	Service            []json.RawMessage `json:"service,omitempty"`
}

type jsonMethod struct {
	ID                  string          `json:"id"`
	Type                string          `json:"type"`
	Controller          string          `json:"controller"`
	PublicKeyMultibase  string          `json:"publicKeyMultibase,omitempty"`
	PublicKeyBase58     string          `json:"publicKeyBase58,omitempty"`
	PublicKeyJwk        *jsonJWK        `json:"publicKeyJwk,omitempty"`
	Revoked             string          `json:"revoked,omitempty"`
	Expires             string          `json:"expires,omitempty"`
	PrivateKeyJwk       json.RawMessage `json:"privateKeyJwk,omitempty"`
	PrivateKeyMultibase string          `json:"privateKeyMultibase,omitempty"`
	// Verification material this parser does not decode, read only to
	// refuse a method that carries a second key (docs/SPEC-DECISIONS.md
	// AMP-26).
	PublicKeyHex    json.RawMessage `json:"publicKeyHex,omitempty"`
	PublicKeyBase64 json.RawMessage `json:"publicKeyBase64,omitempty"`
	PublicKeyPem    json.RawMessage `json:"publicKeyPem,omitempty"`
}

// materials counts the verification material properties of a method: DID
// Core §5.2.1 allows one (a method "MUST NOT contain multiple verification
// material properties for the same material"). An empty string or a null
// is none.
func (jm jsonMethod) materials() int {
	n := 0
	for _, s := range []string{jm.PublicKeyMultibase, jm.PublicKeyBase58} {
		if s != "" {
			n++
		}
	}
	if jm.PublicKeyJwk != nil {
		n++
	}
	for _, raw := range []json.RawMessage{jm.PublicKeyHex, jm.PublicKeyBase64, jm.PublicKeyPem} {
		if len(raw) > 0 && string(raw) != "null" && string(raw) != `""` {
			n++
		}
	}
	return n
}

type jsonJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	D   string `json:"d,omitempty"`
}

// ParseDIDDocument parses a W3C DID Core JSON document (at most
// MaxDIDDocumentSize bytes, at most 256 verification methods).
//
// Supported key encodings: Multikey, Ed25519VerificationKey2020 and
// X25519KeyAgreementKey2020 (publicKeyMultibase with the ed25519-pub 0xed or
// x25519-pub 0xec multicodec prefix), Ed25519VerificationKey2018 and
// X25519KeyAgreementKey2019 (publicKeyBase58), and JsonWebKey2020 /
// JsonWebKey with an OKP key on Ed25519 or X25519. Methods of other types
// are kept out of Methods (they can never be selected). A document that
// carries private key material is refused.
//
// The document must read one way (docs/SPEC-DECISIONS.md AMP-23): an
// object that names a member twice, or a member spelt like one this
// parser reads in another letter case (encoding/json would take either,
// the last one winning), is refused; so is a method of a type this
// parser reads that carries more than one public key (AMP-26), and a
// document that nests arrays and objects deeper than 32 levels (AMP-27).
// A method this parser reads must name its controller, a DID (AMP-28);
// one whose controller is another DID is kept but never selected. A list
// decoded entry by entry (the methods and relationships, 1,024 entries in
// all; services; a service's types and endpoints) is counted before it is
// decoded (AMP-29). The ids of the methods and relationship entries,
// made absolute, are at most 256 KiB in all (AMP-35).
// A service that is not an AgentMessagingRelay is held to the shapes DID
// Core allows alone (AMP-25): nothing reads it.
//
// Errors are 3001 invalid_did_document: a sender whose document cannot be
// read cannot be authenticated. The messages never echo the input.
func ParseDIDDocument(data []byte) (*DIDDocument, error) {
	if len(data) > MaxDIDDocumentSize {
		return nil, errDIDDoc("did document of %d bytes is over the %d-byte limit", len(data), MaxDIDDocumentSize)
	}
	if err := checkDIDJSON(data); err != nil {
		return nil, err
	}
	var jd jsonDoc
	if err := json.Unmarshal(data, &jd); err != nil {
		return nil, errDIDDoc("did document is not valid json of the did core shape")
	}
	if !ValidDID(jd.ID) || BareDID(jd.ID) != jd.ID {
		return nil, errDIDDoc("did document id is not a did")
	}
	if n := len(jd.VerificationMethod) + len(jd.Authentication) + len(jd.AssertionMethod) + len(jd.KeyAgreement); n > 4*maxDIDMethods {
		return nil, errDIDDoc("did document lists too many verification methods")
	}
	doc := &DIDDocument{ID: jd.ID}
	ids := map[string]bool{}
	held := 0 // the bytes of the absolute ids made so far
	hold := func(ref string) error {
		if held += len(ref); strings.HasPrefix(ref, "#") {
			held += len(doc.ID)
		}
		if held > maxDIDIDBytes {
			return errDIDDoc("did document's method ids and references, made absolute, are over %d bytes", maxDIDIDBytes)
		}
		return nil
	}
	add := func(raw json.RawMessage) (string, error) {
		var jm jsonMethod
		if err := json.Unmarshal(raw, &jm); err != nil {
			return "", errDIDDoc("did document has a verification method of the wrong shape")
		}
		if err := hold(jm.ID); err != nil {
			return "", err
		}
		vm, keep, err := parseMethod(doc.ID, jm)
		if err != nil {
			return "", err
		}
		if ids[vm.ID] {
			return "", errDIDDoc("did document defines a verification method id twice")
		}
		ids[vm.ID] = true
		if keep {
			if len(doc.Methods) >= maxDIDMethods {
				return "", errDIDDoc("did document lists too many verification methods")
			}
			doc.Methods = append(doc.Methods, vm)
		}
		return vm.ID, nil
	}
	for _, raw := range jd.VerificationMethod {
		if _, err := add(raw); err != nil {
			return nil, err
		}
	}
	rel := func(entries []json.RawMessage) ([]string, error) {
		out := make([]string, 0, len(entries))
		for _, raw := range entries {
			var ref string
			if json.Unmarshal(raw, &ref) == nil {
				if err := hold(ref); err != nil {
					return nil, err
				}
				abs, ok := absoluteMethodID(doc.ID, ref)
				if !ok {
					return nil, errDIDDoc("did document has a verification relationship entry that is not a did url")
				}
				out = append(out, abs)
				continue
			}
			id, err := add(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
		return out, nil
	}
	var err error
	if doc.Authentication, err = rel(jd.Authentication); err != nil {
		return nil, err
	}
	if doc.AssertionMethod, err = rel(jd.AssertionMethod); err != nil {
		return nil, err
	}
	if doc.KeyAgreement, err = rel(jd.KeyAgreement); err != nil {
		return nil, err
	}
	if doc.Relays, err = parseServices(doc.ID, jd.Service); err != nil {
		return nil, err
	}
	return doc, nil
}

// didObject names the struct an object of a DID document is decoded into
// (jsonDoc, jsonMethod, jsonJWK, jsonService, the map of endpointDIDs),
// whose member names encoding/json matches ignoring letter case
// (Unicode simple folding, as strings.EqualFold). didRelayMap is the map
// of a relay's serviceEndpoint, walked again by endpointMap
// (didservice.go) once the service is known to be a relay: the walk of
// the whole document cannot tell, a service's type may come after its
// serviceEndpoint.
type didObject int

const (
	didOther    didObject = iota // not decoded into a struct
	didDoc                       // jsonDoc
	didMethod                    // jsonMethod
	didJWK                       // jsonJWK
	didService                   // jsonService
	didEndpoint                  // the map of any serviceEndpoint
	didRelayMap                  // the map of a relay's serviceEndpoint (relayMap)
)

// didMembers are the member names each didObject is read by.
var didMembers = [...][]string{
	didDoc:      {"@context", "id", "verificationMethod", "authentication", "assertionMethod", "keyAgreement", "service"},
	didMethod:   {"id", "type", "controller", "publicKeyMultibase", "publicKeyBase58", "publicKeyJwk", "revoked", "expires", "privateKeyJwk", "privateKeyMultibase", "publicKeyHex", "publicKeyBase64", "publicKeyPem"},
	didJWK:      {"kty", "crv", "x", "d"},
	didService:  {"id", "type", "serviceEndpoint"},
	didEndpoint: {"uri", "routingKeys"},
	didRelayMap: {"uri", "routingKeys"},
}

// child returns what the value of member name of an object of kind o is
// decoded into; for an array value, what its object elements are.
func (o didObject) child(name string) didObject {
	switch {
	case o == didDoc && (name == "verificationMethod" || name == "authentication" || name == "assertionMethod" || name == "keyAgreement"):
		return didMethod
	case o == didDoc && name == "service":
		return didService
	case o == didMethod && name == "publicKeyJwk":
		return didJWK
	case o == didService && name == "serviceEndpoint":
		return didEndpoint
	}
	return didOther
}

// didList caps the entries of one array of a DID document.
type didList struct {
	max    int    // 0: no cap but the document's size
	shared bool   // max caps this list and the others shared together
	why    string // the refusal past max, a format of one %d (max)
}

// list returns the cap on an array value of member name of an object of
// kind o. The arrays capped are those ParseDIDDocument decodes entry by
// entry, each entry at least one allocation: checkDIDJSON counts them
// before anything is decoded, so that a 256 KiB document of one-byte
// entries costs no more than one of whole entries (docs/SPEC-DECISIONS.md
// AMP-29). Each cap is the one the decoding checks after.
func (o didObject) list(name string) didList {
	switch {
	case o.child(name) == didMethod: // the method list and the relationships
		return didList{4 * maxDIDMethods, true, "did document lists more than %d verification methods"}
	case o == didDoc && name == "service":
		return didList{maxDIDServices, false, "did document lists more than %d services"}
	case o == didService && name == "type":
		return didList{maxServiceTypes, false, "did document has a service type that is an array of more than %d strings"}
	case o == didService && name == "serviceEndpoint":
		return didList{maxServiceEndpoint, false, "did document has a serviceEndpoint array that is empty or longer than %d"}
	case o == didRelayMap && name == "routingKeys":
		// A relay's alone: routingKeys in the map of a service nobody
		// reads are not decoded (docs/SPEC-DECISIONS.md AMP-30).
		return didList{maxServiceEndpoint, false, "did document has more than %d routingKeys in a service"}
	}
	return didList{}
}

// didJSON is the walk of checkDIDJSON over a document that json.Valid
// accepted: names holds the member names of the open objects, each
// object's after those of the objects around it.
type didJSON struct {
	data   []byte
	off    int
	names  [][]byte
	buf    []byte // the decoded text of the escaped names of names
	shared int    // the entries of the lists whose cap is shared
	// objects counts the objects opened; seen holds the names of the
	// open objects of more than indexFrom members (twice).
	objects int
	seen    map[memberKey]struct{}
	seed    maphash.Seed
}

// checkDIDJSON refuses a DID document that two JSON readers may read
// apart (docs/SPEC-DECISIONS.md AMP-23): an object, anywhere, that names
// a member twice (encoding/json keeps the last, other readers the first
// or neither), and a member of an object ParseDIDDocument decodes into a
// struct whose name differs from one the struct reads only in letter case
// (encoding/json takes "ID", "Revoked" or "X" for "id", "revoked" or "x";
// a case-sensitive reader ignores them). It walks the bytes once and
// allocates little: the escaped member names into one buffer, and one
// map for the names of the objects of many members, whatever the number
// of strings and objects (AMP-31, AMP-33). Before anything else, a
// document nested deeper than maxDIDDepth is refused (AMP-27).
func checkDIDJSON(data []byte) error {
	if !shallowJSON(data, maxDIDDepth) {
		return errDIDDoc("did document nests arrays and objects deeper than %d levels", maxDIDDepth)
	}
	if !json.Valid(data) {
		return errDIDDoc("did document is not valid json of the did core shape")
	}
	w := didJSON{data: data}
	w.space()
	return w.value(didDoc, didList{})
}

// shallowJSON reports whether no array or object of data lies deeper than
// limit levels, the outermost at level 1. It reads the bytes once and
// allocates nothing, so that a deep document is refused before
// encoding/json, whose parse state grows with the depth, sees it (up to
// its own 10,000 levels). Brackets inside strings do not count; data need
// not be valid JSON (json.Valid runs next).
func shallowJSON(data []byte, limit int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return true
}

// space skips white space.
func (w *didJSON) space() {
	for w.off < len(w.data) && strings.IndexByte(" \t\r\n", w.data[w.off]) >= 0 {
		w.off++
	}
}

// value walks the value at off, whose objects (for an array, whose
// elements' objects) are of kind; an array of more than list.max
// elements is refused.
func (w *didJSON) value(kind didObject, list didList) error {
	switch w.data[w.off] {
	case '{':
		return w.object(kind)
	case '[':
		w.off++
		for n := 0; ; n++ {
			w.space()
			switch w.data[w.off] {
			case ']':
				w.off++
				return nil
			case ',':
				w.off++
				w.space()
			}
			if list.max > 0 && w.before(list, n) >= list.max {
				return errDIDDoc(list.why, list.max)
			}
			if err := w.value(kind, didList{}); err != nil {
				return err
			}
		}
	case '"':
		w.skipStr()
	default:
		for w.off < len(w.data) && strings.IndexByte(",]} \t\r\n", w.data[w.off]) < 0 {
			w.off++
		}
	}
	return nil
}

// before returns how many entries of list came before the one at off: n,
// those of its own array, or those of every list that shares its cap.
func (w *didJSON) before(list didList, n int) int {
	if !list.shared {
		return n
	}
	w.shared++
	return w.shared - 1
}

// object walks the object at off, of kind, checking its member names.
func (w *didJSON) object(kind didObject) error {
	w.off++
	base, bufBase := len(w.names), len(w.buf)
	obj := w.objects
	w.objects++
	for {
		w.space()
		switch w.data[w.off] {
		case '}':
			w.off++
			w.closeObject(obj, base)
			w.names, w.buf = w.names[:base], w.buf[:bufBase]
			return nil
		case ',':
			w.off++
			w.space()
		}
		name := w.str()
		w.space()
		w.off++ // the colon
		w.space()
		if w.twice(obj, base, name) {
			return errDIDDoc("did document has an object that names a member twice")
		}
		if err := memberName(kind, name); err != nil {
			return err
		}
		w.names = append(w.names, name)
		if err := w.value(kind.child(string(name)), kind.list(string(name))); err != nil {
			return err
		}
	}
}

// indexFrom is the number of member names past which an object's names
// are looked up in didJSON.seen rather than compared one by one.
const indexFrom = 32

// memberKey is a member name of an open object in didJSON.seen: the
// object's number in the walk and the hash of the name.
type memberKey struct {
	obj int
	h   uint64
}

// twice reports whether object obj, whose names so far are
// w.names[base:], already names name. Past indexFrom names, the names are
// looked up by hash in w.seen, one map the whole walk shares (an object's
// entries leave it when the object closes), and compared only on a hit:
// no allocation per member or per object (docs/SPEC-DECISIONS.md AMP-33).
func (w *didJSON) twice(obj, base int, name []byte) bool {
	names := w.names[base:]
	if len(names) >= indexFrom {
		if w.seen == nil {
			w.seen, w.seed = map[memberKey]struct{}{}, maphash.MakeSeed()
		}
		if len(names) == indexFrom {
			for _, n := range names {
				w.seen[memberKey{obj, maphash.Bytes(w.seed, n)}] = struct{}{}
			}
		}
		k := memberKey{obj, maphash.Bytes(w.seed, name)}
		if _, hit := w.seen[k]; !hit {
			w.seen[k] = struct{}{}
			return false
		}
	}
	for _, n := range names {
		if bytes.Equal(n, name) {
			return true
		}
	}
	return false
}

// closeObject removes the names of object obj from w.seen.
func (w *didJSON) closeObject(obj, base int) {
	if len(w.names)-base <= indexFrom {
		return
	}
	for _, n := range w.names[base:] {
		delete(w.seen, memberKey{obj, maphash.Bytes(w.seed, n)})
	}
}

// str reads the string at off and returns what it reads as: its bytes,
// or, when it holds an escape, its decoded text.
func (w *didJSON) str() []byte {
	start := w.off
	if !w.skipStr() {
		return w.data[start+1 : w.off-1]
	}
	return w.unquote(w.data[start:w.off])
}

// unquote appends to buf the text the JSON string s (quotes included,
// valid JSON) reads as, exactly as encoding/json decodes it: its escapes,
// a UTF-16 surrogate pair as one rune, and a lone surrogate or a byte
// that is not UTF-8 as U+FFFD. It returns the bytes appended, which stay
// valid until the object that names them closes: a member name costs no
// allocation of its own (docs/SPEC-DECISIONS.md AMP-31).
func (w *didJSON) unquote(s []byte) []byte {
	start := len(w.buf)
	for r := 1; r < len(s)-1; {
		switch c := s[r]; {
		case c == '\\' && s[r+1] == 'u':
			rr := getu4(s[r:])
			r += 6
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
					w.buf = utf8.AppendRune(w.buf, dec)
					r += 6
					continue
				}
				rr = unicode.ReplacementChar
			}
			w.buf = utf8.AppendRune(w.buf, rr)
		case c == '\\':
			w.buf = append(w.buf, unescaped[s[r+1]])
			r += 2
		case c < utf8.RuneSelf:
			w.buf = append(w.buf, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			w.buf = utf8.AppendRune(w.buf, rr)
			r += size
		}
	}
	return w.buf[start:]
}

// unescaped maps the letter of a one-letter JSON escape to its byte.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// getu4 reads the \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// skipStr moves off past the string at off and reports whether it holds
// an escape. A string value is skipped, never decoded: only member names
// are compared (docs/SPEC-DECISIONS.md AMP-31).
func (w *didJSON) skipStr() bool {
	escaped := false
	for w.off++; w.data[w.off] != '"'; w.off++ {
		if w.data[w.off] == '\\' {
			escaped = true
			w.off++
		}
	}
	w.off++
	return escaped
}

// memberName refuses a member name of an object of kind that is spelt
// like a name of kind in another letter case.
func memberName(kind didObject, name []byte) error {
	for _, known := range didMembers[kind] {
		if string(name) != known && strings.EqualFold(string(name), known) {
			return errDIDDoc("did document has a member spelt like %q in another letter case", known)
		}
	}
	return nil
}

// absoluteMethodID resolves a method reference ("#key-1" or an absolute DID
// URL) against the document DID.
func absoluteMethodID(docID, ref string) (string, bool) {
	if strings.HasPrefix(ref, "#") {
		ref = docID + ref
	}
	if !ValidDID(ref) || !strings.Contains(ref, "#") {
		return "", false
	}
	return ref, true
}

// parseMethod decodes one verification method. keep is false for a method of
// a type this package does not use.
func parseMethod(docID string, jm jsonMethod) (VerificationMethod, bool, error) {
	id, ok := absoluteMethodID(docID, jm.ID)
	if !ok {
		return VerificationMethod{}, false, errDIDDoc("did document has a verification method whose id is not a did url")
	}
	if jm.PrivateKeyJwk != nil || jm.PrivateKeyMultibase != "" || (jm.PublicKeyJwk != nil && jm.PublicKeyJwk.D != "") {
		return VerificationMethod{}, false, errDIDDoc("did document carries private key material")
	}
	vm := VerificationMethod{ID: id, Type: jm.Type, Controller: jm.Controller}
	for _, t := range []struct {
		s   string
		dst **time.Time
	}{{jm.Revoked, &vm.Revoked}, {jm.Expires, &vm.Expires}} {
		if t.s == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339, t.s)
		if err != nil {
			return VerificationMethod{}, false, errDIDDoc("did document has a verification method with an invalid date")
		}
		*t.dst = &ts
	}
	var err error
	switch jm.Type {
	case "Multikey", "Ed25519VerificationKey2020", "X25519KeyAgreementKey2020":
		vm.KeyType, vm.PublicKey, err = decodeMultikey(jm.PublicKeyMultibase)
		if err == nil && jm.Type == "Ed25519VerificationKey2020" && vm.KeyType != KeyEd25519 ||
			err == nil && jm.Type == "X25519KeyAgreementKey2020" && vm.KeyType != KeyX25519 {
			err = errDIDDoc("did document has a verification method whose key does not match its type")
		}
	case "Ed25519VerificationKey2018", "X25519KeyAgreementKey2019":
		vm.KeyType = KeyEd25519
		if jm.Type == "X25519KeyAgreementKey2019" {
			vm.KeyType = KeyX25519
		}
		vm.PublicKey, err = base58Decode(jm.PublicKeyBase58)
		if err != nil || len(vm.PublicKey) != 32 {
			err = errDIDDoc("did document has a verification method with an invalid base58 key")
		}
	case "JsonWebKey2020", "JsonWebKey":
		if jm.PublicKeyJwk == nil || jm.PublicKeyJwk.Kty != "OKP" {
			return vm, false, nil
		}
		switch jm.PublicKeyJwk.Crv {
		case "Ed25519":
			vm.KeyType = KeyEd25519
		case "X25519":
			vm.KeyType = KeyX25519
		default:
			return vm, false, nil
		}
		var ok bool
		vm.PublicKey, ok = DecodeBase64URLStrict(jm.PublicKeyJwk.X)
		if !ok || len(vm.PublicKey) != 32 {
			err = errDIDDoc("did document has a json web key with an invalid x")
		}
	default:
		return vm, false, nil
	}
	if err == nil && jm.materials() > 1 {
		err = errDIDDoc("did document has a verification method with more than one public key")
	}
	if err == nil && vm.KeyType == KeyEd25519 && CheckEd25519PublicKey(vm.PublicKey) != nil {
		err = errDIDDoc("did document has an ed25519 key of small order or in non-canonical form")
	}
	if err == nil && vm.KeyType == KeyX25519 && CheckX25519PublicKey(vm.PublicKey) != nil {
		err = errDIDDoc("did document has an x25519 key of small order or in non-canonical form")
	}
	if err == nil && (!ValidDID(jm.Controller) || BareDID(jm.Controller) != jm.Controller) {
		// DID Core §5.2: a method's controller is required, and is a DID
		// (docs/SPEC-DECISIONS.md AMP-28).
		err = errDIDDoc("did document has a verification method whose controller is missing or not a did")
	}
	if err != nil {
		return VerificationMethod{}, false, err
	}
	return vm, true, nil
}

// Multicodec prefixes (unsigned varint) of the two key types.
const (
	mcEd25519Pub = "\xed\x01"
	mcX25519Pub  = "\xec\x01"
)

func decodeMultikey(s string) (KeyType, []byte, error) {
	if !strings.HasPrefix(s, "z") {
		return "", nil, errDIDDoc("did document has a multibase key that is not base58btc")
	}
	raw, err := base58Decode(s[1:])
	if err != nil || len(raw) != 34 {
		return "", nil, errDIDDoc("did document has an invalid multibase key")
	}
	switch {
	case bytes.HasPrefix(raw, []byte(mcEd25519Pub)):
		return KeyEd25519, raw[2:], nil
	case bytes.HasPrefix(raw, []byte(mcX25519Pub)):
		return KeyX25519, raw[2:], nil
	}
	return "", nil, errDIDDoc("did document has a multikey of an unsupported type")
}

// EncodeMultikey returns the publicKeyMultibase form of a 32-byte key.
func EncodeMultikey(t KeyType, pub []byte) string {
	prefix := mcEd25519Pub
	if t == KeyX25519 {
		prefix = mcX25519Pub
	}
	return "z" + base58Encode(append([]byte(prefix), pub...))
}

// method returns the method with the given absolute id, the first of
// two of one id (a document built in Go may list two; ParseDIDDocument
// refuses them).
func (d *DIDDocument) method(id string) (VerificationMethod, bool) {
	for _, m := range d.Methods {
		if m.ID == id {
			return m, true
		}
	}
	return VerificationMethod{}, false
}

// usable reports whether m is an active method of type t that this
// document's DID controls.
func (d *DIDDocument) usable(m VerificationMethod, t KeyType, now time.Time) bool {
	return m.KeyType == t && m.Active(now) && d.controls(m)
}

// eligible returns the active methods of type t referenced by rel whose id
// belongs to this document's DID and that this DID controls, sorted by id
// (bytewise). The methods are indexed once by what follows the DID in
// their ids, the first of two of one id as method takes it, and each
// reference is looked up in the index: the work is the bytes of the ids
// and of the references, not the product of their numbers
// (docs/SPEC-DECISIONS.md AMP-34).
func (d *DIDDocument) eligible(rel []string, t KeyType, now time.Time) []VerificationMethod {
	if len(rel) == 0 || len(d.Methods) == 0 || strings.ContainsAny(d.ID, "#?/") {
		return nil // no BareDID is such a DID: nothing belongs to it
	}
	pos := make(map[string]int, len(d.Methods))
	for i := len(d.Methods) - 1; i >= 0; i-- {
		if rest, ok := d.rest(d.Methods[i].ID); ok {
			pos[rest] = i
		}
	}
	var out []VerificationMethod
	for _, id := range rel {
		rest, ok := d.rest(id)
		if !ok {
			continue
		}
		if i, ok := pos[rest]; ok {
			delete(pos, rest) // a method referenced twice is taken once
			if m := d.Methods[i]; d.usable(m, t, now) {
				out = append(out, m)
			}
		}
	}
	n := len(d.ID) // every id in out starts with the DID
	sort.Slice(out, func(i, j int) bool { return out[i].ID[n:] < out[j].ID[n:] })
	return out
}

// rest returns what follows the document's DID in id, and whether id
// belongs to the DID: for a DID that holds none of '#', '?' and '/',
// BareDID(id) == d.ID, found by comparing the DID's bytes rather than
// scanning them for those delimiters.
func (d *DIDDocument) rest(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, d.ID)
	return rest, ok && (rest == "" || strings.IndexByte("#?/", rest[0]) >= 0)
}

// controls reports whether m is the document's own key. A method that
// another DID controls is that DID's key (DID Core §5.2, "controller"):
// its holder is not the subject, so it neither signs as the subject nor
// receives what is encrypted to it, whichever relationship names it
// (docs/SPEC-DECISIONS.md AMP-28). An empty controller is a document
// built in Go, which MarshalJSON writes as the document's own;
// ParseDIDDocument refuses a method without one.
func (d *DIDDocument) controls(m VerificationMethod) bool {
	return m.Controller == "" || m.Controller == d.ID
}

func errNoKey(format string, args ...any) *Error {
	return Named(CodeUnauthorized, "no_eligible_key", format, args...)
}

// SigningKey selects the Ed25519 key that signs for didURL (RFC 001 §8.9):
//
//   - a DID URL with a fragment names its method exactly; that method must be
//     an active Ed25519 method referenced by assertionMethod or
//     authentication (a key the document does not authorize for signing is
//     not eligible);
//   - a bare DID selects, among active Ed25519 methods referenced by
//     assertionMethod (or, when there are none, by authentication), the one
//     with the lexicographically smallest id.
//
// In both, only a method the document's DID controls is eligible
// (docs/SPEC-DECISIONS.md AMP-28).
//
// Anything else (a path or a query, which would otherwise be ignored) and
// no eligible key are 3001 no_eligible_key. A selected key that fails
// CheckEd25519PublicKey (a small-order key anybody can sign as) is 3001
// invalid_did_document, whoever built the document: ParseDIDDocument and
// DIDKeyDocument refuse such keys already, and this keeps a document put
// together by other code from slipping one through.
func (d *DIDDocument) SigningKey(didURL string, now time.Time) (VerificationMethod, error) {
	m, err := d.signingKey(didURL, now)
	if err != nil {
		return VerificationMethod{}, err
	}
	if CheckEd25519PublicKey(m.PublicKey) != nil {
		return VerificationMethod{}, errDIDDoc("the sender's signing key is of small order or in non-canonical form")
	}
	return m, nil
}

// signingKey is SigningKey without the check of the selected key.
func (d *DIDDocument) signingKey(didURL string, now time.Time) (VerificationMethod, error) {
	// A path or a query would be ignored below (BareDID), so that
	// "did:x/anything" named the DID's first key: only a DID, or a DID
	// URL with only a fragment, names a key.
	if !ValidDID(didURL) {
		return VerificationMethod{}, errNoKey("the key id is not a DID or a DID URL with only a fragment")
	}
	if BareDID(didURL) != d.ID {
		return VerificationMethod{}, errNoKey("did document does not belong to the sender")
	}
	if strings.IndexByte(didURL, '#') >= 0 {
		// The method didURL names, when either relationship references
		// it: one pass over each list and one over the methods.
		if slices.Contains(d.AssertionMethod, didURL) || slices.Contains(d.Authentication, didURL) {
			if m, ok := d.method(didURL); ok && d.usable(m, KeyEd25519, now) {
				return m, nil
			}
		}
		return VerificationMethod{}, errNoKey("the sender's key fragment names no active signing key")
	}
	if ms := d.eligible(d.AssertionMethod, KeyEd25519, now); len(ms) > 0 {
		return ms[0], nil
	}
	if ms := d.eligible(d.Authentication, KeyEd25519, now); len(ms) > 0 {
		return ms[0], nil
	}
	return VerificationMethod{}, errNoKey("the sender's did document has no active signing key")
}

// AgreementKeys returns the active X25519 methods referenced by keyAgreement
// that the document's DID controls, smallest id first; the first is the one
// a sender selects (RFC 001 §8.9). None is 3001 no_eligible_key.
func (d *DIDDocument) AgreementKeys(now time.Time) ([]VerificationMethod, error) {
	ms := d.eligible(d.KeyAgreement, KeyX25519, now)
	if len(ms) == 0 {
		return nil, errNoKey("the did document has no active key agreement key")
	}
	return ms, nil
}

// DIDResolver supplies DID documents for DIDs this package cannot resolve by
// itself (did:key needs no resolver). The registry implements it over the
// documents that arrived in trusted bundles. An unknown DID is an error.
type DIDResolver interface {
	ResolveDID(ctx context.Context, did string) (*DIDDocument, error)
}

// ResolveDID returns the document of did (a DID or DID URL): did:key is
// expanded locally; any other method goes to r (which may be nil: then only
// did:key resolves). The document must carry the same id as the DID asked
// for. Every failure is 3001 unknown_did, with the resolver's error kept as
// the cause.
func ResolveDID(ctx context.Context, r DIDResolver, did string) (*DIDDocument, error) {
	return resolveDID(ctx, r, did, nil)
}

func resolveDID(ctx context.Context, r DIDResolver, did string, keys *didKeyCache) (*DIDDocument, error) {
	if !ValidDID(did) {
		return nil, Named(CodeUnauthorized, "unknown_did", "sender is not a valid did")
	}
	bare := BareDID(did)
	if strings.HasPrefix(bare, "did:key:") {
		doc, err := keys.get(bare)
		if err != nil {
			return nil, Named(CodeUnauthorized, "unknown_did", "did:key cannot be expanded").WithCause(err)
		}
		return doc, nil
	}
	if r == nil {
		return nil, Named(CodeUnauthorized, "unknown_did", "no did document is known for the sender")
	}
	doc, err := r.ResolveDID(ctx, bare)
	if err != nil || doc == nil {
		return nil, Named(CodeUnauthorized, "unknown_did", "no did document is known for the sender").WithCause(err)
	}
	if doc.ID != bare {
		return nil, Named(CodeUnauthorized, "unknown_did", "did document id does not match the did")
	}
	return doc, nil
}

// didKeyCache keeps expanded did:key documents. A did:key document is a
// pure function of its DID, so an entry never goes stale; the cache exists
// because the expansion costs a field inversion (~20 µs) that would
// otherwise run on every message. Bounded; when full an arbitrary entry is
// dropped. Documents handed out must not be modified. A nil cache expands
// every time.
type didKeyCache struct {
	docs boundedMap[string, *DIDDocument]
}

func newDIDKeyCache(max int) *didKeyCache {
	return &didKeyCache{docs: newBoundedMap[string, *DIDDocument](max)}
}

func (c *didKeyCache) get(did string) (*DIDDocument, error) {
	if c == nil {
		return DIDKeyDocument(did)
	}
	if doc, ok := c.docs.get(did); ok {
		return doc, nil
	}
	doc, err := DIDKeyDocument(did)
	if err != nil {
		return nil, err
	}
	c.docs.put(did, doc)
	return doc, nil
}

// DIDKey returns the did:key DID of an Ed25519 public key.
func DIDKey(pub ed25519.PublicKey) string { return "did:key:" + EncodeMultikey(KeyEd25519, pub) }

// DIDKeyDocument expands a did:key DID (Ed25519 "z6Mk…" or X25519 "z6LS…")
// into its document, as the did:key method specification does: an Ed25519
// key is the authentication and assertionMethod key, and its X25519 form
// (the birational map of RFC 7748 §4.1) is the keyAgreement key.
func DIDKeyDocument(did string) (*DIDDocument, error) {
	if !strings.HasPrefix(did, "did:key:") || BareDID(did) != did {
		return nil, errDIDDoc("not a did:key did")
	}
	mb := did[len("did:key:"):]
	t, pub, err := decodeMultikey(mb)
	if err != nil {
		return nil, err
	}
	doc := &DIDDocument{ID: did}
	if t == KeyX25519 {
		if CheckX25519PublicKey(pub) != nil {
			return nil, errDIDDoc("did:key holds an x25519 key of small order or in non-canonical form")
		}
		id := did + "#" + mb
		doc.Methods = []VerificationMethod{{ID: id, Type: "Multikey", Controller: did, KeyType: KeyX25519, PublicKey: pub}}
		doc.KeyAgreement = []string{id}
		return doc, nil
	}
	xpub, err := X25519PublicFromEd25519(pub)
	if err != nil {
		return nil, errDIDDoc("did:key holds an invalid ed25519 key")
	}
	edID := did + "#" + mb
	xID := did + "#" + EncodeMultikey(KeyX25519, xpub[:])
	doc.Methods = []VerificationMethod{
		{ID: edID, Type: "Multikey", Controller: did, KeyType: KeyEd25519, PublicKey: append([]byte{}, pub...)},
		{ID: xID, Type: "Multikey", Controller: did, KeyType: KeyX25519, PublicKey: xpub[:]},
	}
	doc.Authentication = []string{edID}
	doc.AssertionMethod = []string{edID}
	doc.KeyAgreement = []string{xID}
	return doc, nil
}

// MarshalJSON writes the document as W3C DID Core JSON with Multikey
// verification methods and relationships as references.
func (d *DIDDocument) MarshalJSON() ([]byte, error) {
	type outService struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Endpoint string `json:"serviceEndpoint"`
	}
	type outMethod struct {
		ID                 string `json:"id"`
		Type               string `json:"type"`
		Controller         string `json:"controller"`
		PublicKeyMultibase string `json:"publicKeyMultibase"`
		Revoked            string `json:"revoked,omitempty"`
		Expires            string `json:"expires,omitempty"`
	}
	out := struct {
		Context            []string     `json:"@context"`
		ID                 string       `json:"id"`
		VerificationMethod []outMethod  `json:"verificationMethod"`
		Authentication     []string     `json:"authentication,omitempty"`
		AssertionMethod    []string     `json:"assertionMethod,omitempty"`
		KeyAgreement       []string     `json:"keyAgreement,omitempty"`
		Service            []outService `json:"service,omitempty"`
	}{
		Context:         []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"},
		ID:              d.ID,
		Authentication:  d.Authentication,
		AssertionMethod: d.AssertionMethod,
		KeyAgreement:    d.KeyAgreement,
	}
	for _, m := range d.Methods {
		om := outMethod{ID: m.ID, Type: "Multikey", Controller: m.Controller, PublicKeyMultibase: EncodeMultikey(m.KeyType, m.PublicKey)}
		if om.Controller == "" {
			om.Controller = d.ID
		}
		if m.Revoked != nil {
			om.Revoked = m.Revoked.UTC().Format(time.RFC3339)
		}
		if m.Expires != nil {
			om.Expires = m.Expires.UTC().Format(time.RFC3339)
		}
		out.VerificationMethod = append(out.VerificationMethod, om)
	}
	for i, r := range d.Relays {
		out.Service = append(out.Service, outService{ID: fmt.Sprintf("#relay-%d", i+1), Type: RelayServiceType, Endpoint: r})
	}
	return json.Marshal(out)
}

// base58btc (the Bitcoin alphabet), as multibase "z" uses it.

const b58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// maxBase58Len bounds base58Decode's quadratic work; keys are ~50 chars.
const maxBase58Len = 128

func base58Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// log(256)/log(58) ≈ 1.366
	buf := make([]byte, len(b)*138/100+1)
	high := len(buf) - 1
	for _, c := range b[zeros:] {
		carry := int(c)
		j := len(buf) - 1
		for ; j > high || carry != 0; j-- {
			carry += 256 * int(buf[j])
			buf[j] = byte(carry % 58)
			carry /= 58
		}
		high = j
	}
	i := 0
	for i < len(buf) && buf[i] == 0 {
		i++
	}
	out := make([]byte, 0, zeros+len(buf)-i)
	for k := 0; k < zeros; k++ {
		out = append(out, '1')
	}
	for ; i < len(buf); i++ {
		out = append(out, b58Alphabet[buf[i]])
	}
	return string(out)
}

func base58Decode(s string) ([]byte, error) {
	if len(s) == 0 || len(s) > maxBase58Len {
		return nil, errDIDDoc("base58 string has an invalid length")
	}
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	buf := make([]byte, len(s)*733/1000+1) // log(58)/log(256) ≈ 0.733
	for i := zeros; i < len(s); i++ {
		carry := strings.IndexByte(b58Alphabet, s[i])
		if carry < 0 {
			return nil, errDIDDoc("invalid base58 character")
		}
		for j := len(buf) - 1; j >= 0; j-- {
			carry += 58 * int(buf[j])
			buf[j] = byte(carry)
			carry >>= 8
		}
	}
	i := 0
	for i < len(buf) && buf[i] == 0 {
		i++
	}
	return append(make([]byte, zeros), buf[i:]...), nil
}
