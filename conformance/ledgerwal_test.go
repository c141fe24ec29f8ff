package conformance

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// The idempotency ledger write-ahead log of docs/FORMAT.md ("Idempotency
// ledger write-ahead log"), format version 2, read with code of this file
// alone.
const (
	walHeader    = "ampbundle-ledger-wal/2\n" // 23 bytes
	walKeyLen    = 16
	walKeyCRC    = len(walHeader) + walKeyLen // offset of the key's checksum
	walStart     = walKeyCRC + 4              // the first group's offset
	walGroupHead = 4 + 8 + 4 + 4 + 8          // length seq payload-crc header-crc tag
	walMinLength = 32
	walReserve   = 1 << 20 // the writer's reserve of zeros
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errWALCorrupt is the document's ledger_corrupt: a group that does not
// check with an intact group after it.
var errWALCorrupt = errors.New("ledger_corrupt")

var (
	errWALHeadCut = errors.New("group header cut short")
	errWALShort   = fmt.Errorf("length < %d", walMinLength)
)

type walRecord struct {
	typ     byte // 1 running, 2 done
	expires int64
	sender  string
	id      [16]byte
	reply   []byte
}

type walGroup struct {
	off, end int
	seq      uint64
	records  []walRecord
}

// walLog is what a reader keeps of a file: its key, the groups that check
// in order, where they end, and why the group at end (if any) did not
// check.
type walLog struct {
	key    []byte
	groups []walGroup
	end    int
	tail   error // nil when the file ends exactly at end
}

func walTag(key, head20 []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(head20)
	return m.Sum(nil)[:8]
}

// walHeadAt checks the group header at off in the document's order: the
// length, then the header checksum, then the tag; then the payload
// checksum. It returns the group's end and sequence number.
func walHeadAt(b, key []byte, off int) (end int, seq uint64, err error) {
	if len(b)-off < walGroupHead {
		return 0, 0, errWALHeadCut
	}
	h := b[off : off+walGroupHead]
	length := binary.BigEndian.Uint32(h[0:4])
	if length < walMinLength {
		return 0, 0, errWALShort // no fmt: this runs at every byte of a reserve
	}
	if uint64(length) > uint64(len(b)-off-walGroupHead) {
		return 0, 0, fmt.Errorf("length %d runs past the end of the file", length)
	}
	if crc32.Checksum(h[0:16], castagnoli) != binary.BigEndian.Uint32(h[16:20]) {
		return 0, 0, errors.New("header checksum")
	}
	if !hmac.Equal(walTag(key, h[0:20]), h[20:28]) {
		return 0, 0, errors.New("tag")
	}
	end = off + walGroupHead + int(length)
	if crc32.Checksum(b[off+walGroupHead:end], castagnoli) != binary.BigEndian.Uint32(h[12:16]) {
		return 0, 0, errors.New("payload checksum")
	}
	return end, binary.BigEndian.Uint64(h[4:12]), nil
}

// walRecordsCheck reports whether a payload's records check (part of
// what makes a group intact).
func walRecordsCheck(p []byte) bool {
	_, err := walRecords(p)
	return err == nil
}

// walRecords decodes a payload: one or more records filling it exactly.
func walRecords(p []byte) ([]walRecord, error) {
	var out []walRecord
	for len(p) > 0 {
		if len(p) < 1+8+2 {
			return nil, errors.New("record cut before its sender")
		}
		r := walRecord{typ: p[0], expires: int64(binary.BigEndian.Uint64(p[1:9]))}
		sl := int(binary.BigEndian.Uint16(p[9:11]))
		p = p[11:]
		if sl == 0 {
			return nil, errors.New("sender-len 0")
		}
		if len(p) < sl+16+4 {
			return nil, errors.New("sender-len overruns the payload")
		}
		r.sender = string(p[:sl])
		copy(r.id[:], p[sl:sl+16])
		rl := binary.BigEndian.Uint32(p[sl+16 : sl+20])
		p = p[sl+20:]
		if uint64(rl) > uint64(len(p)) {
			return nil, errors.New("reply-len overruns the payload")
		}
		r.reply = p[:rl]
		p = p[rl:]
		switch {
		case r.typ == 1 && rl != 0:
			return nil, errors.New("running record with a reply")
		case r.typ != 1 && r.typ != 2:
			return nil, fmt.Errorf("record type %d", r.typ)
		}
		out = append(out, r)
	}
	return out, nil
}

// readWAL reads a version 2 log as the document's Reading and Damage rules
// say. Groups are read in order until one does not check (length, header
// checksum, tag, sequence number, payload checksum or records); the log ends
// there. If an intact group (header, tag and payload checksum) starts
// anywhere after that group's first byte, the file is refused
// (errWALCorrupt); otherwise the rest is a torn tail or the reserve, and
// l.end is where a reader truncates.
func readWAL(b []byte) (l walLog, err error) {
	if len(b) < len(walHeader) || string(b[:len(walHeader)]) != walHeader {
		return l, errors.New("not an ampbundle-ledger-wal/2 file")
	}
	if len(b) < walStart {
		return l, errors.New("key cut short")
	}
	// The key's checksum: a damaged key would fail every tag and make the
	// whole log a torn tail, so the file is refused instead.
	if crc32.Checksum(b[:walKeyCRC], castagnoli) != binary.BigEndian.Uint32(b[walKeyCRC:walStart]) {
		return l, fmt.Errorf("%w: the key's checksum does not check", errWALCorrupt)
	}
	l.key = b[len(walHeader):walKeyCRC]
	off := walStart
	for off < len(b) {
		end, seq, err := walHeadAt(b, l.key, off)
		var recs []walRecord
		if err == nil && len(l.groups) > 0 && seq != l.groups[len(l.groups)-1].seq+1 {
			err = fmt.Errorf("seq %d after %d", seq, l.groups[len(l.groups)-1].seq)
		}
		if err == nil {
			recs, err = walRecords(b[off+walGroupHead : end])
		}
		if err != nil {
			l.end, l.tail = off, fmt.Errorf("group at %d: %v", off, err)
			for p := off + 1; p < len(b); p++ {
				if e, _, err := walHeadAt(b, l.key, p); err == nil && walRecordsCheck(b[p+walGroupHead:e]) {
					return l, fmt.Errorf("%w: %v, and an intact group starts at %d", errWALCorrupt, l.tail, p)
				}
			}
			return l, nil
		}
		l.groups = append(l.groups, walGroup{off: off, end: end, seq: seq, records: recs})
		off = end
	}
	l.end = off
	return l, nil
}

// verifyWAL is readWAL for a file its writer closed cleanly: every group
// checks and only zeros follow the last one (the writer's reserve, whose
// length depends on the reservations of the entries running when it was
// written, which the file does not say: docs/FORMAT.md).
func verifyWAL(b []byte) (walLog, error) {
	l, err := readWAL(b)
	if err != nil {
		return l, err
	}
	if i := bytes.IndexFunc(b[l.end:], func(r rune) bool { return r != 0 }); i >= 0 {
		return l, fmt.Errorf("a non-zero byte at %d after the log's end %d (%v)", l.end+i, l.end, l.tail)
	}
	return l, nil
}

// walReservation is the disk the writer reserves for the reply of an
// entry of sender while it runs (docs/FORMAT.md): a group holding its done
// record with the largest reply, which `ampagent serve` sets to 256 KiB.
func walReservation(sender string) int {
	return walGroupHead + 31 + len(sender) + 256<<10
}

// walReseal rewrites the payload checksum, header checksum and tag of the
// group at off (its length and seq as they are now), so that a tampering
// reaches the checks behind them.
func walReseal(b, key []byte, off int) {
	length := int(binary.BigEndian.Uint32(b[off:]))
	binary.BigEndian.PutUint32(b[off+12:], crc32.Checksum(b[off+walGroupHead:off+walGroupHead+length], castagnoli))
	binary.BigEndian.PutUint32(b[off+16:], crc32.Checksum(b[off:off+16], castagnoli))
	copy(b[off+20:off+28], walTag(key, b[off:off+20]))
}

// walGroupBytes writes a group of payload with the given seq, as the
// document's grammar says.
func walGroupBytes(key []byte, seq uint64, payload []byte) []byte {
	g := make([]byte, walGroupHead, walGroupHead+len(payload))
	binary.BigEndian.PutUint32(g[0:], uint32(len(payload)))
	binary.BigEndian.PutUint64(g[4:], seq)
	g = append(g, payload...)
	walReseal(g, key, 0)
	return g
}

// docAnnotatedHex returns the bytes of an annotated hex block of
// docs/FORMAT.md: the first field of each line is hex, the rest a comment.
func docAnnotatedHex(t *testing.T, doc, name string) []byte {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- "+name+":begin -->")
	block, _, ok2 := strings.Cut(rest, "<!-- "+name+":end -->")
	if !ok || !ok2 {
		t.Fatalf("docs/FORMAT.md has no %s block", name)
	}
	var out []byte
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "```") {
			continue
		}
		b, err := hex.DecodeString(f[0])
		if err != nil {
			t.Fatalf("%s: line %q: %v", name, line, err)
		}
		out = append(out, b...)
	}
	return out
}

