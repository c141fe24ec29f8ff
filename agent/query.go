package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// unauthorized is the one answer to a caller who may not do what it asks:
// the same code and body whether or not the capability exists (RFC 004
// §7.2, A.9).
func unauthorized() error {
	return amp.Named(amp.CodeUnauthorized, "unauthorized", "not authorized")
}

// unavailable is the peer-facing 5002: the details stay in the log.
func unavailable() error {
	return amp.Named(amp.CodeUnavailable, "unavailable", "capability temporarily unavailable")
}

// served returns the catalog entries of name that have a handler, in
// ascending version order. configured reports whether the agent has any
// handler for name at all.
func (a *Agent) served(cat *resolver.Catalog, name string) (entries []resolver.Entry, configured bool) {
	vs := a.byName[name]
	for _, v := range vs {
		if e, ok := cat.Lookup(capability.ID{Name: name, Version: v}); ok {
			entries = append(entries, e)
		}
	}
	return entries, len(vs) > 0
}

// resolveName returns the canonical name a filter or invocation names:
// capability wins over the legacy type (RFC 004 §6.1). A legacy type is
// resolved as if the capabilities the caller may not use did not exist:
// their names and the claims of the type for them are left out, and every
// failure to find one is the same 4002, so that neither the answer, nor
// its message, nor an ambiguity's candidates tell the caller about the
// others. A type that bundles of several authorities claim
// (docs/SPEC-DECISIONS.md BUNDLE-9) is 4001 ambiguous_type naming the
// claimed names the caller may use, or that one name when it may use one
// (capability.ResolveTypeClaims). resolver.AmbiguousAlias, the claim of a
// catalog that knows only that a type is ambiguous (one decoded from an
// older admin socket's document), is kept for every caller: it names no
// capability, so the type is 4002, never a slug match standing in for it.
// So is a claimed type whose every claim names a capability the caller may
// not use (docs/SPEC-DECISIONS.md CAP-12): the slug rule is for types that
// no installed bundle claims, and a caller that may use none of the claims
// gets the one 4002 of a type that exists nowhere, not another authority's
// capability whose slug the type happens to be.
func (a *Agent) resolveName(cat *resolver.Catalog, caller, capName, typ string) (string, error) {
	if capName != "" {
		return capName, nil
	}
	visible := make([]string, 0, len(cat.Names))
	for _, n := range cat.Names {
		if a.cfg.Policy.AllowCapability(caller, n) {
			visible = append(visible, n)
		}
	}
	var claims map[string][]string
	if typ != "" {
		claimed := cat.TypeClaims(typ)
		var allowed []string
		for _, n := range claimed {
			if n == resolver.AmbiguousAlias || a.cfg.Policy.AllowCapability(caller, n) {
				allowed = append(allowed, n)
			}
		}
		if len(claimed) > 0 && len(allowed) == 0 {
			allowed = []string{resolver.AmbiguousAlias}
		}
		if len(allowed) > 0 {
			claims = map[string][]string{typ: allowed}
		}
	}
	name, err := capability.ResolveTypeClaims(typ, claims, visible)
	if err != nil && amp.CodeOf(err) == amp.CodeCapabilityNotFound {
		return "", amp.Named(amp.CodeCapabilityNotFound, "capability_not_found", "no such capability")
	}
	return name, err
}

// callerCatalog admits the sender of m by the allow rules (3001
// otherwise) and loads the catalog it is answered from (5002 when the
// registry cannot give one): the first steps of a CAP_QUERY and a
// CAP_INVOKE.
func (a *Agent) callerCatalog(m *amp.Message) (string, *resolver.Catalog, error) {
	caller := amp.BareDID(m.From)
	if !a.cfg.Policy.AllowCaller(caller) {
		return "", nil, unauthorized()
	}
	cat, err := a.reg.Catalog()
	if err != nil {
		a.log.Error("catalog unavailable", "err", err)
		return "", nil, unavailable()
	}
	return caller, cat, nil
}

