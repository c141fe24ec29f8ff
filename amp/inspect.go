package amp

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
)

// Inspection is a JSON view of a message that has passed the shape check
// (validation step 1) only: nothing about it is verified. Byte fields of the
// envelope are lowercase hex; the body and ext are rendered by JSONValue.
type Inspection struct {
	V        *uint64         `json:"v,omitempty"`
	ID       string          `json:"id,omitempty"`
	IDTime   *uint64         `json:"id_ts,omitempty"`
	Typ      *uint64         `json:"typ,omitempty"`
	TypName  string          `json:"typ_name,omitempty"`
	TS       *uint64         `json:"ts,omitempty"`
	TTL      *uint64         `json:"ttl,omitempty"`
	From     string          `json:"from,omitempty"`
	To       any             `json:"to,omitempty"`
	ReplyTo  *string         `json:"reply_to,omitempty"`
	ThreadID *string         `json:"thread_id,omitempty"`
	Sig      string          `json:"sig,omitempty"`
	Body     json.RawMessage `json:"body,omitempty"`
	Enc      *InspectedEnc   `json:"enc,omitempty"`
	Ext      json.RawMessage `json:"ext,omitempty"`
	Size     int             `json:"size"`
}

// InspectedEnc is the JSON view of `enc`.
type InspectedEnc struct {
	Alg        string `json:"alg"`
	Mode       string `json:"mode"`
	Nonce      string `json:"nonce"`
	Ciphertext string `json:"ciphertext"`
}

// Inspect decodes the envelope of data for display, without verifying
// anything. Data that does not pass the shape check is refused with its
// 1001.
func (l Limits) Inspect(data []byte) (*Inspection, error) {
	raw, err := decodeEnvelope(data, l.withDefaults())
	if err != nil {
		return nil, err
	}
	in := &Inspection{Size: len(data)}
	num := func(item []byte) *uint64 {
		if item == nil {
			return nil
		}
		v, _ := asUint(item)
		return &v
	}
	hexOf := func(item []byte) *string {
		if item == nil {
			return nil
		}
		b, _ := asBytes(item)
		s := hex.EncodeToString(b)
		return &s
	}
	in.V, in.Typ, in.TS, in.TTL = num(raw.v), num(raw.typ), num(raw.ts), num(raw.ttl)
	if in.Typ != nil {
		in.TypName = Type(*in.Typ).Name()
	}
	if id := hexOf(raw.id); id != nil {
		in.ID = *id
		b, _ := asBytes(raw.id)
		t := binary.BigEndian.Uint64(b[:8])
		in.IDTime = &t
	}
	in.From, _ = asText(raw.from)
	if raw.to != nil {
		r, _ := decodeRecipients(raw.to)
		if r.List {
			in.To = r.DIDs
		} else {
			in.To = r.DIDs[0]
		}
	}
	in.ReplyTo, in.ThreadID = hexOf(raw.replyTo), hexOf(raw.threadID)
	if s := hexOf(raw.sig); s != nil {
		in.Sig = *s
	}
	if raw.body != nil {
		if in.Body, err = JSONValue(raw.body); err != nil {
			return nil, err
		}
	}
	if raw.ext != nil {
		if in.Ext, err = JSONValue(raw.ext); err != nil {
			return nil, err
		}
	}
	if raw.enc != nil {
		e, err := decodeEnc(raw.enc)
		if err != nil {
			return nil, err
		}
		in.Enc = &InspectedEnc{Alg: e.Alg, Mode: e.Mode, Nonce: hex.EncodeToString(e.Nonce), Ciphertext: hex.EncodeToString(e.Ciphertext)}
	}
	return in, nil
}

// JSONValue renders one CBOR data item as JSON for display, losing nothing
// that would let two different items look alike:
//
//   - integers as JSON numbers (exact, also beyond 2^53);
//   - text strings as strings; byte strings as {"bytes": "<hex>"};
//   - arrays as arrays; maps with only text keys, none of them "bytes",
//     "tag", "float", "simple" or "map", as objects; other maps as
//     {"map": [{"key": k, "value": v}, ...]};
//   - tags as {"tag": N, "value": v}, whatever N is;
//   - floats as numbers with a point or an exponent (1.0, 1e+21), or
//     {"float": "NaN" | "Infinity" | "-Infinity"}; a NaN other than the
//     canonical f97e00 also carries the hex bits of its deterministic form,
//     {"float": "NaN", "bits": "7e01"};
//   - true, false, null as themselves; undefined and other simple values as
//     {"simple": N}.
//
// The item must be a single CBOR data item within the default limits.
func JSONValue(item []byte) (json.RawMessage, error) {
	if _, err := (Limits{}).Canonical(item); err != nil {
		return nil, err
	}
	out, _ := jsonValue(item)
	return out, nil
}

// jsonValue is JSONValue on an item that has passed the scanner; visits is
// how many items its walks visited (the recording walk's and the
// rendering's together), which tests read.
func jsonValue(item []byte) (out json.RawMessage, visits int) {
	w := itemWalk{data: item, record: true}
	w.end(0)
	j := jsonWriter{data: item, objects: w.objects}
	out, _ = j.value(nil, 0)
	return out, w.visited + j.visited
}

