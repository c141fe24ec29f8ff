package amp

import (
	"encoding/binary"
	"encoding/hex"
	"io"
	"strings"
)

// ID is a 16-byte message id (RFC 001 §4.2): the creation time in
// milliseconds as a big-endian uint64, then 8 bytes from a CSPRNG.
type ID [16]byte

// NewID returns an id for a message created at tsMillis, its random half read
// from rand (which must be a CSPRNG; crypto/rand.Reader in production).
func NewID(rand io.Reader, tsMillis uint64) (ID, error) {
	var id ID
	binary.BigEndian.PutUint64(id[:8], tsMillis)
	if _, err := io.ReadFull(rand, id[8:]); err != nil {
		return ID{}, Wrap(CodeInternalError, err, "cannot read randomness for a message id")
	}
	return id, nil
}

// Timestamp returns the creation time embedded in the id, in milliseconds.
func (id ID) Timestamp() uint64 { return binary.BigEndian.Uint64(id[:8]) }

// String returns the id in lowercase hex.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Recipients is the `to` field: one DID, or a non-empty array of DIDs. The
// two forms are distinct on the wire and in Sig_Input, so List records which
// one the message uses; a single DID with List set is a one-element array.
type Recipients struct {
	DIDs []string
	List bool
}

// To returns the single-DID form.
func To(did string) Recipients { return Recipients{DIDs: []string{did}} }

// ToList returns the array form.
func ToList(dids ...string) Recipients { return Recipients{DIDs: dids, List: true} }

// Contains reports whether did (compared without any fragment) is one of the
// recipients (compared likewise).
func (r Recipients) Contains(did string) bool {
	base := BareDID(did)
	for _, d := range r.DIDs {
		if BareDID(d) == base {
			return true
		}
	}
	return false
}

// Encryption constants of RFC 001 §4.1 (the only profile of AMP 001).
const (
	EncAlg      = "X25519-XSalsa20-Poly1305"
	EncMode     = "authcrypt"
	NonceSize   = 24
	SigSize     = 64
	idSize      = 16
	maxDIDBytes = 2048
	// MaxRefBytes caps reply_to and thread_id (RFC 001 leaves both
	// unbounded byte strings; docs/SPEC-DECISIONS.md AMP-11): a message id
	// is 16 bytes, a thread id is whatever its sender chose.
	MaxRefBytes = 256
)

// Encrypted is the `enc` field of an encrypted message.
type Encrypted struct {
	Alg        string
	Mode       string
	Nonce      []byte
	Ciphertext []byte // Poly1305 tag || XSalsa20 ciphertext, as nacl/box
}

// Message is an AMP message (RFC 001 §4.1).
//
// Body holds the deterministic CBOR encoding of the plaintext body. For a
// message built to be sent it is what Sign signs; for a message returned by
// Receiver.Receive it is the verified plaintext: the deterministic
// re-encoding of a plaintext body, or the exact decrypted bytes of an
// encrypted one (in which case Enc is also set).
type Message struct {
	V        uint64
	ID       ID
	Type     Type
	TS       uint64 // creation time, Unix milliseconds
	TTL      uint64 // milliseconds; 0 means immediate delivery only
	From     string
	To       Recipients
	ReplyTo  []byte // nil when absent
	ThreadID []byte // nil when absent
	Sig      []byte
	Body     []byte     // deterministic CBOR of the plaintext body
	Enc      *Encrypted // set for an encrypted message
	Ext      []byte     // raw CBOR map of unsigned extensions, nil when absent
}

// Encrypted reports whether the message travels encrypted.
func (m *Message) Encrypted() bool { return m.Enc != nil }

// Small deterministic-CBOR writers used for the envelope and Sig_Input.

func appendUint(dst []byte, v uint64) []byte { return AppendHead(dst, MajorUint, v) }

func appendText(dst []byte, s string) []byte {
	return append(AppendHead(dst, MajorText, uint64(len(s))), s...)
}

func appendBytes(dst, b []byte) []byte {
	return append(AppendHead(dst, MajorBytes, uint64(len(b))), b...)
}

func appendRecipients(dst []byte, r Recipients) []byte {
	if !r.List && len(r.DIDs) == 1 {
		return appendText(dst, r.DIDs[0])
	}
	dst = AppendHead(dst, MajorArray, uint64(len(r.DIDs)))
	for _, d := range r.DIDs {
		dst = appendText(dst, d)
	}
	return dst
}

