package agh

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
)

// Extension keys and values of the AGH capability discovery page.
const (
	ExtBrief         = "agh.capabilities_brief"
	ExtInclude       = "agh.include"
	ExtCapabilityIDs = "agh.capability_ids"
	ExtCatalog       = "agh.capability_catalog"
	IncludeCatalog   = "capability_catalog"
	DigestPrefix     = "sha256:"
)

// Error names.
const (
	// ErrVerificationFailed: a capability document whose digest is not its
	// canonical digest (the page's verification_failed).
	ErrVerificationFailed amp.ErrName = "verification_failed"
	// ErrInvalidDocument: JSON that is not of the page's shape.
	ErrInvalidDocument amp.ErrName = "invalid_document"
	// ErrTooLarge: a document over MaxDocumentBytes, MaxDocumentValues or
	// (in an object whose members are kept one by one) MaxOpaqueMembers,
	// or a response that would be over MaxDocumentBytes (the page:
	// rejected before emission).
	ErrTooLarge amp.ErrName = "too_large"
)

// MaxDocumentBytes bounds every document this package reads or emits.
const MaxDocumentBytes = 1 << 20

// MaxDocumentValues bounds the JSON values of a document this package
// reads (every scalar, array and object counts one; member names do not;
// docs/SPEC-DECISIONS.md AGH-4): a parsed value costs tens of bytes
// whatever its text, so with MaxDocumentBytes this bounds a reader's
// memory. More is too_large.
const MaxDocumentValues = 1 << 16

// MaxOpaqueMembers bounds the members of one object that a reader keeps
// opaque in a map (a capability's unknown members, an envelope's ext, a
// peer card's members and its ext; docs/SPEC-DECISIONS.md AGH-8): a map
// entry costs about 100 bytes whatever its text ("a":0 is five), so this
// bounds what the maps of one document cost. More is too_large.
const MaxOpaqueMembers = 256

// parseDocument reads data, a document this package reads (what names
// it in errors: a constant, never the input), once: at most
// MaxDocumentBytes and MaxDocumentValues (too_large) of I-JSON nested at
// most jcs.MaxDepth, with no duplicate member (invalid_document). Every
// reader works on this one tree: no second parse, and no decoder that
// reads member names otherwise than RFC 8785 does.
func parseDocument(data []byte, what string) (any, error) {
	if len(data) > MaxDocumentBytes {
		return nil, amp.Named(0, ErrTooLarge, "%s over %d bytes", what, MaxDocumentBytes)
	}
	tree, err := jcs.ParseLimited(data, jcs.MaxDepth, MaxDocumentValues)
	if errors.Is(err, jcs.ErrTooMany) {
		return nil, amp.Named(0, ErrTooLarge, "%s holds more than %d JSON values", what, MaxDocumentValues)
	}
	if err != nil {
		return nil, invalid("%s is not valid JSON for this profile", what)
	}
	return tree, nil
}

// parseObject is parseDocument of a document that must be an object.
func parseObject(data []byte, what string) (jcs.Object, error) {
	tree, err := parseDocument(data, what)
	if err != nil {
		return nil, err
	}
	o, ok := tree.(jcs.Object)
	if !ok {
		return nil, invalid("%s is not a JSON object", what)
	}
	return o, nil
}

// canonBuf writes the RFC 8785 forms a reader needs of one parsed
// document into one buffer, sized once for the document (append alone
// grows a large slice by 1.25x, allocating about five times its final
// length on the way), and the forms it hands back into another (keep),
// sized once too: a kept member costs its map entry and its bytes, no
// allocation of its own.
type canonBuf struct {
	b    []byte
	keep []byte
	size int
}

// newCanonBuf returns a canonBuf for a document of size bytes: its
// canonical form is about as long (escapes only shrink; few numbers grow).
func newCanonBuf(size int) *canonBuf {
	return &canonBuf{b: make([]byte, 0, size+len(ProofContext)+1), size: size}
}

