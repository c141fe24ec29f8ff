package agh

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/internal/limit"
)

// Paths of the AGH projection served over HTTP by 'ampagent serve --agh'
// (docs/FORMAT.md, "AGH projection").
const (
	PeerCardPath     = "/agh/v0/peer-card"
	CatalogPath      = "/agh/v0/capability-catalog"
	CapabilityPrefix = "/agh/v0/capabilities/"
)

// maxQuery bounds the query string of a catalog request.
const maxQuery = 8 << 10

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	// Catalog returns the current catalog, in catalog order. Required.
	Catalog func() ([]Capability, error)
	// Card holds the card members other than capabilities and ext
	// (peer_id, display_name, ...). Members of the seed's example that it
	// lacks are filled from CardMembers (peer_id: the signer's DID).
	Card map[string]json.RawMessage
	// Signer signs the transfer envelopes; nil serves them with proof
	// null (the seed's unverified mode), from the card's peer_id.
	Signer *Signer
	// Now and Rand stamp transfer envelopes (time.Now and crypto/rand
	// when nil).
	Now  func() time.Time
	Rand io.Reader
	// MaxBytes bounds a response (default MaxDocumentBytes): a larger one
	// is refused (500 too_large) rather than sent, and one whose
	// capabilities alone must take more is refused before any of it is
	// encoded or signed (AGH-16).
	MaxBytes int
}

// ParseCatalogQuery reads the query of a catalog request: "id" may be
// repeated to narrow the catalog (catalog order is kept whatever the order
// of the ids); no "id" means the whole catalog; "id=" alone asks for
// nothing and gets []. Any other parameter, or a query over 8 KiB, is
// invalid_document.
func ParseCatalogQuery(raw string) (WhoisRequest, error) {
	req := WhoisRequest{Rich: true}
	if len(raw) > maxQuery {
		return req, invalid("catalog query too long")
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return req, invalid("catalog query does not parse")
	}
	for k, vs := range q {
		if k != "id" {
			return req, invalid("catalog query has an unknown parameter")
		}
		req.Filter = true
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				req.IDs = append(req.IDs, v)
			}
		}
	}
	return req, nil
}

// NewHandler serves the three projections of the catalog, read-only:
//
//	GET PeerCardPath                      the peer card (brief discovery)
//	GET CatalogPath[?id=ID&id=...]        {"agh.capability_catalog": {...}}
//	GET CapabilityPrefix + ID             a kind:"capability" envelope
//
// Every failure is {"error":{"code","message"}} with a fixed message:
// not_found, method_not_allowed, invalid_request, too_large,
// internal_error, unavailable (docs/FORMAT.md, "AGH projection").
//
// Answers carry publisher-written text unescaped for HTML; every answer
// sets X-Content-Type-Options: nosniff, and the router that mounts the
// handler sets the script-free Content-Security-Policy before it runs (the
// agent's does, mirror.ScriptFree; docs/SPEC-DECISIONS.md MIRROR-7).
func NewHandler(opts HandlerOptions) http.Handler {
	limit.Default(&opts.MaxBytes, MaxDocumentBytes)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	members, peerID := cardDefaults(opts.Card, opts.Signer)
	send := func(w http.ResponseWriter, r *http.Request, v any) {
		body, err := marshalNoEscape(v)
		if err != nil {
			fail(w, http.StatusInternalServerError, "internal_error", "the projection failed")
			return
		}
		if len(body) > opts.MaxBytes {
			fail(w, http.StatusInternalServerError, "too_large", "the answer would exceed the size limit")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(append(body, '\n'))
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			fail(w, http.StatusMethodNotAllowed, "method_not_allowed", "only GET and HEAD are served")
			return
		}
		// Route first: a request for no resource, or with a query that
		// does not parse, costs nothing of the catalog.
		p := r.URL.Path
		var req WhoisRequest
		switch {
		case p == PeerCardPath && r.URL.RawQuery == "":
		case p == CatalogPath:
			var err error
			if req, err = ParseCatalogQuery(r.URL.RawQuery); err != nil {
				fail(w, http.StatusBadRequest, "invalid_request", "the catalog query is not valid")
				return
			}
		case strings.HasPrefix(p, CapabilityPrefix) && r.URL.RawQuery == "":
		default:
			fail(w, http.StatusNotFound, "not_found", "no such resource")
			return
		}
		cat, err := opts.Catalog()
		if err != nil {
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusServiceUnavailable, "unavailable", "the catalog is not available; retry shortly")
			return
		}
		switch {
		case p == PeerCardPath:
			if briefAtLeast(cat) > opts.MaxBytes { // refused before it is encoded (AGH-16)
				fail(w, http.StatusInternalServerError, "too_large", "the answer would exceed the size limit")
				return
			}
			card := &PeerCard{Extra: members}
			if err := ProjectPeerCard(card, cat); err != nil {
				fail(w, http.StatusInternalServerError, "internal_error", "the projection failed")
				return
			}
			send(w, r, card)
		case p == CatalogPath:
			rich, err := RichCatalog(cat, req, opts.MaxBytes)
			switch {
			case errors.Is(err, ErrTooLarge):
				fail(w, http.StatusInternalServerError, "too_large", "the answer would exceed the size limit")
				return
			case err != nil: // a capability without a digest: the projection failed
				fail(w, http.StatusInternalServerError, "internal_error", "the projection failed")
				return
			}
			send(w, r, map[string]any{ExtCatalog: rich})
		default: // CapabilityPrefix
			id := p[len(CapabilityPrefix):]
			for _, c := range cat {
				if c.ID == id {
					if c.encodedAtLeast() > opts.MaxBytes { // refused before it is signed (AGH-16)
						fail(w, http.StatusInternalServerError, "too_large", "the answer would exceed the size limit")
						return
					}
					body, err := TransferEnvelope(c, opts.Signer, peerID, EnvelopeOptions{Now: opts.Now, Rand: opts.Rand})
					if err != nil {
						fail(w, http.StatusInternalServerError, "internal_error", "the projection failed")
						return
					}
					send(w, r, json.RawMessage(body))
					return
				}
			}
			fail(w, http.StatusNotFound, "not_found", "no such resource")
		}
	})
}

// fail writes the JSON error envelope; code and message are constants.
func fail(w http.ResponseWriter, status int, code, message string) {
	body := `{"error":{"code":"` + code + `","message":"` + message + `"}}` + "\n"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write([]byte(body))
}

// cardDefaults returns card with the members of the seed's example it
// lacks filled in, and the card's peer_id.
func cardDefaults(card map[string]json.RawMessage, s *Signer) (map[string]json.RawMessage, string) {
	peerID := ""
	if raw, ok := card["peer_id"]; ok {
		json.Unmarshal(raw, &peerID)
	}
	if peerID == "" && s != nil {
		peerID, _, _ = s.resolved()
	}
	out := CardMembers(peerID, "", s != nil)
	for k, v := range card {
		out[k] = v
	}
	return out, peerID
}
