package agh

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
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
	// ErrTooLarge: a document over MaxDocumentBytes, or a response that
	// would be (the page: rejected before emission).
	ErrTooLarge amp.ErrName = "too_large"
)

// MaxDocumentBytes bounds every document this package reads or emits.
const MaxDocumentBytes = 1 << 20

func invalid(format string, args ...any) error {
	return amp.Named(0, ErrInvalidDocument, format, args...)
}

// Capability is one structured capability document. ID, Summary and
// Outcome are always present; the optional fields are omitted when empty.
// Keys this version does not know are kept in Extra and written back.
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

// known capability members.
var capKeys = map[string]bool{"id": true, "summary": true, "outcome": true, "version": true, "digest": true,
	"context_needed": true, "artifacts_expected": true, "execution_outline": true, "constraints": true,
	"examples": true, "requirements": true}

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
// document without its digest member.
func (c Capability) CanonicalDigest() (string, error) {
	raw, err := marshalNoEscape(c.fields(true))
	if err != nil {
		return "", invalid("capability %s cannot be encoded", c.ID)
	}
	canon, err := Canonical(raw)
	if err != nil {
		return "", invalid("capability has no canonical form")
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
// non-empty strings; the optional list members arrays of strings; unknown
// members kept. The digest, if any, is not checked (VerifyCapability).
func ParseCapability(data []byte) (Capability, error) {
	if len(data) > MaxDocumentBytes {
		return Capability{}, amp.Named(0, ErrTooLarge, "capability document over %d bytes", MaxDocumentBytes)
	}
	if _, err := Canonical(data); err != nil { // depth, duplicates, UTF-8
		return Capability{}, invalid("capability document is not valid JSON for this profile")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return Capability{}, invalid("capability document is not a JSON object")
	}
	var c Capability
	str := func(k string, dst *string, required bool) error {
		raw, ok := m[k]
		if !ok {
			if required {
				return invalid("capability document lacks %s", k)
			}
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil || (required && strings.TrimSpace(*dst) == "") {
			return invalid("capability %s must be a non-empty string", k)
		}
		return nil
	}
	list := func(k string, dst *[]string) error {
		if raw, ok := m[k]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return invalid("capability %s must be an array of strings", k)
			}
		}
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
	c.Examples, c.Requirements = m["examples"], m["requirements"]
	for k, v := range m {
		if !capKeys[k] {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
	}
	return c, nil
}

// VerifyCapability parses a capability document and checks that its digest
// is present and equals its canonical digest; otherwise
// verification_failed.
func VerifyCapability(data []byte) (Capability, error) {
	c, err := ParseCapability(data)
	if err != nil {
		return Capability{}, err
	}
	want, err := c.CanonicalDigest()
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
// member kept as it came (Extra). Ext is the card's ext object, unknown
// keys kept.
type PeerCard struct {
	Capabilities []string
	Ext          map[string]json.RawMessage
	Extra        map[string]json.RawMessage
}

// ParsePeerCard reads a peer card: an object whose "capabilities", when
// present, is an array of strings and whose "ext", when present, is an
// object. Every other member is kept.
func ParsePeerCard(data []byte) (*PeerCard, error) {
	if len(data) > MaxDocumentBytes {
		return nil, amp.Named(0, ErrTooLarge, "peer card over %d bytes", MaxDocumentBytes)
	}
	if _, err := Canonical(data); err != nil {
		return nil, invalid("peer card is not valid JSON for this profile")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, invalid("peer card is not a JSON object")
	}
	pc := &PeerCard{Extra: map[string]json.RawMessage{}}
	for k, v := range m {
		switch k {
		case "capabilities":
			if err := json.Unmarshal(v, &pc.Capabilities); err != nil {
				return nil, invalid("peer card capabilities must be an array of strings")
			}
		case "ext":
			if err := json.Unmarshal(v, &pc.Ext); err != nil {
				return nil, invalid("peer card ext must be an object")
			}
		default:
			pc.Extra[k] = v
		}
	}
	return pc, nil
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
func ProjectPeerCard(card *PeerCard, catalog []Capability) error {
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
	if len(ext) > MaxDocumentBytes {
		return r, amp.Named(0, ErrTooLarge, "ext over %d bytes", MaxDocumentBytes)
	}
	if _, err := Canonical(ext); err != nil {
		return r, invalid("ext is not valid JSON for this profile")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ext, &m); err != nil || m == nil {
		return r, invalid("ext is not a JSON object")
	}
	if raw, ok := m[ExtInclude]; ok {
		var inc []string
		if err := json.Unmarshal(raw, &inc); err != nil {
			return r, invalid("%s must be an array of strings", ExtInclude)
		}
		for _, v := range inc {
			if v == IncludeCatalog {
				r.Rich = true
			}
		}
	}
	if raw, ok := m[ExtCapabilityIDs]; ok {
		if err := json.Unmarshal(raw, &r.IDs); err != nil {
			return r, invalid("%s must be an array of strings", ExtCapabilityIDs)
		}
		r.Filter = true
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
// match. A catalog whose encoding would exceed maxBytes is too_large:
// rejected before emission.
func RichCatalog(catalog []Capability, req WhoisRequest, maxBytes int) (*CatalogExt, error) {
	if !req.Rich {
		return nil, nil
	}
	want := map[string]bool{}
	for _, id := range req.IDs {
		want[id] = true
	}
	out := &CatalogExt{Capabilities: []Capability{}}
	for _, c := range catalog {
		if req.Filter && !want[strings.TrimSpace(c.ID)] {
			continue
		}
		c, err := c.WithDigest()
		if err != nil {
			return nil, err
		}
		out.Capabilities = append(out.Capabilities, c)
	}
	if maxBytes > 0 {
		raw, err := json.Marshal(out)
		if err != nil || len(raw) > maxBytes {
			return nil, amp.Named(0, ErrTooLarge, "the capability catalog would exceed %d bytes", maxBytes)
		}
	}
	return out, nil
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
