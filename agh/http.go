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
	"sync"
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

// DefaultMaxBuilding is how many answers NewHandler builds at once for
// requests its kept answers do not serve (AGH-19).
const DefaultMaxBuilding = 4

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	// Catalog returns the current catalog, in catalog order. Required.
	// The handler keeps the peer card and the whole catalog it answered
	// for a catalog while Catalog returns that same slice (the same
	// first element and length; AGH-19): a caller whose catalog changes
	// returns a new slice, never the old one changed in place.
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
	// MaxBuilding bounds the answers built at once that no kept answer
	// serves: a narrowed catalog, a transfer, and the first peer card or
	// whole catalog of a catalog (default DefaultMaxBuilding). A request
	// that finds every build taken is refused at once, 503 overloaded
	// with Retry-After: 1, before the catalog is projected (AGH-19).
	MaxBuilding int
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
	limit.Default(&opts.MaxBuilding, DefaultMaxBuilding)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	members, peerID := cardDefaults(opts.Card, opts.Signer)
	kept := &keptAnswers{}
	slots := make(chan struct{}, opts.MaxBuilding)
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
		// An answer no kept one serves is built in one of the slots,
		// or refused at once when none is free (AGH-19): each costs
		// up to some 25 times an answer of MaxBytes.
		if p != PeerCardPath && (p != CatalogPath || req.Filter) {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				w.Header().Set("Retry-After", "1")
				fail(w, http.StatusServiceUnavailable, "overloaded", "too many answers are being built; retry shortly")
				return
			}
		}
		cat, err := opts.Catalog()
		if err != nil {
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusServiceUnavailable, "unavailable", "the catalog is not available; retry shortly")
			return
		}
		var a answer
		switch {
		case p == PeerCardPath:
			a = kept.get(cat, &kept.card, func() answer { return peerCardAnswer(cat, members, opts.MaxBytes) })
		case p == CatalogPath && !req.Filter:
			a = kept.get(cat, &kept.catalog, func() answer { return catalogAnswer(cat, req, opts.MaxBytes) })
		case p == CatalogPath:
			a = catalogAnswer(cat, req, opts.MaxBytes)
		default: // CapabilityPrefix
			a = transferAnswer(cat, p[len(CapabilityPrefix):], opts, peerID)
		}
		a.write(w, r)
	})
}

// answer is what the handler answers a request: a body (with its final
// newline) or a failure (status, and fail's fixed code and message).
type answer struct {
	status        int
	code, message string
	body          []byte
}

// write writes a: the body of a GET, the headers alone of a HEAD.
func (a answer) write(w http.ResponseWriter, r *http.Request) {
	if a.body == nil {
		fail(w, a.status, a.code, a.message)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(a.body)
	}
}

// Failures an answer may be.
var (
	tooLargeFailure = answer{status: http.StatusInternalServerError, code: "too_large", message: "the answer would exceed the size limit"}
	failedFailure   = answer{status: http.StatusInternalServerError, code: "internal_error", message: "the projection failed"}
	notFoundFailure = answer{status: http.StatusNotFound, code: "not_found", message: "no such resource"}
)

// encodeAnswer is the answer of v: its encoding and a newline, or
// too_large when that is over maxBytes.
func encodeAnswer(v any, maxBytes int) answer {
	body, err := marshalNoEscape(v)
	if err != nil {
		return failedFailure
	}
	if len(body) > maxBytes {
		return tooLargeFailure
	}
	return answer{status: http.StatusOK, body: append(body, '\n')}
}

// peerCardAnswer is the peer card of cat.
func peerCardAnswer(cat []Capability, members map[string]json.RawMessage, maxBytes int) answer {
	if briefAtLeast(cat) > maxBytes { // refused before it is encoded (AGH-16)
		return tooLargeFailure
	}
	card := &PeerCard{Extra: members}
	if err := ProjectPeerCard(card, cat); err != nil {
		return failedFailure
	}
	return encodeAnswer(card, maxBytes)
}

// catalogAnswer is the catalog of cat req asks for.
func catalogAnswer(cat []Capability, req WhoisRequest, maxBytes int) answer {
	rich, err := RichCatalog(cat, req, maxBytes)
	switch {
	case errors.Is(err, ErrTooLarge):
		return tooLargeFailure
	case err != nil: // a capability without a digest: the projection failed
		return failedFailure
	}
	return encodeAnswer(map[string]any{ExtCatalog: rich}, maxBytes)
}

// transferAnswer is the transfer envelope of the capability id of cat.
func transferAnswer(cat []Capability, id string, opts HandlerOptions, peerID string) answer {
	for _, c := range cat {
		if c.ID != id {
			continue
		}
		if c.encodedAtLeast() > opts.MaxBytes { // refused before it is signed (AGH-16)
			return tooLargeFailure
		}
		body, err := TransferEnvelope(c, opts.Signer, peerID, EnvelopeOptions{Now: opts.Now, Rand: opts.Rand})
		if err != nil {
			return failedFailure
		}
		return encodeAnswer(json.RawMessage(body), opts.MaxBytes)
	}
	return notFoundFailure
}

// keptAnswers are the peer card and the whole catalog answered for one
// catalog, kept while HandlerOptions.Catalog returns that same slice
// (AGH-19). Built at every request, the answer of a catalog of 2,000
// capabilities (about 1 MiB) cost 26 MiB and 200,000 allocations, and any
// number of requests built one at once; an answer is a pure function of
// the catalog (and of the card's members and MaxBytes, fixed at
// NewHandler), so it is built once, under mu: requests that find a new
// catalog wait for one build instead of each making one. Keeping the
// slice keeps its array, so another catalog never takes its address.
type keptAnswers struct {
	mu            sync.Mutex
	of            []Capability // the catalog the answers were built of
	card, catalog *answer
}

// get returns *slot, built by build first when it was built of another
// catalog than cat, or not yet (slot is &k.card or &k.catalog).
func (k *keptAnswers) get(cat []Capability, slot **answer, build func() answer) answer {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(cat) != len(k.of) || (len(cat) > 0 && &cat[0] != &k.of[0]) {
		k.of, k.card, k.catalog = cat, nil, nil
	}
	if *slot == nil {
		a := build()
		*slot = &a
	}
	return **slot
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
