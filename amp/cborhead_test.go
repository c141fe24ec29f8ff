package amp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	return mustHex(t, strings.ReplaceAll(s, " ", ""))
}

// headCases are heads the strict reader must refuse or accept exactly.
var headCases = []struct {
	name    string
	hex     string
	err     ErrName // "" = accepted
	major   byte
	arg     uint64
	size    int
	minimal bool
}{
	{name: "tiny uint", hex: "17", major: MajorUint, arg: 23, size: 1, minimal: true},
	{name: "one-byte uint", hex: "18 18", major: MajorUint, arg: 24, size: 2, minimal: true},
	{name: "non-minimal one-byte uint", hex: "18 17", major: MajorUint, arg: 23, size: 2},
	{name: "non-minimal two-byte length", hex: "59 00ff", major: MajorBytes, arg: 255, size: 3},
	{name: "eight-byte map count", hex: "bb 0000000100000000", major: MajorMap, arg: 1 << 32, size: 9, minimal: true},
	{name: "float16 is minimal here", hex: "f9 0000", major: MajorSimple, arg: 0, size: 3, minimal: true},
	{name: "one-byte simple value 32", hex: "f8 20", major: MajorSimple, arg: 32, size: 2, minimal: true},
	{name: "indefinite array smuggled", hex: "9f", err: ErrIndefiniteLength},
	{name: "indefinite text smuggled", hex: "7f", err: ErrIndefiniteLength},
	{name: "break code outside an indefinite item", hex: "ff", err: "invalid_message"},
	{name: "reserved additional information 28", hex: "1c", err: "invalid_message"},
	{name: "reserved additional information 30", hex: "5e", err: "invalid_message"},
	{name: "ill-formed one-byte simple value", hex: "f8 10", err: "invalid_message"},
	{name: "head truncated after initial byte", hex: "19 01", err: ErrTruncated},
	{name: "eight-byte head truncated", hex: "1b 00000000", err: ErrTruncated},
	{name: "empty input", hex: "", err: ErrTruncated},
}

func TestReadHeadRefusesNonStrictHeads(t *testing.T) {
	for _, c := range headCases {
		t.Run(c.name, func(t *testing.T) {
			data := hexBytes(t, c.hex)
			h, err := ReadHead(data, 0)
			hf, errf := ReadHeadFrom(bufio.NewReader(bytes.NewReader(data)))
			if c.err != "" {
				if !errors.Is(err, c.err) {
					t.Fatalf("ReadHead error = %v, want %s", err, c.err)
				}
				if len(data) == 0 {
					if errf != io.EOF {
						t.Fatalf("ReadHeadFrom on empty input = %v, want io.EOF", errf)
					}
					return
				}
				if !errors.Is(errf, c.err) {
					t.Fatalf("ReadHeadFrom error = %v, want %s", errf, c.err)
				}
				return
			}
			if err != nil || errf != nil {
				t.Fatalf("refused: %v / %v", err, errf)
			}
			if h != hf {
				t.Fatalf("ReadHead %+v and ReadHeadFrom %+v disagree", h, hf)
			}
			if h.Major != c.major || h.Arg != c.arg || h.Size != c.size || h.Minimal != c.minimal {
				t.Fatalf("head = %+v", h)
			}
			if got := h.AppendTo(nil); !bytes.Equal(got, data[:h.Size]) {
				t.Fatalf("AppendTo = %x, want %x", got, data[:h.Size])
			}
		})
	}
}