// formWithout returns prefix and the RFC 8785 form of the object o
// without its member skip (no copy of o's members), valid until the next
// call.
func (c *canonBuf) formWithout(prefix string, o jcs.Object, skip string) ([]byte, error) {
	b, err := jcs.AppendCanonicalWithout(append(c.b[:0], prefix...), o, skip)
	if cap(b) > cap(c.b) {
		c.b = b[:0]
	}
	return b, err
}

// raw is the RFC 8785 form of a parsed value, kept: what this package
// hands back of members it keeps opaque. A proof or digest covers the
// canonical form, which writes different numbers alike (9007199254740993
// and 9007199254740992, 1e-400 and 0); handing back that form, never the
// text received, gives the caller exactly what the proof or digest binds
// (AGH-6). The forms of one document share one buffer, each capped at its
// length so that appending to one never writes into the next.
func (c *canonBuf) raw(v any) json.RawMessage {
	if c.keep == nil {
		c.keep = make([]byte, 0, c.size)
	}
	start := len(c.keep)
	b, _ := jcs.AppendCanonical(c.keep, v) // a parsed tree always has a canonical form
	c.keep = b
	return json.RawMessage(b[start:len(b):len(b)])
}

// keptMembers refuses an object whose members this package would keep
// opaque, one map entry each, when there are more than MaxOpaqueMembers
// of them (too_large; AGH-8).
func keptMembers(n int, what string) error {
	if n > MaxOpaqueMembers {
		return amp.Named(0, ErrTooLarge, "%s holds more than %d members", what, MaxOpaqueMembers)
	}
	return nil
}