// The keys of the signed headers and of the envelope are fixed, so their
// deterministic order (RFC 8949 §4.2.1: by encoded bytes, which puts shorter
// text keys first) is fixed too. Writing the pairs in that order avoids
// building and sorting a map for every message; TestFixedKeyOrder checks
// the order against a sort.
//
//	signed headers: id, to, ts, ttl, typ, from, reply_to, thread_id
//	envelope:       v, id, to, ts, enc, ext, sig, ttl, typ, body, from, reply_to, thread_id

// appendFromOn appends the pairs that end both maps, signed headers and
// envelope: from, then reply_to and thread_id when set.
func (m *Message) appendFromOn(dst []byte) []byte {
	dst = appendText(appendText(dst, "from"), m.From)
	if m.ReplyTo != nil {
		dst = appendBytes(appendText(dst, "reply_to"), m.ReplyTo)
	}
	if m.ThreadID != nil {
		dst = appendBytes(appendText(dst, "thread_id"), m.ThreadID)
	}
	return dst
}

// appendSignedHeaders appends the signed-headers map of Sig_Input
// (RFC 001 §8.1).
func (m *Message) appendSignedHeaders(dst []byte) []byte {
	n := uint64(6)
	if m.ReplyTo != nil {
		n++
	}
	if m.ThreadID != nil {
		n++
	}
	dst = AppendHead(dst, MajorMap, n)
	dst = appendBytes(appendText(dst, "id"), m.ID[:])
	dst = appendRecipients(appendText(dst, "to"), m.To)
	dst = appendUint(appendText(dst, "ts"), m.TS)
	dst = appendUint(appendText(dst, "ttl"), m.TTL)
	dst = appendUint(appendText(dst, "typ"), uint64(m.Type))
	return m.appendFromOn(dst)
}

// sigContext is the Sig_Input context string.
const sigContext = "AMP-v1"

// SigInput returns CBOR_Encode(Sig_Input) for m (RFC 001 §8.1, docs/SPEC-DECISIONS.md AMP-5):
//
//	["AMP-v1", h'', {id, typ, ts, ttl, from, to, ?reply_to, ?thread_id}, bstr(body)]
//
// where body is m.Body, which must already be the deterministic encoding of
// the plaintext body (CBOR null, 0xf6, when there is no payload).
func (m *Message) SigInput() []byte {
	return m.AppendSigInput(make([]byte, 0, m.sigInputSize()))
}

// sigInputStack is the size of the stack buffers Sig_Input is built in on
// the hot paths; a larger Sig_Input (a large body) goes to the heap.
const sigInputStack = 1024

// sigInputSize bounds the length of m's Sig_Input from above.
func (m *Message) sigInputSize() int {
	n := 160 + len(m.From) + len(m.Body) + len(m.ReplyTo) + len(m.ThreadID)
	for _, d := range m.To.DIDs {
		n += 9 + len(d)
	}
	return n
}

// AppendSigInput appends CBOR_Encode(Sig_Input) for m (see SigInput) to dst
// and returns the extended buffer: a caller that signs or verifies many
// messages builds it in a buffer of its own instead of a fresh allocation.
func (m *Message) AppendSigInput(dst []byte) []byte {
	body := m.Body
	if body == nil {
		body = []byte{0xf6}
	}
	out := dst
	if need := m.sigInputSize(); cap(out)-len(out) < need {
		out = make([]byte, len(dst), len(dst)+need)
		copy(out, dst)
	}
	out = AppendHead(out, MajorArray, 4)
	out = appendText(out, sigContext)
	out = appendBytes(out, []byte{}) // protected header: h'' (0x40), never null
	out = m.appendSignedHeaders(out)
	return appendBytes(out, body)
}

