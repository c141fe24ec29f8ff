package a2acard

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

const (
	// ProtocolVersion is the A2A protocol version the card follows.
	ProtocolVersion = "1.0"
	// BindingAMPHTTP identifies, as A2A §5.8 asks of a custom binding, the
	// interface the card declares: AMP messages over the agent's HTTP
	// binding (docs/CLI.md §3.4).
	BindingAMPHTTP = "https://github.com/ampbundle/ampbundle#amp-http-v1"
	// ExtensionURI names the capabilities extension that lists each served
	// capability version with its bundle id and schema hashes.
	ExtensionURI = "https://github.com/ampbundle/ampbundle#a2a-capabilities-v1"
	// Alg is the only JWS algorithm this package signs and verifies with.
	Alg = "EdDSA"
	// Typ is the protected header's typ (A2A §8.4.2).
	Typ = "JOSE"
	// MediaJSON is the card's default input and output mode.
	MediaJSON = "application/json"
	// MaxCardBytes bounds a card Verify reads.
	MaxCardBytes = 1 << 20
	// MaxSignatures bounds the entries of a card's signatures array.
	MaxSignatures = 16
	// MaxCardValues bounds the JSON values of a card Verify reads (every
	// scalar, array and object; docs/SPEC-DECISIONS.md A2A-9): the parsed
	// card costs tens of bytes per value, so with MaxCardBytes this bounds
	// Verify's memory.
	MaxCardValues = 1 << 16
	// maxHeaderBytes bounds one decoded protected header.
	maxHeaderBytes = 4096
)

// Card is an A2A 1.0 AgentCard in its JSON form (protojson member names).
// Members a2a.proto marks REQUIRED are always written; the others only
// when set, as A2A §8.4.1 asks of a card to be signed.
type Card struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	SupportedInterfaces  []Interface     `json:"supportedInterfaces"`
	Provider             *Provider       `json:"provider,omitempty"`
	Version              string          `json:"version"`
	DocumentationURL     *string         `json:"documentationUrl,omitempty"`
	Capabilities         Capabilities    `json:"capabilities"`
	SecuritySchemes      json.RawMessage `json:"securitySchemes,omitempty"`
	SecurityRequirements json.RawMessage `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string        `json:"defaultInputModes"`
	DefaultOutputModes   []string        `json:"defaultOutputModes"`
	Skills               []Skill         `json:"skills"`
	Signatures           []Signature     `json:"signatures,omitempty"`
	IconURL              *string         `json:"iconUrl,omitempty"`
}

// Interface is an AgentInterface: where and how the agent is reached.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// Provider is an AgentProvider.
type Provider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// Capabilities is an AgentCapabilities.
type Capabilities struct {
	Streaming         *bool       `json:"streaming,omitempty"`
	PushNotifications *bool       `json:"pushNotifications,omitempty"`
	Extensions        []Extension `json:"extensions,omitempty"`
	ExtendedAgentCard *bool       `json:"extendedAgentCard,omitempty"`
}

// Extension is an AgentExtension.
type Extension struct {
	URI         string          `json:"uri,omitempty"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
}

// Skill is an AgentSkill.
type Skill struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Tags                 []string        `json:"tags"`
	Examples             []string        `json:"examples,omitempty"`
	InputModes           []string        `json:"inputModes,omitempty"`
	OutputModes          []string        `json:"outputModes,omitempty"`
	SecurityRequirements json.RawMessage `json:"securityRequirements,omitempty"`
}

// Signature is an AgentCardSignature: a JWS in the JSON serialization of
// RFC 7515 §7.2.1, its payload detached.
type Signature struct {
	Protected string          `json:"protected"`
	Signature string          `json:"signature"`
	Header    json.RawMessage `json:"header,omitempty"`
}

// Served is one capability version the agent serves, as the card lists it.
type Served struct {
	// ID is the capability id, "name:version".
	ID string
	// Name and Version are its two parts.
	Name, Version string
	// Summary is a one-line description (the agh projection's summary).
	Summary string
	// BundleID is the id of the bundle that provides it.
	BundleID string
	// InputSchema and OutputSchema are "alg:hex" schema hashes.
	InputSchema, OutputSchema string
}

// ServedParams is one entry of the capabilities extension's params.
type ServedParams struct {
	ID           string `json:"id"`
	BundleID     string `json:"bundle_id"`
	InputSchema  string `json:"input_schema"`
	OutputSchema string `json:"output_schema"`
}

// servedParamsDoc is the params of the ExtensionURI extension.
type servedParamsDoc struct {
	Capabilities []ServedParams `json:"capabilities"`
}

// Options are the card members that do not come from the catalog.
type Options struct {
	// Name is the agent's name (required).
	Name string
	// Description describes the agent; empty gives a standard sentence.
	Description string
	// Version is the card's version (required).
	Version string
	// URL is the agent's AMP HTTP URL, the card's one interface (required).
	URL string
}

// New returns the unsigned card of an agent serving served, in that order:
// one skill per capability version, and the capabilities extension
// carrying each version's bundle id and schema hashes. An agent that
// serves nothing has no card (A2A §5.7: a REQUIRED array holds at least
// one element): ErrInvalid, as is a url that is no WebURL, which Verify
// would refuse (A2A-14).
func New(o Options, served []Served) (*Card, error) {
	if o.Name == "" || o.Version == "" || o.URL == "" {
		return nil, amp.Named(0, ErrInvalid, "the card needs a name, a version and a url")
	}
	if !WebURL(o.URL) {
		return nil, notWeb("url") // Verify would refuse the card (A2A-14)
	}
	if len(served) == 0 {
		return nil, amp.Named(0, ErrInvalid, "the agent serves no capability: a card needs at least one skill")
	}
	c := &Card{
		Name:                o.Name,
		Description:         o.Description,
		SupportedInterfaces: []Interface{{URL: o.URL, ProtocolBinding: BindingAMPHTTP, ProtocolVersion: ProtocolVersion}},
		Version:             o.Version,
		DefaultInputModes:   []string{MediaJSON},
		DefaultOutputModes:  []string{MediaJSON},
		Skills:              []Skill{},
	}
	if c.Description == "" {
		c.Description = "An AMP agent serving capabilities whose input and output schemas come from signed bundles, pinned by hash and verified offline."
	}
	params := servedParamsDoc{}
	for _, s := range served {
		if s.ID == "" || s.Name == "" {
			return nil, amp.Named(0, ErrInvalid, "a served capability has no id")
		}
		desc := strings.TrimSpace(s.Summary)
		if desc == "" {
			desc = s.Name + " version " + s.Version
		}
		c.Skills = append(c.Skills, Skill{
			ID:          s.ID,
			Name:        s.Name + " " + s.Version,
			Description: desc,
			Tags:        []string{s.Name, "ampbundle"},
		})
		params.Capabilities = append(params.Capabilities, ServedParams{ID: s.ID, BundleID: s.BundleID, InputSchema: s.InputSchema, OutputSchema: s.OutputSchema})
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.Capabilities.Extensions = []Extension{{
		URI:         ExtensionURI,
		Description: "each skill is an AMP capability version: its bundle and the SHA-256 of its input and output schemas",
		Params:      raw,
	}}
	return c, nil
}

// DIDKeyID returns the key id of pub as its did:key names it: the DID, "#",
// and the DID's own multibase key ("did:key:z6Mk…#z6Mk…").
func DIDKeyID(pub ed25519.PublicKey) string {
	did := amp.DIDKey(pub)
	return did + "#" + strings.TrimPrefix(did, "did:key:")
}
