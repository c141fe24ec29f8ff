package mirror

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// Names used in the capabilities document (docs/FORMAT.md, "Well-known
// capabilities document"). The pattern is ACDP-0007 §3; the names are ours.
const (
	// RegistryVersion is the version of the document this package writes.
	RegistryVersion = "1.0.0"
	// ProfileOffline is the Offline Registry Profile of RFC 004 §5.3: every
	// schema is resolved from a local bundle store.
	ProfileOffline = "offline-registry"
	// ProfileMirror says the server serves its bundle files (/bundles/...)
	// and an index (/index.json) for 'ampbundle sync'.
	ProfileMirror = "bundle-mirror"
	// ProfileAgent says the server is an AMP agent (POST /amp/v1/messages).
	ProfileAgent = "amp-agent"
	// SignatureEd25519 is the only signature algorithm of bundles (COSE
	// EdDSA, -8).
	SignatureEd25519 = "ed25519"
)

// ErrMisconfigured names a capabilities document, or a server
// configuration, that fails Check: the server refuses to start.
const ErrMisconfigured amp.ErrName = "misconfigured"

// Capabilities is the well-known capabilities document. Unknown top-level
// keys of a document read with DecodeCapabilities are kept in Extra
// (forward compatible, ACDP-0007 §3.3); limits are closed.
type Capabilities struct {
	RegistryVersion     string            `json:"ampbundle_registry_version"`
	Profiles            []string          `json:"profiles"`
	BundleFormat        string            `json:"bundle_format"`
	HashAlgorithms      []string          `json:"hash_algorithms"`
	SignatureAlgorithms []string          `json:"signature_algorithms"`
	Limits              Limits            `json:"limits"`
	Endpoints           map[string]string `json:"endpoints"`
	Generation          uint64            `json:"generation"`
	// Extra holds top-level keys this version does not define.
	Extra map[string]json.RawMessage `json:"-"`
}

// Limits are the bounds a server applies and a client may rely on.
type Limits struct {
	// MaxBundleBytes is the largest bundle file served (bundle-mirror).
	MaxBundleBytes int64 `json:"max_bundle_bytes,omitempty"`
	// MaxIndexBytes is the largest index document served (bundle-mirror).
	MaxIndexBytes int64 `json:"max_index_bytes,omitempty"`
	// MaxMessageBytes is the largest AMP message accepted (amp-agent).
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// MaxPathBytes is the longest request path looked at.
	MaxPathBytes int `json:"max_path_bytes"`
	// MaxInFlight is how many requests are served at once; more get 503.
	MaxInFlight int `json:"max_in_flight"`
}

// Check validates the document (the consumer checklist of ACDP-0007 §3.5
// in our names). A server runs it once at construction and refuses to
// start when it fails; a client runs it on a fetched document before it
// relies on it. The error is misconfigured and names the failing field.
func (c *Capabilities) Check() error {
	bad := func(field, why string) error {
		return amp.Named(0, ErrMisconfigured, "capabilities document: %s %s", field, why)
	}
	if !semverCore(c.RegistryVersion) {
		return bad("ampbundle_registry_version", "must be MAJOR.MINOR.PATCH")
	}
	if c.RegistryVersion[0] != '1' || c.RegistryVersion[1] != '.' {
		return bad("ampbundle_registry_version", "must have major version 1")
	}
	if !slices.Contains(c.Profiles, ProfileOffline) {
		return bad("profiles", `must contain "`+ProfileOffline+`"`)
	}
	if c.BundleFormat != bundle.Format {
		return bad("bundle_format", `must be "`+bundle.Format+`"`)
	}
	if !slices.Contains(c.HashAlgorithms, capability.HashSHA256) {
		return bad("hash_algorithms", `must contain "sha-256"`)
	}
	for _, a := range c.HashAlgorithms {
		if _, ok := capability.HashSize(a); !ok {
			return bad("hash_algorithms", "names an algorithm RFC 004 §4.2 does not define")
		}
	}
	if !slices.Contains(c.SignatureAlgorithms, SignatureEd25519) {
		return bad("signature_algorithms", `must contain "ed25519"`)
	}
	mirror, agent := slices.Contains(c.Profiles, ProfileMirror), slices.Contains(c.Profiles, ProfileAgent)
	switch {
	case (mirror || c.Limits.MaxBundleBytes != 0) && c.Limits.MaxBundleBytes < 1<<10:
		return bad("limits.max_bundle_bytes", "must be at least 1024")
	case (mirror || c.Limits.MaxIndexBytes != 0) && c.Limits.MaxIndexBytes < 1<<10:
		return bad("limits.max_index_bytes", "must be at least 1024")
	case (agent || c.Limits.MaxMessageBytes != 0) && c.Limits.MaxMessageBytes < 1<<20:
		return bad("limits.max_message_bytes", "must be at least 1048576 (the HTTP binding's minimum)")
	case c.Limits.MaxPathBytes < 256:
		return bad("limits.max_path_bytes", "must be at least 256")
	case c.Limits.MaxInFlight < 1:
		return bad("limits.max_in_flight", "must be at least 1")
	}
	need := func(profile string, keys ...string) error {
		for _, k := range keys {
			if c.Endpoints[k] == "" {
				return bad("endpoints."+k, "must be present for the "+profile+" profile")
			}
		}
		return nil
	}
	if mirror {
		if err := need(ProfileMirror, "index", "bundles"); err != nil {
			return err
		}
	}
	if agent {
		if err := need(ProfileAgent, "messages"); err != nil {
			return err
		}
	}
	for k, v := range c.Endpoints {
		if len(v) == 0 || v[0] != '/' {
			return bad(endpointField(k), "must be an absolute path")
		}
	}
	return nil
}