// Encode returns the deterministic CBOR encoding of the whole message. An
// encrypted message carries `enc` and no `body`; a plaintext one carries
// `body` (null when Body is nil).
func (m *Message) Encode() []byte {
	body := m.Body
	if body == nil {
		body = []byte{0xf6}
	}
	n := uint64(9) // v id to ts sig ttl typ from + body or enc
	for _, present := range []bool{m.Ext != nil, m.ReplyTo != nil, m.ThreadID != nil} {
		if present {
			n++
		}
	}
	size := 128 + len(m.From) + len(m.Sig) + len(m.Ext) + len(m.ReplyTo) + len(m.ThreadID) + 40*len(m.To.DIDs)
	if m.Enc != nil {
		size += len(m.Enc.Ciphertext) + 80
	} else {
		size += len(body)
	}
	dst := make([]byte, 0, size)
	dst = AppendHead(dst, MajorMap, n)
	dst = appendUint(appendText(dst, "v"), m.V)
	dst = appendBytes(appendText(dst, "id"), m.ID[:])
	dst = appendRecipients(appendText(dst, "to"), m.To)
	dst = appendUint(appendText(dst, "ts"), m.TS)
	if m.Enc != nil {
		// enc map keys in deterministic order: alg, mode, nonce, ciphertext.
		dst = AppendHead(appendText(dst, "enc"), MajorMap, 4)
		dst = appendText(appendText(dst, "alg"), m.Enc.Alg)
		dst = appendText(appendText(dst, "mode"), m.Enc.Mode)
		dst = appendBytes(appendText(dst, "nonce"), m.Enc.Nonce)
		dst = appendBytes(appendText(dst, "ciphertext"), m.Enc.Ciphertext)
	}
	if m.Ext != nil {
		dst = append(appendText(dst, "ext"), m.Ext...)
	}
	dst = appendBytes(appendText(dst, "sig"), m.Sig)
	dst = appendUint(appendText(dst, "ttl"), m.TTL)
	dst = appendUint(appendText(dst, "typ"), uint64(m.Type))
	if m.Enc == nil {
		dst = append(appendText(dst, "body"), body...)
	}
	return m.appendFromOn(dst)
}

// rawMessage is a message envelope split into its fields by decodeEnvelope.
// A nil slice means the field is absent.
type rawMessage struct {
	v, id, typ, ts, ttl, from, to, replyTo, threadID, sig, body, enc, ext []byte
	// canonical reports that the whole message was already in
	// deterministic form, and so is every field's item.
	canonical bool
	// canonBody is the deterministic form of body (nil when absent): body
	// itself when canonical, else the body item of the one rewrite of the
	// whole message, so that nothing rewrites it a second time.
	canonBody []byte
	// canonExt is the deterministic form of ext, taken likewise
	// (docs/SPEC-DECISIONS.md AMP-24).
	canonExt []byte
}

// envelopeFields is the number of distinct envelope fields (RFC 001 §4.1):
// a map with more pairs repeats or adds a key, and is refused.
const envelopeFields = 13

// itemEnd returns the offset just past the item at data[off:]. data must
// have passed the scanner.
func itemEnd(data []byte, off int) int {
	w := itemWalk{data: data}
	return w.end(off)
}

// itemWalk walks one item that has passed the scanner, in one pass. With
// record set it also notes, for every map in the order its head appears
// (keys included: a key may be a map), whether it renders as a JSON object
// (jsonWriter: all its keys are text strings and none is a standIn), so
// that JSONValue needs no second walk of any map (docs/SPEC-DECISIONS.md
// AMP-15).
type itemWalk struct {
	data    []byte
	record  bool
	objects []bool
	// visited counts the items end walked, for the tests that bound them.
	visited int
}

// end returns the offset just past the item at data[off:].
func (w *itemWalk) end(off int) int {
	w.visited++
	h, _ := ReadHead(w.data, off)
	off += h.Size
	switch h.Major {
	case MajorBytes, MajorText:
		return off + int(h.Arg)
	case MajorArray:
		for i := uint64(0); i < h.Arg; i++ {
			off = w.end(off)
		}
	case MajorMap:
		index := len(w.objects)
		if w.record {
			w.objects = append(w.objects, true)
		}
		for i := uint64(0); i < h.Arg; i++ {
			if w.record && !w.objectKey(off) {
				w.objects[index] = false
			}
			off = w.end(w.end(off))
		}
	case MajorTag:
		return w.end(off)
	}
	return off
}

// objectKey reports whether the map key at data[off:] can be a member name
// of the object JSONValue writes for its map: a text string that is not a
// standIn.
func (w *itemWalk) objectKey(off int) bool {
	kh, _ := ReadHead(w.data, off)
	return kh.Major == MajorText && !standIn(w.data[off+kh.Size:off+kh.Size+int(kh.Arg)])
}

