package amp

import (
	"encoding/binary"
	"io"
	"math"
)

// The strict CBOR head reader of the project. Every package that walks CBOR
// bytes by hand (bundle item 0 from a file, capability bodies field by
// field, JSON-model values for schema validation, AMP messages) reads heads
// here, so that the rules below hold in one place:
//
//   - additional information 28-30 (reserved) is refused;
//   - 31 (indefinite length, or a break code) is refused;
//   - a one-byte simple value below 32 is refused (RFC 8949 §3.3: not
//     well-formed);
//   - every length is checked against what remains before anything is read
//     or allocated for it.
//
// Whether the head is in its shortest form is reported in Head.Minimal; a
// caller that requires deterministic encoding refuses a non-minimal head
// (Limits.Canonical rewrites it). Duplicate map keys, UTF-8 and the caps on
// counts and nesting are checked by Limits.Canonical, which every peer input
// goes through first.

// CBOR major types (RFC 8949 §3.1).
const (
	MajorUint   byte = 0
	MajorNegint byte = 1
	MajorBytes  byte = 2
	MajorText   byte = 3
	MajorArray  byte = 4
	MajorMap    byte = 5
	MajorTag    byte = 6
	MajorSimple byte = 7 // floats and simple values
)

// Error names of the strict reader (all code 1001).
const (
	// ErrTruncated: the input ends inside an item.
	ErrTruncated ErrName = "truncated"
	// ErrLimitExceeded: an item is larger than the caller's cap.
	ErrLimitExceeded ErrName = "limit_exceeded"
	// ErrTooDeep: an item nests deeper than the caller's cap (ReadItem).
	ErrTooDeep ErrName = "too_deep"
	// ErrIndefiniteLength: an indefinite-length item.
	ErrIndefiniteLength ErrName = "indefinite_length"
)

// Head is the head of one CBOR data item (RFC 8949 §3): the initial byte
// and the argument that follows it.
type Head struct {
	// Major is the major type (MajorUint ... MajorSimple).
	Major byte
	// Info is the additional information: the low 5 bits of the initial
	// byte (0-27; 28-31 are refused by the reader).
	Info byte
	// Arg is the argument: the value, length, count, tag number, or the
	// float bits for major type 7 with Info 25-27.
	Arg uint64
	// Size is the number of bytes the head takes (1, 2, 3, 5 or 9).
	Size int
	// Minimal reports whether Arg is encoded in its shortest form. A
	// one-byte simple value (Info 24) counts as minimal; floats are always
	// reported minimal here (their shortest form depends on the value).
	Minimal bool
}

func errTruncated() *Error {
	return Named(CodeInvalidMessage, ErrTruncated, "cbor input is truncated")
}

// headFrom completes the head whose initial byte is b from the argument
// bytes in arg (the bytes after the initial byte; at least what the
// additional information asks for must be there, else truncated).
func headFrom(b byte, rest []byte) (Head, error) {
	h := Head{Major: b >> 5, Info: b & 0x1f}
	switch {
	case h.Info < 24:
		h.Arg, h.Size, h.Minimal = uint64(h.Info), 1, true
	case h.Info == 24:
		if len(rest) < 1 {
			return Head{}, errTruncated()
		}
		h.Arg, h.Size = uint64(rest[0]), 2
		h.Minimal = h.Arg >= 24
	case h.Info == 25:
		if len(rest) < 2 {
			return Head{}, errTruncated()
		}
		h.Arg, h.Size = uint64(binary.BigEndian.Uint16(rest)), 3
		h.Minimal = h.Arg > math.MaxUint8
	case h.Info == 26:
		if len(rest) < 4 {
			return Head{}, errTruncated()
		}
		h.Arg, h.Size = uint64(binary.BigEndian.Uint32(rest)), 5
		h.Minimal = h.Arg > math.MaxUint16
	case h.Info == 27:
		if len(rest) < 8 {
			return Head{}, errTruncated()
		}
		h.Arg, h.Size = binary.BigEndian.Uint64(rest), 9
		h.Minimal = h.Arg > math.MaxUint32
	case h.Info == 31:
		if h.Major == MajorSimple {
			return Head{}, NewError(CodeInvalidMessage, "unexpected cbor break code")
		}
		return Head{}, Named(CodeInvalidMessage, ErrIndefiniteLength, "indefinite-length cbor items are not accepted")
	default:
		return Head{}, NewError(CodeInvalidMessage, "reserved cbor additional information %d", h.Info)
	}
	if h.Major == MajorSimple {
		switch h.Info {
		case 24:
			// RFC 8949 §3.3: a one-byte simple value below 32 is not
			// well-formed.
			if h.Arg < 32 {
				return Head{}, NewError(CodeInvalidMessage, "ill-formed cbor simple value")
			}
			h.Minimal = true
		case 25, 26, 27:
			h.Minimal = true
		}
	}
	return h, nil
}

