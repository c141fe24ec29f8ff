package mirror

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// The ACDP-0007 §3 capabilities document (docs/FORMAT.md §11.2, "ACDP-0007
// capabilities document"; docs/SPEC-DECISIONS.md MIRROR-2), served beside
// our own document by the mirror and by the agent.
const (
	// ACDPWellKnownPath is where ACDP-0007 §3 puts the document.
	ACDPWellKnownPath = "/.well-known/acdp.json"
	// ACDPVersion is the ACDP version whose §3 document and §4 error
	// envelope these routes implement.
	ACDPVersion = "0.1.0"
	// ACDPContentType is the media type of the document and of its errors
	// (ACDP-0007 §4; RFC-ACDP-0001 §11.2 registers it).
	ACDPContentType = "application/acdp+json"
	// ACDPMaxEmbeddedBytes is limits.max_embedded_bytes, fixed by the spec.
	ACDPMaxEmbeddedBytes = 65536
	// ACDPProfileRegistryCore is the profile ACDP-0007 §3.1 asks of every
	// registry. We do not claim it: it needs POST /contexts and the context
	// and lineage reads of RFC-ACDP-0001 §9.1, which we do not serve.
	ACDPProfileRegistryCore = "acdp-registry-core"
	// ACDPMaxDocumentBytes bounds a document CheckACDPCapabilities reads.
	ACDPMaxDocumentBytes = 64 << 10
	// acdpCacheControl is ACDP-0007 §3.6's recommendation.
	acdpCacheControl = "public, max-age=3600"
)

// ACDP error codes these routes answer with (ACDP-0007 §5; the status is
// the one §5 gives the code).
const (
	ACDPCodeNotFound        = "not_found"        // 404: not the document's path
	ACDPCodeSchemaViolation = "schema_violation" // 400: the Host names nothing a did:web can bind
	ACDPCodeNotImplemented  = "not_implemented"  // 501: a method other than GET or HEAD
	ACDPCodeInternal        = "internal_error"   // 500: the document could not be written
)

// ACDPCapabilities is the ACDP-0007 §3 capabilities document. The top
// level is open (§3.3): CheckACDPCapabilities tolerates unknown members;
// Limits is closed.
type ACDPCapabilities struct {
	// ACDPVersion is MAJOR.MINOR.PATCH (ACDPVersion).
	ACDPVersion string `json:"acdp_version"`
	// RegistryDID is the server's DID. Empty in a template served by
	// ACDPHandler means: did:web of the Host each request names.
	RegistryDID string `json:"registry_did"`
	// SupportedSignatureAlgorithms are the signature algorithms of what the
	// server accepts into what it serves (bundles, messages).
	SupportedSignatureAlgorithms []string `json:"supported_signature_algorithms"`
	// SupportedDIDMethods are the DID methods the server resolves.
	SupportedDIDMethods []string `json:"supported_did_methods"`
	// Profiles are the ACDP profiles claimed: none (never nil, so that it
	// is written as []).
	Profiles []string `json:"profiles"`
	// ReadAuthenticationMethods is absent: nothing non-public is served.
	ReadAuthenticationMethods []string `json:"read_authentication_methods,omitempty"`
	// AnonymousPublicReads says whether reads need no authentication.
	AnonymousPublicReads bool `json:"anonymous_public_reads"`
	// SupportsIdempotencyKey is false: no POST /contexts.
	SupportsIdempotencyKey bool `json:"supports_idempotency_key"`
	// Limits are the §3.1 limits.
	Limits ACDPLimits `json:"limits"`
	// AmpbundleCapabilities is the path of our own capabilities document
	// (WellKnownPath), a forward-compatible addition (§3.3).
	AmpbundleCapabilities string `json:"ampbundle_capabilities,omitempty"`
}

// ACDPLimits is the closed limits object of ACDP-0007 §3.1–3.2.
type ACDPLimits struct {
	// MaxPayloadBytes is the largest request body or published file the
	// server accepts (at least 1024).
	MaxPayloadBytes int64 `json:"max_payload_bytes"`
	// MaxEmbeddedBytes is ACDPMaxEmbeddedBytes.
	MaxEmbeddedBytes int64 `json:"max_embedded_bytes"`
	// IdempotencyKeyTTLSeconds is present only with supports_idempotency_key.
	IdempotencyKeyTTLSeconds int64 `json:"idempotency_key_ttl_seconds,omitempty"`
}

