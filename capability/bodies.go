package capability

import (
	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// Bodies of the four capability messages (RFC 001 types 0x20-0x23; RFC 004
// §6.4, §7.4, docs/SPEC-DECISIONS.md CAP-1). Each Decode* function takes the body
// bytes of a message and returns the typed body:
//
//   - bytes that are not one valid CBOR item: 1001 (amp's strict decoder);
//   - a well-formed body with a missing field, a field of the wrong type
//     or a value the rules refuse: 4001, named (missing_field, wrong_type,
//     invalid_field, invalid_name, invalid_version, invalid_id,
//     invalid_range, unsupported_range, identity_mismatch,
//     identity_conflict, ...).
//
// Fields the CDDL does not define are kept in Extra as deterministic CBOR
// and re-encoded unchanged (§10), at every level (body, filter, negotiate
// hints, error). Present text fields are never empty (4001 invalid_field),
// so the empty string means "absent" throughout. Each Encode method checks
// the same rules and returns deterministic CBOR (RFC 8949 §4.2.1); decoding
// deterministic input and encoding the result gives the same bytes.

// Order is the result order of a CAP_QUERY (§6.4, §6.5).
type Order string

// Orders of §6.5. The empty Order means the field is absent, which is
// OrderNewestFirst in effect.
const (
	OrderNewestFirst Order = "newest-first" // (name ASC, version DESC)
	OrderOldestFirst Order = "oldest-first" // (name ASC, version ASC)
)

// Query is a CAP_QUERY body (§6.1, §6.4).
type Query struct {
	Filter Filter
	Limit  *uint64 // "limit"; nil means absent
	Cursor string  // "cursor", opaque; empty means absent
	Order  Order   // "order"; empty means absent (newest-first)
	Extra  map[string]cbor.RawMessage
}

// Filter is the cap-filter of a CAP_QUERY. At least one of Capability and
// the legacy Type is set; Capability takes precedence (§6.1).
type Filter struct {
	Capability string // "capability", a valid capability name; empty means absent
	Type       string // "type", a legacy alias; empty means absent
	Version    Range  // "version"; the zero Range means absent
	Extra      map[string]cbor.RawMessage
}

// EffectiveOrder returns q.Order, or OrderNewestFirst when it is absent
// (§6.1, §6.5).
func (q Query) EffectiveOrder() Order {
	if q.Order == "" {
		return OrderNewestFirst
	}
	return q.Order
}

// DecodeQuery decodes and checks a CAP_QUERY body.
func DecodeQuery(body []byte) (Query, error) {
	o, err := decodeBody(body, "query")
	if err != nil {
		return Query{}, err
	}
	var q Query
	f, ok, err := o.sub("filter")
	if err != nil {
		return Query{}, err
	}
	if !ok {
		return Query{}, o.missing("filter")
	}
	if q.Filter, err = decodeFilter(f); err != nil {
		return Query{}, err
	}
	if q.Limit, err = o.uint("limit"); err != nil {
		return Query{}, err
	}
	if q.Cursor, _, err = o.text("cursor"); err != nil {
		return Query{}, err
	}
	order, _, err := o.text("order")
	if err != nil {
		return Query{}, err
	}
	q.Order = Order(order)
	q.Extra = o.extra()
	if err := q.validate(); err != nil {
		return Query{}, err
	}
	return q, nil
}

func decodeFilter(o *object) (Filter, error) {
	var f Filter
	var err error
	if f.Capability, _, err = o.text("capability"); err != nil {
		return Filter{}, err
	}
	if f.Type, _, err = o.text("type"); err != nil {
		return Filter{}, err
	}
	if f.Version, err = o.rangeField("version"); err != nil {
		return Filter{}, err
	}
	f.Extra = o.extra()
	return f, nil
}

// rangeField takes an optional range field.
func (o *object) rangeField(key string) (Range, error) {
	s, ok, err := o.text(key)
	if err != nil || !ok {
		return Range{}, err
	}
	r, err := ParseRange(s)
	if err != nil {
		return Range{}, at(fieldPath(o.path, key), err)
	}
	return r, nil
}

// versionField takes an optional version field.
func (o *object) versionField(key string) (Version, error) {
	s, ok, err := o.text(key)
	if err != nil || !ok {
		return Version{}, err
	}
	v, why := parseVersion(s)
	if why != "" {
		return Version{}, badRequest(ErrInvalidVersion, "%s: version %s", fieldPath(o.path, key), why)
	}
	return v, nil
}

func (q Query) validate() error {
	f := q.Filter
	if f.Capability == "" && f.Type == "" {
		return badRequest(ErrMissingField, "filter needs capability or type")
	}
	if f.Capability != "" {
		if why := nameProblem(f.Capability); why != "" {
			return badRequest(ErrInvalidName, "filter.capability: capability name %s", why)
		}
	}
	switch q.Order {
	case "", OrderNewestFirst, OrderOldestFirst:
	default:
		return badRequest(ErrInvalidField, "order must be newest-first or oldest-first")
	}
	if err := checkExtra(f.Extra, "filter", "filter"); err != nil {
		return err
	}
	return checkExtra(q.Extra, "query", "query")
}

// Encode returns the deterministic CBOR encoding of q after checking it.
func (q Query) Encode() ([]byte, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	f := map[string]any{}
	putText(f, "capability", q.Filter.Capability)
	putText(f, "type", q.Filter.Type)
	putText(f, "version", q.Filter.Version.String())
	if err := putExtra(f, q.Filter.Extra, "filter"); err != nil {
		return nil, err
	}
	m := map[string]any{"filter": f}
	if q.Limit != nil {
		m["limit"] = *q.Limit
	}
	putText(m, "cursor", q.Cursor)
	putText(m, "order", string(q.Order))
	if err := putExtra(m, q.Extra, "query"); err != nil {
		return nil, err
	}
	return amp.Marshal(m)
}

func putText(m map[string]any, key, s string) {
	if s != "" {
		m[key] = s
	}
}

// decodeBody canonicalizes body (1001 if it is not valid CBOR) and opens it
// as a map.
func decodeBody(body []byte, kind string) (*object, error) {
	canon, err := canonicalBody(body)
	if err != nil {
		return nil, err
	}
	return decodeObject(canon, "", kind)
}

// Declare is a CAP_DECLARE body (§6.2, §6.4): one or more descriptors, and
// the cursor of the next page when there is one (docs/SPEC-DECISIONS.md CAP-1: optional
// "next_cursor", omitted on the last page).
type Declare struct {
	Capabilities []Descriptor // non-empty
	NextCursor   string       // "next_cursor"; empty means absent
	Extra        map[string]cbor.RawMessage
}

// DecodeDeclare decodes and checks a CAP_DECLARE body: capabilities is a
// non-empty array and each descriptor passes DecodeDescriptor's checks
// (ProfileDefault; see Declare.Validate for the offline profile).
func DecodeDeclare(body []byte) (Declare, error) {
	o, err := decodeBody(body, "declare")
	if err != nil {
		return Declare{}, err
	}
	items, ok, err := o.array("capabilities")
	if err != nil {
		return Declare{}, err
	}
	if !ok {
		return Declare{}, o.missing("capabilities")
	}
	if len(items) == 0 {
		return Declare{}, badRequest(ErrInvalidField, "capabilities must not be empty")
	}
	// Grown as descriptors decode, not made for the count first: an array
	// of 65,536 one-byte items (a 65 KB reply) made 29 MB of descriptors
	// before the first failed (docs/SPEC-DECISIONS.md CAP-10).
	var d Declare
	d.Capabilities = make([]Descriptor, 0, min(len(items), 64))
	for i, it := range items {
		desc, err := decodeDescriptor(it, indexPath("capabilities", i))
		if err != nil {
			return Declare{}, err
		}
		d.Capabilities = append(d.Capabilities, desc)
	}
	if d.NextCursor, _, err = o.text("next_cursor"); err != nil {
		return Declare{}, err
	}
	d.Extra = o.extra()
	return d, nil
}

// Validate checks d under profile p: capabilities is not empty and every
// descriptor passes Descriptor.Validate(p).
func (d Declare) Validate(p Profile) error {
	if len(d.Capabilities) == 0 {
		return badRequest(ErrInvalidField, "capabilities must not be empty")
	}
	for i, c := range d.Capabilities {
		if err := c.validate(p, indexPath("capabilities", i)); err != nil {
			return err
		}
	}
	return checkExtra(d.Extra, "declare", "declare")
}

// Encode returns the deterministic CBOR encoding of d after checking it
// (ProfileDefault).
func (d Declare) Encode() ([]byte, error) {
	if err := d.Validate(ProfileDefault); err != nil {
		return nil, err
	}
	caps := make([]any, len(d.Capabilities))
	for i, c := range d.Capabilities {
		m, err := c.cborMap(indexPath("capabilities", i))
		if err != nil {
			return nil, err
		}
		caps[i] = m
	}
	m := map[string]any{"capabilities": caps}
	putText(m, "next_cursor", d.NextCursor)
	if err := putExtra(m, d.Extra, "declare"); err != nil {
		return nil, err
	}
	return amp.Marshal(m)
}

// NegotiateHints are the requester's inputs to negotiation
// (cap-negotiate-hints, §6.3, §6.4). All are optional.
type NegotiateHints struct {
	Preferred  Version   // "preferred"; the zero Version means absent
	Acceptable []Version // "acceptable", in the requester's order; nil means absent
	Range      Range     // "range"; the zero Range means absent
	Extra      map[string]cbor.RawMessage
}

// MaxAcceptable caps the acceptable list of negotiation hints, so that
// negotiation stays cheap whatever a peer sends.
const MaxAcceptable = 64

func decodeHints(o *object) (NegotiateHints, error) {
	var h NegotiateHints
	var err error
	if h.Preferred, err = o.versionField("preferred"); err != nil {
		return NegotiateHints{}, err
	}
	items, ok, err := o.array("acceptable")
	if err != nil {
		return NegotiateHints{}, err
	}
	if ok {
		p := fieldPath(o.path, "acceptable")
		if len(items) > MaxAcceptable {
			return NegotiateHints{}, badRequest(ErrInvalidField, "%s has more than %d versions", p, MaxAcceptable)
		}
		h.Acceptable = make([]Version, len(items))
		for i, it := range items {
			ip := func() string { return indexPath(p, i) }
			s, err := textItem(it, ip)
			if err != nil {
				return NegotiateHints{}, err
			}
			var why string
			if h.Acceptable[i], why = parseVersion(s); why != "" {
				return NegotiateHints{}, badRequest(ErrInvalidVersion, "%s: version %s", ip(), why)
			}
		}
	}
	if h.Range, err = o.rangeField("range"); err != nil {
		return NegotiateHints{}, err
	}
	h.Extra = o.extra()
	return h, nil
}

func (h NegotiateHints) validate() error {
	if len(h.Acceptable) > MaxAcceptable {
		return badRequest(ErrInvalidField, "negotiate.acceptable has more than %d versions", MaxAcceptable)
	}
	for i, v := range h.Acceptable {
		if v.IsZero() {
			return badRequest(ErrInvalidVersion, "%s is not a version", indexPath("negotiate.acceptable", i))
		}
	}
	return checkExtra(h.Extra, "negotiate", "negotiate")
}

func (h NegotiateHints) cborMap() (map[string]any, error) {
	m := map[string]any{}
	putText(m, "preferred", h.Preferred.String())
	if h.Acceptable != nil {
		a := make([]string, len(h.Acceptable))
		for i, v := range h.Acceptable {
			a[i] = v.String()
		}
		m["acceptable"] = a
	}
	putText(m, "range", h.Range.String())
	if err := putExtra(m, h.Extra, "negotiate"); err != nil {
		return nil, err
	}
	return m, nil
}

// Invoke is a CAP_INVOKE body (§7.1, §7.4). It identifies its target in one
// of two forms:
//
//   - by id: ID is set; Negotiate is nil. Capability and Version may be
//     present too, and must then agree with ID (§6.3); a legacy Type is
//     kept but not checked (it needs an alias table, see ResolveType).
//   - by name: ID is zero; Capability or Type is set (Capability takes
//     precedence); exactly one of Version and Negotiate is set.
type Invoke struct {
	ID         ID              // "id"; the zero ID means absent
	Capability string          // "capability"; empty means absent
	Type       string          // "type", legacy alias; empty means absent
	Version    Version         // "version"; the zero Version means absent
	Negotiate  *NegotiateHints // "negotiate"; nil means absent
	Params     cbor.RawMessage // "params", required, any CBOR (null included)
	TimeoutMS  *uint64         // "timeout_ms"; nil means absent
	Extra      map[string]cbor.RawMessage
}

// ByID reports whether inv uses the by-id form.
func (inv Invoke) ByID() bool { return !inv.ID.IsZero() }

// DecodeInvoke decodes and checks a CAP_INVOKE body. Besides shape errors,
// it refuses with 4001: id together with negotiate (identity_conflict,
// §7.4), version together with negotiate (identity_conflict), an id that
// disagrees with capability or version (identity_mismatch, §6.3), a by-name
// body without capability and type or without version and negotiate
// (missing_field), and a missing params (missing_field).
func DecodeInvoke(body []byte) (Invoke, error) {
	o, err := decodeBody(body, "invoke")
	if err != nil {
		return Invoke{}, err
	}
	var inv Invoke
	id, hasID, err := o.text("id")
	if err != nil {
		return Invoke{}, err
	}
	if hasID {
		if inv.ID, err = ParseID(id); err != nil {
			return Invoke{}, at("id", err)
		}
	}
	if inv.Capability, _, err = o.text("capability"); err != nil {
		return Invoke{}, err
	}
	if inv.Type, _, err = o.text("type"); err != nil {
		return Invoke{}, err
	}
	if inv.Version, err = o.versionField("version"); err != nil {
		return Invoke{}, err
	}
	hints, hasHints, err := o.sub("negotiate")
	if err != nil {
		return Invoke{}, err
	}
	if hasHints {
		h, err := decodeHints(hints)
		if err != nil {
			return Invoke{}, err
		}
		inv.Negotiate = &h
	}
	params, ok := o.raw("params")
	if !ok {
		return Invoke{}, o.missing("params")
	}
	inv.Params = params
	if inv.TimeoutMS, err = o.uint("timeout_ms"); err != nil {
		return Invoke{}, err
	}
	inv.Extra = o.extra()
	if err := inv.validate(); err != nil {
		return Invoke{}, err
	}
	return inv, nil
}

// validate applies the identification rules of §6.3 and §7.4.
func (inv Invoke) validate() error {
	if inv.ByID() {
		if why := inv.ID.problem(); why != "" {
			return badRequest(ErrInvalidID, "id: capability id %s", why)
		}
		if inv.Negotiate != nil {
			return badRequest(ErrIdentityConflict, "id and negotiate must not both be present")
		}
		if inv.Capability != "" && inv.Capability != inv.ID.Name {
			return badRequest(ErrIdentityMismatch, "capability disagrees with id")
		}
		if !inv.Version.IsZero() && inv.Version != inv.ID.Version {
			return badRequest(ErrIdentityMismatch, "version disagrees with id")
		}
	} else {
		if inv.Capability == "" && inv.Type == "" {
			return badRequest(ErrMissingField, "invoke needs id, capability or type")
		}
		switch {
		case !inv.Version.IsZero() && inv.Negotiate != nil:
			return badRequest(ErrIdentityConflict, "version and negotiate must not both be present")
		case inv.Version.IsZero() && inv.Negotiate == nil:
			return badRequest(ErrMissingField, "invoke by name needs version or negotiate")
		}
	}
	if inv.Capability != "" {
		if why := nameProblem(inv.Capability); why != "" {
			return badRequest(ErrInvalidName, "capability: capability name %s", why)
		}
	}
	if inv.Negotiate != nil {
		if err := inv.Negotiate.validate(); err != nil {
			return err
		}
	}
	if len(inv.Params) == 0 {
		return badRequest(ErrMissingField, "params is required")
	}
	return checkExtra(inv.Extra, "invoke", "invoke")
}

// Encode returns the deterministic CBOR encoding of inv after checking it.
func (inv Invoke) Encode() ([]byte, error) {
	if err := inv.validate(); err != nil {
		return nil, err
	}
	m := map[string]any{"params": inv.Params}
	putText(m, "id", inv.ID.String())
	putText(m, "capability", inv.Capability)
	putText(m, "type", inv.Type)
	putText(m, "version", inv.Version.String())
	if inv.Negotiate != nil {
		h, err := inv.Negotiate.cborMap()
		if err != nil {
			return nil, err
		}
		m["negotiate"] = h
	}
	if inv.TimeoutMS != nil {
		m["timeout_ms"] = *inv.TimeoutMS
	}
	if err := putExtra(m, inv.Extra, "invoke"); err != nil {
		return nil, err
	}
	return amp.Marshal(m)
}

// Result statuses (§7.1).
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Result is a CAP_RESULT body (§7.1, §7.4): Status StatusSuccess with
// Result, or StatusError with Error.
type Result struct {
	Status string          // "status"
	Result cbor.RawMessage // "result", any CBOR (null included); success only
	Error  *ResultError    // "error"; error only
	Extra  map[string]cbor.RawMessage
}

// ResultError is the cap-result-error of a failed invocation.
type ResultError struct {
	Code    amp.Code        // "code", non-zero
	Name    string          // "name"; empty means absent
	Message string          // "message"; empty means absent
	Details cbor.RawMessage // "details", any CBOR; nil means absent
	Extra   map[string]cbor.RawMessage
}

// NewErrorResult returns the CAP_RESULT(status="error") for err: its code
// (5001 for an error that carries none), its name when it has one, its
// safe message and its details. What it signs is bounded whoever wrote
// the error, a provider whose error a handler hands on included
// (docs/SPEC-DECISIONS.md TRANSPORT-23, TRANSPORT-24): the name is
// amp.SafeName's (a name amp.ValidErrName refuses becomes the code's),
// the message amp.SafeMessage's (escaped, at most amp.MaxErrorText
// bytes), the details amp.SafeDetails' (at most amp.MaxErrorDetails
// bytes of well-formed CBOR nested at most amp.MaxErrorDetailsDepth
// deep, else dropped whole, as are details that cannot be encoded).
// Nothing of the cause is included.
func NewErrorResult(err error) Result {
	e := amp.AsError(err)
	re := &ResultError{Code: e.Code, Message: amp.SafeMessage(e), Details: amp.SafeDetails(e)}
	if e.Name != "" {
		re.Name = string(amp.SafeName(e))
	}
	if re.Code == 0 {
		re.Code = amp.CodeInternalError
		re.Name = ""
	}
	return Result{Status: StatusError, Error: re}
}

// AsError returns the error of a failed invocation as an *amp.Error, for
// the caller that received it: the provider's code, message and details
// (raw CBOR) as sent, and its name only when amp.ValidErrName passes it,
// else the code's (amp.SafeName): an error name is printed first by
// Error() and compared by errors.Is, and a provider's may be any bytes of
// any length (docs/SPEC-DECISIONS.md TRANSPORT-18, TRANSPORT-24). The
// ResultError keeps the provider's name as it came, for a caller that
// reads it knowing whose it is.
func (e ResultError) AsError() *amp.Error {
	out := &amp.Error{Code: e.Code, Name: amp.ErrName(e.Name), Message: e.Message}
	if out.Name == "" {
		out.Name = amp.ErrName(e.Code.SnakeName())
	}
	out.Name = amp.SafeName(out)
	if len(e.Details) > 0 {
		out.Details = e.Details
	}
	return out
}

// DecodeResult decodes and checks a CAP_RESULT body. A success carrying
// error, or an error carrying result, is refused (4001 invalid_field), as
// is an error code of 0 or above 65535.
func DecodeResult(body []byte) (Result, error) {
	o, err := decodeBody(body, "result")
	if err != nil {
		return Result{}, err
	}
	var r Result
	if r.Status, err = o.requiredText("status"); err != nil {
		return Result{}, err
	}
	switch r.Status {
	case StatusSuccess:
		if o.has("error") {
			return Result{}, badRequest(ErrInvalidField, "a success result must not carry error")
		}
		res, ok := o.raw("result")
		if !ok {
			return Result{}, o.missing("result")
		}
		r.Result = res
	case StatusError:
		if o.has("result") {
			return Result{}, badRequest(ErrInvalidField, "an error result must not carry result")
		}
		eo, ok, err := o.sub("error")
		if err != nil {
			return Result{}, err
		}
		if !ok {
			return Result{}, o.missing("error")
		}
		re, err := decodeResultError(eo)
		if err != nil {
			return Result{}, err
		}
		r.Error = &re
	default:
		return Result{}, badRequest(ErrInvalidField, "status must be success or error")
	}
	r.Extra = o.extra()
	if err := r.validate(); err != nil {
		return Result{}, err
	}
	return r, nil
}

func decodeResultError(o *object) (ResultError, error) {
	var e ResultError
	code, err := o.uint("code")
	if err != nil {
		return ResultError{}, err
	}
	if code == nil {
		return ResultError{}, o.missing("code")
	}
	if *code == 0 || *code > 0xffff {
		return ResultError{}, badRequest(ErrInvalidField, "error.code must be an error code from 1 to 65535")
	}
	e.Code = amp.Code(*code)
	if e.Name, _, err = o.text("name"); err != nil {
		return ResultError{}, err
	}
	if e.Message, _, err = o.text("message"); err != nil {
		return ResultError{}, err
	}
	e.Details, _ = o.raw("details")
	e.Extra = o.extra()
	return e, nil
}

func (r Result) validate() error {
	switch r.Status {
	case StatusSuccess:
		if len(r.Result) == 0 {
			return badRequest(ErrMissingField, "result is required")
		}
		if r.Error != nil {
			return badRequest(ErrInvalidField, "a success result must not carry error")
		}
	case StatusError:
		if r.Error == nil {
			return badRequest(ErrMissingField, "error is required")
		}
		if len(r.Result) != 0 {
			return badRequest(ErrInvalidField, "an error result must not carry result")
		}
		if r.Error.Code == 0 {
			return badRequest(ErrInvalidField, "error.code must be an error code from 1 to 65535")
		}
		if err := checkExtra(r.Error.Extra, "error", "error"); err != nil {
			return err
		}
	case "":
		return badRequest(ErrMissingField, "status is required")
	default:
		return badRequest(ErrInvalidField, "status must be success or error")
	}
	return checkExtra(r.Extra, "result", "result")
}

// Encode returns the deterministic CBOR encoding of r after checking it.
func (r Result) Encode() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	if r.Status == StatusSuccess && len(r.Extra) == 0 {
		// The common reply, {"result": ..., "status": "success"}, written
		// with its keys in deterministic order (both 6 bytes; "result"
		// sorts first) instead of through a map and reflection. Marshal
		// of the raw bytes canonicalizes them under the same rules and
		// caps as the map below would, so the bytes are the same.
		out := make([]byte, 0, len(r.Result)+24)
		out = amp.AppendHead(out, amp.MajorMap, 2)
		out = append(amp.AppendHead(out, amp.MajorText, 6), "result"...)
		out = append(out, r.Result...)
		out = append(amp.AppendHead(out, amp.MajorText, 6), "status"...)
		out = append(amp.AppendHead(out, amp.MajorText, uint64(len(StatusSuccess))), StatusSuccess...)
		return amp.Marshal(cbor.RawMessage(out))
	}
	m := map[string]any{"status": r.Status}
	if r.Status == StatusSuccess {
		m["result"] = r.Result
	} else {
		e := map[string]any{"code": uint64(r.Error.Code)}
		putText(e, "name", r.Error.Name)
		putText(e, "message", r.Error.Message)
		if len(r.Error.Details) > 0 {
			e["details"] = r.Error.Details
		}
		if err := putExtra(e, r.Error.Extra, "error"); err != nil {
			return nil, err
		}
		m["error"] = e
	}
	if err := putExtra(m, r.Extra, "result"); err != nil {
		return nil, err
	}
	return amp.Marshal(m)
}