// checkWALTamperings runs the reader on tampered copies of a log that
// verifies (at least two groups): each must fail verifyWAL, and readWAL
// must call it corrupt (damage before an intact group) or torn at the
// damaged group (damage in the last group), as the document's Damage rules
// say.
func checkWALTamperings(t *testing.T, what string, file []byte, l walLog) {
	t.Helper()
	if len(l.groups) < 2 {
		t.Fatalf("%s: %d groups, need 2", what, len(l.groups))
	}
	g0, g1, last := l.groups[0], l.groups[1], l.groups[len(l.groups)-1]
	type tc struct {
		name   string
		tamper func(b []byte) []byte
		torn   int // the offset readWAL must truncate at; 0: errWALCorrupt
	}
	flip := func(off int, bit byte) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= bit; return b }
	}
	tornIfLast := func(g walGroup) int {
		if g.off == last.off {
			return g.off
		}
		return 0
	}
	cases := []tc{
		// A damaged key (its checksum fails) is refused, never read as a
		// torn tail of the whole log.
		{"key bit", flip(len(walHeader)+5, 0x10), 0},
		{"key checksum bit", flip(walKeyCRC+1, 0x01), 0},
		{"tag bit of group 1", flip(g0.off+20, 0x01), 0},
		{"payload bit of group 1", flip(g0.off+walGroupHead+1, 0x80), 0},
		{"seq bit of group 1 (header checksum)", flip(g0.off+11, 0x01), 0},
		{"length of group 1", flip(g0.off+3, 0x01), 0},
		{"header checksum of group 1, tag resealed", func(b []byte) []byte {
			b[g0.off+17] ^= 0x01
			copy(b[g0.off+20:g0.off+28], walTag(l.key, b[g0.off:g0.off+20]))
			return b
		}, 0},
		{"length 31 of group 1, resealed", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[g0.off:], walMinLength-1)
			walReseal(b, l.key, g0.off)
			return b
		}, 0},
		{"reply-len overrunning the payload in group 1, resealed", func(b []byte) []byte {
			p := b[g0.off+walGroupHead : g0.end]
			at := 11 + int(binary.BigEndian.Uint16(p[9:11])) + 16
			binary.BigEndian.PutUint32(p[at:], binary.BigEndian.Uint32(p[at:])+uint32(len(p)))
			walReseal(b, l.key, g0.off)
			return b
		}, 0},
		{"record type 3 in group 1, resealed", func(b []byte) []byte {
			b[g0.off+walGroupHead] = 3
			walReseal(b, l.key, g0.off)
			return b
		}, 0},
		{"sender-len 0 in group 1, resealed", func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[g0.off+walGroupHead+9:], 0)
			walReseal(b, l.key, g0.off)
			return b
		}, 0},
		{"seq gap at group 2, resealed", func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[g1.off+4:], g1.seq+1)
			walReseal(b, l.key, g1.off)
			return b
		}, tornIfLast(g1)},
		{"tag bit of the last group", flip(last.off+27, 0x40), last.off},
		{"payload bit of the last group", flip(last.end-1, 0x01), last.off},
		// Zeros over the last group from its middle on: a torn write.
		{"last group cut mid-payload, zeros after", func(b []byte) []byte {
			clear(b[last.off+walGroupHead+(last.end-last.off-walGroupHead)/2:])
			return b
		}, last.off},
		{"last group cut mid-header, zeros after", func(b []byte) []byte {
			clear(b[last.off+10:])
			return b
		}, last.off},
		// Junk after the log is a torn tail too (the Damage rules), but not
		// a clean file.
		{"junk after the log", func(b []byte) []byte {
			return append(b[:l.end:l.end], "junk"...)
		}, l.end},
		// A wrong key whose checksum is made to match: no group's tag
		// checks, no intact group follows the first, and the whole log
		// reads as a torn tail (a damaged key, whose checksum fails, is
		// refused: see the corrupt cases).
		{"wrong key, checksum made to match", func(b []byte) []byte {
			b[len(walHeader)+5] ^= 0x10
			binary.BigEndian.PutUint32(b[walKeyCRC:walStart], crc32.Checksum(b[:walKeyCRC], castagnoli))
			return b
		}, walStart},
	}
	// The last group replaced by one of a record with sender-len 0, well
	// formed otherwise (and a payload of 32 bytes, the minimum length).
	cases = append(cases, tc{"sender-len 0 in the last group, rebuilt", func(b []byte) []byte {
		r := last.records[0]
		p := []byte{2} // done, with a 1-byte reply
		p = binary.BigEndian.AppendUint64(p, uint64(r.expires))
		p = binary.BigEndian.AppendUint16(p, 0)
		p = append(p, r.id[:]...)
		p = binary.BigEndian.AppendUint32(p, 1)
		p = append(p, 0xa0)
		return append(b[:last.off:last.off], walGroupBytes(l.key, last.seq, p)...)
	}, last.off})
	// The last group shortened to length 31 (resealed: only the length
	// rule refuses it as an intact group), the group before it damaged:
	// no intact group follows the damage, so it is a torn tail.
	prev := l.groups[len(l.groups)-2]
	cases = append(cases, tc{"length 31 in the last group, tag of the one before flipped", func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[last.off:], walMinLength-1)
		walReseal(b, l.key, last.off)
		b[prev.off+21] ^= 0x01
		return b
	}, prev.off})
	// A done record made running: a running record with a reply.
	for _, g := range l.groups {
		if g.records[0].typ == 2 && len(g.records[0].reply) > 0 {
			cases = append(cases, tc{fmt.Sprintf("running record with a reply at %d, resealed", g.off), func(b []byte) []byte {
				b[g.off+walGroupHead] = 1
				walReseal(b, l.key, g.off)
				return b
			}, tornIfLast(g)})
			break
		}
	}
	if len(l.groups) >= 3 {
		// A group missing: the next one's seq is 2 more than its
		// predecessor's.
		torn := 0
		if len(l.groups) == 3 {
			torn = g1.off
		}
		cases = append(cases, tc{"group 2 removed (a seq gap)", func(b []byte) []byte {
			return append(b[:g1.off:g1.off], b[g1.end:]...)
		}, torn})
	}
	for _, c := range cases {
		b := c.tamper(bytes.Clone(file))
		if _, err := verifyWAL(b); err == nil {
			t.Errorf("%s: %s: verifies", what, c.name)
		}
		got, err := readWAL(b)
		switch {
		case c.torn == 0 && !errors.Is(err, errWALCorrupt):
			t.Errorf("%s: %s: %v, want %v", what, c.name, err, errWALCorrupt)
		case c.torn != 0 && (err != nil || got.end != c.torn):
			t.Errorf("%s: %s: err %v, log end %d, want a torn tail at %d", what, c.name, err, got.end, c.torn)
		case c.torn != 0:
			// What is kept is the groups before the damage, unchanged.
			for i, g := range got.groups {
				if g.off != l.groups[i].off || g.seq != l.groups[i].seq {
					t.Errorf("%s: %s: group %d at %d seq %d", what, c.name, i+1, g.off, g.seq)
				}
			}
		}
	}
	for _, h := range []string{"ampbundle-ledger-wal/1\n", "ampbundle-ledger-wal/3\n"} {
		b := append([]byte(h), file[len(walHeader):]...)
		if _, err := readWAL(b); err == nil {
			t.Errorf("%s: read as version 2 under the header %q", what, h)
		}
	}
	refusesEveryFlip(t, what, file, func(b []byte) error { _, err := verifyWAL(b); return err })
}

