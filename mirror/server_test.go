package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

func get(t *testing.T, method, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// wantEnvelope checks that body is exactly one error envelope with code.
func wantEnvelope(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d (%s)", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != ErrorContentType {
		t.Fatalf("content type %q", ct)
	}
	var env struct {
		Error map[string]string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("not an envelope: %s", body)
	}
	if env.Error["code"] != code || env.Error["message"] == "" || len(env.Error) != 2 {
		t.Fatalf("envelope %v, want code %s", env.Error, code)
	}
}

func TestBundleServedByteIdenticalToImport(t *testing.T) {
	file := testBundle(t, 1)
	_, ts := startMirror(t, newStore(t, file), nil)
	resp, body := get(t, "GET", ts.URL+"/bundles/org.example.echo", nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, file) {
		t.Fatalf("status %d, %d bytes; want the %d imported bytes", resp.StatusCode, len(body), len(file))
	}
	sum := sha256.Sum256(file)
	if want := `"sha-256:` + hex.EncodeToString(sum[:]) + `"`; resp.Header.Get("ETag") != want {
		t.Fatalf("etag %s, want %s", resp.Header.Get("ETag"), want)
	}
	// The index names the same hash and size.
	_, raw := get(t, "GET", ts.URL+IndexPath, nil)
	ix, err := DecodeIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Bundles) != 1 || ix.Bundles[0].SHA256 != hex.EncodeToString(sum[:]) || ix.Bundles[0].Size != int64(len(file)) || ix.Bundles[0].Version != 1 {
		t.Fatalf("index %+v", ix.Bundles)
	}
	if len(ix.Capabilities) != 1 || ix.Capabilities[0].ID != "org.example.echo:1.1.0" {
		t.Fatalf("index capabilities %+v", ix.Capabilities)
	}
}

func TestConditionalGetAndHead(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	for _, p := range []string{"/bundles/org.example.echo", IndexPath, WellKnownPath, "/cap-registry/org.example.echo/1.1.0/descriptor.cbor"} {
		resp, body := get(t, "GET", ts.URL+p, nil)
		etag := resp.Header.Get("ETag")
		if resp.StatusCode != 200 || etag == "" || len(body) == 0 {
			t.Fatalf("%s: status %d etag %q", p, resp.StatusCode, etag)
		}
		resp, body = get(t, "GET", ts.URL+p, map[string]string{"If-None-Match": etag})
		if resp.StatusCode != 304 || len(body) != 0 {
			t.Fatalf("%s: conditional GET gave %d with %d bytes", p, resp.StatusCode, len(body))
		}
		resp, hb := get(t, "HEAD", ts.URL+p, nil)
		if resp.StatusCode != 200 || len(hb) != 0 || resp.ContentLength != int64(len(body0(t, ts.URL+p))) {
			t.Fatalf("%s: HEAD gave %d, length %d", p, resp.StatusCode, resp.ContentLength)
		}
	}
}

func body0(t *testing.T, url string) []byte { _, b := get(t, "GET", url, nil); return b }