// MirrorACDPCapabilities is the document of a mirror whose largest bundle
// file is maxBundleBytes: its registry_did is the did:web of the host each
// request names (a mirror has no key of its own).
func MirrorACDPCapabilities(maxBundleBytes int64) ACDPCapabilities {
	return ACDPCapabilities{
		ACDPVersion:                  ACDPVersion,
		SupportedSignatureAlgorithms: []string{SignatureEd25519},
		SupportedDIDMethods:          []string{"did:key", "did:web"},
		Profiles:                     []string{},
		AnonymousPublicReads:         true,
		Limits:                       ACDPLimits{MaxPayloadBytes: maxBundleBytes, MaxEmbeddedBytes: ACDPMaxEmbeddedBytes},
		AmpbundleCapabilities:        WellKnownPath,
	}
}

// AgentACDPCapabilities is the document of the agent whose DID is did and
// whose largest accepted message is maxMessageBytes; anonymousReads says
// whether it serves its catalog over plain HTTP (the AGH projection).
func AgentACDPCapabilities(did string, maxMessageBytes int64, anonymousReads bool) ACDPCapabilities {
	c := MirrorACDPCapabilities(maxMessageBytes)
	c.RegistryDID = did
	c.AnonymousPublicReads = anonymousReads
	return c
}

// ACDPCapabilities is the mirror's ACDP-0007 document (registry_did left
// to each request's Host).
func (s *Server) ACDPCapabilities() ACDPCapabilities {
	return MirrorACDPCapabilities(s.opts.MaxBundleBytes)
}

// serveACDP serves the mirror's ACDP-0007 document. It is built from
// options New checked, so it needs no check here.
func (s *Server) serveACDP(w http.ResponseWriter, r *http.Request) {
	serveACDP(w, r, s.ACDPCapabilities(), nil)
}

// ACDPFinding is one failed item of the ACDP-0007 §3.5 consumer checklist.
// Field and Reason are fixed texts: nothing of the document is repeated.
type ACDPFinding struct {
	// Item is the checklist item, 1 to 9, or 0 for the shape (§3.1, §3.3.1:
	// a required member missing or of the wrong type, limits not closed).
	Item int
	// Field is the member at fault ("limits.max_embedded_bytes").
	Field string
	// Reason says what the item asks.
	Reason string
}

// String names the item and the field: "§3.5 item 6: limits.max_embedded_bytes must equal 65536".
func (f ACDPFinding) String() string {
	return "§3.5 item " + strconv.Itoa(f.Item) + ": " + f.Field + " " + f.Reason
}

// Reasons of item 2, told apart so that a server can check that its DID is
// one while it cannot know the host it will be fetched from.
const (
	reasonNotDID   = "must be a valid DID"
	reasonNotBound = "must be did:web:<authority> of the host the document was fetched from"
)