// TestLedgerWALMatchesFormatDoc reads the documented example log and a log
// the real `ampagent serve` wrote with a reader of this file, written from
// docs/FORMAT.md ("Idempotency ledger write-ahead log") alone, then checks
// that tampered and torn copies are told apart as the Damage rules say, by
// this reader and by the agent.
func TestLedgerWALMatchesFormatDoc(t *testing.T) {
	raw, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("DocExample", func(t *testing.T) { checkWALDocExample(t, string(raw)) })
	t.Run("Agent", checkWALFromAgent)
}

func checkWALDocExample(t *testing.T, doc string) {
	ex := docAnnotatedHex(t, doc, "ledger-wal-hex")
	l, err := verifyWAL(ex)
	if err != nil {
		t.Fatalf("the example: %v", err)
	}
	wantKey, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	if len(ex) != 202 || len(l.groups) != 2 || l.end != 202 || !bytes.Equal(l.key, wantKey) {
		t.Fatalf("the example: %d bytes, %d groups, log end %d, key %x", len(ex), len(l.groups), l.end, l.key)
	}
	id, _ := hex.DecodeString("000001a201ac483ba55da43cfd20eb36")
	exp := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC).UnixMilli()
	want := []struct {
		len   int
		seq   uint64
		typ   byte
		reply string
	}{{50, 1, 1, ""}, {53, 2, 2, "a10102"}}
	for i, g := range l.groups {
		w := want[i]
		if g.end-g.off-walGroupHead != w.len || g.seq != w.seq || len(g.records) != 1 {
			t.Fatalf("example group %d: length %d, seq %d, %d records", i+1, g.end-g.off-walGroupHead, g.seq, len(g.records))
		}
		r := g.records[0]
		if r.typ != w.typ || r.expires != exp || exp != 1795348800000 || r.sender != "did:key:z6MkExample" ||
			!bytes.Equal(r.id[:], id) || hex.EncodeToString(r.reply) != w.reply {
			t.Fatalf("example group %d: record %+v", i+1, r)
		}
	}
	// The annotated values, spelled out in the block: the two tags.
	if hex.EncodeToString(ex[walStart+20:walStart+28]) != "7cc6e64b842f7212" || hex.EncodeToString(ex[l.groups[1].off+20:l.groups[1].off+28]) != "4a08c590d0bc2c01" {
		t.Fatal("the example's tags moved")
	}
	// The example with the reserve the prose describes: zeros up to 1 MiB
	// past the end of the first group and its entry's reservation.
	withReserve := append(bytes.Clone(ex), make([]byte, l.groups[0].end+walReservation("did:key:z6MkExample")+walReserve-len(ex))...)
	if wl, err := verifyWAL(withReserve); err != nil || len(wl.groups) != 2 || wl.end != 202 {
		t.Fatalf("the example with its reserve: %v", err)
	}
	withReserve[len(withReserve)-1] = 1
	if _, err := verifyWAL(withReserve); err == nil {
		t.Fatal("a reserve that is not all zeros verifies")
	}
	checkWALTamperings(t, "example", ex, l)
}