// ReadHead decodes the head of the item at data[off:] under the rules of
// this file. Errors are 1001 invalid_message (ErrTruncated when data ends
// inside the head).
func ReadHead(data []byte, off int) (Head, error) {
	if off < 0 || off >= len(data) {
		return Head{}, errTruncated()
	}
	// Fast path for the commonest heads, the argument in the initial byte
	// itself: always minimal, never reserved (what headFrom decides too).
	if b := data[off]; b&0x1f < 24 {
		return Head{Major: b >> 5, Info: b & 0x1f, Arg: uint64(b & 0x1f), Size: 1, Minimal: true}, nil
	}
	return headFrom(data[off], data[off+1:])
}

// ReadHeadFrom reads one head from r under the same rules as ReadHead. It
// returns io.EOF, unwrapped, when r ends before the first byte, and
// ErrTruncated when it ends inside the head.
func ReadHeadFrom(r io.ByteReader) (Head, error) {
	b, err := r.ReadByte()
	if err != nil {
		return Head{}, err
	}
	var buf [8]byte
	n := 0
	switch info := b & 0x1f; {
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	}
	for i := 0; i < n; i++ {
		c, err := r.ReadByte()
		if err != nil {
			if err == io.EOF {
				return Head{}, errTruncated()
			}
			return Head{}, err
		}
		buf[i] = c
	}
	return headFrom(b, buf[:n])
}

// AppendTo appends the head to dst exactly as it was read (same width,
// minimal or not).
func (h Head) AppendTo(dst []byte) []byte {
	dst = append(dst, h.Major<<5|h.Info)
	switch h.Size {
	case 2:
		return append(dst, byte(h.Arg))
	case 3:
		return append(dst, byte(h.Arg>>8), byte(h.Arg))
	case 5:
		return append(dst, byte(h.Arg>>24), byte(h.Arg>>16), byte(h.Arg>>8), byte(h.Arg))
	case 9:
		return binary.BigEndian.AppendUint64(dst, h.Arg)
	}
	return dst
}

// AppendHead appends the shortest head for (major, arg) to dst.
func AppendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= math.MaxUint8:
		return append(dst, m|24, byte(arg))
	case arg <= math.MaxUint16:
		return append(dst, m|25, byte(arg>>8), byte(arg))
	case arg <= math.MaxUint32:
		return append(dst, m|26, byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
	}
	return append(dst, m|27, byte(arg>>56), byte(arg>>48), byte(arg>>40), byte(arg>>32),
		byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
}

// SkipItem returns the offset just after the complete item at data[off:].
// It follows the structure only (heads under the rules of ReadHead, lengths
// against what remains, nesting at most 1024 deep); it does not check UTF-8,
// minimal encoding or duplicate keys, which Limits.Canonical does for any
// input a peer controls.
func SkipItem(data []byte, off int) (int, error) {
	return skipItem(data, off, 0)
}