func TestRangeResumesBundleDownload(t *testing.T) {
	file := testBundle(t, 1)
	_, ts := startMirror(t, newStore(t, file), nil)
	url := ts.URL + "/bundles/org.example.echo"
	resp, _ := get(t, "HEAD", url, nil)
	etag := resp.Header.Get("ETag")
	cases := []struct {
		name, rng, ifRange string
		status             int
		want               []byte
	}{
		{"tail from offset", "bytes=10-", etag, 206, file[10:]},
		{"closed range", "bytes=0-9", "", 206, file[:10]},
		{"suffix", "bytes=-5", "", 206, file[len(file)-5:]},
		{"stale if-range gets the whole file", "bytes=10-", `"sha-256:00"`, 200, file},
		{"several ranges are ignored", "bytes=0-1,4-5", "", 200, file},
		{"bad syntax is ignored", "bytes=x-", "", 200, file},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{"Range": c.rng}
			if c.ifRange != "" {
				h["If-Range"] = c.ifRange
			}
			resp, body := get(t, "GET", url, h)
			if resp.StatusCode != c.status || !bytes.Equal(body, c.want) {
				t.Fatalf("status %d, %d bytes; want %d, %d bytes", resp.StatusCode, len(body), c.status, len(c.want))
			}
		})
	}
	resp, body := get(t, "GET", url, map[string]string{"Range": "bytes=999999-"})
	wantEnvelope(t, resp, body, 416, CodeRangeNotSatisfy)
	if resp.Header.Get("Content-Range") != "bytes */"+itoa(len(file)) {
		t.Fatalf("content-range %q", resp.Header.Get("Content-Range"))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestRegistryPathsServeVerifiedDescriptorsAndSchemas(t *testing.T) {
	p := newStore(t, testBundle(t, 2))
	_, ts := startMirror(t, p, nil)
	s, err := resolver.Open(p, resolver.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cat, _ := s.Catalog()
	e := cat.ByName["org.example.echo"][0]
	_, cb := get(t, "GET", ts.URL+"/cap-registry/org.example.echo/1.2.0/descriptor.cbor", nil)
	d, err := capability.DecodeDescriptor(cb)
	if err != nil || d.ID() != e.Descriptor.ID() {
		t.Fatalf("descriptor.cbor: %v %v", d.ID(), err)
	}
	_, js := get(t, "GET", ts.URL+"/cap-registry/org.example.echo/1.2.0/descriptor.json", nil)
	dj, err := capability.DecodeDescriptorJSON(js)
	if err != nil || dj.ID() != e.Descriptor.ID() {
		t.Fatalf("descriptor.json: %v", err)
	}
	for _, f := range []string{FileInputSchema, FileOutputSchema} {
		resp, body := get(t, "GET", ts.URL+"/cap-registry/org.example.echo/1.2.0/"+f, nil)
		if !e.Descriptor.InputSchema.Matches(body) || resp.Header.Get("ETag") != `"sha-256:`+hex.EncodeToString(e.Descriptor.InputSchema.Hash)+`"` {
			t.Fatalf("%s: bytes or etag do not match the declared hash", f)
		}
	}
}

func TestErrorsAreEnvelopesThatEchoNothing(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	cases := []struct {
		name, method, path string
		status             int
		code               string
	}{
		{"unknown path", "GET", "/<script>alert(1)</script>", 404, CodeNotFound},
		{"unknown bundle", "GET", "/bundles/org.example.other", 404, CodeNotFound},
		{"invalid bundle id", "GET", "/bundles/..%2F..%2Fetc%2Fpasswd", 404, CodeNotFound},
		{"unknown capability version", "GET", "/cap-registry/org.example.echo/9.9.9/descriptor.cbor", 404, CodeNotFound},
		{"unknown file", "GET", "/cap-registry/org.example.echo/1.1.0/secret", 404, CodeNotFound},
		{"trailing slash", "GET", "/index.json/", 404, CodeNotFound},
		{"post", "POST", "/index.json", 405, CodeMethodNotAllowed},
		{"delete", "DELETE", "/bundles/org.example.echo", 405, CodeMethodNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(t, c.method, ts.URL+c.path, nil)
			wantEnvelope(t, resp, body, c.status, c.code)
			if bytes.Contains(body, []byte("script")) || bytes.Contains(body, []byte("passwd")) || bytes.Contains(body, []byte("org.example")) {
				t.Fatalf("request echoed: %s", body)
			}
		})
	}
}

func TestOverloadIsARetryableEnvelope(t *testing.T) {
	m, ts := startMirror(t, newStore(t, testBundle(t, 1)), func(o *Options) { o.MaxInFlight = 1 })
	if m.slots.Enter("another peer") != "" { // one request in flight
		t.Fatal("no slot")
	}
	resp, body := get(t, "GET", ts.URL+IndexPath, nil)
	m.slots.Leave("another peer", 0)
	wantEnvelope(t, resp, body, 503, CodeOverloaded)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
}

// TestOnePeerCannotHoldEveryMirrorSlot: a host reading slowly holds at
// most its share of the request slots (threat: a few hosts holding every
// slot for as long as their slow reads last, so that no other host can
// sync): beyond its share it gets 503 overloaded, other hosts are served.
func TestOnePeerCannotHoldEveryMirrorSlot(t *testing.T) {
	m, ts := startMirror(t, newStore(t, testBundle(t, 1)), func(o *Options) { o.MaxInFlight = 8 })
	for range 2 { // the loopback peer's share: a quarter of 8
		if m.slots.Enter("127.0.0.1") != "" {
			t.Fatal("a slot within the share was refused")
		}
	}
	resp, body := get(t, "GET", ts.URL+IndexPath, nil)
	wantEnvelope(t, resp, body, 503, CodeOverloaded)
	for range 2 {
		if m.slots.Enter("192.0.2.7") != "" {
			t.Fatal("another peer was refused a slot of its share")
		}
	}
	if m.slots.Enter("192.0.2.7") == "" {
		t.Fatal("a second peer got more than its share")
	}
	if m.slots.Enter("192.0.2.8") != "" {
		t.Fatal("a third peer was refused: two hosts hold the mirror")
	}
	m.slots.Leave("192.0.2.8", 0)
	m.slots.Leave("192.0.2.7", 0)
	m.slots.Leave("192.0.2.7", 0)
	m.slots.Leave("127.0.0.1", 0)
	if resp, _ := get(t, "GET", ts.URL+IndexPath, nil); resp.StatusCode != 200 {
		t.Fatalf("a peer back under its share: %d", resp.StatusCode)
	}
	m.slots.Leave("127.0.0.1", 0)
}

func TestRefreshServesNewGenerationAndPrunesOldFiles(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	m, ts := startMirror(t, p, nil)
	g1 := m.Generation()
	s, err := resolver.Open(p, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v2 := testBundle(t, 2)
	if _, err := s.Import(context.Background(), bytes.NewReader(v2), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if m.Generation() == g1 {
		t.Fatal("generation did not move")
	}
	_, body := get(t, "GET", ts.URL+"/bundles/org.example.echo", nil)
	if !bytes.Equal(body, v2) {
		t.Fatal("the mirror still serves version 1")
	}
	resp, b := get(t, "GET", ts.URL+"/cap-registry/org.example.echo/1.1.0/descriptor.cbor", nil)
	wantEnvelope(t, resp, b, 404, CodeNotFound)
	if n := len(globSpool(t, m)); n != 1 {
		t.Fatalf("%d bundle files in the spool, want 1", n)
	}
}

func TestMirrorRefusesToStartMisconfigured(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	cases := []struct {
		name  string
		mod   func(*Options)
		field string
	}{
		{"negative in-flight cap", func(o *Options) { o.MaxInFlight = -1 }, "limits.max_in_flight"},
		{"tiny bundle limit", func(o *Options) { o.MaxBundleBytes = 10 }, "limits.max_bundle_bytes"},
		{"tiny index limit", func(o *Options) { o.MaxIndexBytes = 10 }, "limits.max_index_bytes"},
		{"no spool", func(o *Options) { o.SpoolDir = "" }, "spool_dir"},
		{"no store", func(o *Options) { o.Open = nil }, "open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Open: openerOf(p), SpoolDir: t.TempDir()}
			c.mod(&opts)
			_, err := New(opts)
			if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("err %v, want misconfigured naming %s", err, c.field)
			}
		})
	}
}

// A station store whose artifact bytes were altered on disk: the mirror
// serves neither the bundle file nor its schemas (Export and Resolve check
// every hash), so it can never hand altered bytes on.
func TestTamperedStationStoreIsNotServed(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	schema := []byte(`"title":"echo v1"`)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], schema)
		if j < 0 {
			break
		}
		raw[i+j+len(schema)/2] ^= 0x01
		i += j + len(schema)
		n++
	}
	if n == 0 {
		t.Fatal("the schema is not in the store file")
	}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	_, ts := startMirror(t, p, nil)
	for _, path := range []string{"/bundles/org.example.echo", "/cap-registry/org.example.echo/1.1.0/input.schema.json", "/cap-registry/org.example.echo/1.1.0/descriptor.cbor"} {
		resp, body := get(t, "GET", ts.URL+path, nil)
		wantEnvelope(t, resp, body, 404, CodeNotFound)
	}
	_, body := get(t, "GET", ts.URL+IndexPath, nil)
	ix, err := DecodeIndex(body)
	if err != nil || len(ix.Bundles) != 0 || len(ix.Capabilities) != 0 {
		t.Fatalf("index lists a tampered bundle: %s", body)
	}
}