// CheckACDPCapabilities runs the ACDP-0007 §3.5 consumer checklist on data,
// a document fetched from host (a host name, with ":port" when the URL had
// one); nonPublic says that the consumer needs non-public contexts (item
// 9). It returns every failed item; a consumer MUST NOT rely on a document
// with any. Unknown top-level members are tolerated, unknown members of
// limits are not (§3.3.1).
func CheckACDPCapabilities(data []byte, host string, nonPublic bool) []ACDPFinding {
	var out []ACDPFinding
	fail := func(item int, field, reason string) { out = append(out, ACDPFinding{item, field, reason}) }
	if len(data) > ACDPMaxDocumentBytes {
		fail(0, "document", "must be at most 64 KiB")
		return out
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || top == nil {
		fail(0, "document", "must be a JSON object")
		return out
	}
	for _, k := range []string{"acdp_version", "registry_did", "supported_signature_algorithms", "supported_did_methods", "profiles", "limits"} {
		if v, ok := top[k]; !ok || string(v) == "null" {
			fail(0, k, "is required")
		}
	}
	var lim map[string]json.RawMessage
	if json.Unmarshal(top["limits"], &lim) == nil {
		for _, k := range []string{"max_payload_bytes", "max_embedded_bytes"} {
			if v, ok := lim[k]; !ok || string(v) == "null" {
				fail(0, "limits."+k, "is required")
			}
		}
		for k := range lim {
			switch k {
			case "max_payload_bytes", "max_embedded_bytes", "idempotency_key_ttl_seconds":
			default:
				fail(0, "limits", "is closed: a member this version does not define")
			}
		}
	}
	var c ACDPCapabilities
	if err := json.Unmarshal(data, &c); err != nil {
		fail(0, "document", "has a member of the wrong type")
		return out
	}
	if len(out) > 0 {
		return out
	}
	if !semverPattern(c.ACDPVersion) {
		fail(1, "acdp_version", `must match ^\d+\.\d+\.\d+$`)
	}
	if !validDIDNotURL(c.RegistryDID) {
		fail(2, "registry_did", reasonNotDID)
	} else if want := didWebOfHost(host); want == "" || !strings.EqualFold(canonicalDIDWeb(c.RegistryDID), want) {
		fail(2, "registry_did", reasonNotBound)
	}
	if !slices.Contains(c.SupportedSignatureAlgorithms, SignatureEd25519) {
		fail(3, "supported_signature_algorithms", `must contain "ed25519"`)
	}
	if !slices.Contains(c.SupportedDIDMethods, "did:web") {
		fail(4, "supported_did_methods", `must contain "did:web"`)
	}
	if !slices.Contains(c.Profiles, ACDPProfileRegistryCore) {
		fail(5, "profiles", `must contain "`+ACDPProfileRegistryCore+`"`)
	}
	if c.Limits.MaxEmbeddedBytes != ACDPMaxEmbeddedBytes {
		fail(6, "limits.max_embedded_bytes", "must equal 65536")
	}
	if c.Limits.MaxPayloadBytes < 1024 {
		fail(7, "limits.max_payload_bytes", "must be at least 1024")
	}
	if _, has := lim["idempotency_key_ttl_seconds"]; c.SupportsIdempotencyKey &&
		(!has || c.Limits.IdempotencyKeyTTLSeconds < 86400 || c.Limits.IdempotencyKeyTTLSeconds > 604800) {
		fail(8, "limits.idempotency_key_ttl_seconds", "must be present and within 86400..604800 when supports_idempotency_key is true")
	}
	if nonPublic && len(c.ReadAuthenticationMethods) == 0 {
		fail(9, "read_authentication_methods", "must be non-empty when the registry serves non-public contexts")
	}
	return out
}

// implementedACDPProfile reports whether this implementation meets every
// MUST of the ACDP profile named: of none (docs/SPEC-DECISIONS.md MIRROR-2).
func implementedACDPProfile(string) bool { return false }

// Check validates the document a server is about to serve (ACDP-0007
// §3.5.1): every §3.5 item but two holds — item 5, since we claim no
// profile, and the did:web binding of item 2, which depends on the host a
// consumer names (the DID must still be one) — and no profile is claimed
// that this implementation does not meet. The error is misconfigured,
// naming the item and the field.
func (c ACDPCapabilities) Check() error {
	for _, p := range c.Profiles {
		if !implementedACDPProfile(p) {
			return amp.Named(0, ErrMisconfigured, "ACDP capabilities document: profiles claims a profile this implementation does not meet")
		}
	}
	if c.Profiles == nil {
		return amp.Named(0, ErrMisconfigured, "ACDP capabilities document: profiles must be a list (empty: no profile claimed)")
	}
	if c.RegistryDID == "" {
		c.RegistryDID = "did:web:registry.example" // derived per request from a checked Host
	}
	body, err := json.Marshal(c)
	if err != nil {
		return amp.Named(0, ErrMisconfigured, "ACDP capabilities document cannot be encoded").WithCause(err)
	}
	for _, f := range CheckACDPCapabilities(body, "", false) {
		if f.Item == 5 || f.Reason == reasonNotBound {
			continue
		}
		return amp.Named(0, ErrMisconfigured, "ACDP capabilities document: %s", f)
	}
	return nil
}

// ACDPHandler serves doc at ACDPWellKnownPath (GET, HEAD) as
// application/acdp+json; any other request is the ACDP-0007 §4 error
// envelope. doc is checked first (Check): a misconfigured one is an error
// and nothing is served. An empty doc.RegistryDID is the did:web of the
// Host each request names.
func ACDPHandler(doc ACDPCapabilities) (http.Handler, error) {
	if err := doc.Check(); err != nil {
		return nil, err
	}
	var fixed *memFile
	if doc.RegistryDID != "" {
		body, err := json.Marshal(doc)
		if err != nil {
			return nil, amp.Named(0, ErrMisconfigured, "ACDP capabilities document cannot be encoded").WithCause(err)
		}
		fixed = newMemFile(append(body, '\n'), ACDPContentType)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSafetyHeaders(w) // served in another server's router (the agent's)
		serveACDP(w, r, doc, fixed)
	}), nil
}

