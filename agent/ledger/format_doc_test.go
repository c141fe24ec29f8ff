package ledger

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// docBlock returns the text between two markers of docs/FORMAT.md.
func docBlock(t *testing.T, begin, end string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatalf("docs/FORMAT.md has no %s block", begin)
	}
	return string(doc[a+len(begin) : b])
}

// hexColumn joins the hex words of each line up to its annotation.
func hexColumn(t *testing.T, lines []string) []byte {
	t.Helper()
	var out []byte
	for _, l := range lines {
		for _, w := range strings.Fields(l) {
			b, err := hex.DecodeString(w)
			if err != nil {
				break // the annotation starts
			}
			out = append(out, b...)
		}
	}
	return out
}

// TestFormatDocLedgerEntry: the annotated ledger entry of docs/FORMAT.md
// decodes to what it says, and the store encodes that record to exactly
// those bytes (threat: a second implementation built from the doc reading
// or writing a ledger this one cannot).
func TestFormatDocLedgerEntry(t *testing.T) {
	block := docBlock(t, "<!-- ledger-entry-hex:begin -->", "<!-- ledger-entry-hex:end -->")
	var keyLines, valueLines []string
	cur := &keyLines
	for _, l := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(l, "key:"):
			cur, l = &keyLines, strings.TrimPrefix(l, "key:")
		case strings.HasPrefix(l, "value:"):
			cur, l = &valueLines, strings.TrimPrefix(l, "value:")
		case strings.HasPrefix(l, "```"):
			continue
		}
		*cur = append(*cur, l)
	}
	key, value := hexColumn(t, keyLines), hexColumn(t, valueLines)
	if len(key) == 0 || len(value) == 0 {
		t.Fatal("the example has no key or value bytes")
	}
	k, rec, ok := decodeEntry(key, value)
	if !ok {
		t.Fatal("the example entry is refused as malformed")
	}
	wantID, _ := hex.DecodeString("000001a201ac483ba55da43cfd20eb36")
	if k.Sender != "did:key:z6MkExample" || !bytes.Equal(k.ID[:], wantID) ||
		!rec.Expires.Equal(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) || !bytes.Equal(rec.Reply, []byte{0xa1, 0x01, 0x02}) {
		t.Fatalf("decoded %+v %+v", k, rec)
	}
	if !bytes.Equal(k.bytes(), key) || !bytes.Equal(encodeRecord(stateDone, rec.Expires.UnixMilli(), rec.Reply), value) {
		t.Fatal("the store does not encode the example's record to the example's bytes")
	}
}

// TestFormatDocLedgerWAL: the annotated log of docs/FORMAT.md is byte for
// byte what the store writes for that running-then-done sequence, and
// opened, it replays the reply (threat: a second implementation built
// from the doc writing or reading a log this one cannot).
func TestFormatDocLedgerWAL(t *testing.T) {
	block := docBlock(t, "<!-- ledger-wal-hex:begin -->", "<!-- ledger-wal-hex:end -->")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if !strings.HasPrefix(l, "```") {
			lines = append(lines, l)
		}
	}
	doc := hexColumn(t, lines)
	wantID, _ := hex.DecodeString("000001a201ac483ba55da43cfd20eb36")
	k := Key{Sender: "did:key:z6MkExample"}
	copy(k.ID[:], wantID)
	expires := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return expires.Add(-time.Hour) }

	// The example's group key: the bytes 00 to 0f.
	key := make([]byte, walKeySize)
	for i := range key {
		key[i] = byte(i)
	}
	path := filepath.Join(t.TempDir(), "l.wal")
	s, err := OpenWAL(path, WALOptions{Now: now, Rand: bytes.NewReader(key)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(k, expires); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, []byte{0xa1, 0x01, 0x02}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	written, _ := os.ReadFile(path)
	if len(written) < len(doc) || !bytes.Equal(written[:len(doc)], doc) {
		t.Fatalf("the store writes\n%x\nthe doc shows\n%x", written[:min(len(written), len(doc)+64)], doc)
	}
	// After the log, the writer's reserve (docs/FORMAT.md): zeros only, at
	// most 1 MiB past the last group and the reservation of the entry that
	// was running.
	if tail := written[len(doc):]; int64(len(tail)) > walReserve+s.reservation(k) || bytes.ContainsFunc(tail, func(r rune) bool { return r != 0 }) {
		t.Fatalf("after the log: %d bytes, not all zeros or more than the reserve", len(tail))
	}

	docPath := filepath.Join(t.TempDir(), "doc.wal")
	os.WriteFile(docPath, doc, 0o600)
	s, err = OpenWAL(docPath, WALOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, ok, err := s.Lookup(k)
	if err != nil || !ok || !bytes.Equal(rec.Reply, []byte{0xa1, 0x01, 0x02}) || !rec.Expires.Equal(expires) {
		t.Fatalf("the doc's log replays %+v %v %v", rec, ok, err)
	}
}
