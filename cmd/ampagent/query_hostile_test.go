package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// hostileDeclarer is a provider that answers every CAP_QUERY with a signed
// CAP_DECLARE of perPage descriptors (notes of noteLen bytes) and the
// cursor next(n) for page n (1, 2, ...).
type hostileDeclarer struct {
	id     amp.Identity
	recv   *amp.Receiver
	send   *amp.Sender
	descs  []capability.Descriptor
	next   func(n int) string
	served atomic.Int64
}

func newHostileDeclarer(t *testing.T, perPage, noteLen int, next func(n int) string) *hostileDeclarer {
	t.Helper()
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x66}, 32))
	h := &hostileDeclarer{id: amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}, next: next}
	var err error
	if h.recv, err = amp.NewReceiver(amp.ReceiverConfig{Now: testNow}); err != nil {
		t.Fatal(err)
	}
	if h.send, err = amp.NewSender(amp.SenderConfig{Identity: h.id, Rand: rand.Reader, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	v, _ := capability.ParseVersion("1.0.0")
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	for range perPage {
		h.descs = append(h.descs, capability.Descriptor{Name: "org.example.x", Version: v, InputSchema: ref, OutputSchema: ref,
			Notes: strings.Repeat("n", noteLen)})
	}
	return h
}

func (h *hostileDeclarer) DID() string { return h.id.DID }

func (h *hostileDeclarer) Handle(ctx context.Context, raw []byte) ([]byte, error) {
	m, err := h.recv.Receive(ctx, raw)
	if err != nil {
		return nil, err
	}
	n := int(h.served.Add(1))
	// A version of its own for each descriptor of each page: pages never
	// repeat a record (RFC 004 §6.5), which the client refuses.
	descs := append([]capability.Descriptor(nil), h.descs...)
	for i := range descs {
		descs[i].Version, _ = capability.ParseVersion(fmt.Sprintf("1.%d.%d", n, i))
	}
	body, err := capability.Declare{Capabilities: descs, NextCursor: h.next(n)}.Encode()
	if err != nil {
		return nil, err
	}
	_, out, err := h.send.Seal(ctx, amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
	return out, err
}

// TestHostileAgentCannotLoopQueryAllOnAlternatingCursors (CLI): a provider
// alternating two cursors is refused with cursor_loop (4001) at the third
// page; the command compared a cursor with the previous one only and
// followed a/b/a/... to the page cap. The provider ends after 50 pages,
// so that the old command succeeds and fails the test.
func TestHostileAgentCannotLoopQueryAllOnAlternatingCursors(t *testing.T) {
	h := newHostileDeclarer(t, 1, 10, func(n int) string {
		if n >= 50 {
			return ""
		}
		return []string{"b", "a"}[n%2]
	})
	url := serve(t, amphttp.NewHandler(h, amphttp.Options{}))
	caller, _ := keygen(t, t.TempDir(), "caller.pem")
	r := runCLI(t, "", "query", url, "--key", caller, "--to", h.DID(), "--capability", "org.example.x", "--all", "--json")
	if name, code := errorDoc(t, r); r.code != 1 || name != "cursor_loop" || code != 4001 {
		t.Fatalf("exit %d, %s (%d), want 1 and cursor_loop (4001)\n%s", r.code, name, code, r.stdout)
	}
	if n := h.served.Load(); n != 3 {
		t.Errorf("served %d pages, want 3", n)
	}
}

// TestHostileAgentCannotGrowQueryAllWithoutBound (CLI): a provider that
// sends 4 MiB pages with fresh cursors is refused with query_too_large
// (4001) once they pass client.DefaultMaxQueryBytes; the command kept every page to the page cap. The provider ends
// after 10 pages (40 MiB), so that the old command succeeds and fails the
// test.
func TestHostileAgentCannotGrowQueryAllWithoutBound(t *testing.T) {
	const page = 4 << 20
	h := newHostileDeclarer(t, 4, page/4, func(n int) string {
		if n >= 10 {
			return ""
		}
		return strings.Repeat("c", n)
	})
	url := serve(t, amphttp.NewHandler(h, amphttp.Options{}))
	caller, _ := keygen(t, t.TempDir(), "caller.pem")
	r := runCLI(t, "", "query", url, "--key", caller, "--to", h.DID(), "--capability", "org.example.x", "--all", "--json")
	if name, code := errorDoc(t, r); r.code != 1 || name != "query_too_large" || code != 4001 {
		t.Fatalf("exit %d, %s (%d), want 1 and query_too_large (4001)\n%s", r.code, name, code, r.stdout)
	}
	if n := h.served.Load(); n > client.DefaultMaxQueryBytes/page+1 {
		t.Errorf("served %d pages of 4 MiB for a bound of %d bytes", n, client.DefaultMaxQueryBytes)
	}
}
