package conformance

// The mirror's heartbeats (docs/FORMAT.md §11, §11.1, §23; docs/CLI.md
// §2.15, §2.16), from both sides: a mirror client of this package reads
// what the real `ampbundle serve` lists and serves, and a mirror server of
// this package offers heartbeats, honest and lying, to the real
// `ampbundle sync`.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	mhbContentType  = "application/ampbundle-heartbeat+cbor"
	mhbImmutable    = "public, max-age=31536000, immutable"
	mhbMaxEntries   = 10000
	mhbMaxFileBytes = 65536
)

// mhbEntry is one entry of the index's `heartbeats` list (§11.1).
type mhbEntry struct {
	BundleID  string `json:"bundle_id"`
	Version   uint64 `json:"version"`
	CreatedAt string `json:"created_at"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Href      string `json:"href"`
}

// mhbEntryOf is the honest entry of a heartbeat file.
func mhbEntryOf(line string, version uint64, created string, file []byte) mhbEntry {
	h := hex.EncodeToString(sha256Of(file))
	return mhbEntry{BundleID: line, Version: version, CreatedAt: created, Size: int64(len(file)), SHA256: h, Href: "/statements/" + h}
}

// mhbValidBundleID is rule 2 of §3.1: at least two labels joined by ".",
// each 1-63 bytes of [a-z0-9-] not starting or ending with "-", at most 255
// bytes.
func mhbValidBundleID(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if len(l) < 1 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// mhbValidTime is the one timestamp form of §3: RFC 3339, UTC, whole
// seconds, "Z", and a real date.
func mhbValidTime(s string) bool {
	if !isTimestamp(s) {
		return false
	}
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

func mhbIsLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// mhbMembers decodes a JSON object into its members, case-sensitively, the
// last of a member given twice counting (§11.1).
func mhbMembers(raw []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	return m, nil
}

func mhbMember(m map[string]json.RawMessage, k string, v any) error {
	raw, ok := m[k]
	if !ok {
		return fmt.Errorf("no %q", k)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %w", k, err)
	}
	return nil
}

// mhbIndex is what mhbReadIndex kept of an index.
type mhbIndex struct {
	generation uint64
	bundles    []string // bundle_ids of the `bundles` list, in order
	heartbeats []mhbEntry
}

// mhbReadIndex reads /index.json as a reader of §11.1 does, with every rule
// it states for the `heartbeats` list (and the few `bundles` rules needed to
// know which lines the index serves); any breach is bad_index.
func mhbReadIndex(raw []byte) (*mhbIndex, error) {
	top, err := mhbMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("bad_index: %w", err)
	}
	var format string
	if err := mhbMember(top, "format", &format); err != nil || format != "ampbundle-mirror-index/1" {
		return nil, fmt.Errorf("bad_index: format %q %v", format, err)
	}
	out := &mhbIndex{}
	if err := mhbMember(top, "generation", &out.generation); err != nil {
		return nil, fmt.Errorf("bad_index: %w", err)
	}
	var bundles []json.RawMessage
	if err := mhbMember(top, "bundles", &bundles); err != nil || len(bundles) > mhbMaxEntries {
		return nil, fmt.Errorf("bad_index: bundles (%d) %v", len(bundles), err)
	}
	seenB := map[string]bool{}
	for i, b := range bundles {
		m, err := mhbMembers(b)
		if err != nil {
			return nil, fmt.Errorf("bad_index: bundle %d: %w", i, err)
		}
		var id, href string
		if mhbMember(m, "bundle_id", &id) != nil || !mhbValidBundleID(id) || seenB[id] ||
			mhbMember(m, "href", &href) != nil || href != "/bundles/"+id {
			return nil, fmt.Errorf("bad_index: bundle entry %d", i)
		}
		seenB[id] = true
		out.bundles = append(out.bundles, id)
	}
	raws, ok := top["heartbeats"]
	if !ok {
		return out, nil // an older mirror lists none
	}
	var hbs []json.RawMessage
	if err := json.Unmarshal(raws, &hbs); err != nil {
		return nil, fmt.Errorf("bad_index: heartbeats: %w", err)
	}
	if len(hbs) > mhbMaxEntries {
		return nil, fmt.Errorf("bad_index: %d heartbeats, over %d", len(hbs), mhbMaxEntries)
	}
	seenID, seenSHA := map[string]bool{}, map[string]bool{}
	for i, h := range hbs {
		m, err := mhbMembers(h)
		if err != nil {
			return nil, fmt.Errorf("bad_index: heartbeat %d: %w", i, err)
		}
		var e mhbEntry
		for k, v := range map[string]any{"bundle_id": &e.BundleID, "version": &e.Version, "created_at": &e.CreatedAt,
			"size": &e.Size, "sha256": &e.SHA256, "href": &e.Href} {
			if err := mhbMember(m, k, v); err != nil {
				return nil, fmt.Errorf("bad_index: heartbeat %d: %w", i, err)
			}
		}
		switch {
		case !mhbValidBundleID(e.BundleID):
			return nil, fmt.Errorf("bad_index: heartbeat %d: bundle_id %q", i, e.BundleID)
		case seenID[e.BundleID]:
			return nil, fmt.Errorf("bad_index: heartbeat %d: bundle_id %q listed twice", i, e.BundleID)
		case e.Version < 1:
			return nil, fmt.Errorf("bad_index: heartbeat %d: version under 1", i)
		case !mhbValidTime(e.CreatedAt):
			return nil, fmt.Errorf("bad_index: heartbeat %d: created_at %q", i, e.CreatedAt)
		case !mhbIsLowerHex64(e.SHA256):
			return nil, fmt.Errorf("bad_index: heartbeat %d: sha256 %q", i, e.SHA256)
		case seenSHA[e.SHA256]:
			return nil, fmt.Errorf("bad_index: heartbeat %d: sha256 listed twice", i)
		case e.Size < 1 || e.Size > mhbMaxFileBytes:
			return nil, fmt.Errorf("bad_index: heartbeat %d: size %d", i, e.Size)
		case e.Href != "/statements/"+e.SHA256:
			return nil, fmt.Errorf("bad_index: heartbeat %d: href %q", i, e.Href)
		}
		seenID[e.BundleID], seenSHA[e.SHA256] = true, true
		out.heartbeats = append(out.heartbeats, e)
	}
	return out, nil
}

// mhbCheckMirrorOrder is the order §11.1 asks of a mirror: first the
// heartbeats of the lines whose bundle the index lists, then the others,
// each group by bundle_id in byte order.
func mhbCheckMirrorOrder(ix *mhbIndex) error {
	listed := map[string]bool{}
	for _, b := range ix.bundles {
		listed[b] = true
	}
	var ids []string
	for _, e := range ix.heartbeats {
		ids = append(ids, e.BundleID)
	}
	want := append([]string{}, ids...)
	sort.SliceStable(want, func(i, j int) bool {
		if listed[want[i]] != listed[want[j]] {
			return listed[want[i]]
		}
		return want[i] < want[j]
	})
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		return fmt.Errorf("heartbeats listed as %v, the document's order is %v", ids, want)
	}
	return nil
}

// mhbCheckServedFile checks one heartbeat file as served at its entry's href:
// the headers of §11, the entry's size and SHA-256, the one COSE_Sign item
// of §2/§20 with the heartbeat content type, the closed payload of §23 naming
// the entry's bundle_id, version and created_at, and a verified signature
// by publisher.
func mhbCheckServedFile(e mhbEntry, hdr http.Header, body []byte, publisher string) error {
	if ct := hdr.Get("Content-Type"); ct != mhbContentType {
		return fmt.Errorf("content type %q", ct)
	}
	if cc := hdr.Get("Cache-Control"); cc != mhbImmutable {
		return fmt.Errorf("cache-control %q", cc)
	}
	if et := hdr.Get("ETag"); et != `"sha-256:`+e.SHA256+`"` {
		return fmt.Errorf("etag %q", et)
	}
	return mhbCheckFile(e, body, publisher)
}

// mhbCheckFile is mhbCheckServedFile without the headers.
func mhbCheckFile(e mhbEntry, body []byte, publisher string) error {
	if int64(len(body)) != e.Size || len(body) > mhbMaxFileBytes {
		return fmt.Errorf("size %d, the entry says %d", len(body), e.Size)
	}
	if hex.EncodeToString(sha256Of(body)) != e.SHA256 {
		return errors.New("sha-256 is not the entry's")
	}
	item, err := readSingleItem(body)
	if err != nil {
		return err
	}
	cs, err := checkCOSESign(item, mhbContentType)
	if err != nil {
		return err
	}
	m, err := payloadMap(cs.payload, []string{"format", "bundle_id", "version", "created_at"}, nil)
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	id, _ := m["bundle_id"].(string)
	ver, _ := m["version"].(uint64)
	created, _ := m["created_at"].(string)
	if m["format"] != "ampbundle-heartbeat/1" || !mhbValidBundleID(id) || ver < 1 || !mhbValidTime(created) {
		return fmt.Errorf("payload fields %v", m)
	}
	if id != e.BundleID || ver != e.Version || created != e.CreatedAt {
		return fmt.Errorf("payload %s@%d %s, the entry says %s@%d %s", id, ver, created, e.BundleID, e.Version, e.CreatedAt)
	}
	for _, k := range cs.kids {
		if k == publisher {
			return nil
		}
	}
	return fmt.Errorf("not signed by %s (signers %v)", publisher, cs.kids)
}

// mhbServe starts `ampbundle serve` on a free loopback port and returns its
// URL and printed generation; it is stopped with SIGTERM at the end of the
// test and must then exit 0 (docs/CLI.md §2.15).
func mhbServe(t *testing.T, bin, db string) (string, uint64) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--db", db, "--listen", "127.0.0.1:0", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ampbundle serve after SIGTERM: %v (docs/CLI.md §2.15: exit 0)\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("ampbundle serve did not stop on SIGTERM")
		}
	}
	t.Cleanup(stop)
	// One JSON document on stdout (docs/CLI.md §1.2: indented).
	var hello struct {
		Listening  string  `json:"listening"`
		Generation *uint64 `json:"generation"`
	}
	got := make(chan error, 1)
	go func() { got <- json.NewDecoder(stdout).Decode(&hello) }()
	select {
	case err = <-got:
	case <-time.After(60 * time.Second):
		stop()
		t.Fatalf("ampbundle serve printed nothing in 60s\n%s", stderr.String())
	}
	if err != nil || !strings.HasPrefix(hello.Listening, "http://127.0.0.1:") || hello.Generation == nil {
		stop()
		t.Fatalf("ampbundle serve --json: %v %+v; docs/CLI.md §2.15 says {\"listening\":URL,\"generation\":G}\n%s", err, hello, stderr.String())
	}
	return hello.Listening, *hello.Generation
}

// mhbClient dials only the given server: no proxy, no redirects.
var mhbClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func mhbFetch(t *testing.T, method, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := mhbClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, body
}

// mhbMutateIndex decodes an index, lets f change it and encodes it again.
func mhbMutateIndex(t *testing.T, raw []byte, f func(ix map[string]any, hbs []any) []any) []byte {
	t.Helper()
	var ix map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&ix); err != nil {
		t.Fatal(err)
	}
	hbs, _ := ix["heartbeats"].([]any)
	ix["heartbeats"] = f(ix, hbs)
	out, err := json.Marshal(ix)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mhbCopyEntry is a shallow copy of a decoded index entry.
func mhbCopyEntry(e any) map[string]any {
	c := map[string]any{}
	for k, v := range e.(map[string]any) {
		c[k] = v
	}
	return c
}

// TestMirrorServesHeartbeatsAsTheDocSays covers the threat of a mirror that
// lists or serves heartbeats a client cannot check against the document —
// an entry that lies about the file, the wrong file for a line, a heartbeat
// its own store no longer counts, a line pushed out of order, or bytes
// another implementation would not accept — by reading what the real
// `ampbundle serve` lists in /index.json and serves at /statements/{sha256}
// with a client of this package, from docs/FORMAT.md §11, §11.1 and §23
// alone. Every check is then shown to refuse a lying entry or a tampered
// file.
func TestMirrorServesHeartbeatsAsTheDocSays(t *testing.T) {
	bin := buildCLI(t)
	run := runner(t, bin)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	pub := didOf(t, run("keygen", "-o", p("pub.pem"), "--pub", p("pub.pub")))
	stranger := didOf(t, run("keygen", "-o", p("stranger.pem"), "--pub", p("stranger.pub")))
	run("keygen", "-o", p("gone.pem"), "--pub", p("gone.pub"))
	src := filepath.Join("..", "testdata", "bundles", "translate")
	run("build", src, "-o", p("v1.ampb"), "--key", p("pub.pem"), "--created", "2026-11-01T00:00:00Z")
	db := p("mirror.db")
	run("trust", "add", p("pub.pub"), "--db", db, "--name", "publisher", "--scope", "org.example")
	run("trust", "add", p("gone.pub"), "--db", db, "--name", "gone", "--scope", "org.example.gone")
	run("import", p("v1.ampb"), "--db", db)
	hb := func(name, line string, version uint64, created, key string) []byte {
		run("heartbeat", "-o", p(name), "--bundle-id", line, "--version", fmt.Sprint(version), "--key", p(key), "--created", created)
		return readFile(t, p(name))
	}
	const line = "org.example.translate"
	t2 := hb("t2.cbor", line, 2, "2026-11-10T00:00:00Z", "pub.pem")
	t3 := hb("t3.cbor", line, 3, "2026-11-20T00:00:00Z", "pub.pem")
	aaa := hb("aaa.cbor", "org.example.aaa", 5, "2026-11-21T00:00:00Z", "pub.pem") // a line not installed
	gone := hb("gone.cbor", "org.example.gone", 1, "2026-11-21T00:00:00Z", "gone.pem")
	strange := hb("strange.cbor", line, 3, "2026-11-20T00:00:00Z", "stranger.pem")
	for _, f := range []string{"t2.cbor", "t3.cbor", "aaa.cbor", "gone.cbor"} {
		run("import", p(f), "--db", db)
	}
	// The gone line's heartbeat is kept but no longer counts: its only
	// signer is not trusted any more (§11.1: a mirror lists only one that
	// counts).
	run("trust", "rm", "gone", "--db", db)

	url, generation := mhbServe(t, bin, db)
	resp, raw := mhbFetch(t, "GET", url+"/index.json", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/index.json: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ix, err := mhbReadIndex(raw)
	if err != nil {
		t.Fatalf("the index ampbundle serve wrote breaks §11.1: %v\n%s", err, raw)
	}
	if err := mhbCheckMirrorOrder(ix); err != nil {
		t.Fatalf("§11.1 order: %v", err)
	}
	if ix.generation != generation {
		t.Errorf("index generation %d, serve printed %d for the same snapshot", ix.generation, generation)
	}
	if strings.Join(ix.bundles, ",") != line {
		t.Fatalf("index bundles %v, want the installed %s", ix.bundles, line)
	}
	// Exactly the kept heartbeat of each line that counts, the one the
	// store applied byte for byte: t3 (not t2, replaced), aaa (a line not
	// installed comes after the served lines), not gone.
	want := []mhbEntry{
		mhbEntryOf(line, 3, "2026-11-20T00:00:00Z", t3),
		mhbEntryOf("org.example.aaa", 5, "2026-11-21T00:00:00Z", aaa),
	}
	if fmt.Sprint(ix.heartbeats) != fmt.Sprint(want) {
		t.Fatalf("index heartbeats\n%+v\nwant (§11.1: the kept one per line that counts, listed lines first)\n%+v", ix.heartbeats, want)
	}
	t.Logf("serve %s (generation %d) lists %d heartbeats: %+v", url, generation, len(ix.heartbeats), ix.heartbeats)
	// The replaced and the no-longer-counting files are not served at all.
	for _, f := range [][]byte{t2, gone} {
		r, body := mhbFetch(t, "GET", url+"/statements/"+hex.EncodeToString(sha256Of(f)), nil)
		if r.StatusCode != 404 || !bytes.Contains(body, []byte(`"not_found"`)) {
			t.Errorf("a heartbeat the index does not list is served: %d %s", r.StatusCode, body)
		}
	}

	// Each listed file, as served.
	for _, e := range ix.heartbeats {
		r, body := mhbFetch(t, "GET", url+e.Href, nil)
		if r.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", e.Href, r.StatusCode, body)
		}
		if err := mhbCheckServedFile(e, r.Header, body, pub); err != nil {
			t.Fatalf("GET %s: %v", e.Href, err)
		}
		// §11: HEAD answers as GET without the body; If-None-Match gives 304.
		h, hbody := mhbFetch(t, "HEAD", url+e.Href, nil)
		if h.StatusCode != 200 || len(hbody) != 0 || h.Header.Get("Content-Length") != fmt.Sprint(e.Size) ||
			h.Header.Get("ETag") != r.Header.Get("ETag") || h.Header.Get("Content-Type") != mhbContentType {
			t.Errorf("HEAD %s: %d, %d body bytes, headers %v", e.Href, h.StatusCode, len(hbody), h.Header)
		}
		if c, _ := mhbFetch(t, "GET", url+e.Href, map[string]string{"If-None-Match": r.Header.Get("ETag")}); c.StatusCode != 304 {
			t.Errorf("GET %s with If-None-Match of its ETag: %d, §11 says 304", e.Href, c.StatusCode)
		}

		// The same checks refuse a lying entry, other headers and any
		// tampered byte.
		lies := map[string]func(*mhbEntry, http.Header){
			"VersionAbove":     func(e *mhbEntry, _ http.Header) { e.Version++ },
			"VersionBelow":     func(e *mhbEntry, _ http.Header) { e.Version-- },
			"OtherCreatedAt":   func(e *mhbEntry, _ http.Header) { e.CreatedAt = "2026-11-20T00:00:01Z" },
			"OtherLine":        func(e *mhbEntry, _ http.Header) { e.BundleID = "org.example.other" },
			"OtherSize":        func(e *mhbEntry, _ http.Header) { e.Size++ },
			"OtherSHA256":      func(e *mhbEntry, _ http.Header) { e.SHA256 = hex.EncodeToString(sha256Of(t2)) },
			"TrustContentType": func(_ *mhbEntry, h http.Header) { h.Set("Content-Type", "application/ampbundle-trust+cbor") },
			"NotImmutable":     func(_ *mhbEntry, h http.Header) { h.Set("Cache-Control", "no-cache") },
			"WeakETag":         func(_ *mhbEntry, h http.Header) { h.Set("ETag", "W/"+h.Get("ETag")) },
		}
		for name, lie := range lies {
			le, lh := e, r.Header.Clone()
			lie(&le, lh)
			if mhbCheckServedFile(le, lh, body, pub) == nil {
				t.Errorf("%s: a lying entry or header (%s) is accepted", e.BundleID, name)
			}
		}
		if mhbCheckServedFile(e, r.Header, body, stranger) == nil {
			t.Errorf("%s: accepted as signed by a key that did not sign it", e.BundleID)
		}
		// Flips against the entry (the SHA-256 catches them) and against
		// an entry rewritten for the flipped bytes (the COSE, the payload
		// and the signature must catch them).
		refusesEveryFlip(t, "served heartbeat "+e.BundleID, body, func(b []byte) error { return mhbCheckFile(e, b, pub) })
		refusesEveryFlip(t, "heartbeat "+e.BundleID+" under a rewritten entry", body, func(b []byte) error {
			le := e
			le.Size, le.SHA256 = int64(len(b)), hex.EncodeToString(sha256Of(b))
			return mhbCheckFile(le, b, pub)
		})
	}

	// A heartbeat written by this package from §23 alone is the CLI's
	// byte for byte (Ed25519 is deterministic); one that breaks §23 is
	// refused by the checker even under an entry written for it.
	key := loadKey(t, p("pub.pem"))
	fields := func(extra map[string]any, drop string) map[string]any {
		m := map[string]any{"format": "ampbundle-heartbeat/1", "bundle_id": line, "version": uint64(3), "created_at": "2026-11-20T00:00:00Z"}
		for k, v := range extra {
			m[k] = v
		}
		delete(m, drop)
		return m
	}
	mine := statementFile(t, mhbContentType, fields(nil, ""), key)
	if !bytes.Equal(mine, t3) {
		t.Fatalf("a heartbeat written from §23 differs from the CLI's:\n%x\n%x", mine, t3)
	}
	entryFor := func(b []byte) mhbEntry { return mhbEntryOf(line, 3, "2026-11-20T00:00:00Z", b) }
	if err := mhbCheckFile(entryFor(mine), mine, pub); err != nil {
		t.Fatalf("the independently written heartbeat: %v", err)
	}
	bad := map[string][]byte{
		"FifthKey":          statementFile(t, mhbContentType, fields(map[string]any{"note": "x"}, ""), key),
		"NoCreatedAt":       statementFile(t, mhbContentType, fields(nil, "created_at"), key),
		"OtherFormat":       statementFile(t, mhbContentType, fields(map[string]any{"format": "ampbundle-heartbeat/2"}, ""), key),
		"VersionAsInt":      statementFile(t, mhbContentType, fields(map[string]any{"version": "3"}, ""), key),
		"FractionalSecond":  statementFile(t, mhbContentType, fields(map[string]any{"created_at": "2026-11-20T00:00:00.5Z"}, ""), key),
		"TrustContentType":  statementFile(t, "application/ampbundle-trust+cbor", fields(nil, ""), key),
		"SignedByAStranger": strange,
		"TwoItems":          append(bytes.Clone(t3), t3...),
	}
	for name, b := range bad {
		if mhbCheckFile(entryFor(b), b, pub) == nil {
			t.Errorf("a heartbeat file breaking §23 (%s) is accepted", name)
		}
	}

	// The index reader refuses every lie §11.1 names (and the order check a
	// misordered list).
	first := func(f func(e map[string]any)) func(map[string]any, []any) []any {
		return func(_ map[string]any, hbs []any) []any {
			c := append([]any{}, hbs...)
			e := mhbCopyEntry(c[0])
			f(e)
			c[0] = e
			return c
		}
	}
	set := func(k string, v any) func(map[string]any, []any) []any {
		return first(func(e map[string]any) { e[k] = v })
	}
	many := func(n int) func(map[string]any, []any) []any {
		return func(_ map[string]any, hbs []any) []any {
			var c []any
			for i := 0; i < n; i++ {
				e := mhbCopyEntry(hbs[0])
				h := fmt.Sprintf("%064x", i)
				e["bundle_id"], e["sha256"], e["href"] = fmt.Sprintf("org.example.l%d", i), h, "/statements/"+h
				c = append(c, e)
			}
			return c
		}
	}
	if _, err := mhbReadIndex(mhbMutateIndex(t, raw, many(mhbMaxEntries))); err != nil {
		t.Fatalf("an index of exactly %d heartbeats is refused: %v", mhbMaxEntries, err)
	}
	upper := strings.ToUpper(want[0].SHA256)
	lyingIndexes := map[string][]byte{
		"OtherFormat":          bytes.Replace(raw, []byte(`ampbundle-mirror-index/1`), []byte(`ampbundle-mirror-index/2`), 1),
		"UppercaseBundleID":    mhbMutateIndex(t, raw, set("bundle_id", "Org.example.translate")),
		"OneLabelBundleID":     mhbMutateIndex(t, raw, set("bundle_id", "translate")),
		"HyphenEndedLabel":     mhbMutateIndex(t, raw, set("bundle_id", "org.example-.translate")),
		"VersionZero":          mhbMutateIndex(t, raw, set("version", 0)),
		"VersionNegative":      mhbMutateIndex(t, raw, set("version", -3)),
		"VersionFraction":      mhbMutateIndex(t, raw, set("version", 2.5)),
		"VersionAsText":        mhbMutateIndex(t, raw, set("version", "3")),
		"CreatedAtOffset":      mhbMutateIndex(t, raw, set("created_at", "2026-11-20T00:00:00+00:00")),
		"CreatedAtFraction":    mhbMutateIndex(t, raw, set("created_at", "2026-11-20T00:00:00.5Z")),
		"CreatedAtNotADate":    mhbMutateIndex(t, raw, set("created_at", "2026-02-30T00:00:00Z")),
		"UppercaseSHA256":      mhbMutateIndex(t, raw, first(func(e map[string]any) { e["sha256"], e["href"] = upper, "/statements/"+upper })),
		"ShortSHA256":          mhbMutateIndex(t, raw, first(func(e map[string]any) { e["sha256"], e["href"] = upper[:62], "/statements/"+upper[:62] })),
		"SizeZero":             mhbMutateIndex(t, raw, set("size", 0)),
		"SizeOver64KiB":        mhbMutateIndex(t, raw, set("size", mhbMaxFileBytes+1)),
		"OtherHref":            mhbMutateIndex(t, raw, set("href", "/bundles/"+line)),
		"HrefOfAnotherFile":    mhbMutateIndex(t, raw, set("href", "/statements/"+want[1].SHA256)),
		"MissingCreatedAt":     mhbMutateIndex(t, raw, first(func(e map[string]any) { delete(e, "created_at") })),
		"CaseFoldedMemberName": mhbMutateIndex(t, raw, first(func(e map[string]any) { e["Version"] = e["version"]; delete(e, "version") })),
		"LineListedTwice": mhbMutateIndex(t, raw, func(_ map[string]any, hbs []any) []any {
			e := mhbCopyEntry(hbs[1])
			e["bundle_id"] = line
			return append([]any{}, hbs[0], e)
		}),
		"SHA256ListedTwice": mhbMutateIndex(t, raw, func(_ map[string]any, hbs []any) []any {
			e := mhbCopyEntry(hbs[0])
			e["bundle_id"] = "org.example.zzz"
			return append(append([]any{}, hbs...), e)
		}),
		"OverTheCap":         mhbMutateIndex(t, raw, many(mhbMaxEntries+1)),
		"HeartbeatsNotAList": mhbMutateIndex(t, raw, func(map[string]any, []any) []any { return nil }),
	}
	// "HeartbeatsNotAList" encodes null; make it an object instead.
	lyingIndexes["HeartbeatsNotAList"] = bytes.Replace(lyingIndexes["HeartbeatsNotAList"], []byte(`"heartbeats":null`), []byte(`"heartbeats":{}`), 1)
	for name, b := range lyingIndexes {
		if bytes.Equal(b, raw) {
			t.Fatalf("%s: the mutation changed nothing", name)
		}
		if _, err := mhbReadIndex(b); err == nil {
			t.Errorf("an index breaking §11.1 (%s) is accepted", name)
		}
	}
	swapped := mhbMutateIndex(t, raw, func(_ map[string]any, hbs []any) []any { return []any{hbs[1], hbs[0]} })
	if six, err := mhbReadIndex(swapped); err != nil || mhbCheckMirrorOrder(six) == nil {
		t.Errorf("a heartbeat list out of the order of §11.1 passes the order check (%v)", err)
	}
	// Unknown keys are ignored, and a member given twice counts once, the
	// last one read (§11.1).
	extra := mhbMutateIndex(t, raw, set("x_note", "ignored"))
	if i := bytes.Index(raw, []byte(`"created_at"`)); i < bytes.Index(raw, []byte(`"heartbeats"`)) {
		t.Fatal("the first created_at of the index is not in its heartbeats")
	}
	twice := bytes.Replace(raw, []byte(`"created_at"`), []byte(`"created_at":"not a time","created_at"`), 1)
	for name, b := range map[string][]byte{"UnknownKey": extra, "MemberTwice": twice} {
		if bytes.Equal(b, raw) {
			t.Fatalf("%s: the mutation changed nothing", name)
		}
		if got, err := mhbReadIndex(b); err != nil || fmt.Sprint(got.heartbeats) != fmt.Sprint(want) {
			t.Errorf("an index the document allows (%s) is refused or read otherwise: %v", name, err)
		}
	}
}

// mhbFile is one file the test mirror serves.
type mhbFile struct {
	contentType string
	body        []byte
}

// mhbMirror is a mirror written from docs/FORMAT.md §11-§11.3 alone: exact
// paths, GET and HEAD only, a strong ETag that is the SHA-256 of the bytes
// served, If-None-Match, the error envelope; it counts the requests per path.
// (It has no Range support: the syncs here never hold a partial file.)
type mhbMirror struct {
	url   string
	mu    sync.Mutex
	files map[string]mhbFile
	count map[string]int
}

func mhbStartMirror(t *testing.T, files map[string]mhbFile) *mhbMirror {
	t.Helper()
	m := &mhbMirror{files: files, count: map[string]int{}}
	fail := func(w http.ResponseWriter, status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, msg)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.count[r.URL.Path]++
		f, ok := m.files[r.URL.Path]
		m.mu.Unlock()
		if r.Method != "GET" && r.Method != "HEAD" {
			w.Header().Set("Allow", "GET, HEAD")
			fail(w, 405, "method_not_allowed", "method not allowed")
			return
		}
		if !ok || r.URL.RawPath != "" || r.URL.RawQuery != "" {
			fail(w, 404, "not_found", "no such resource")
			return
		}
		etag := `"sha-256:` + hex.EncodeToString(sha256Of(f.body)) + `"`
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", f.contentType)
		if strings.HasPrefix(r.URL.Path, "/statements/") {
			w.Header().Set("Cache-Control", mhbImmutable)
		}
		for _, tag := range strings.Split(r.Header.Get("If-None-Match"), ",") {
			if tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/"); tag == "*" || tag == etag {
				w.WriteHeader(304)
				return
			}
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(f.body)))
		if r.Method == "GET" {
			_, _ = w.Write(f.body)
		}
	}))
	t.Cleanup(srv.Close)
	m.url = srv.URL
	return m
}

func (m *mhbMirror) requests(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count[path]
}

// mhbCapabilities is the capabilities document of §11.2 with only what its
// rules require of a bundle mirror.
const mhbCapabilities = `{
  "ampbundle_registry_version": "1.0.0",
  "profiles": ["offline-registry", "bundle-mirror"],
  "bundle_format": "ampbundle/1",
  "hash_algorithms": ["sha-256"],
  "signature_algorithms": ["ed25519"],
  "limits": {"max_bundle_bytes": 1073741824, "max_index_bytes": 16777216, "max_path_bytes": 1024, "max_in_flight": 256},
  "endpoints": {"bundles": "/bundles/{bundle_id}", "index": "/index.json"},
  "generation": 7
}`

// mhbIndexJSON is an index of §11.1 listing one bundle and the heartbeats.
func mhbIndexJSON(t *testing.T, bundleID string, version uint64, bundle []byte, hbs ...mhbEntry) []byte {
	t.Helper()
	ix := map[string]any{
		"format":     "ampbundle-mirror-index/1",
		"generation": 7,
		"bundles": []any{map[string]any{
			"bundle_id":  bundleID,
			"version":    version,
			"expires_at": "2036-01-01T00:00:00Z",
			"size":       len(bundle),
			"sha256":     hex.EncodeToString(sha256Of(bundle)),
			"href":       "/bundles/" + bundleID,
		}},
		"capabilities": []any{},
		"statements":   []any{},
		"heartbeats":   hbs,
	}
	b, err := json.Marshal(ix)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mhbSyncReport is the part of `ampbundle sync --json` (docs/CLI.md §2.16)
// read here.
type mhbSyncReport struct {
	Bundles []struct {
		BundleID        string `json:"bundle_id"`
		Version         uint64 `json:"version"`
		PreviousVersion uint64 `json:"previous_version"`
		Outcome         string `json:"outcome"`
		Error           string `json:"error"`
	} `json:"bundles"`
	Heartbeats []mhbSyncHeartbeat `json:"heartbeats"`
}

// mhbSyncHeartbeat is one heartbeat of the sync report.
type mhbSyncHeartbeat struct {
	BundleID string `json:"bundle_id"`
	Version  uint64 `json:"version"`
	SHA256   string `json:"sha256"`
	Outcome  string `json:"outcome"`
	Error    string `json:"error"`
	Message  string `json:"message"`
	Stale    string `json:"stale"`
}

// TestSyncTakesHeartbeatsFromAMirrorWrittenFromTheDoc covers the threat of a
// mirror that uses heartbeats against a syncing host: a freeze attack it
// must not hide (an honest heartbeat makes an installed version too far
// behind stale), an entry that lies about the file it names or a file
// altered in transit (refused index_mismatch, the store unchanged), and a
// mirror that makes the host download and re-judge heartbeats its kept one
// holds back (skipped up_to_date, never requested). The mirror is this
// package's own, written from docs/FORMAT.md §11, §11.1, §11.2 and §23; the
// syncing side is the real `ampbundle sync`.
func TestSyncTakesHeartbeatsFromAMirrorWrittenFromTheDoc(t *testing.T) {
	bin := buildCLI(t)
	run := runner(t, bin)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	run("keygen", "-o", p("pub.pem"), "--pub", p("pub.pub"))
	src := filepath.Join("..", "testdata", "bundles", "translate")
	run("build", src, "-o", p("v1.ampb"), "--key", p("pub.pem"), "--created", "2026-11-01T00:00:00Z")
	src2 := p("src2")
	if err := os.CopyFS(src2, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	bj := readFile(t, filepath.Join(src2, "bundle.json"))
	bj2 := bytes.Replace(bj, []byte(`"version": 1`), []byte(`"version": 2`), 1)
	if bytes.Equal(bj, bj2) {
		t.Fatal("the sample's bundle.json does not say version 1")
	}
	if err := os.WriteFile(filepath.Join(src2, "bundle.json"), bj2, 0o644); err != nil {
		t.Fatal(err)
	}
	run("build", src2, "-o", p("v2.ampb"), "--key", p("pub.pem"), "--created", "2026-11-02T00:00:00Z")
	v1, v2 := readFile(t, p("v1.ampb")), readFile(t, p("v2.ampb"))
	const line = "org.example.translate"
	type hbFile struct {
		e    mhbEntry
		body []byte
	}
	hb := func(name, id string, version uint64, created string) hbFile {
		run("heartbeat", "-o", p(name), "--bundle-id", id, "--version", fmt.Sprint(version), "--key", p("pub.pem"), "--created", created)
		b := readFile(t, p(name))
		return hbFile{mhbEntryOf(id, version, created, b), b}
	}
	h4 := hb("h4.cbor", line, 4, "2026-11-20T00:00:00Z")
	h3 := hb("h3.cbor", line, 3, "2026-11-15T00:00:00Z")
	h4early := hb("h4early.cbor", line, 4, "2026-11-18T00:00:00Z")
	h4late := hb("h4late.cbor", line, 4, "2026-11-25T00:00:00Z")
	aaa := hb("aaa.cbor", "org.example.aaa", 5, "2026-11-21T00:00:00Z") // a line the host has not installed
	run("keygen", "-o", p("stranger.pem"), "--pub", p("stranger.pub"))
	run("heartbeat", "-o", p("strange.cbor"), "--bundle-id", line, "--version", "4", "--key", p("stranger.pem"), "--created", "2026-11-20T00:00:00Z")
	strange := readFile(t, p("strange.cbor"))

	n := 0
	newStore := func(t *testing.T, keptHeartbeat []byte) string {
		t.Helper()
		run := runner(t, bin)
		n++
		db := p(fmt.Sprintf("host%d.db", n))
		run("trust", "add", p("pub.pub"), "--db", db, "--name", "publisher", "--scope", "org.example")
		run("import", p("v1.ampb"), "--db", db)
		run("trust", "freshness", "--max-versions", "1", "--db", db)
		if keptHeartbeat != nil {
			f := p(fmt.Sprintf("kept%d.cbor", n))
			if err := os.WriteFile(f, keptHeartbeat, 0o644); err != nil {
				t.Fatal(err)
			}
			run("import", f, "--db", db)
		}
		return db
	}
	type lsOut struct {
		Generation uint64 `json:"generation"`
		Bundles    []struct {
			BundleID string `json:"bundle_id"`
			Version  uint64 `json:"version"`
			Stale    string `json:"stale"`
		} `json:"bundles"`
	}
	ls := func(t *testing.T, db string) (lsOut, string) {
		t.Helper()
		out := runner(t, bin)("ls", "--db", db, "--json")
		var l lsOut
		if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Bundles) != 1 || l.Bundles[0].BundleID != line {
			t.Fatalf("ls --json printed %q: %v", out, err)
		}
		return l, out
	}
	type auditOut struct {
		Count   int    `json:"count"`
		Head    string `json:"head"`
		Entries []struct {
			Action     string `json:"action"`
			BundleID   string `json:"bundle_id"`
			Version    uint64 `json:"version"`
			FileSHA256 string `json:"file_sha256"`
		} `json:"entries"`
	}
	audit := func(t *testing.T, db string) auditOut {
		t.Helper()
		out := runner(t, bin)("audit", "--db", db, "--json")
		var a auditOut
		if err := json.Unmarshal([]byte(out), &a); err != nil || a.Head == "" {
			t.Fatalf("audit --json printed %q: %v", out, err)
		}
		return a
	}
	doSync := func(t *testing.T, m *mhbMirror, db string) (mhbSyncReport, int, string) {
		t.Helper()
		out, code := runAllowFail(t, bin, "sync", m.url, "--db", db, "--json", "--detailed-exitcode")
		var r mhbSyncReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("sync --json exit %d printed %q: %v", code, out, err)
		}
		return r, code, out
	}
	heartbeatOf := func(t *testing.T, r mhbSyncReport, out string) (h mhbSyncHeartbeat) {
		t.Helper()
		found := 0
		for _, x := range r.Heartbeats {
			if x.BundleID == line {
				h = x
				found++
			}
		}
		if found != 1 {
			t.Fatalf("the sync report has %d heartbeats of %s: %s", found, line, out)
		}
		return h
	}
	mirror := func(t *testing.T, bundle []byte, version uint64, served map[string][]byte, entries ...mhbEntry) *mhbMirror {
		files := map[string]mhbFile{
			"/.well-known/ampbundle-registry.json": {"application/json", []byte(mhbCapabilities)},
			"/index.json":                          {"application/json", mhbIndexJSON(t, line, version, bundle, entries...)},
			"/bundles/" + line:                     {"application/ampbundle", bundle},
		}
		for href, b := range served {
			files[href] = mhbFile{mhbContentType, b}
		}
		return mhbStartMirror(t, files)
	}

	t.Run("HonestHeartbeatMakesTheFrozenLineStale", func(t *testing.T) {
		db := newStore(t, nil)
		if l, _ := ls(t, db); l.Bundles[0].Version != 1 || l.Bundles[0].Stale != "" {
			t.Fatalf("before the sync: %+v", l)
		}
		m := mirror(t, v2, 2, map[string][]byte{h4.e.Href: h4.body, aaa.e.Href: aaa.body}, h4.e, aaa.e)
		r, code, out := doSync(t, m, db)
		t.Logf("sync exit %d: %s", code, out)
		if code != 10 {
			t.Fatalf("sync exit %d, docs/CLI.md §2.16 says 10 (imported, none refused): %s", code, out)
		}
		if len(r.Bundles) != 1 || r.Bundles[0].Outcome != "imported" || r.Bundles[0].Version != 2 || r.Bundles[0].PreviousVersion != 1 {
			t.Fatalf("bundles in the report: %s", out)
		}
		h := heartbeatOf(t, r, out)
		if h.Outcome != "imported" || h.Version != 4 || h.SHA256 != h4.e.SHA256 || h.Stale == "" {
			t.Fatalf("the heartbeat in the report: %+v, want imported version 4 with a stale reason", h)
		}
		// Judged after the bundles: the line installed is version 2, and
		// 4 − 2 > 1.
		if l, _ := ls(t, db); l.Bundles[0].Version != 2 || l.Bundles[0].Stale == "" {
			t.Fatalf("after the sync ls says %+v, want version 2 stale", l)
		}
		a := audit(t, db)
		last := a.Entries[len(a.Entries)-1]
		if last.Action != "heartbeat" || last.BundleID != line || last.Version != 4 || last.FileSHA256 != h4.e.SHA256 {
			t.Fatalf("the last audit entry is %+v, §23 says a heartbeat entry naming the file", last)
		}
		if g := m.requests(h4.e.Href); g != 1 {
			t.Fatalf("the heartbeat file was requested %d times", g)
		}
		// §11.1: only the heartbeats of lines the store has installed.
		if g := m.requests(aaa.e.Href); g != 0 {
			t.Fatalf("the heartbeat of a line the host has not installed was requested %d times", g)
		}
		if m.requests("/.well-known/ampbundle-registry.json") == 0 {
			t.Fatal("sync never read the capabilities document")
		}
	})

	t.Run("CapabilitiesWithoutBundleMirrorAreRefused", func(t *testing.T) {
		// The sync relies on the capabilities document: one breaking a
		// §11.2 rule ends it before the index.
		db := newStore(t, nil)
		m := mirror(t, v2, 2, map[string][]byte{h4.e.Href: h4.body}, h4.e)
		m.mu.Lock()
		m.files["/.well-known/ampbundle-registry.json"] = mhbFile{"application/json",
			[]byte(strings.Replace(mhbCapabilities, `, "bundle-mirror"`, "", 1))}
		m.mu.Unlock()
		out, code := runAllowFail(t, bin, "sync", m.url, "--db", db, "--json")
		if code != 1 || m.requests("/index.json") != 0 {
			t.Fatalf("sync of a mirror whose capabilities lack bundle-mirror: exit %d, index requested %d times: %s", code, m.requests("/index.json"), out)
		}
		t.Logf("refused: %s", strings.Join(strings.Fields(out), " "))
	})

	flipped := bytes.Clone(h4.body)
	flipped[len(flipped)/2] ^= 0x04
	notCBOR := []byte("not a heartbeat statement")
	fifth := statementFile(t, mhbContentType, map[string]any{"format": "ampbundle-heartbeat/1", "bundle_id": line,
		"version": uint64(4), "created_at": "2026-11-20T00:00:00Z", "note": "not in the closed payload"}, loadKey(t, p("pub.pem")))
	stranger := hbFile{mhbEntryOf(line, 4, "2026-11-20T00:00:00Z", strange), strange}
	lies := []struct {
		name    string
		entry   mhbEntry
		served  []byte
		want    string // the error of the refused heartbeat
		audited bool   // a refusal by the store (§23: import_refused), not by the sync
	}{
		{"EntryVersionAboveThePayload", func() mhbEntry { e := h4.e; e.Version = 5; return e }(), h4.body, "index_mismatch", false},
		{"EntryVersionBelowThePayload", func() mhbEntry { e := h4.e; e.Version = 3; return e }(), h4.body, "index_mismatch", false},
		{"EntryCreatedAtOtherThanThePayload", func() mhbEntry { e := h4.e; e.CreatedAt = "2026-11-20T00:00:01Z"; return e }(), h4.body, "index_mismatch", false},
		{"EntryForThisLineNamesAnotherLinesFile", func() mhbEntry { e := aaa.e; e.BundleID = line; return e }(), aaa.body, "index_mismatch", false},
		{"FileOneBitFlipped", h4.e, flipped, "index_mismatch", false},
		// §11.1: "(`index_mismatch`, like a file that does not parse as a
		// heartbeat; ...)": bytes that are no heartbeat at all, and a
		// heartbeat breaking §23 (a fifth payload key, signed by the
		// trusted publisher), each under an entry written for its bytes.
		{"FileNotCBORUnderAnEntryWrittenForIt", mhbEntryOf(line, 4, "2026-11-20T00:00:00Z", notCBOR), notCBOR, "index_mismatch", false},
		{"FileWithAFifthPayloadKeyUnderAnEntryWrittenForIt", mhbEntryOf(line, 4, "2026-11-20T00:00:00Z", fifth), fifth, "index_mismatch", false},
		// The entry is honest; the store's own trust refuses the file.
		{"HeartbeatByAKeyTheHostDoesNotTrust", stranger.e, stranger.body, "untrusted_key", true},
	}
	for _, tc := range lies {
		t.Run(tc.name, func(t *testing.T) {
			db := newStore(t, nil)
			lsBefore, rawBefore := ls(t, db)
			auditBefore := audit(t, db)
			// The index lists the installed version 1, so nothing but the
			// heartbeat could change the store.
			m := mirror(t, v1, 1, map[string][]byte{tc.entry.Href: tc.served}, tc.entry)
			r, code, out := doSync(t, m, db)
			h := heartbeatOf(t, r, out)
			if h.Outcome != "refused" {
				t.Fatalf("heartbeat %+v, the document says refused %s (report %s)", h, tc.want, out)
			}
			if h.Error != tc.want {
				t.Errorf("heartbeat refused with %s (%s); the document says %s", h.Error, h.Message, tc.want)
			}
			if code != 11 {
				t.Errorf("sync exit %d, docs/CLI.md §2.16 says 11 (a heartbeat refused)", code)
			}
			if m.requests(tc.entry.Href) != 1 {
				t.Errorf("the file was requested %d times", m.requests(tc.entry.Href))
			}
			lsAfter, rawAfter := ls(t, db)
			if rawAfter != rawBefore || lsAfter.Bundles[0].Stale != "" || lsBefore.Generation != lsAfter.Generation {
				t.Fatalf("the store changed: before %s after %s", rawBefore, rawAfter)
			}
			a := audit(t, db)
			switch {
			case !tc.audited && (a.Head != auditBefore.Head || a.Count != auditBefore.Count):
				t.Fatalf("the audit log grew from %d to %d entries", auditBefore.Count, a.Count)
			case tc.audited && (a.Count != auditBefore.Count+1 || a.Entries[len(a.Entries)-1].Action != "import_refused"):
				t.Fatalf("a refusal by the store is not one import_refused entry (§23): %d -> %d entries", auditBefore.Count, a.Count)
			}
			t.Logf("refused: %s", h.Message)
		})
	}

	// The store keeps h4 (imported with `ampbundle import`): a listed
	// heartbeat it holds back is skipped without a download; one it does
	// not hold back (same version, later created_at) is downloaded.
	heldBack := []struct {
		name     string
		hb       hbFile
		outcome  string
		requests int
		exit     int
	}{
		{"OlderVersionIsNotDownloaded", h3, "up_to_date", 0, 0},
		{"EarlierCreatedAtIsNotDownloaded", h4early, "up_to_date", 0, 0},
		{"TheKeptFileIsNotDownloaded", h4, "up_to_date", 0, 0},
		{"LaterCreatedAtIsDownloaded", h4late, "imported", 1, 10},
	}
	for _, tc := range heldBack {
		t.Run(tc.name, func(t *testing.T) {
			db := newStore(t, h4.body)
			if l, _ := ls(t, db); l.Bundles[0].Stale == "" {
				t.Fatalf("the kept heartbeat version 4 does not make version 1 stale: %+v", l)
			}
			auditBefore := audit(t, db)
			m := mirror(t, v1, 1, map[string][]byte{tc.hb.e.Href: tc.hb.body}, tc.hb.e)
			r, code, out := doSync(t, m, db)
			h := heartbeatOf(t, r, out)
			if h.Outcome != tc.outcome || code != tc.exit {
				t.Fatalf("heartbeat %+v, exit %d; want %s, exit %d (report %s)", h, code, tc.outcome, tc.exit, out)
			}
			if g := m.requests(tc.hb.e.Href); g != tc.requests {
				t.Fatalf("the mirror saw %d requests for %s, want %d", g, tc.hb.e.Href, tc.requests)
			}
			a := audit(t, db)
			if tc.requests == 0 && (a.Head != auditBefore.Head || a.Count != auditBefore.Count) {
				t.Fatalf("a skipped heartbeat grew the audit log from %d to %d entries", auditBefore.Count, a.Count)
			}
			if tc.requests == 1 {
				last := a.Entries[len(a.Entries)-1]
				if last.Action != "heartbeat" || last.FileSHA256 != tc.hb.e.SHA256 {
					t.Fatalf("the last audit entry is %+v", last)
				}
			}
		})
	}
}
