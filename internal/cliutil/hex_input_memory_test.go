package cliutil

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestHexInputOfOneDigitAWordCostsAboutItsSize
//
// Attack: a message file handed to 'msg inspect --hex' or 'msg verify
// --hex' (a peer's, from a shared folder) is hex digits each followed by
// a space: "0 0 0 …". The reader split the text into words
// (strings.Fields) and joined them: a 16-byte string header a word, 256
// MiB of headers for the 32 MiB --hex allows, 312 MiB allocated in all,
// ten times the input.
//
// Defence: white space is dropped in place; reading such an input
// allocates about what reading packed hex text of its size does.
func TestHexInputOfOneDigitAWordCostsAboutItsSize(t *testing.T) {
	const max = 1 << 20
	// What reading hex text costs, spaced one digit a word and packed,
	// in the same run: the spaced text may cost about what its size
	// costs packed (the reads grow a buffer to the file's size either
	// way), not ten times it.
	read := func(in []byte, want int) uint64 {
		p := filepath.Join(t.TempDir(), "msg.hex")
		if err := os.WriteFile(p, in, 0o600); err != nil {
			t.Fatal(err)
		}
		var out []byte
		var err error
		a := testalloc.Least(func() { out, err = ReadInput(&Env{}, p, max, true) })
		if err != nil || len(out) != want {
			t.Fatalf("got %d bytes, %v; want %d", len(out), err, want)
		}
		return a
	}
	spaced := bytes.Repeat([]byte("0 "), max) // 2 MiB of text, 1 MiB of digits
	packed := bytes.Repeat([]byte("00"), max) // the same size, no space
	got, base := read(spaced, max/2), read(packed, max)
	if got > 2*base+uint64(len(spaced)) {
		t.Fatalf("reading %d bytes of spaced hex allocated %d bytes, %d packed: more than twice plus its size", len(spaced), got, base)
	}
}

// TestHexInputReadsAsFieldsJoined: the white space dropped is the white
// space strings.Fields split at, ASCII and Unicode, and nothing else.
func TestHexInputReadsAsFieldsJoined(t *testing.T) {
	for _, in := range []string{
		"0a0b", "0a 0b\n", "\t0a\r\n0b\v\f", "0a\u00850b", "0a\u00a00b", "0a\u20000b\u3000",
		"0a\u200b0b", "0a\xff0b", "0a0", "zz", "", " \n ",
	} {
		want, wantErr := hex.DecodeString(strings.Join(strings.Fields(in), ""))
		if wantErr != nil {
			want = nil // what was decoded before the error is not returned
		}
		p := filepath.Join(t.TempDir(), "msg.hex")
		if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadInput(&Env{}, p, 1<<10, true)
		if (wantErr != nil) != (err != nil) || !bytes.Equal(got, want) {
			t.Errorf("%q: got %x, %v; want %x, %v", in, got, err, want, wantErr)
		}
		if err != nil && !errors.Is(err, amp.ErrName("invalid_hex")) {
			t.Errorf("%q: %v, want invalid_hex", in, err)
		}
	}
}
