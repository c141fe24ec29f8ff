package amp

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// Limits caps what a decoder accepts. The zero value of a field means its
// default; DefaultLimits documents them. Every cap is checked against the
// header of an item before anything is read or allocated for it, so a
// hostile length header costs nothing.
type Limits struct {
	// MaxMessageSize caps a whole encoded message in bytes. Default 16 MiB
	// (the agent endpoint limit the RFC 002 draft recommends).
	MaxMessageSize int
	// MaxDepth caps the nesting of arrays, maps and tags. Default 32.
	MaxDepth int
	// MaxArrayLen caps the element count of one array. Default 65536.
	MaxArrayLen int
	// MaxMapPairs caps the pair count of one map. Default 65536.
	MaxMapPairs int
	// MaxStringLen caps one byte or text string in bytes. Default: the
	// message size cap.
	MaxStringLen int
	// MaxItems caps the data items of one CBOR item in all, every array
	// element, map key and value, tag content and scalar counted (default
	// 1,048,576): the per-array and per-map caps alone let a 16 MiB map of
	// 250 arrays hold 16 million items.
	MaxItems int
}

// Default caps.
const (
	DefaultMaxMessageSize = 16 << 20
	DefaultMaxDepth       = 32
	DefaultMaxArrayLen    = 1 << 16
	DefaultMaxMapPairs    = 1 << 16
	DefaultMaxItems       = 1 << 20
	// maxDepthCeiling bounds MaxDepth whatever the caller asks for, so the
	// recursive walk can never exhaust the stack.
	maxDepthCeiling = 1024
)

// DefaultLimits returns the default caps.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