// mapEntries returns the encoded keys and values of the map item data. It
// requires text keys and refuses anything else with a 1001 naming what.
func mapEntries(data []byte, what string) (keys []string, vals [][]byte, err error) {
	h, _ := ReadHead(data, 0)
	if h.Major != MajorMap {
		return nil, nil, Named(CodeInvalidMessage, "wrong_shape", "%s is not a cbor map", what)
	}
	off := h.Size
	keys = make([]string, 0, h.Arg)
	vals = make([][]byte, 0, h.Arg)
	for i := uint64(0); i < h.Arg; i++ {
		kh, _ := ReadHead(data, off)
		if kh.Major != MajorText {
			return nil, nil, Named(CodeInvalidMessage, "wrong_shape", "%s has a key that is not a text string", what)
		}
		kEnd := itemEnd(data, off)
		k := string(data[off+kh.Size : kEnd])
		vEnd := itemEnd(data, kEnd)
		keys = append(keys, k)
		vals = append(vals, data[kEnd:vEnd])
		off = vEnd
	}
	return keys, vals, nil
}

// textKeyed reports whether the item data, which must have passed the
// scanner, is a map whose keys are all text strings. It allocates nothing:
// mapEntries would allocate for as many pairs as the head says
// (docs/SPEC-DECISIONS.md AMP-24).
func textKeyed(data []byte) bool {
	h, _ := ReadHead(data, 0)
	if h.Major != MajorMap {
		return false
	}
	off := h.Size
	for i := uint64(0); i < h.Arg; i++ {
		if kh, _ := ReadHead(data, off); kh.Major != MajorText {
			return false
		}
		off = itemEnd(data, itemEnd(data, off))
	}
	return true
}

// Scalar readers over one encoded item; ok is false when the item has
// another type.

func asUint(item []byte) (uint64, bool) {
	h, err := ReadHead(item, 0)
	if err != nil || h.Major != MajorUint {
		return 0, false
	}
	return h.Arg, true
}

func asText(item []byte) (string, bool) {
	h, err := ReadHead(item, 0)
	if err != nil || h.Major != MajorText {
		return "", false
	}
	return string(item[h.Size : h.Size+int(h.Arg)]), true
}

func asBytes(item []byte) ([]byte, bool) {
	h, err := ReadHead(item, 0)
	if err != nil || h.Major != MajorBytes {
		return nil, false
	}
	return item[h.Size : h.Size+int(h.Arg) : h.Size+int(h.Arg)], true
}

func wrongType(field, want string) *Error {
	return Named(CodeInvalidMessage, "wrong_shape", "field %q must be %s", field, want)
}

// decodeEnvelope is validation step 1 (RFC 001 §4.1 shape): data is one
// accepted CBOR item within l, a map with text keys naming only envelope
// fields, each present field of its CDDL type. Presence and values are
// checked by later steps. The walk that checks the caps also records where
// each top-level pair is, so the fields are sliced out without a second
// pass; nothing is allocated.
func decodeEnvelope(data []byte, l Limits) (rawMessage, error) {
	out, top, err := l.check(data, true)
	if err != nil {
		return rawMessage{}, err
	}
	h, _ := ReadHead(data, 0)
	if h.Major != MajorMap {
		return rawMessage{}, Named(CodeInvalidMessage, "wrong_shape", "message is not a cbor map")
	}
	// check returns data itself exactly when data is already in
	// deterministic form (canonicalize writes into a buffer of its own),
	// and never an empty out without an error (empty input is refused):
	// out starting where data starts is that verdict, read without
	// comparing the bytes.
	r := rawMessage{canonical: len(out) == len(data) && &out[0] == &data[0]}
	if !top.complete() {
		// More pairs than envelope fields: walk them again to find the
		// offending key (an unknown field, or a repeated one that
		// canonicalization already refused).
		if err := r.setByWalk(data, h); err != nil {
			return rawMessage{}, err
		}
	} else {
		for i := 0; i < top.n; i++ {
			if err := r.set(data, top.off[3*i], top.off[3*i+1], top.off[3*i+2]); err != nil {
				return rawMessage{}, err
			}
		}
	}
	switch {
	case r.canonical:
		r.canonBody, r.canonExt = r.body, r.ext
	default:
		if r.body != nil {
			r.canonBody = textKeyValue(out, "body")
		}
		if r.ext != nil {
			r.canonExt = textKeyValue(out, "ext")
		}
	}
	return r, nil
}