// stringList reads an optional member holding an array of strings (absent
// or null: nil).
func stringList(v any, present bool) ([]string, bool) {
	if !present || v == nil {
		return nil, true
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// validID reports whether id is a capability id this package reads and
// writes (docs/SPEC-DECISIONS.md AGH-15): 1 to maxIDBytes bytes of
// printable ASCII other than space (0x21 to 0x7e), as the page's ids
// ("build-site") and a store's ("org.example.translate.text:2.1.0") are.
// Ids are compared byte for byte and never case-folded: a SemVer
// pre-release ("1.0.0-RC1", "1.0.0-rc1") is case-sensitive, so two ids
// that differ in ASCII case are two capabilities. A non-ASCII id is
// refused rather than folded: Unicode folding maps the Kelvin sign to
// "k" and the long s to "s", NFKC a fullwidth letter to ASCII, and a
// reader may drop a zero-width space, so such an id is another one to
// some peer's reader and not to another's. Within ASCII every folding
// agrees: folding readers all see the same id, and exact ones (this
// package) a case-sensitive one.
func validID(id string) bool {
	if id == "" || len(id) > maxIDBytes {
		return false
	}
	for i := range len(id) {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// errID is the refusal of a capability id validID refuses; what names
// where it was found (a constant), never the id.
func errID(what string) error {
	return invalid("%s must be 1 to %d bytes of printable ASCII without spaces (ids are compared byte for byte, never folded)", what, maxIDBytes)
}

func invalid(format string, args ...any) error {
	return amp.Named(0, ErrInvalidDocument, format, args...)
}

// Capability is one structured capability document. ID, Summary and
// Outcome are always present; the optional fields are omitted when empty.
// Keys this version does not know are kept in Extra and written back. A
// document read by this package holds Examples, Requirements and Extra
// values in their RFC 8785 form (AGH-6).
type Capability struct {
	ID                string
	Summary           string
	Outcome           string
	Version           string
	Digest            string
	ContextNeeded     []string
	ArtifactsExpected []string
	ExecutionOutline  []string
	Constraints       []string
	Examples          json.RawMessage // any JSON; omitted when empty
	Requirements      json.RawMessage // any JSON; omitted when empty
	Extra             map[string]json.RawMessage
}

// capNames are the members of a capability document this package knows.
var capNames = []string{"id", "summary", "outcome", "version", "digest",
	"context_needed", "artifacts_expected", "execution_outline", "constraints",
	"examples", "requirements"}

// capSpellings are the spellings (AGH-10) of capNames and of the members
// this package adds to a store's documents (KeyBundleID, KeyInputSchema,
// KeyOutputSchema): those three are unknown members to a reader (kept in
// Extra), but they pin a capability's bundle and schemas, so one spelt
// like them but for case, underscores or dashes is refused as a page
// member's spelling is (docs/SPEC-DECISIONS.md AGH-22).
var capSpellings = jcs.NewSpellings(append(slices.Clone(capNames), KeyBundleID, KeyInputSchema, KeyOutputSchema)...)

// capKeys is capNames as a set.
var capKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range capNames {
		m[k] = true
	}
	return m
}()

// fields returns the document's members (without digest when noDigest).
func (c Capability) fields(noDigest bool) map[string]any {
	m := map[string]any{}
	for k, v := range c.Extra {
		m[k] = v
	}
	m["id"], m["summary"], m["outcome"] = c.ID, c.Summary, c.Outcome
	put := func(k string, v []string) {
		if len(v) > 0 {
			m[k] = v
		}
	}
	if c.Version != "" {
		m["version"] = c.Version
	}
	if c.Digest != "" && !noDigest {
		m["digest"] = c.Digest
	}
	put("context_needed", c.ContextNeeded)
	put("artifacts_expected", c.ArtifactsExpected)
	put("execution_outline", c.ExecutionOutline)
	put("constraints", c.Constraints)
	if !emptyJSON(c.Examples) {
		m["examples"] = c.Examples
	}
	if !emptyJSON(c.Requirements) {
		m["requirements"] = c.Requirements
	}
	return m
}

// emptyJSON reports whether raw is absent, null, [] or {}.
func emptyJSON(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

// MarshalJSON writes the document with its members sorted by name.
func (c Capability) MarshalJSON() ([]byte, error) { return marshalNoEscape(c.fields(false)) }

// UnmarshalJSON reads a capability document as ParseCapability does, so
// that encoding/json, decoding one into a Capability (or a CatalogExt of
// a whois answer), reads what this package's readers read: the members
// by their exact names, the pins and other unknown members in Extra, and
// a document they refuse refused, null included (docs/SPEC-DECISIONS.md
// AGH-23). Without it encoding/json matched the Go field names ignoring
// case: it dropped context_needed and the pins, and took a member
// "Extra", which the digest and the proof cover as one unknown member,
// for the pins. The digest is not checked (VerifyCapability).
func (c *Capability) UnmarshalJSON(data []byte) error {
	x, err := ParseCapability(data)
	if err != nil {
		return err
	}
	*c = x
	return nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(sb.String(), "\n")), nil
}

// CanonicalDigest returns "sha256:" + hex SHA-256 of the JCS form of the
// document MarshalJSON writes for c, without its digest member. An id a
// reader refuses (validID) is invalid_document, so that WithDigest,
// RichCatalog, TransferBody and TransferEnvelope never send one (AGH-15). A
// received document's digest is over that document as it came
// (VerifyCapability), which may hold what c does not keep (a null
// version, an empty examples): c.CanonicalDigest() is the digest of c as
// this package would send it.
func (c Capability) CanonicalDigest() (string, error) {
	if !validID(c.ID) {
		return "", errID("capability id") // never sent: a reader refuses it (AGH-15)
	}
	raw, err := marshalNoEscape(c.fields(true))
	if err != nil {
		return "", invalid("the capability cannot be encoded")
	}
	tree, err := jcs.Parse(raw, jcs.MaxDepth)
	o, ok := tree.(jcs.Object)
	if err != nil || !ok {
		return "", invalid("the capability has no canonical form")
	}
	return digestOf(o, newCanonBuf(len(raw)))
}

// digestOf is "sha256:" + hex SHA-256 of the RFC 8785 form of a
// document's tree without its digest member (AGH-1).
func digestOf(doc jcs.Object, cb *canonBuf) (string, error) {
	canon, err := cb.formWithout("", doc, "digest")
	if err != nil {
		return "", invalid("the capability has no canonical form")
	}
	sum := sha256.Sum256(canon)
	return DigestPrefix + hex.EncodeToString(sum[:]), nil
}

// WithDigest returns c with Digest set to its canonical digest.
func (c Capability) WithDigest() (Capability, error) {
	d, err := c.CanonicalDigest()
	if err != nil {
		return c, err
	}
	c.Digest = d
	return c, nil
}

// ParseCapability reads a capability document: id, summary and outcome
// non-empty strings, id of printable ASCII without spaces (validID; a
// non-ASCII id, which some peer's reader would fold into another, is
// invalid_document, AGH-15); version and digest strings (absent or null:
// ""); the optional list members arrays of strings (absent or null: nil); unknown
// members kept, in their RFC 8785 form as examples and requirements are (at
// most MaxOpaqueMembers, more is too_large; AGH-8). A
// member spelt like a known one but for case, underscores or dashes ("ID",
// "Summary", "contextNeeded", "context-needed") is refused (AGH-5, AGH-10,
// AGH-13), as is one spelt so like a member this package adds from a
// store ("AMPBUNDLE.INPUT_SCHEMA", "ampbundle.inputSchema"; AGH-22). The
// digest, if any, is not checked (VerifyCapability).
func ParseCapability(data []byte) (Capability, error) {
	o, err := parseObject(data, "capability document")
	if err != nil {
		return Capability{}, err
	}
	return capabilityOf(o, newCanonBuf(len(data)))
}

// capabilityOf reads a parsed capability document.
func capabilityOf(o jcs.Object, cb *canonBuf) (Capability, error) {
	if capSpellings.Variant(o) {
		return Capability{}, invalid("a member of the capability document is a known member spelt in another case or with other underscores or dashes")
	}
	var c Capability
	str := func(k string, dst *string, required bool) error {
		v, ok := o.Get(k)
		if !ok || v == nil {
			if required {
				return invalid("capability document lacks %s", k)
			}
			return nil
		}
		s, isStr := v.(string)
		if !isStr || (required && strings.TrimSpace(s) == "") {
			return invalid("capability %s must be a non-empty string", k)
		}
		*dst = s
		return nil
	}
	list := func(k string, dst *[]string) error {
		v, ok := o.Get(k)
		l, isList := stringList(v, ok)
		if !isList {
			return invalid("capability %s must be an array of strings", k)
		}
		*dst = l
		return nil
	}
	for _, f := range []error{str("id", &c.ID, true), str("summary", &c.Summary, true), str("outcome", &c.Outcome, true),
		str("version", &c.Version, false), str("digest", &c.Digest, false),
		list("context_needed", &c.ContextNeeded), list("artifacts_expected", &c.ArtifactsExpected),
		list("execution_outline", &c.ExecutionOutline), list("constraints", &c.Constraints)} {
		if f != nil {
			return Capability{}, f
		}
	}
	if !validID(c.ID) {
		return Capability{}, errID("capability id")
	}
	unknown := 0
	for _, m := range o {
		if !capKeys[m.Name] {
			unknown++
		}
	}
	if err := keptMembers(unknown, "the capability document"); err != nil {
		return Capability{}, err
	}
	for _, m := range o {
		switch {
		case m.Name == "examples":
			c.Examples = cb.raw(m.Value)
		case m.Name == "requirements":
			c.Requirements = cb.raw(m.Value)
		case !capKeys[m.Name]:
			if c.Extra == nil {
				c.Extra = make(map[string]json.RawMessage, unknown)
			}
			c.Extra[m.Name] = cb.raw(m.Value)
		}
	}
	return c, nil
}

// VerifyCapability parses a capability document and checks that its digest
// is present and equals the canonical digest of the document as it came
// (its RFC 8785 form without digest: every member, null and empty ones
// included); otherwise verification_failed. What it returns is read from
// the same parse, opaque members in the RFC 8785 form the digest covers.
func VerifyCapability(data []byte) (Capability, error) {
	o, err := parseObject(data, "capability document")
	if err != nil {
		return Capability{}, err
	}
	return verifyCapability(o, newCanonBuf(len(data)))
}

// verifyCapability is VerifyCapability of a parsed document.
func verifyCapability(o jcs.Object, cb *canonBuf) (Capability, error) {
	c, err := capabilityOf(o, cb)
	if err != nil {
		return Capability{}, err
	}
	want, err := digestOf(o, cb)
	if err != nil {
		return Capability{}, err
	}
	if c.Digest != want {
		return Capability{}, amp.Named(0, ErrVerificationFailed, "capability digest is not the canonical digest of the document")
	}
	return c, nil
}

// BriefEntry is one entry of ext["agh.capabilities_brief"].
type BriefEntry struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

// PeerCard is a peer card: the members this package sets, and every other
// member kept (Extra). Ext is the card's ext object, unknown keys kept. A
// card read by ParsePeerCard holds those values in their RFC 8785 form.
type PeerCard struct {
	Capabilities []string
	Ext          map[string]json.RawMessage
	Extra        map[string]json.RawMessage
}

// ParsePeerCard reads a peer card: an object whose "capabilities", when
// present, is an array of capability ids (validID, else
// invalid_document; AGH-15) and whose "ext", when present, is an object.
// Every other member, and every ext key, is kept in its RFC 8785
// form: at most MaxOpaqueMembers of each, more is too_large (AGH-8).
func ParsePeerCard(data []byte) (*PeerCard, error) {
	o, err := parseObject(data, "peer card")
	if err != nil {
		return nil, err
	}
	if err := keptMembers(len(o), "the peer card"); err != nil {
		return nil, err
	}
	pc := &PeerCard{Extra: make(map[string]json.RawMessage, len(o))}
	cb := newCanonBuf(len(data))
	for _, m := range o {
		switch m.Name {
		case "capabilities":
			caps, ok := stringList(m.Value, true)
			if !ok {
				return nil, invalid("peer card capabilities must be an array of strings")
			}
			for _, id := range caps {
				if !validID(id) {
					return nil, errID("each of the peer card's capabilities")
				}
			}
			pc.Capabilities = caps
		case "ext":
			if m.Value == nil {
				pc.Ext = nil
				continue
			}
			ext, ok := m.Value.(jcs.Object)
			if !ok {
				return nil, invalid("peer card ext must be an object")
			}
			if err := keptMembers(len(ext), "the peer card's ext"); err != nil {
				return nil, err
			}
			pc.Ext = make(map[string]json.RawMessage, len(ext))
			for _, e := range ext {
				pc.Ext[e.Name] = cb.raw(e.Value)
			}
		default:
			pc.Extra[m.Name] = cb.raw(m.Value)
		}
	}
	return pc, nil
}

// UnmarshalJSON reads a peer card as ParsePeerCard does, so that
// encoding/json, decoding one into a PeerCard, applies its bounds and
// its refusals (a capability id that is not printable ASCII, AGH-15;
// more than MaxOpaqueMembers members, AGH-8) and keeps every member
// other than capabilities and ext in Extra, never taking a member
// "Extra" for that map (docs/SPEC-DECISIONS.md AGH-23).
func (pc *PeerCard) UnmarshalJSON(data []byte) error {
	x, err := ParsePeerCard(data)
	if err != nil {
		return err
	}
	*pc = *x
	return nil
}

// MarshalJSON writes the card; capabilities is always an array.
func (pc PeerCard) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range pc.Extra {
		m[k] = v
	}
	caps := pc.Capabilities
	if caps == nil {
		caps = []string{}
	}
	m["capabilities"] = caps
	if pc.Ext != nil {
		m["ext"] = pc.Ext
	}
	return marshalNoEscape(m)
}

// Brief returns the brief projection of a catalog: the ids, whitespace
// trimmed, in catalog order ([] for an empty catalog, never nil) and the
// matching {id, summary} entries.
func Brief(catalog []Capability) ([]string, []BriefEntry) {
	ids := make([]string, 0, len(catalog))
	brief := make([]BriefEntry, 0, len(catalog))
	for _, c := range catalog {
		id := strings.TrimSpace(c.ID)
		ids = append(ids, id)
		brief = append(brief, BriefEntry{ID: id, Summary: c.Summary})
	}
	return ids, brief
}

// ProjectPeerCard sets the brief discovery members of card from catalog:
// capabilities (never null) and ext["agh.capabilities_brief"], which is
// removed when the catalog is empty. Other members and ext keys are kept.
// A catalog holding an id a reader refuses (validID: anything but
// printable ASCII without spaces) is invalid_document, and card is left
// as it was (AGH-15).
func ProjectPeerCard(card *PeerCard, catalog []Capability) error {
	for _, c := range catalog {
		if !validID(c.ID) {
			return errID("capability id") // never sent: a reader refuses it (AGH-15)
		}
	}
	ids, brief := Brief(catalog)
	card.Capabilities = ids
	if len(catalog) == 0 {
		delete(card.Ext, ExtBrief)
		return nil
	}
	raw, err := marshalNoEscape(brief)
	if err != nil {
		return invalid("brief cannot be encoded")
	}
	if card.Ext == nil {
		card.Ext = map[string]json.RawMessage{}
	}
	card.Ext[ExtBrief] = raw
	return nil
}

// WhoisRequest is what a whois request's ext asks of rich discovery.
type WhoisRequest struct {
	// Rich is true when agh.include contains "capability_catalog".
	Rich bool
	// IDs narrows the catalog when Filter is true.
	IDs    []string
	Filter bool
}

// ParseWhoisRequest reads the rich discovery keys of a request envelope's
// ext object (the whole envelope is not needed): agh.include, an array of
// strings whose unknown values are ignored, and agh.capability_ids, an
// array of strings. Other ext keys are ignored here (and kept by whoever
// forwards the envelope).
func ParseWhoisRequest(ext []byte) (WhoisRequest, error) {
	var r WhoisRequest
	if len(ext) == 0 {
		return r, nil
	}
	o, err := parseObject(ext, "ext")
	if err != nil {
		return r, err
	}
	if v, ok := o.Get(ExtInclude); ok {
		inc, isList := stringList(v, ok)
		if !isList {
			return r, invalid("%s must be an array of strings", ExtInclude)
		}
		for _, v := range inc {
			if v == IncludeCatalog {
				r.Rich = true
			}
		}
	}
	if v, ok := o.Get(ExtCapabilityIDs); ok {
		ids, isList := stringList(v, ok)
		if !isList {
			return r, invalid("%s must be an array of strings", ExtCapabilityIDs)
		}
		r.IDs, r.Filter = ids, true
	}
	return r, nil
}

// CatalogExt is the value of ext["agh.capability_catalog"].
type CatalogExt struct {
	Capabilities []Capability `json:"capabilities"`
}

// RichCatalog answers a whois request: nil when the request did not ask
// for the catalog (the responder then adds no agh.capability_catalog),
// else every capability of the catalog, or those whose id the request
// names, in catalog order, each with its canonical digest; [] when none
// match. Ids are compared byte for byte, never folded: a request for
// "BUILD-SITE" or "build-\u017fite" (long s) gets no "build-site"
// (AGH-15). A catalog whose encoding would exceed maxBytes is too_large:
// rejected before emission, and before any of it is encoded once the
// bytes its capabilities must take already exceed maxBytes (AGH-16).
func RichCatalog(catalog []Capability, req WhoisRequest, maxBytes int) (*CatalogExt, error) {
	if !req.Rich {
		return nil, nil
	}
	want := map[string]bool{}
	for _, id := range req.IDs {
		want[id] = true
	}
	out := &CatalogExt{Capabilities: []Capability{}}
	least := 0
	for _, c := range catalog {
		if req.Filter && !want[strings.TrimSpace(c.ID)] {
			continue
		}
		// Refused before it is encoded, not after (AGH-16): a summary
		// of megabytes cost every request many copies of it.
		if least += minDigestedEntry + c.encodedAtLeast(); maxBytes > 0 && least > maxBytes {
			return nil, tooLargeAnswer(maxBytes)
		}
		c, err := c.WithDigest()
		if err != nil {
			return nil, err
		}
		out.Capabilities = append(out.Capabilities, c)
	}
	if maxBytes > 0 {
		// The size of the encoding that is sent (marshalNoEscape, as
		// NewHandler and ampagent card write it), not json.Marshal's,
		// whose HTML escapes make it longer.
		raw, err := marshalNoEscape(out)
		if err != nil {
			return nil, invalid("the capability catalog cannot be encoded")
		}
		if len(raw) > maxBytes {
			return nil, tooLargeAnswer(maxBytes)
		}
	}
	return out, nil
}

func tooLargeAnswer(maxBytes int) error {
	return amp.Named(0, ErrTooLarge, "the capability catalog would exceed %d bytes", maxBytes)
}

// encodedAtLeast is a lower bound of the bytes of c's encoding, as
// MarshalJSON writes it: the bytes of each string it writes (an escape,
// or the replacement of an invalid byte, only adds), and of each raw
// value it writes other than JSON whitespace (which compacting drops).
// It reads c once and allocates nothing, so that an answer too large to
// send is refused before anything of it is encoded (AGH-16).
func (c Capability) encodedAtLeast() int {
	n := len(c.ID) + len(c.Summary) + len(c.Outcome) + len(c.Version) // not Digest: WithDigest replaces it
	for _, l := range [][]string{c.ContextNeeded, c.ArtifactsExpected, c.ExecutionOutline, c.Constraints} {
		for _, s := range l {
			n += len(s)
		}
	}
	for _, raw := range []json.RawMessage{c.Examples, c.Requirements} {
		if k := nonSpace(raw); k > len("null") { // an empty one is not written
			n += k
		}
	}
	for k, raw := range c.Extra {
		if !capKeys[k] { // a known name is written from its field instead
			n += len(k) + nonSpace(raw)
		}
	}
	return n
}

// minDigestedEntry is the bytes every capability with its digest takes
// in a catalog besides what encodedAtLeast counts: the members always
// written, their names and quotes, and the digest.
const minDigestedEntry = len(`{"digest":"","id":"","outcome":"","summary":""}`) + len(DigestPrefix) + 2*sha256.Size

// briefAtLeast is a lower bound of the bytes of the brief members a
// peer card of catalog holds: each id twice (in capabilities and in its
// brief entry), each summary, and their quotes and names.
func briefAtLeast(catalog []Capability) int {
	n := 0
	for _, c := range catalog {
		n += len(`""{"id":"","summary":""}`) + 2*len(strings.TrimSpace(c.ID)) + len(c.Summary)
	}
	return n
}

// nonSpace counts the bytes of raw other than JSON whitespace.
func nonSpace(raw []byte) int {
	n := 0
	for _, b := range raw {
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			n++
		}
	}
	return n
}

// TransferBody returns body.capability of a kind:"capability" envelope for
// c: the full document with its canonical digest.
func TransferBody(c Capability) (json.RawMessage, error) {
	c, err := c.WithDigest()
	if err != nil {
		return nil, err
	}
	raw, err := marshalNoEscape(map[string]any{"capability": c})
	return raw, err
}