func (l Limits) withDefaults() Limits {
	if l.MaxMessageSize <= 0 {
		l.MaxMessageSize = DefaultMaxMessageSize
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	l.MaxDepth = min(l.MaxDepth, maxDepthCeiling)
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = DefaultMaxArrayLen
	}
	if l.MaxMapPairs <= 0 {
		l.MaxMapPairs = DefaultMaxMapPairs
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	if l.MaxStringLen <= 0 || l.MaxStringLen > l.MaxMessageSize {
		l.MaxStringLen = l.MaxMessageSize
	}
	return l
}

// Canonical checks that data is exactly one well-formed CBOR data item that
// this project accepts, and returns its deterministic encoding (RFC 8949
// §4.2.1): shortest heads, shortest floats that keep the value, definite
// lengths, map keys sorted by their encoded bytes.
//
// Every tag, every integer, every float and every simple value is kept
// exactly; only encoding choices change (docs/SPEC-DECISIONS.md AMP-9). When data is already
// deterministic, Canonical returns data itself without copying.
//
// Refused with 1001 invalid_message: trailing bytes, truncation, indefinite
// lengths, duplicate map keys (compared in deterministic form), invalid
// UTF-8 in text strings, reserved or ill-formed simple values, and anything
// over the caps in l.
func (l Limits) Canonical(data []byte) ([]byte, error) {
	out, _, err := l.check(data, false)
	return out, err
}

// topPairs holds where the pairs of a top-level map are, as recorded by
// the scanner: for pair i, off[3i] is the start of its key, off[3i+1] the
// start of its value and off[3i+2] the end of its value. Only the first
// envelopeFields pairs fit; lost records that there were more.
type topPairs struct {
	off   [3 * envelopeFields]int
	n     int
	lost  bool
	isMap bool
}

// complete reports whether every pair of a top-level map was recorded.
func (t *topPairs) complete() bool { return t.isMap && !t.lost }

// check is Canonical; with record set it also returns where the pairs of a
// top-level map are. The offsets come from the same walk that checks the
// caps, so a caller that splits a message into its fields needs no second
// pass over it.
func (l Limits) check(data []byte, record bool) ([]byte, topPairs, error) {
	s, err := l.scan(data, record)
	if err != nil {
		return nil, topPairs{}, err
	}
	if s.canonical {
		return data, s.top, nil
	}
	out, err := canonicalize(data, s.maxOpen)
	if err != nil {
		return nil, topPairs{}, err
	}
	return out, s.top, nil
}

// scan is check without the rewrite: it refuses what check refuses but
// duplicate map keys (canonicalize compares keys in deterministic form),
// and allocates nothing. A caller that holds an item of a message that
// check accepted whole uses it to hold that item to other caps.
func (l Limits) scan(data []byte, record bool) (scanner, error) {
	l = l.withDefaults()
	if len(data) > l.MaxMessageSize {
		return scanner{}, NewError(CodeInvalidMessage, "cbor item of %d bytes is over the %d-byte limit", len(data), l.MaxMessageSize)
	}
	if len(data) == 0 {
		return scanner{}, NewError(CodeInvalidMessage, "empty cbor input")
	}
	s := scanner{data: data, lim: l, canonical: true, record: record}
	if err := s.item(0); err != nil {
		return scanner{}, err
	}
	if s.off != len(data) {
		return scanner{}, NewError(CodeInvalidMessage, "%d trailing bytes after cbor item", len(data)-s.off)
	}
	return s, nil
}

// IsCanonical reports whether data is a single accepted CBOR item already in
// deterministic encoding.
func (l Limits) IsCanonical(data []byte) bool {
	out, err := l.Canonical(data)
	return err == nil && len(out) == len(data) && (len(out) == 0 || &out[0] == &data[0])
}

// scanner walks one data item, enforcing the caps, and records whether the
// encoding is already deterministic. It never allocates.
type scanner struct {
	data      []byte
	off       int
	lim       Limits
	canonical bool
	items     int
	// record asks for the offsets of a top-level map's pairs in top.
	record bool
	top    topPairs
	// openPairs counts the pairs of the maps of two or more pairs being
	// walked, maxOpen the most at any time: the pair spans canonicalize
	// keeps, so that it allocates them once (docs/SPEC-DECISIONS.md AMP-18).
	openPairs, maxOpen int
}

func (s *scanner) item(depth int) error {
	h, err := ReadHead(s.data, s.off)
	if err != nil {
		return err
	}
	if s.items++; s.items > s.lim.MaxItems {
		return Named(CodeInvalidMessage, "limit_exceeded", "cbor item holds more than %d items", s.lim.MaxItems)
	}
	start := s.off
	s.off += h.Size
	if !h.Minimal {
		s.canonical = false
	}
	// Arrays, maps and tags (majors 4 to 6) nest.
	if depth >= s.lim.MaxDepth && h.Major >= MajorArray && h.Major <= MajorTag {
		return Named(CodeInvalidMessage, "limit_exceeded", "cbor nesting is deeper than %d", s.lim.MaxDepth)
	}
	switch h.Major {
	case MajorUint, MajorNegint:
		return nil
	case MajorBytes, MajorText:
		if h.Arg > uint64(s.lim.MaxStringLen) {
			return Named(CodeInvalidMessage, "limit_exceeded", "cbor string of %d bytes is over the %d-byte limit", h.Arg, s.lim.MaxStringLen)
		}
		if h.Arg > uint64(len(s.data)-s.off) {
			return errTruncated()
		}
		n := int(h.Arg)
		if h.Major == MajorText && !utf8.Valid(s.data[s.off:s.off+n]) {
			return Named(CodeInvalidMessage, "invalid_utf8", "cbor text string is not valid utf-8")
		}
		s.off += n
		return nil
	case MajorArray:
		if h.Arg > uint64(s.lim.MaxArrayLen) {
			return Named(CodeInvalidMessage, "limit_exceeded", "cbor array of %d items is over the %d-item limit", h.Arg, s.lim.MaxArrayLen)
		}
		// Every element takes at least one byte.
		if h.Arg > uint64(len(s.data)-s.off) {
			return errTruncated()
		}
		for i := uint64(0); i < h.Arg; i++ {
			if err := s.item(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case MajorMap:
		if h.Arg > uint64(s.lim.MaxMapPairs) {
			return Named(CodeInvalidMessage, "limit_exceeded", "cbor map of %d pairs is over the %d-pair limit", h.Arg, s.lim.MaxMapPairs)
		}
		if h.Arg > uint64(len(s.data)-s.off)/2 {
			return errTruncated()
		}
		record := depth == 0 && s.record
		if record {
			s.top.isMap = true
		}
		// A map of two or more pairs keeps a span per pair in canonicalize
		// while it is walked (an error ends the walk: no decrement needed).
		open := 0
		if h.Arg >= 2 {
			open = int(h.Arg)
		}
		s.openPairs += open
		s.maxOpen = max(s.maxOpen, s.openPairs)
		var prevKey []byte
		for i := uint64(0); i < h.Arg; i++ {
			ks := s.off
			if err := s.item(depth + 1); err != nil {
				return err
			}
			key := s.data[ks:s.off]
			vs := s.off
			// In a deterministic map the encoded keys are strictly
			// increasing, which also rules out duplicates. Anything else
			// is left to canonicalize, which compares keys in their
			// deterministic form.
			if prevKey != nil && bytes.Compare(prevKey, key) >= 0 {
				s.canonical = false
			}
			prevKey = key
			if err := s.item(depth + 1); err != nil {
				return err
			}
			if record {
				if t := &s.top; t.n < envelopeFields {
					t.off[3*t.n], t.off[3*t.n+1], t.off[3*t.n+2] = ks, vs, s.off
					t.n++
				} else {
					t.lost = true
				}
			}
		}
		s.openPairs -= open
		return nil
	case MajorTag:
		return s.item(depth + 1)
	default: // majorSimple
		switch h.Info {
		case 25, 26, 27:
			if !floatIsShortest(s.data[start : start+h.Size]) {
				s.canonical = false
			}
		}
		return nil
	}
}

// canonicalize returns the deterministic encoding of data, which must be
// one item that passed the scanner.
//
// It costs a small multiple of len(data) in memory, and in time the sorts
// plus a few copies of each byte, whatever the nesting depth
// (docs/SPEC-DECISIONS.md AMP-15): a first walk appends the deterministic
// form of every head and scalar to one buffer in input order, so a map
// whose pairs are already in order needs nothing more. A map whose pairs
// are not is sorted by its deterministic keys when it ends, then either
// rewritten in place (a map of at most inPlacePairBytes bytes per pair on
// average, with its nested records resolved: no record kept) or, when its
// pairs are larger, or when rewrites in place under it already copied more
// than three quarters of it (and its pairs average at least
// minRecordPairBytes), recorded (mapOrder, its sorted pairs in one pool).
// Only when some record remains does a second walk copy the buffer once
// more, emitting recorded pairs in sorted order. So no byte is
// copied once per enclosing map of large pairs, a map of small pairs leaves
// no bookkeeping behind, and a key holding a recorded map is compared in
// place (keyCursor) in chunks of large pairs.
//
// openPairs is the most pairs of maps of two or more pairs being walked at
// once (the scanner's maxOpen): their spans are allocated once, at that
// size, where growing them level by level cost up to some 4x their size.
func canonicalize(data []byte, openPairs int) ([]byte, error) {
	if len(data) > math.MaxInt32 {
		return nil, Named(CodeInvalidMessage, ErrLimitExceeded, "cbor item of %d bytes is too large to rewrite", len(data))
	}
	w := canonWriter{data: data, buf: make([]byte, 0, len(data)), open: make([]pairSpan, 0, openPairs)}
	return w.run()
}

// run is canonicalize on a fresh canonWriter.
func (w *canonWriter) run() ([]byte, error) {
	if _, err := w.item(0); err != nil {
		return nil, err
	}
	if len(w.maps) == 0 {
		return w.buf, nil
	}
	return w.emit(make([]byte, 0, len(w.buf)), 0, int32(len(w.buf)), 0, int32(len(w.maps))), nil
}

// inPlacePairBytes is the most bytes per pair, on average, of an
// out-of-order map that canonicalize rewrites in place rather than records.
// A rewrite in place copies the map twice (into scratch and back): at most
// 2 x inPlacePairBytes per pair. A map at least a quarter of whose bytes no
// rewrite in place has copied yet, or whose pairs average under
// minRecordPairBytes, is rewritten so; any other is recorded, so that all
// the rewrites in place of an item copy it a few times, not once per
// enclosing map (docs/SPEC-DECISIONS.md AMP-15). A recorded map keeps 20
// bytes and 16 per pair (each more than inPlacePairBytes long): a chain of
// 31 recorded maps around the smallest core costs some 0.2 x its size.
const inPlacePairBytes = 4096

// minRecordPairBytes is the fewest bytes per pair, on average, of an
// out-of-order map that canonicalize records because rewrites in place
// under it already copied more than three quarters of it (so that no byte
// is copied once per enclosing map). Below it the map is rewritten in place
// all the same, which the item cap bounds: such maps move at most
// 2 x minRecordPairBytes a pair, MaxItems / 2 pairs in all (128 MiB by
// default, some tens of milliseconds). It trades that copying against the
// comparison of keys holding such a map: keyCursor walks a recorded map a
// pair at a time, a step (some 25 to 40 ns) per minRecordPairBytes bytes
// on average, where a map rewritten in place is compared by one memcmp. At
// 16 bytes a sort of keys sharing a long prefix cost 7x its twin in order,
// 1.1 s for one 8 MB message (docs/SPEC-DECISIONS.md AMP-18).
const minRecordPairBytes = 128

// canonWriter is the state of canonicalize. Offsets into buf are int32:
// canonicalize refuses an item of 2 GiB or more.
type canonWriter struct {
	data []byte
	// buf holds the deterministic form of every item in input order: every
	// item but a recorded map is already final there.
	buf []byte
	// maps records, in the order their heads appear (so sorted by head),
	// every map of large pairs that is out of order, and every map in order
	// that holds such a map.
	maps []mapOrder
	// pool holds the sorted pairs of the recorded maps.
	pool []pairRef
	// open holds the pairs of the maps being walked.
	open []pairSpan
	// scratch is where a map rewritten in place is written first.
	scratch []byte
	// reordered counts the maps out of order so far.
	reordered int
	// inPlace, when not zero, replaces inPlacePairBytes and turns off the
	// mostly-copied rule (tests use it to drive every map down one path or
	// the other).
	inPlace int
	// rewritten counts the bytes of buf that rewrites in place have
	// copied, each byte once however many maps around it were rewritten:
	// a map holds rewritten - (its value when the map began) of them.
	rewritten int
	// moved counts the bytes rewrites in place copied (into scratch and
	// back), for the tests that bound it.
	moved int
	// keysLo and keysHi bound the records searched for in keys while the
	// pairs of one map are compared.
	keysLo, keysHi int32
	// a and b are the cursors compareKeys reuses.
	a, b keyCursor
}

// mapOrder is one recorded map: its head ends at buf[head:], its pairs end
// at buf[end:], and the maps recorded in it come after it in maps, up to
// maps[skip:]. Its pairs in sorted order are pool[plo:phi]; plo == phi when
// they are already in order (the record only holds the maps under it).
type mapOrder struct {
	head, end, skip int32
	plo, phi        int32
}

// pairRef is one pair of a recorded map: buf[k:end], holding maps[lo:hi].
type pairRef struct {
	k, end, lo, hi int32
}

// pairSpan is one pair of a map being walked: key buf[k:v], value
// buf[v:end].
type pairSpan struct {
	k, v, end int32
}

// item appends the deterministic form of the item at w.data[off:] to w.buf
// in input order and returns the offset after it.
func (w *canonWriter) item(off int) (int, error) {
	h, err := ReadHead(w.data, off)
	if err != nil {
		return 0, err
	}
	start := off
	off += h.Size
	switch h.Major {
	case MajorUint, MajorNegint:
		w.buf = AppendHead(w.buf, h.Major, h.Arg)
		return off, nil
	case MajorBytes, MajorText:
		n := int(h.Arg)
		w.buf = append(AppendHead(w.buf, h.Major, h.Arg), w.data[off:off+n]...)
		return off + n, nil
	case MajorArray:
		w.buf = AppendHead(w.buf, MajorArray, h.Arg)
		for i := uint64(0); i < h.Arg; i++ {
			if off, err = w.item(off); err != nil {
				return 0, err
			}
		}
		return off, nil
	case MajorMap:
		return w.mapItem(h, off)
	case MajorTag:
		w.buf = AppendHead(w.buf, MajorTag, h.Arg)
		return w.item(off)
	default:
		switch h.Info {
		case 25, 26, 27:
			w.buf = appendShortestFloat(w.buf, w.data[start:off])
			return off, nil
		}
		w.buf = append(w.buf, w.data[start:off]...)
		return off, nil
	}
}

// mapItem is item for a map whose head h ends at off.
func (w *canonWriter) mapItem(h Head, off int) (int, error) {
	var err error
	w.buf = AppendHead(w.buf, MajorMap, h.Arg)
	if h.Arg < 2 {
		// Zero or one pair: always in order.
		for i := uint64(0); i < 2*h.Arg; i++ {
			if off, err = w.item(off); err != nil {
				return 0, err
			}
		}
		return off, nil
	}
	index, pool := len(w.maps), len(w.pool)
	rewritten := w.rewritten
	head := len(w.buf)
	w.maps = append(grow(w.maps, 1), mapOrder{head: int32(head)})
	base := len(w.open)
	w.open = grow(w.open, int(h.Arg))
	for i := uint64(0); i < h.Arg; i++ {
		k := len(w.buf)
		if off, err = w.item(off); err != nil {
			return 0, err
		}
		v := len(w.buf)
		if off, err = w.item(off); err != nil {
			return 0, err
		}
		w.open = append(w.open, pairSpan{k: int32(k), v: int32(v), end: int32(len(w.buf))})
	}
	defer func() { w.open = w.open[:base] }()
	pairs := w.open[base:]
	end := len(w.buf)
	lo, hi := int32(index+1), int32(len(w.maps))
	w.keysLo, w.keysHi = lo, hi
	inOrder := true
	for i := 1; i < len(pairs) && inOrder; i++ {
		inOrder = w.compareKeys(pairs[i-1], pairs[i]) < 0
	}
	if inOrder {
		if lo == hi {
			// Nothing to reorder in or under this map: forget it.
			w.maps = w.maps[:index]
		} else {
			w.maps[index] = mapOrder{head: int32(head), end: int32(end), skip: hi}
		}
		return off, nil
	}
	slices.SortFunc(pairs, w.compareKeys)
	for i := 1; i < len(pairs); i++ {
		if w.compareKeys(pairs[i-1], pairs[i]) == 0 {
			return 0, Named(CodeInvalidMessage, "duplicate_map_key", "duplicate key in cbor map")
		}
	}
	w.reordered++
	inPlace := inPlacePairBytes
	if w.inPlace != 0 {
		inPlace = w.inPlace
	}
	size := end - head
	// Bytes of this map that a rewrite in place under it already copied.
	copied := w.rewritten - rewritten
	mostlyCopied := w.inPlace == 0 && 4*copied > 3*size && size >= minRecordPairBytes*len(pairs)
	if size <= inPlace*len(pairs) && !mostlyCopied {
		// Small pairs: write the map's final form over it and forget it and
		// every record under it.
		w.growScratch(size)
		for _, p := range pairs {
			plo, phi := w.recordsIn(p.k, p.end, lo, hi)
			w.scratch = w.emit(w.scratch, p.k, p.end, plo, phi)
		}
		copy(w.buf[head:end], w.scratch)
		w.maps, w.pool = w.maps[:index], w.pool[:pool]
		w.rewritten = rewritten + size
		w.moved += 2 * size
		return off, nil
	}
	first := len(w.pool)
	w.pool = grow(w.pool, len(pairs))
	for _, p := range pairs {
		plo, phi := w.recordsIn(p.k, p.end, lo, hi)
		w.pool = append(w.pool, pairRef{k: p.k, end: p.end, lo: plo, hi: phi})
	}
	w.maps[index] = mapOrder{head: int32(head), end: int32(end), skip: hi, plo: int32(first), phi: int32(len(w.pool))}
	return off, nil
}

// growScratch empties the scratch and gives it room for size bytes: the
// first time exactly size, after that the whole item, which no map in it
// outgrows (its deterministic form is never longer). So the scratch of one
// item costs at most twice the item, and one map out of order only its
// size; regrown to each larger map, a chain of nested maps each a little
// larger than the one it holds cost the scratch some 4x the item
// (docs/SPEC-DECISIONS.md AMP-18).
func (w *canonWriter) growScratch(size int) {
	switch {
	case cap(w.scratch) >= size:
		w.scratch = w.scratch[:0]
	case w.scratch == nil:
		w.scratch = make([]byte, 0, size)
	default:
		w.scratch = make([]byte, 0, max(size, len(w.data)))
	}
}

// grow returns s with room for n more elements, at least doubling its
// capacity when it must grow, so that a slice grown to its final length has
// allocated less than twice that in all. It allocates the new capacity
// itself: slices.Grow (append) steps from the old capacity by a quarter
// until it fits, so asking it for twice the capacity gave some 2.4x.
func grow[E any](s []E, n int) []E {
	if cap(s)-len(s) >= n {
		return s
	}
	t := make([]E, len(s), max(len(s)+n, 2*cap(s)))
	copy(t, s)
	return t
}

// recordsIn returns the range of maps[lo:hi] recorded inside buf[s:e]: the
// maps are sorted by head.
func (w *canonWriter) recordsIn(s, e, lo, hi int32) (int32, int32) {
	if lo == hi {
		return lo, lo
	}
	ms := w.maps[lo:hi]
	i, _ := slices.BinarySearchFunc(ms, s, func(m mapOrder, t int32) int { return cmp.Compare(m.head, t) })
	j, _ := slices.BinarySearchFunc(ms[i:], e, func(m mapOrder, t int32) int { return cmp.Compare(m.head, t) })
	return lo + int32(i), lo + int32(i+j)
}

// compareKeys compares the deterministic keys of two pairs of the map being
// sorted bytewise.
func (w *canonWriter) compareKeys(x, y pairSpan) int {
	xlo, xhi := w.recordsIn(x.k, x.v, w.keysLo, w.keysHi)
	ylo, yhi := w.recordsIn(y.k, y.v, w.keysLo, w.keysHi)
	if xlo == xhi && ylo == yhi {
		return bytes.Compare(w.buf[x.k:x.v], w.buf[y.k:y.v])
	}
	w.a.reset(w, x.k, x.v, xlo, xhi)
	w.b.reset(w, y.k, y.v, ylo, yhi)
	var ca, cb []byte
	for {
		if len(ca) == 0 {
			ca = w.a.next()
		}
		if len(cb) == 0 {
			cb = w.b.next()
		}
		if len(ca) == 0 || len(cb) == 0 {
			return cmp.Compare(len(ca), len(cb))
		}
		n := min(len(ca), len(cb))
		if c := bytes.Compare(ca[:n], cb[:n]); c != 0 {
			return c
		}
		ca, cb = ca[n:], cb[n:]
	}
}

// emit appends the deterministic form of buf[s:e], which holds maps[lo:hi],
// to dst.
func (w *canonWriter) emit(dst []byte, s, e, lo, hi int32) []byte {
	for i := lo; i < hi; {
		m := &w.maps[i]
		if m.plo == m.phi {
			i++
			continue
		}
		dst = append(dst, w.buf[s:m.head]...)
		for _, p := range w.pool[m.plo:m.phi] {
			dst = w.emit(dst, p.k, p.end, p.lo, p.hi)
		}
		s, i = m.end, m.skip
	}
	return append(dst, w.buf[s:e]...)
}

// keyCursor yields the deterministic form of a span of canonWriter.buf in
// chunks, the way emit writes it, without copying. Only recorded maps, whose
// pairs average more than inPlacePairBytes, break a span into chunks.
type keyCursor struct {
	w     *canonWriter
	stack []cursorFrame
}

// cursorFrame is a span buf[s:e] holding maps[lo:hi] or, when pairs is not
// nil, the sorted pairs of a map still to visit.
type cursorFrame struct {
	s, e, lo, hi int32
	pairs        []pairRef
}

func (c *keyCursor) reset(w *canonWriter, s, e, lo, hi int32) {
	c.w = w
	c.stack = append(c.stack[:0], cursorFrame{s: s, e: e, lo: lo, hi: hi})
}

// next returns the next non-empty chunk, or nil at the end.
func (c *keyCursor) next() []byte {
	for len(c.stack) > 0 {
		f := &c.stack[len(c.stack)-1]
		if f.pairs != nil {
			if len(f.pairs) == 0 {
				c.stack = c.stack[:len(c.stack)-1]
				continue
			}
			p := f.pairs[0]
			f.pairs = f.pairs[1:]
			c.stack = append(c.stack, cursorFrame{s: p.k, e: p.end, lo: p.lo, hi: p.hi})
			continue
		}
		for f.lo < f.hi && c.w.maps[f.lo].plo == c.w.maps[f.lo].phi {
			f.lo++
		}
		var chunk []byte
		if f.lo < f.hi {
			m := &c.w.maps[f.lo]
			chunk = c.w.buf[f.s:m.head]
			f.s, f.lo = m.end, m.skip
			c.stack = append(c.stack, cursorFrame{pairs: c.w.pool[m.plo:m.phi]})
		} else {
			chunk = c.w.buf[f.s:f.e]
			c.stack = c.stack[:len(c.stack)-1]
		}
		if len(chunk) > 0 {
			return chunk
		}
	}
	return nil
}

// Float handling. A float is in deterministic form when no shorter IEEE 754
// format represents exactly the same value (RFC 8949 §4.2.1). NaN payloads
// and signs are kept: a NaN shrinks only when its payload survives intact.

// f16Bits returns the binary16 encoding of the binary32 value with bits b,
// and whether it represents exactly the same value.
func f16Bits(b uint32) (uint16, bool) {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN: keep the payload's top 10 bits
		if mant&0x1fff != 0 {
			return 0, false
		}
		return sign | 0x7c00 | uint16(mant>>13), true
	case exp == 0 && mant == 0: // ±0
		return sign, true
	case exp == 0: // binary32 subnormal: far below binary16's range
		return 0, false
	}
	e := exp - 127 // unbiased
	switch {
	case e >= -14 && e <= 15: // binary16 normal
		if mant&0x1fff != 0 {
			return 0, false
		}
		return sign | uint16(e+15)<<10 | uint16(mant>>13), true
	case e >= -24 && e < -14: // binary16 subnormal
		full := mant | 0x800000 // implicit bit
		shift := uint32(-e - 14 + 13)
		if full&(1<<shift-1) != 0 {
			return 0, false
		}
		return sign | uint16(full>>shift), true
	}
	return 0, false
}

// f32Bits returns the binary32 encoding of the binary64 value with bits b,
// and whether it represents exactly the same value.
func f32Bits(b uint64) (uint32, bool) {
	sign := uint32(b>>32) & 0x80000000
	exp := int64(b>>52) & 0x7ff
	mant := b & 0xfffffffffffff
	switch {
	case exp == 0x7ff:
		if mant&0x1fffffff != 0 {
			return 0, false
		}
		return sign | 0x7f800000 | uint32(mant>>29), true
	case exp == 0 && mant == 0:
		return sign, true
	case exp == 0:
		return 0, false
	}
	e := exp - 1023
	switch {
	case e >= -126 && e <= 127:
		if mant&0x1fffffff != 0 {
			return 0, false
		}
		return sign | uint32(e+127)<<23 | uint32(mant>>29), true
	case e >= -149 && e < -126:
		full := mant | 1<<52
		shift := uint64(-e - 126 + 29)
		if full&(1<<shift-1) != 0 {
			return 0, false
		}
		return sign | uint32(full>>shift), true
	}
	return 0, false
}

// floatIsShortest reports whether the float item enc (head included) is in
// its shortest exact form.
func floatIsShortest(enc []byte) bool {
	switch len(enc) {
	case 3:
		return true
	case 5:
		_, ok := f16Bits(binary.BigEndian.Uint32(enc[1:]))
		return !ok
	default:
		_, ok := f32Bits(binary.BigEndian.Uint64(enc[1:]))
		return !ok
	}
}

// appendShortestFloat appends the shortest exact encoding of the float item
// enc (head included).
func appendShortestFloat(dst, enc []byte) []byte {
	switch len(enc) {
	case 5:
		b32 := binary.BigEndian.Uint32(enc[1:])
		if b16, ok := f16Bits(b32); ok {
			return append(dst, 0xf9, byte(b16>>8), byte(b16))
		}
		return append(dst, enc...)
	case 9:
		b32, ok := f32Bits(binary.BigEndian.Uint64(enc[1:]))
		if !ok {
			return append(dst, enc...)
		}
		if b16, ok := f16Bits(b32); ok {
			return append(dst, 0xf9, byte(b16>>8), byte(b16))
		}
		return append(dst, 0xfa, byte(b32>>24), byte(b32>>16), byte(b32>>8), byte(b32))
	}
	return append(dst, enc...)
}

// Codec modes, built once. They are immutable and safe for concurrent use.

var encMode = mustEncMode()

var decMode = mustDecMode()

func mustEncMode() cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	// Keep NaN payloads and infinities exact; Canonical shortens them.
	opts.NaNConvert = cbor.NaNConvertPreserveSignal
	opts.InfConvert = cbor.InfConvertNone
	opts.ShortestFloat = cbor.ShortestFloatNone
	// nil slices and maps are CBOR null; callers that want an empty byte
	// string or map must pass a non-nil empty value.
	m, err := opts.EncMode()
	if err != nil {
		panic("amp: cbor encoder options: " + err.Error())
	}
	return m
}

func mustDecMode() cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		MaxNestedLevels:   maxDepthCeiling,
		MaxArrayElements:  math.MaxInt32,
		MaxMapPairs:       math.MaxInt32,
		UTF8:              cbor.UTF8RejectInvalid,
		ExtraReturnErrors: cbor.ExtraDecErrorNone,
		DefaultMapType:    reflect.TypeOf(map[any]any(nil)),
		IntDec:            cbor.IntDecConvertNone,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		BigIntDec:         cbor.BigIntDecodePointer,
	}.DecMode()
	if err != nil {
		panic("amp: cbor decoder options: " + err.Error())
	}
	return m
}

