package amphttp

import (
	"bytes"
	"testing"
	"testing/iotest"
)

// TestReplyLengthIsNotTrusted: the Content-Length an agent declares only
// sizes the client's buffer; a reply longer or shorter than declared is
// read as it is, and one over the cap is seen as over it (max+1 bytes
// read, never more) whatever length was declared.
func TestReplyLengthIsNotTrusted(t *testing.T) {
	const max = 1000
	for _, c := range []struct {
		name     string
		body     int
		declared int64
		want     int
	}{
		{"as declared", 700, 700, 700},
		{"longer than declared", 900, 10, 900},
		{"shorter than declared", 10, 900, 10},
		{"no length", 900, -1, 900},
		{"over the cap, declared small", 5000, 10, max + 1},
		{"over the cap, declared large", 5000, 1 << 40, max + 1},
		{"empty", 0, 0, 0},
	} {
		body := bytes.Repeat([]byte{7}, c.body)
		got, err := readReply(iotest.HalfReader(bytes.NewReader(body)), c.declared, max)
		if err != nil || len(got) != c.want || !bytes.Equal(got, body[:c.want]) {
			t.Errorf("%s: read %d bytes (%v), want %d", c.name, len(got), err, c.want)
		}
	}
}
