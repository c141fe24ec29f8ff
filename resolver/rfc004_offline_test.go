package resolver

import (
	"errors"
	"net"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// trap is a TCP listener that records every connection made to it. It
// never answers: a resolver that dials it would hang or fail, and is
// caught either way.
type trap struct {
	ln       net.Listener
	accepted chan string // remote address of each connection
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln, accepted: make(chan string, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(tr.accepted)
				return
			}
			tr.accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

// dialsBefore reports the connections made before this call, without a
// timed wait: it dials a sentinel connection of its own and reads what
// was accepted until the sentinel (connections are accepted in order).
func (tr *trap) dialsBefore(t *testing.T) []string {
	t.Helper()
	c, err := net.Dial("tcp", tr.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sentinel := c.LocalAddr().String()
	var before []string
	for a := range tr.accepted {
		if a == sentinel {
			return before
		}
		before = append(before, a)
	}
	t.Fatal("the trap stopped before the sentinel")
	return nil
}

// TestRFC004Section5_3OfflineResolutionNeverDialsTheSchemaURI: in the
// Offline Registry Profile a schema reference is resolved from the store
// alone. A reference whose uri points at a live listener resolves from
// its bundle_id and artifact_key and compiles without a connection to the
// listener; with the local artifact missing, with a wrong hash, or with no
// local locator at all, resolution fails 5002 and still dials nothing
// (threat: an "offline" agent that falls back to a live fetch, leaking
// its traffic and trusting bytes from the network).
func TestRFC004Section5_3OfflineResolutionNeverDialsTheSchemaURI(t *testing.T) {
	noExternalLoads(t)
	tr := newTrap(t)
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	cat, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	var local capability.SchemaRef
	if len(cat.Names) > 0 {
		e := cat.ByName[cat.Names[0]][0]
		local = e.Descriptor.InputSchema
		if local.BundleID == "" {
			local.BundleID = e.BundleID
		}
	}
	if local.BundleID == "" || local.ArtifactKey == "" {
		t.Fatalf("the sample's schema reference has no local locator: %+v", local)
	}
	uri := "http://" + tr.ln.Addr().String() + "/schema.json"
	local.URI = uri
	if _, err := s.Resolve(local); err != nil {
		t.Fatalf("a local artifact with a uri beside it: %v", err)
	}
	if _, err := s.Schema(local); err != nil {
		t.Fatalf("compiling a local artifact with a uri beside it: %v", err)
	}
	wrongHash := local
	wrongHash.Hash = append([]byte(nil), local.Hash...)
	wrongHash.Hash[0] ^= 1
	missing := local
	missing.ArtifactKey += ".gone"
	uriOnly := capability.SchemaRef{URI: uri, HashAlg: local.HashAlg, Hash: local.Hash}
	for name, ref := range map[string]capability.SchemaRef{"missing artifact": missing, "hash mismatch": wrongHash, "uri only": uriOnly} {
		if _, err := s.Resolve(ref); !errors.Is(err, amp.CodeUnavailable) {
			t.Errorf("%s: Resolve got %v, want 5002", name, err)
		}
		if _, err := s.Schema(ref); !errors.Is(err, amp.CodeUnavailable) {
			t.Errorf("%s: Schema got %v, want 5002", name, err)
		}
	}
	if dials := tr.dialsBefore(t); len(dials) > 0 {
		t.Fatalf("offline resolution dialed the schema uri %d times", len(dials))
	}
}