// textKeyValue returns the value of the pair whose key is the text name
// in the map item data, nil when there is none. data must have passed the
// scanner. It walks the items before that value, not the value itself.
func textKeyValue(data []byte, name string) []byte {
	h, _ := ReadHead(data, 0)
	off := h.Size
	for i := uint64(0); i < h.Arg; i++ {
		kh, _ := ReadHead(data, off)
		kEnd := itemEnd(data, off)
		if kh.Major == MajorText && string(data[off+kh.Size:kEnd]) == name {
			return data[kEnd:itemEnd(data, kEnd)]
		}
		off = itemEnd(data, kEnd)
	}
	return nil
}

// setByWalk sets the fields from the map whose head h starts data by
// walking its pairs item by item. data must have passed the scanner.
func (r *rawMessage) setByWalk(data []byte, h Head) error {
	off := h.Size
	for i := uint64(0); i < h.Arg; i++ {
		kEnd := itemEnd(data, off)
		vEnd := itemEnd(data, kEnd)
		if err := r.set(data, off, kEnd, vEnd); err != nil {
			return err
		}
		off = vEnd
	}
	return nil
}

// set checks the envelope pair whose key is data[k:v] and whose value is
// data[v:end], and records the value in its field.
func (r *rawMessage) set(data []byte, k, v, end int) error {
	kh, _ := ReadHead(data, k)
	if kh.Major != MajorText {
		return Named(CodeInvalidMessage, "wrong_shape", "message has a key that is not a text string")
	}
	key := data[k+kh.Size : v]
	val := data[v:end]
	vh, _ := ReadHead(val, 0)
	var slot *[]byte
	ok := true
	want := ""
	switch string(key) {
	case "v":
		slot, ok, want = &r.v, vh.Major == MajorUint, "an unsigned integer"
	case "id":
		slot, ok, want = &r.id, vh.Major == MajorBytes && vh.Arg == idSize, "a 16-byte byte string"
	case "typ":
		slot, ok, want = &r.typ, vh.Major == MajorUint, "an unsigned integer"
	case "ts":
		slot, ok, want = &r.ts, vh.Major == MajorUint, "an unsigned integer"
	case "ttl":
		slot, ok, want = &r.ttl, vh.Major == MajorUint, "an unsigned integer"
	case "from":
		slot, ok, want = &r.from, vh.Major == MajorText, "a text string"
	case "to":
		slot, ok, want = &r.to, validRecipients(val), "a text string or a non-empty array of text strings"
	case "reply_to":
		slot, ok, want = &r.replyTo, vh.Major == MajorBytes && vh.Arg <= MaxRefBytes, "a byte string of at most 256 bytes"
	case "thread_id":
		slot, ok, want = &r.threadID, vh.Major == MajorBytes && vh.Arg <= MaxRefBytes, "a byte string of at most 256 bytes"
	case "sig":
		slot, ok, want = &r.sig, vh.Major == MajorBytes, "a byte string"
	case "body":
		slot = &r.body
	case "enc":
		slot, ok, want = &r.enc, vh.Major == MajorMap, "a map"
	case "ext":
		slot, ok, want = &r.ext, textKeyed(val), "a map with text keys"
	default:
		return Named(CodeInvalidMessage, "unknown_field", "message has a field that is not part of the amp envelope")
	}
	if !ok {
		return wrongType(string(key), want)
	}
	*slot = val
	return nil
}

// validRecipients reports whether the `to` item has the shape
// decodeRecipients accepts, without building the list.
func validRecipients(item []byte) bool {
	h, err := ReadHead(item, 0)
	if err != nil {
		return false
	}
	if h.Major == MajorText {
		return true
	}
	if h.Major != MajorArray || h.Arg == 0 {
		return false
	}
	off := h.Size
	for i := uint64(0); i < h.Arg; i++ {
		eh, err := ReadHead(item, off)
		if err != nil || eh.Major != MajorText {
			return false
		}
		off += eh.Size + int(eh.Arg)
	}
	return true
}

// decodeRecipients reads the `to` item.
func decodeRecipients(item []byte) (Recipients, bool) {
	if s, ok := asText(item); ok {
		return To(s), true
	}
	h, err := ReadHead(item, 0)
	if err != nil || h.Major != MajorArray || h.Arg == 0 {
		return Recipients{}, false
	}
	r := Recipients{List: true, DIDs: make([]string, 0, h.Arg)}
	off := h.Size
	for i := uint64(0); i < h.Arg; i++ {
		end := itemEnd(item, off)
		s, ok := asText(item[off:end])
		if !ok {
			return Recipients{}, false
		}
		r.DIDs = append(r.DIDs, s)
		off = end
	}
	return r, true
}