// buildAmpagent builds cmd/ampagent as buildCLI builds cmd/ampbundle.
func buildAmpagent(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "ampagent")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ampagent")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// walAgent is an `ampagent serve --json` process started by this test.
type walAgent struct {
	url, did string
	stop     func() (code int, stderr string)
}

// ledgerEntries returns the ledger_entries of the agent's /healthz.
func (a *walAgent) ledgerEntries(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(a.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Entries *int `json:"ledger_entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Entries == nil {
		t.Fatalf("/healthz: %v, no ledger_entries", err)
	}
	return *h.Entries
}

// startWALAgent starts serve and waits for its first JSON document. It
// returns the running agent, or, when serve refused to start, nil and its
// error code.
func startWALAgent(t *testing.T, bin string, args ...string) (*walAgent, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--json", "--listen", "127.0.0.1:0"}, args...)...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	docs := make(chan json.RawMessage, 1)
	go func() {
		var d json.RawMessage
		dec := json.NewDecoder(pr)
		if dec.Decode(&d) != nil {
			d = nil
		}
		docs <- d
		io.Copy(io.Discard, io.MultiReader(dec.Buffered(), pr))
		pr.Close()
	}()
	kill := func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}
	var doc struct {
		Listening string `json:"listening"`
		DID       string `json:"did"`
		Error     struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	select {
	case d := <-docs:
		json.Unmarshal(d, &doc)
	case <-time.After(60 * time.Second):
		kill()
		t.Fatalf("serve printed nothing in 60 s: %s", stderr.String())
	}
	if doc.Listening == "" {
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			kill()
			t.Fatalf("serve printed no listening document (%q) and did not exit", doc.Error.Code)
		}
		if doc.Error.Code == "" {
			t.Fatalf("serve exited %d without an error document: %s", cmd.ProcessState.ExitCode(), stderr.String())
		}
		return nil, doc.Error.Code
	}
	t.Cleanup(kill)
	a := &walAgent{url: doc.Listening, did: doc.DID}
	a.stop = func() (int, string) {
		t.Helper()
		// At once: once serve printed its listening document, a SIGTERM
		// is a graceful stop (docs/CLI.md).
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			kill()
			t.Fatalf("serve did not stop on SIGTERM: %s", stderr.String())
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	return a, ""
}

func checkWALFromAgent(t *testing.T) {
	bundle, agent := buildCLI(t), buildAmpagent(t)
	run, runAgent := runner(t, bundle), runner(t, agent)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	samples := filepath.Join("..", "testdata", "bundles")

	// A store that trusts the sample publisher and holds the translate
	// sample, the sample agent key, and a caller of our own.
	db := p("store.db")
	run("trust", "add", filepath.Join(samples, "keys", "TEST-ONLY-example-publisher.pub.pem"), "--db", db, "--name", "example", "--scope", "org.example")
	run("import", filepath.Join(samples, "translate.ampb"), "--db", db)
	key := p("agent.pem")
	if err := os.WriteFile(key, readFile(t, filepath.Join(samples, "keys", "TEST-ONLY-translator-agent.key.pem")), 0o600); err != nil {
		t.Fatal(err)
	}
	var kg struct{ DID string }
	if err := json.Unmarshal([]byte(runAgent("keygen", "-o", p("caller.pem"), "--json")), &kg); err != nil || kg.DID == "" {
		t.Fatalf("keygen: %v", err)
	}
	cfg, _ := json.Marshal(map[string]any{"handlers": map[string]any{
		"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/sh", "-c",
			`cat >/dev/null; printf '{"text":"bonjour","detected_source":"en"}'`}}}})
	if err := os.WriteFile(p("config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	serveArgs := []string{"--db", db, "--key", key, "--config", p("config.json"), "--allow", kg.DID + "=org.example"}

	start := time.Now()
	a, code := startWALAgent(t, agent, serveArgs...)
	if a == nil {
		t.Fatalf("serve refused to start: %s", code)
	}
	type invoked struct {
		RequestID string `json:"request_id"`
		ReplyID   string `json:"reply_id"`
		Status    string `json:"status"`
	}
	var calls []invoked
	for _, text := range []string{"hello", "good morning"} {
		var out invoked
		params := `{"text":"` + text + `","target":"fr"}`
		if err := json.Unmarshal([]byte(runAgent("invoke", a.url, "--key", p("caller.pem"), "--to", a.did,
			"--id", "org.example.translate.text:2.1.0", "--params", params, "--json")), &out); err != nil || out.Status != "success" {
			t.Fatalf("invoke: %v %+v", err, out)
		}
		calls = append(calls, out)
	}
	if code, stderr := a.stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, stderr)
	}
	stopped := time.Now()

	wal := db + ".ledger.wal"
	file := readFile(t, wal)
	l, err := verifyWAL(file)
	if err != nil {
		t.Fatalf("%s: %v", wal, err)
	}
	if bytes.Equal(l.key, make([]byte, walKeyLen)) {
		t.Error("the file's key is all zeros, not drawn at random")
	}
	// A new file: its first group (a running record) passed the end of the
	// file, which was extended to 1 MiB past that group's end and its
	// entry's reservation; the later groups fit.
	if len(file) != l.groups[0].end+walReservation(kg.DID)+walReserve || l.end > len(file) {
		t.Errorf("file of %d bytes, first group ends at %d: not the reserve the document describes", len(file), l.groups[0].end)
	}
	if _, err := os.Stat(wal + ".lock"); err != nil {
		t.Errorf("no lock file beside the log: %v", err)
	}
	if _, err := os.Stat(wal + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a compaction file is left: %v", err)
	}
	var recs []walRecord
	for _, g := range l.groups {
		recs = append(recs, g.records...)
	}
	t.Logf("%s: %d bytes, log %d bytes, %d groups, %d records, reserve %d bytes", filepath.Base(wal), len(file), l.end, len(l.groups), len(recs), len(file)-l.end)
	// Only invocations that ran a handler are written: each is a running
	// record, then a done record of the same sender and id, in file order.
	if len(recs) != 2*len(calls) {
		t.Fatalf("%d records for %d invocations", len(recs), len(calls))
	}
	for i, c := range calls {
		running, done := recs[2*i], recs[2*i+1]
		if running.typ != 1 || done.typ != 2 || len(running.reply) != 0 || len(done.reply) == 0 {
			t.Fatalf("invocation %d: records of types %d and %d, reply %d bytes", i+1, running.typ, done.typ, len(done.reply))
		}
		for _, r := range []walRecord{running, done} {
			if r.sender != kg.DID || !utf8.ValidString(r.sender) || hex.EncodeToString(r.id[:]) != c.RequestID {
				t.Fatalf("invocation %d: record of sender %q id %x, want %s %s", i+1, r.sender, r.id, kg.DID, c.RequestID)
			}
			// ts + ttl + skew: after the message was made, and within the
			// longest ttl the agent accepts (7 days) plus a day.
			if e := time.UnixMilli(r.expires); e.Before(start) || e.After(stopped.Add(8*24*time.Hour)) {
				t.Fatalf("invocation %d: expiry %v", i+1, e)
			}
		}
		// The reply is the exact signed CAP_RESULT sent: the agent's own
		// tools read it back as that message.
		rf := p(fmt.Sprintf("reply%d.cbor", i+1))
		if err := os.WriteFile(rf, done.reply, 0o644); err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID      string `json:"id"`
			ReplyTo string `json:"reply_to"`
			From    string `json:"from"`
			To      string `json:"to"`
			TypName string `json:"typ_name"`
		}
		mi := runAgent("msg", "inspect", rf, "--json")
		if err := json.Unmarshal([]byte(mi), &m); err != nil {
			t.Fatal(err)
		}
		if m.ID != c.ReplyID || m.ReplyTo != c.RequestID || m.From != a.did || m.To != kg.DID || m.TypName != "CAP_RESULT" {
			t.Fatalf("invocation %d: the recorded reply is %s", i+1, mi)
		}
		runAgent("msg", "verify", rf, "--json")
	}
	checkWALTamperings(t, "ampagent log", file, l)

	// The agent reads damaged copies as the Damage rules say: a torn tail is
	// truncated at its first byte; damage before an intact group is refused
	// with ledger_corrupt, and the file left as it was.
	last := l.groups[len(l.groups)-1]
	torn := bytes.Clone(file)
	clear(torn[last.off+walGroupHead+4:])
	corrupt := bytes.Clone(file)
	corrupt[l.groups[0].off+walGroupHead+1] ^= 0x80
	wrongKey := bytes.Clone(file)
	wrongKey[len(walHeader)+5] ^= 0x10
	for _, c := range []struct {
		name string
		b    []byte
		want string // "": starts
		end  int    // with want "": the file's length after the agent ran
	}{
		{"torn", torn, "", last.off},
		{"corrupt", corrupt, "ledger_corrupt", 0},
		// The reserve and junk after the log are truncated like a torn
		// group.
		{"clean", file, "", l.end},
		{"junk", append(bytes.Clone(file[:l.end]), "junk"...), "", l.end},
		// A damaged key: its checksum fails, the file is refused and left
		// as it was (every group's tag would fail: read as a torn tail,
		// the whole log would be dropped).
		{"damaged key", wrongKey, "ledger_corrupt", 0},
	} {
		f := p(strings.ReplaceAll(c.name, " ", "-") + ".ledger.wal")
		if err := os.WriteFile(f, c.b, 0o600); err != nil {
			t.Fatal(err)
		}
		a, code := startWALAgent(t, agent, append(serveArgs, "--ledger", f)...)
		if a != nil {
			// Reading: each record replaces what the log said before
			// about its (sender, id); the agent holds one entry per key.
			kept, _ := readWAL(c.b)
			keys := map[string]bool{}
			for _, g := range kept.groups {
				for _, r := range g.records {
					keys[r.sender+"\x00"+string(r.id[:])] = true
				}
			}
			if n := a.ledgerEntries(t); n != len(keys) {
				t.Errorf("%s copy: the agent holds %d entries, the records read %d", c.name, n, len(keys))
			}
			if code, stderr := a.stop(); code != 0 {
				t.Fatalf("%s: serve exited %d: %s", c.name, code, stderr)
			}
		}
		after := readFile(t, f)
		switch {
		case code != c.want:
			t.Errorf("%s copy: serve says %q, the Damage rules %q", c.name, code, c.want)
		case c.want != "" && !bytes.Equal(after, c.b):
			t.Errorf("%s copy: the refused file was changed", c.name)
		case c.want == "" && (len(after) != c.end || !bytes.Equal(after, c.b[:c.end])):
			t.Errorf("%s copy: %d bytes after the agent read it, want the %d bytes before the torn group", c.name, len(after), c.end)
		}
	}
}