func skipItem(data []byte, off, depth int) (int, error) {
	h, err := ReadHead(data, off)
	if err != nil {
		return 0, err
	}
	off += h.Size
	switch h.Major {
	case MajorBytes, MajorText:
		if h.Arg > uint64(len(data)-off) {
			return 0, errTruncated()
		}
		return off + int(h.Arg), nil
	case MajorArray, MajorMap, MajorTag:
		if depth >= maxDepthCeiling {
			return 0, Named(CodeInvalidMessage, ErrTooDeep, "cbor nesting is deeper than %d", maxDepthCeiling)
		}
		n := h.Arg
		switch h.Major {
		case MajorMap:
			if n > uint64(len(data)-off)/2 {
				return 0, errTruncated()
			}
			n *= 2
		case MajorTag:
			n = 1
		}
		// Every item takes at least one byte.
		if n > uint64(len(data)-off) {
			return 0, errTruncated()
		}
		for i := uint64(0); i < n; i++ {
			if off, err = skipItem(data, off, depth+1); err != nil {
				return 0, err
			}
		}
		return off, nil
	}
	return off, nil
}

// ItemSource is what ReadItem reads from; *bufio.Reader is one.
type ItemSource interface {
	io.Reader
	io.ByteReader
}

// ReadItem reads exactly one complete data item from r and returns its
// bytes as read, at most maxSize bytes in all and nested at most maxDepth
// deep (arrays, maps and tags each count one level). Heads follow the rules
// of ReadHead; every length is checked against the remaining budget before
// anything is read or allocated for it, so a hostile length costs nothing.
//
// Errors: io.EOF (unwrapped) when r ends before the first byte; 1001
// ErrTruncated when it ends inside the item; ErrLimitExceeded over maxSize;
// ErrTooDeep over maxDepth; other 1001 errors for refused heads. An error of
// r itself is returned as is.
func ReadItem(r ItemSource, maxSize int64, maxDepth int) ([]byte, error) {
	ir := itemReader{r: r, remaining: maxSize, max: maxSize, maxDepth: maxDepth}
	if err := ir.walk(0); err != nil {
		return nil, err
	}
	return ir.out, nil
}

// readChunk is the most ReadItem allocates ahead of the bytes it has read.
const readChunk = 64 << 10

type itemReader struct {
	r         ItemSource
	out       []byte
	remaining int64
	max       int64
	maxDepth  int
}

func (ir *itemReader) tooLarge() *Error {
	return Named(CodeInvalidMessage, ErrLimitExceeded, "cbor item is larger than %d bytes", ir.max)
}

func (ir *itemReader) walk(depth int) error {
	if depth > ir.maxDepth || depth > maxDepthCeiling {
		return Named(CodeInvalidMessage, ErrTooDeep, "cbor item nests deeper than %d", ir.maxDepth)
	}
	h, err := ReadHeadFrom(ir.r)
	if err != nil {
		if err == io.EOF && depth > 0 {
			return errTruncated()
		}
		return err
	}
	if ir.remaining -= int64(h.Size); ir.remaining < 0 {
		return ir.tooLarge()
	}
	ir.out = h.AppendTo(ir.out)
	switch h.Major {
	case MajorBytes, MajorText:
		if h.Arg > uint64(ir.remaining) {
			return ir.tooLarge()
		}
		ir.remaining -= int64(h.Arg)
		// Read in chunks, so that a length the input does not back costs
		// no more memory than the bytes actually there.
		for need := h.Arg; need > 0; {
			chunk := min(need, readChunk)
			n := len(ir.out)
			ir.out = append(ir.out, make([]byte, chunk)...)
			if _, err := io.ReadFull(ir.r, ir.out[n:]); err != nil {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					return errTruncated()
				}
				return err
			}
			need -= chunk
		}
	case MajorArray, MajorMap, MajorTag:
		n := h.Arg
		switch h.Major {
		case MajorMap:
			if n > uint64(ir.remaining)/2 {
				return ir.tooLarge()
			}
			n *= 2
		case MajorTag:
			n = 1
		}
		// Every item takes at least one byte.
		if n > uint64(ir.remaining) {
			return ir.tooLarge()
		}
		for i := uint64(0); i < n; i++ {
			if err := ir.walk(depth + 1); err != nil {
				return err
			}
		}
	}
	return nil
}
