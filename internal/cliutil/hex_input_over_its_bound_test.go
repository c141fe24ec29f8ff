package cliutil

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHexInputOfMoreThanItsBoundIsRefused: ReadInput bounds what it reads
// of hex text at 2·max + 4096 bytes, room for the white space of
// formatted hex, and returned whatever the digits decoded to: packed hex
// digits of up to max + 2048 bytes (2,064 bytes for a bound of 16; 16 MiB
// + 2 KiB for `msg inspect --hex`, 2 KiB past amp.DefaultMaxMessageSize)
// came back where the raw form is refused at max + 1. Expected: the hex
// of more than max bytes is limit_exceeded, from a file and from stdin;
// max bytes, packed or spaced, still read (docs/SPEC-DECISIONS.md,
// CLI-85).
func TestHexInputOfMoreThanItsBoundIsRefused(t *testing.T) {
	const max = 16
	for _, tc := range []struct {
		name string
		in   string
		want int // bytes read; -1: limit_exceeded
	}{
		{"max bytes packed", strings.Repeat("ab", max), max},
		{"max bytes, one a line", strings.Repeat("ab\n", max), max},
		{"one byte over", strings.Repeat("ab", max+1), -1},
		{"2048 bytes over, the slack of the read", strings.Repeat("ab", max+2048), -1},
		{"one byte over, spaced", strings.Repeat("ab ", max+1), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "msg.hex")
			if err := os.WriteFile(p, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			for from, read := range map[string]func() ([]byte, error){
				"file":  func() ([]byte, error) { return ReadInput(&Env{}, p, max, true) },
				"stdin": func() ([]byte, error) { return ReadInput(&Env{Stdin: strings.NewReader(tc.in)}, "-", max, true) },
			} {
				got, err := read()
				switch {
				case tc.want < 0 && (!errors.Is(err, amp.ErrName("limit_exceeded")) || got != nil):
					t.Errorf("%s: got %d bytes, %v; want limit_exceeded", from, len(got), err)
				case tc.want >= 0 && (err != nil || !bytes.Equal(got, bytes.Repeat([]byte{0xab}, tc.want))):
					t.Errorf("%s: got %d bytes, %v; want %d bytes", from, len(got), err, tc.want)
				}
			}
		})
	}
}