// jsonWriter renders one item that has passed the scanner. Whether a map
// becomes an object depends on all of its keys, which come before their
// values' subtrees are rendered; a recording itemWalk (message.go)
// therefore first notes, for every map in the order its head appears,
// whether all its keys are text strings, in one walk of the item.
// Rendering is then linear too (docs/SPEC-DECISIONS.md AMP-15): no map
// walks its subtree twice.
type jsonWriter struct {
	data []byte
	// objects holds, per map in head order, whether it renders as an
	// object; next is the index of the next map the rendering meets.
	objects []bool
	next    int
	// visited counts the items value rendered, for the tests that bound
	// them.
	visited int
}

// standIn reports whether a text key is one of the member names of the
// objects JSONValue writes in place of what JSON cannot hold ("bytes",
// "tag", "float", "simple", "map"): a map with such a key is written in
// the {"map": [...]} form, so that {"bytes": "00"} never reads like the
// byte string h'00' (review 59).
func standIn(key []byte) bool {
	switch string(key) {
	case "bytes", "tag", "float", "simple", "map":
		return true
	}
	return false
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// value renders the item at data[off:] and returns the offset after it.
func (j *jsonWriter) value(dst []byte, off int) ([]byte, int) {
	j.visited++
	data := j.data
	h, _ := ReadHead(data, off)
	start := off
	off += h.Size
	switch h.Major {
	case MajorUint:
		return strconv.AppendUint(dst, h.Arg, 10), off
	case MajorNegint:
		if h.Arg < math.MaxInt64 {
			return strconv.AppendInt(dst, -1-int64(h.Arg), 10), off
		}
		// -1 - arg does not fit an int64: write it out by hand.
		if h.Arg == math.MaxUint64 {
			return append(dst, "-18446744073709551616"...), off
		}
		dst = append(dst, '-')
		return strconv.AppendUint(dst, h.Arg+1, 10), off
	case MajorBytes:
		n := int(h.Arg)
		dst = append(dst, `{"bytes":"`...)
		dst = hex.AppendEncode(dst, data[off:off+n])
		return append(dst, `"}`...), off + n
	case MajorText:
		n := int(h.Arg)
		return appendJSONString(dst, string(data[off:off+n])), off + n
	case MajorArray:
		dst = append(dst, '[')
		for i := uint64(0); i < h.Arg; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, off = j.value(dst, off)
		}
		return append(dst, ']'), off
	case MajorMap:
		object := j.objects[j.next]
		j.next++
		if object {
			dst = append(dst, '{')
			for i := uint64(0); i < h.Arg; i++ {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst, off = j.value(dst, off)
				dst = append(dst, ':')
				dst, off = j.value(dst, off)
			}
			return append(dst, '}'), off
		}
		dst = append(dst, `{"map":[`...)
		for i := uint64(0); i < h.Arg; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst, off = j.value(dst, off)
			dst = append(dst, `,"value":`...)
			dst, off = j.value(dst, off)
			dst = append(dst, '}')
		}
		return append(dst, "]}"...), off
	case MajorTag:
		dst = append(dst, `{"tag":`...)
		dst = strconv.AppendUint(dst, h.Arg, 10)
		dst = append(dst, `,"value":`...)
		dst, off = j.value(dst, off)
		return append(dst, '}'), off
	}
	// Simple values and floats.
	switch h.Info {
	case 20:
		return append(dst, "false"...), off
	case 21:
		return append(dst, "true"...), off
	case 22:
		return append(dst, "null"...), off
	case 25, 26, 27:
		return appendJSONFloat(dst, data[start:off]), off
	}
	dst = append(dst, `{"simple":`...)
	dst = strconv.AppendUint(dst, h.Arg, 10)
	return append(dst, '}'), off
}

// canonicalNaN is the deterministic form of the quiet NaN (RFC 8949
// §4.2.2): the only NaN JSONValue shows without its bits.
var canonicalNaN = [3]byte{0xf9, 0x7e, 0x00}

// appendJSONFloat appends the JSON form of a float item (head included):
// a number with a point or an exponent, so that it never reads like an
// integer (1.0, not 1), or {"float": "Infinity" | "-Infinity" | "NaN"}, a
// NaN other than the canonical f97e00 with the hex bits of its
// deterministic form ({"float":"NaN","bits":"7e01"}), since Canonical keeps
// every NaN payload and sign apart (docs/SPEC-DECISIONS.md AMP-9, AMP-16).
func appendJSONFloat(dst, enc []byte) []byte {
	f := floatValue(enc)
	switch {
	case math.IsNaN(f):
		var short [9]byte
		det := appendShortestFloat(short[:0], enc)
		if len(det) == 3 && [3]byte(det) == canonicalNaN {
			return append(dst, `{"float":"NaN"}`...)
		}
		dst = append(dst, `{"float":"NaN","bits":"`...)
		dst = hex.AppendEncode(dst, det[1:])
		return append(dst, `"}`...)
	case math.IsInf(f, 1):
		return append(dst, `{"float":"Infinity"}`...)
	case math.IsInf(f, -1):
		return append(dst, `{"float":"-Infinity"}`...)
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	for _, c := range dst[n:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

// floatValue decodes a float item (head included).
func floatValue(enc []byte) float64 {
	switch len(enc) {
	case 3:
		return float16ToFloat64(binary.BigEndian.Uint16(enc[1:]))
	case 5:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(enc[1:])))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(enc[1:]))
}

func float16ToFloat64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 31:
		if mant == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(mant+1024, exp-25)
}