// decodeEnc reads the `enc` map (RFC 001 §4.1 encrypted-payload), pair by
// pair: nothing is allocated for the pairs its head announces, of which a
// peer may write 65,536 (docs/SPEC-DECISIONS.md AMP-24).
func decodeEnc(item []byte) (*Encrypted, error) {
	h, _ := ReadHead(item, 0)
	switch {
	case h.Major != MajorMap:
		return nil, Named(CodeInvalidMessage, "wrong_shape", "enc is not a cbor map")
	case !textKeyed(item):
		return nil, Named(CodeInvalidMessage, "wrong_shape", "enc has a key that is not a text string")
	}
	e := &Encrypted{}
	seen := 0
	for i, off := uint64(0), h.Size; i < h.Arg; i++ {
		kh, _ := ReadHead(item, off)
		kEnd := itemEnd(item, off)
		vEnd := itemEnd(item, kEnd)
		k, val := string(item[off+kh.Size:kEnd]), item[kEnd:vEnd]
		off = vEnd
		var ok bool
		switch k {
		case "alg":
			e.Alg, ok = asText(val)
		case "mode":
			e.Mode, ok = asText(val)
		case "nonce":
			e.Nonce, ok = asBytes(val)
		case "ciphertext":
			e.Ciphertext, ok = asBytes(val)
		default:
			return nil, Named(CodeInvalidMessage, "unknown_field", "enc has a field that is not part of the encrypted payload")
		}
		if !ok {
			return nil, wrongType("enc."+k, "of its cddl type")
		}
		seen++
	}
	switch {
	case seen != 4:
		return nil, Named(CodeInvalidMessage, "missing_field", "enc must carry alg, mode, nonce and ciphertext")
	case e.Alg != EncAlg:
		return nil, Named(CodeInvalidMessage, "unsupported_encryption", "enc.alg must be %s", EncAlg)
	case e.Mode != EncMode:
		return nil, Named(CodeInvalidMessage, "unsupported_encryption", "enc.mode must be %s", EncMode)
	case len(e.Nonce) != NonceSize:
		return nil, Named(CodeInvalidMessage, "wrong_shape", "enc.nonce must be %d bytes", NonceSize)
	}
	return e, nil
}

// BareDID returns did without any fragment, query or path: the DID that a
// DID URL refers to.
func BareDID(did string) string {
	if i := strings.IndexAny(did, "#?/"); i >= 0 {
		return did[:i]
	}
	return did
}

// ValidDID reports whether s is a DID, or a DID URL with only a fragment,
// per the W3C DID Core syntax (did:<method>:<method-specific-id>[#fragment]),
// at most 2048 bytes.
func ValidDID(s string) bool {
	if len(s) > maxDIDBytes || !strings.HasPrefix(s, "did:") {
		return false
	}
	rest := s[4:]
	frag := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag = rest[:i], rest[i+1:]
		if frag == "" || !validFragment(frag) {
			return false
		}
	}
	colon := strings.IndexByte(rest, ':')
	if colon <= 0 {
		return false
	}
	for i := 0; i < colon; i++ {
		c := rest[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	msid := rest[colon+1:]
	if msid == "" || strings.HasSuffix(msid, ":") {
		return false
	}
	return pctEncoded(msid, ".-_:")
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// validFragment allows the RFC 3986 fragment characters (pchar / "/" / "?").
func validFragment(f string) bool { return pctEncoded(f, "-._~!$&'()*+,;=:@/?") }

// pctEncoded reports whether s holds only ASCII letters and digits, the
// bytes of allowed, and percent-encoded bytes (%HH).
func pctEncoded(s, allowed string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(allowed, c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// EnvelopeIDs returns the id and the reply_to of the message in data (nil
// when absent) after the shape check of validation step 1 (the bytes are
// one accepted CBOR map of envelope fields within l). It authenticates
// nothing: a transport uses it to match replies to requests, and the
// matched reply is then validated in full by its receiver.
func (l Limits) EnvelopeIDs(data []byte) (id, replyTo []byte, err error) {
	r, err := decodeEnvelope(data, l)
	if err != nil {
		return nil, nil, err
	}
	if r.id != nil {
		id, _ = asBytes(r.id)
	}
	if r.replyTo != nil {
		replyTo, _ = asBytes(r.replyTo)
	}
	return id, replyTo, nil
}