// serveACDP answers one request for the document: fixed when the DID is
// configured, else doc with the did:web of r.Host.
func serveACDP(w http.ResponseWriter, r *http.Request, doc ACDPCapabilities, fixed *memFile) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeACDPError(w, ACDPCodeNotImplemented)
		return
	}
	if r.URL.Path != ACDPWellKnownPath {
		writeACDPError(w, ACDPCodeNotFound)
		return
	}
	f := fixed
	if f == nil {
		// The document is the Host's: a shared cache keyed on anything
		// but the Host (a proxy's upstream URL) would serve one Host's
		// registry_did to every other for max-age. Vary: Host keys it on
		// the Host (RFC 9111 §4.1), on 200 and 304 alike; §3.6's public
		// caching stays for a cache that honours it.
		w.Header().Add("Vary", "Host")
		did := didWebOfHost(r.Host)
		if did == "" {
			writeACDPError(w, ACDPCodeSchemaViolation)
			return
		}
		doc.RegistryDID = did
		body, err := json.Marshal(doc)
		if err != nil {
			writeACDPError(w, ACDPCodeInternal)
			return
		}
		f = newMemFile(append(body, '\n'), ACDPContentType)
	}
	serveMem(w, r, f, acdpCacheControl)
}

// acdpError returns the status and fixed message of an ACDP error code:
// nothing of the request is ever echoed (ACDP-0007 §6).
func acdpError(code string) (int, string) {
	switch code {
	case ACDPCodeNotFound:
		return http.StatusNotFound, "no such resource"
	case ACDPCodeSchemaViolation:
		return http.StatusBadRequest, "the Host header names no DNS host a did:web registry_did can bind: fetch the document by the registry's host name"
	case ACDPCodeNotImplemented:
		return http.StatusNotImplemented, "only GET and HEAD are implemented on this endpoint"
	default:
		return http.StatusInternalServerError, "the registry failed"
	}
}

// writeACDPError writes the ACDP-0007 §4 envelope
// {"error":{"code","message"}} as application/acdp+json.
func writeACDPError(w http.ResponseWriter, code string) {
	status, msg := acdpError(code)
	writeEnvelope(w, status, ACDPContentType, code, msg)
}

// semverPattern reports whether s matches ^\d+\.\d+\.\d+$ (ASCII digits;
// leading zeros allowed, as the pattern allows them).
func semverPattern(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// validDIDNotURL reports whether s is a DID (DID Core syntax), not a DID
// URL: no fragment, query or path.
func validDIDNotURL(s string) bool {
	return amp.ValidDID(s) && !strings.ContainsAny(s, "#?/")
}

// didWebOfHost returns the did:web naming host ("name" or "name:port", as
// in a Host header or a URL's authority), or "" when host is not a DNS
// name did:web can carry: empty, an IP address (the did:web method
// excludes them), a name with characters outside letters, digits and
// hyphens, or a bad port. The name is lowercased; the port is written
// %3A-encoded, as the did:web method writes it.
func didWebOfHost(host string) string {
	if host == "" || len(host) > 253+6 {
		return ""
	}
	name, port, hasPort := strings.Cut(host, ":")
	if hasPort && !validPort(port) {
		return ""
	}
	name = strings.ToLower(name)
	if !dnsName(name) {
		return ""
	}
	if hasPort {
		return "did:web:" + name + "%3A" + port
	}
	return "did:web:" + name
}

// canonicalDIDWeb returns the did:web DID d as didWebOfHost writes it, or
// "" when d is not a did:web without path whose authority is a DNS name
// with an optional port.
func canonicalDIDWeb(d string) string {
	msid, ok := strings.CutPrefix(d, "did:web:")
	if !ok || strings.Contains(msid, ":") {
		return ""
	}
	host := msid
	if i := strings.Index(strings.ToUpper(msid), "%3A"); i >= 0 {
		host = msid[:i] + ":" + msid[i+3:]
	}
	if strings.Contains(host, "%") {
		return ""
	}
	return didWebOfHost(host)
}

// validPort reports whether p is a port number 1..65535 without leading
// zeros.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == p
}

// dnsName reports whether s is a lowercase DNS host name: labels of 1 to
// 63 letters, digits and hyphens, not starting or ending with a hyphen,
// at most 253 bytes, and a last label that is not all digits (so that no
// IPv4 address passes).
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}