// endpointField names the endpoints entry k in an error: by its key when
// the key is a short snake_case name, and without it otherwise. The key is
// the document author's text (a mirror's, for a client): one that is not a
// plain name is not repeated, so that an error shown on a terminal cannot
// carry the author's control sequences.
func endpointField(k string) string {
	if amp.ValidErrName(k) {
		return "endpoints." + k
	}
	return "an endpoints entry (whose key is not a plain name)"
}

// semverCore reports whether s is MAJOR.MINOR.PATCH with no leading zeros.
func semverCore(s string) bool {
	parts, n := 0, 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if n == 0 || (n > 1 && s[i-n] == '0') {
				return false
			}
			parts, n = parts+1, 0
			continue
		}
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n++
	}
	return parts == 3
}

// MarshalJSON writes the document, Extra keys included.
func (c Capabilities) MarshalJSON() ([]byte, error) {
	type plain Capabilities
	b, err := json.Marshal(plain(c))
	if err != nil || len(c.Extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range c.Extra {
		if _, known := m[k]; !known {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// DecodeCapabilities reads a capabilities document: unknown top-level keys
// are kept (Extra), unknown keys of limits are refused (the object is
// closed), and the document is checked (Check).
func DecodeCapabilities(data []byte) (*Capabilities, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, amp.Named(0, ErrMisconfigured, "capabilities document is not a JSON object")
	}
	type plain Capabilities
	var c plain
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, amp.Named(0, ErrMisconfigured, "capabilities document has a field of the wrong type")
	}
	if raw, ok := top["limits"]; ok {
		var lim map[string]json.RawMessage
		if err := json.Unmarshal(raw, &lim); err != nil {
			return nil, amp.Named(0, ErrMisconfigured, "capabilities document: limits must be an object")
		}
		for k := range lim {
			switch k {
			case "max_bundle_bytes", "max_index_bytes", "max_message_bytes", "max_path_bytes", "max_in_flight":
			default:
				return nil, amp.Named(0, ErrMisconfigured, "capabilities document: limits has an unknown field")
			}
		}
	}
	out := Capabilities(c)
	for k, v := range top {
		switch k {
		case "ampbundle_registry_version", "profiles", "bundle_format", "hash_algorithms",
			"signature_algorithms", "limits", "endpoints", "generation":
		default:
			if out.Extra == nil {
				out.Extra = map[string]json.RawMessage{}
			}
			out.Extra[k] = v
		}
	}
	if err := out.Check(); err != nil {
		return nil, err
	}
	return &out, nil
}

// mirrorEndpoints are the endpoints a mirror announces.
func mirrorEndpoints() map[string]string {
	return map[string]string{
		"well_known":      WellKnownPath,
		"index":           IndexPath,
		"bundles":         BundlesPrefix + "{bundle_id}",
		"descriptor_cbor": RegistryPrefix + "{name}/{version}/" + FileDescriptorCBOR,
		"descriptor_json": RegistryPrefix + "{name}/{version}/" + FileDescriptorJSON,
		"input_schema":    RegistryPrefix + "{name}/{version}/" + FileInputSchema,
		"output_schema":   RegistryPrefix + "{name}/{version}/" + FileOutputSchema,
	}
}

// AgentCapabilities returns the capabilities document of an AMP agent
// (profiles offline-registry and amp-agent): messagesPath and healthPath
// are its endpoints, extra endpoints (the AGH projection, for example) are
// added as given.
func AgentCapabilities(messagesPath, healthPath string, maxMessage int64, maxInFlight int, extra map[string]string) Capabilities {
	ep := map[string]string{"well_known": WellKnownPath, "messages": messagesPath, "health": healthPath}
	for k, v := range extra {
		ep[k] = v
	}
	return Capabilities{
		RegistryVersion:     RegistryVersion,
		Profiles:            []string{ProfileOffline, ProfileAgent},
		BundleFormat:        bundle.Format,
		HashAlgorithms:      []string{capability.HashSHA256, capability.HashSHA512},
		SignatureAlgorithms: []string{SignatureEd25519},
		Limits:              Limits{MaxMessageBytes: maxMessage, MaxPathBytes: maxPathLen, MaxInFlight: maxInFlight},
		Endpoints:           ep,
	}
}

// WellKnownHandler serves c at WellKnownPath (GET, HEAD), its generation
// read from generation at each request; every other request is the JSON
// error envelope. c is checked first: a misconfigured document is an error
// naming the field, and nothing is served.
func WellKnownHandler(c Capabilities, generation func() uint64) (http.Handler, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSafetyHeaders(w) // served in another server's router (the agent's)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
			return
		}
		if r.URL.Path != WellKnownPath {
			writeError(w, http.StatusNotFound, CodeNotFound)
			return
		}
		doc := c
		if generation != nil {
			doc.Generation = generation()
		}
		body, err := json.Marshal(doc)
		if err != nil {
			writeError(w, http.StatusInternalServerError, CodeInternal)
			return
		}
		serveMem(w, r, newMemFile(append(body, '\n'), "application/json"), "public, max-age=60")
	}), nil
}