func TestReadItemBoundsHostileLengths(t *testing.T) {
	deep := bytes.Repeat([]byte{0x81}, 17)
	deep = append(deep, 0x00)
	for _, c := range []struct {
		name     string
		hex      string
		data     []byte
		maxSize  int64
		maxDepth int
		err      ErrName
	}{
		{name: "whole item within budget", hex: "a2 6161 01 6162 82 01 02", maxSize: 64, maxDepth: 4},
		{name: "tagged item", hex: "d8 62 44 01020304", maxSize: 64, maxDepth: 4},
		{name: "byte string length over budget", hex: "5b 0000000100000000", maxSize: 64, maxDepth: 4, err: ErrLimitExceeded},
		{name: "map count over budget", hex: "bb 7fffffffffffffff", maxSize: 64, maxDepth: 4, err: ErrLimitExceeded},
		{name: "array count over budget", hex: "9a 00010000", maxSize: 64, maxDepth: 4, err: ErrLimitExceeded},
		{name: "length backed by nothing", hex: "5a 00010000 00", maxSize: 1 << 20, maxDepth: 4, err: ErrTruncated},
		{name: "ends inside an array", hex: "83 01 02", maxSize: 64, maxDepth: 4, err: ErrTruncated},
		{name: "nested deeper than the cap", data: deep, maxSize: 64, maxDepth: 16, err: ErrTooDeep},
		{name: "indefinite map inside", hex: "81 bf", maxSize: 64, maxDepth: 4, err: ErrIndefiniteLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := c.data
			if data == nil {
				data = hexBytes(t, c.hex)
			}
			got, err := ReadItem(bufio.NewReader(bytes.NewReader(data)), c.maxSize, c.maxDepth)
			end, serr := SkipItem(data, 0)
			if c.err != "" {
				if !errors.Is(err, c.err) {
					t.Fatalf("ReadItem error = %v, want %s", err, c.err)
				}
				return
			}
			if err != nil || serr != nil {
				t.Fatalf("refused: %v / %v", err, serr)
			}
			if !bytes.Equal(got, data) || end != len(data) {
				t.Fatalf("ReadItem = %x (SkipItem end %d), want %x", got, end, data)
			}
		})
	}
	if _, err := ReadItem(bufio.NewReader(bytes.NewReader(nil)), 64, 4); err != io.EOF {
		t.Fatalf("ReadItem on empty input = %v, want io.EOF", err)
	}
}

// FuzzReadHead: the slice and stream readers agree on every input, never
// panic, and an accepted head re-encodes to the bytes it was read from.
func FuzzReadHead(f *testing.F) {
	for _, c := range headCases {
		f.Add(hexBytes(f, c.hex))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHead(data, 0)
		hf, errf := ReadHeadFrom(bytes.NewReader(data))
		if (err == nil) != (errf == nil) {
			t.Fatalf("ReadHead %v, ReadHeadFrom %v", err, errf)
		}
		if err != nil {
			if len(data) > 0 {
				checkAMPError(t, err)
			}
			return
		}
		if h != hf {
			t.Fatalf("ReadHead %+v, ReadHeadFrom %+v", h, hf)
		}
		if !bytes.Equal(h.AppendTo(nil), data[:h.Size]) {
			t.Fatalf("AppendTo does not reproduce %x", data[:h.Size])
		}
		if h.Minimal && h.Major != MajorSimple && !bytes.Equal(AppendHead(nil, h.Major, h.Arg), data[:h.Size]) {
			t.Fatalf("minimal head %x is not the shortest", data[:h.Size])
		}
	})
}

// FuzzReadItem: ReadItem from a stream and SkipItem over a slice agree on
// where the first item ends, and everything Canonical accepts is read whole.
func FuzzReadItem(f *testing.F) {
	for _, m := range seedMessages(f) {
		f.Add(m)
	}
	f.Add(hexBytes(f, "5b 0000000100000000"))
	f.Add(hexBytes(f, "9f 01 ff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxSize = 1 << 20
		item, err := ReadItem(bufio.NewReader(bytes.NewReader(data)), maxSize, 1024)
		end, serr := SkipItem(data, 0)
		if err == nil {
			if serr != nil || !bytes.Equal(item, data[:end]) {
				t.Fatalf("ReadItem read %d bytes, SkipItem %d (%v)", len(item), end, serr)
			}
		} else if serr == nil && len(data) <= maxSize && !errors.Is(err, ErrTooDeep) {
			t.Fatalf("ReadItem refused (%v) what SkipItem walked", err)
		}
		if _, cerr := (Limits{}).Canonical(data); cerr == nil && (err != nil || len(item) != len(data)) {
			t.Fatalf("Canonical accepts what ReadItem refuses: %v", err)
		}
	})
}

// TestReadHeadFastPathIsTheStrictReader: ReadHead answers heads whose
// argument sits in the initial byte without the general reader. A fast
// path that accepted what the strict reader refuses (or read another
// argument) would let one byte mean two things; so for every initial
// byte, with every possible continuation length, both must agree.
func TestReadHeadFastPathIsTheStrictReader(t *testing.T) {
	for b := 0; b < 256; b++ {
		for _, rest := range [][]byte{nil, {0x18}, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}} {
			data := append([]byte{byte(b)}, rest...)
			got, gerr := ReadHead(data, 0)
			want, werr := headFrom(byte(b), rest)
			if (gerr == nil) != (werr == nil) || NameOf(gerr) != NameOf(werr) || got != want {
				t.Fatalf("initial byte %#02x: ReadHead %+v (%v), strict reader %+v (%v)", b, got, gerr, want, werr)
			}
		}
	}
}