// Marshal returns the deterministic CBOR encoding of v (RFC 8949 §4.2.1).
// Struct fields use their `cbor` tags; cbor.RawMessage values are embedded
// and canonicalized too, so the result is deterministic whatever v holds.
func Marshal(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, Wrap(CodeInternalError, err, "cannot encode cbor")
	}
	// The encoder sorts keys and shortens heads; Canonical also shortens
	// floats exactly and normalizes any embedded raw values.
	return Limits{MaxMessageSize: math.MaxInt32, MaxDepth: maxDepthCeiling, MaxArrayLen: math.MaxInt32, MaxMapPairs: math.MaxInt32}.Canonical(b)
}

// Unmarshal decodes the single CBOR data item in data into v after checking
// it against l (see Canonical for what is refused). Malformed input is 1001
// invalid_message; a well-formed item of the wrong shape for v is 1001
// wrong_shape. Callers that map shape errors to another code (RFC 004 uses
// 4001) check the name.
func (l Limits) Unmarshal(data []byte, v any) error {
	if _, err := l.Canonical(data); err != nil {
		return err
	}
	if err := decMode.Unmarshal(data, v); err != nil {
		// A nested unmarshaler that already classified its error (RFC 004
		// bodies use 4001) keeps its code and name.
		var inner *Error
		if errors.As(err, &inner) {
			return inner
		}
		return Named(CodeInvalidMessage, "wrong_shape", "cbor item does not have the expected shape").WithCause(err)
	}
	return nil
}

// Unmarshal is DefaultLimits().Unmarshal.
func Unmarshal(data []byte, v any) error { return Limits{}.Unmarshal(data, v) }