// query answers a CAP_QUERY (RFC 004 §6.1, §6.5) with a CAP_DECLARE.
func (a *Agent) query(m *amp.Message) (amp.Type, []byte, error) {
	q, err := capability.DecodeQuery(m.Body)
	if err != nil {
		return 0, nil, err
	}
	caller, cat, err := a.callerCatalog(m)
	if err != nil {
		return 0, nil, err
	}
	name, err := a.resolveName(cat, caller, q.Filter.Capability, q.Filter.Type)
	if err != nil {
		return 0, nil, err
	}
	if !a.cfg.Policy.AllowCapability(caller, name) {
		return 0, nil, unauthorized()
	}
	entries, configured := a.served(cat, name)
	if len(entries) == 0 {
		if configured {
			a.log.Error("capability configured but not in the registry", "capability", name)
			return 0, nil, unavailable()
		}
		return 0, nil, amp.Named(amp.CodeCapabilityNotFound, "capability_not_found", "no such capability")
	}
	if !q.Filter.Version.IsZero() {
		var in []resolver.Entry
		for _, e := range entries {
			if e.Descriptor.ServesInRange(q.Filter.Version) {
				in = append(in, e)
			}
		}
		if len(in) == 0 {
			return 0, nil, amp.Named(amp.CodeVersionMismatch, "version_mismatch", "no version of the capability is in the requested range")
		}
		entries = in
	}
	order := q.EffectiveOrder()
	if order == capability.OrderNewestFirst {
		for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
			entries[i], entries[j] = entries[j], entries[i]
		}
	}
	// A cursor of a legacy type is bound to the name the type resolved to
	// (docs/SPEC-DECISIONS.md CAP-13): once the type resolves to another
	// capability, a page of that one would continue the answer, so the
	// cursor is refused as one of another filter.
	bound := q.Filter
	bound.Capability = name
	bind := a.cursorBinding(caller, bound, order)
	start := 0
	if q.Cursor != "" {
		last, err := a.openCursor(q.Cursor, bind)
		if err != nil {
			return 0, nil, err
		}
		// Keyset paging: continue after the last version returned.
		start = len(entries)
		for i, e := range entries {
			if order.CompareIDs(e.Descriptor.ID(), capability.ID{Name: name, Version: last}) > 0 {
				start = i
				break
			}
		}
		if start == len(entries) {
			return 0, nil, amp.Named(amp.CodeBadRequest, "invalid_cursor", "the cursor is past the last result")
		}
	}
	// limit is a hint: absent or 0 means the default; above the maximum
	// it is the maximum.
	limit := a.cfg.DefaultLimit
	if q.Limit != nil && *q.Limit > 0 {
		limit = a.cfg.MaxLimit
		if *q.Limit < uint64(a.cfg.MaxLimit) {
			limit = int(*q.Limit)
		}
	}
	end := start + limit
	if end > len(entries) {
		end = len(entries)
	}
	d := capability.Declare{}
	for _, e := range entries[start:end] {
		d.Capabilities = append(d.Capabilities, e.Descriptor)
	}
	if end < len(entries) {
		d.NextCursor = a.sealCursor(bind, entries[end-1].Descriptor.Version)
	}
	body, err := d.Encode()
	if err != nil {
		return 0, nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode the declaration")
	}
	return amp.TypeCapDeclare, body, nil
}

// Cursors (RFC 004 §6.5, docs/SPEC-DECISIONS.md CAP-1): opaque to clients, tamper-evident
// (HMAC-SHA256 with a key drawn at agent start), bound to the caller, the
// filter (with the name a legacy type resolved to, CAP-13) and the order,
// and valid for CursorTTL. A cursor holds the
// position after which the next page starts (keyset paging): pages of one
// unchanged registry never repeat or skip a descriptor; if a bundle is
// imported or removed between pages, the next page continues after the
// same position in the new state, so versions added before that position
// are not shown and removed ones simply disappear, still with no
// duplicate. A restarted agent has a new key, so its old cursors are
// refused (4001); clients start over.

const (
	cursorVersion = 1
	cursorMACSize = 16
	maxCursorLen  = 512
)

// cursorBinding hashes what a cursor is bound to.
func (a *Agent) cursorBinding(caller string, f capability.Filter, o capability.Order) [32]byte {
	h := sha256.New()
	for _, s := range []string{caller, f.Capability, f.Type, f.Version.String(), string(o)} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func (a *Agent) mac(b []byte) []byte {
	m := hmac.New(sha256.New, a.cursorKey)
	m.Write(b)
	return m.Sum(nil)[:cursorMACSize]
}

type cursorPayload struct {
	V       uint64   `cbor:"v"`
	Bind    [32]byte `cbor:"b"`
	Last    string   `cbor:"l"`
	Expires int64    `cbor:"e"`
}

func (a *Agent) sealCursor(bind [32]byte, last capability.Version) string {
	p, _ := amp.Marshal(cursorPayload{V: cursorVersion, Bind: bind, Last: last.String(),
		Expires: a.cfg.Now().Add(a.cfg.CursorTTL).UnixMilli()})
	return base64.RawURLEncoding.EncodeToString(append(p, a.mac(p)...))
}

func badCursor(msg string) error {
	return amp.Named(amp.CodeBadRequest, "invalid_cursor", "%s", msg)
}

// openCursor checks a cursor and returns the last version of the page it
// follows.
func (a *Agent) openCursor(s string, bind [32]byte) (capability.Version, error) {
	if len(s) > maxCursorLen {
		return capability.Version{}, badCursor("cursor is malformed")
	}
	// One spelling per cursor: the lax decoder takes up to 16 strings
	// for the same bytes, and so the same MAC.
	raw, ok := amp.DecodeBase64URLStrict(s)
	if !ok || len(raw) <= cursorMACSize {
		return capability.Version{}, badCursor("cursor is malformed")
	}
	p, tag := raw[:len(raw)-cursorMACSize], raw[len(raw)-cursorMACSize:]
	if !hmac.Equal(tag, a.mac(p)) {
		return capability.Version{}, badCursor("cursor was not issued by this agent, or was altered")
	}
	var c cursorPayload
	if err := amp.Unmarshal(p, &c); err != nil || c.V != cursorVersion {
		return capability.Version{}, badCursor("cursor is malformed")
	}
	if c.Bind != bind {
		return capability.Version{}, badCursor("cursor belongs to another filter or order")
	}
	if a.cfg.Now().UnixMilli() >= c.Expires {
		return capability.Version{}, badCursor("cursor has expired")
	}
	v, err := capability.ParseVersion(c.Last)
	if err != nil {
		return capability.Version{}, badCursor("cursor is malformed")
	}
	return v, nil
}
