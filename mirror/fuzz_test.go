package mirror

import (
	"strings"
	"testing"
)

// FuzzParseRoute: any path either names nothing or names exactly the path
// it came from (no normalisation that could reach another resource).
func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"/index.json", WellKnownPath, "/bundles/org.example.echo", "/bundles/../x",
		"/cap-registry/org.example.echo/1.0.0/descriptor.cbor", "/cap-registry/org.example.echo/01.0.0/input.schema.json",
		"/cap-registry/org.example.echo/1.0.0+build.1/output.schema.json", "/cap-registry//1.0.0/descriptor.json", "",
		"/statements/" + strings.Repeat("ab", 32), "/statements/" + strings.Repeat("AB", 32), "/statements/../index.json"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r := ParseRoute(p)
		switch r.Kind {
		case RouteNone:
		case RouteBundle:
			if BundlesPrefix+r.BundleID != p || strings.Contains(r.BundleID, "/") {
				t.Fatalf("%q routed to bundle %q", p, r.BundleID)
			}
		case RouteCapability:
			if CapabilityPath(r.ID, r.File) != p {
				t.Fatalf("%q routed to %q", p, CapabilityPath(r.ID, r.File))
			}
		case RouteStatement:
			if StatementsPrefix+r.SHA256 != p || !isLowerHex64(r.SHA256) {
				t.Fatalf("%q routed to statement %q", p, r.SHA256)
			}
		case RouteIndex, RouteWellKnown:
			if p != IndexPath && p != WellKnownPath {
				t.Fatalf("%q routed to a document", p)
			}
		}
	})
}

// FuzzParseRange: a partial range always lies inside the file.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-", "bytes=10-20", "bytes=-5", "bytes=0-1,2-3", "bytes=99999999999999999999-", "items=0-1", "bytes= 1-2"} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		start, n, res := ParseRange(h, size)
		if res == RangePartial && (start < 0 || n <= 0 || start+n > size) {
			t.Fatalf("%q over %d: [%d,+%d)", h, size, start, n)
		}
	})
}

// FuzzDecodeCapabilities: a document either fails to decode or passes
// Check and survives a round trip.
func FuzzDecodeCapabilities(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"ampbundle_registry_version":"1.0.0","profiles":["offline-registry"],"bundle_format":"ampbundle/1","hash_algorithms":["sha-256"],"signature_algorithms":["ed25519"],"limits":{"max_bundle_bytes":2048,"max_index_bytes":2048,"max_path_bytes":1024,"max_in_flight":1},"endpoints":{},"generation":1,"x":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCapabilities(data)
		if err != nil {
			return
		}
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeCapabilities(b); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecodeIndex: an accepted index has only valid, distinct bundle ids
// with documented hrefs, and the sync, which skips the capabilities, reads
// it alike.
func FuzzDecodeIndex(f *testing.F) {
	f.Add([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[]}`))
	h := strings.Repeat("0f", 32)
	f.Add([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"statements":[{"content_type":"application/ampbundle-trust+cbor","size":9,"sha256":"` + h + `","href":"/statements/` + h + `"}]}`))
	f.Add([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"heartbeats":[{"bundle_id":"org.example.echo","version":4,"created_at":"2026-11-20T11:00:00Z","size":9,"sha256":"` + h + `","href":"/statements/` + h + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := DecodeIndex(data)
		if err != nil {
			return
		}
		for _, e := range ix.Bundles {
			if ParseRoute(e.Href).Kind != RouteBundle {
				t.Fatalf("href %q accepted", e.Href)
			}
		}
		for _, e := range ix.Statements {
			if r := ParseRoute(e.Href); r.Kind != RouteStatement || r.SHA256 != e.SHA256 {
				t.Fatalf("statement href %q accepted", e.Href)
			}
		}
		for _, e := range ix.Heartbeats {
			if r := ParseRoute(e.Href); r.Kind != RouteStatement || r.SHA256 != e.SHA256 || e.Version == 0 || e.Size < 1 {
				t.Fatalf("heartbeat entry %+v accepted", e)
			}
		}
		checkSyncDecodeAgrees(t, data)
	})
}
