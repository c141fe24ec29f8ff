package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// pagingProvider is a provider that answers every CAP_QUERY with a signed
// CAP_DECLARE of perPage descriptors (notes of noteLen bytes each) and the
// cursor next(n) for page n (1, 2, ...): "" ends the query. It counts the
// pages served and the CAP_DECLARE body bytes sent.
type pagingProvider struct {
	served, bodyBytes int
	cursors           []string // the cursor of each query received
}

func (pp *pagingProvider) transport(t *testing.T, p *parties, perPage, noteLen int, next func(n int) string) Transport {
	t.Helper()
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	send, err := amp.NewSender(amp.SenderConfig{Identity: p.provider, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	descs := make([]capability.Descriptor, perPage)
	return TransportFunc(func(ctx context.Context, raw []byte) ([]byte, error) {
		// A version of its own for each descriptor of each page: pages
		// never repeat a record (RFC 004 §6.5).
		for i := range descs {
			v, _ := capability.ParseVersion(fmt.Sprintf("1.%d.%d", pp.served, i))
			descs[i] = capability.Descriptor{Name: "org.example.x", Version: v, InputSchema: ref, OutputSchema: ref,
				Notes: strings.Repeat("n", noteLen)}
		}
		m, err := recv.Receive(ctx, raw)
		if err != nil {
			return nil, err
		}
		q, err := capability.DecodeQuery(m.Body)
		if err != nil {
			return nil, err
		}
		pp.cursors = append(pp.cursors, q.Cursor)
		pp.served++
		body, err := capability.Declare{Capabilities: descs, NextCursor: next(pp.served)}.Encode()
		if err != nil {
			return nil, err
		}
		pp.bodyBytes += len(body)
		_, out, err := send.Seal(ctx, amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
}

func pagingClient(t *testing.T, p *parties, tr Transport, lim QueryLimits) *Client {
	t.Helper()
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, QueryLimits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var queryX = capability.Query{Filter: capability.Filter{Capability: "org.example.x"}}

// TestHostileAgentCannotGrowQueryAllWithoutBound: a provider that sends
// ~1 MiB pages, each with a fresh cursor, makes QueryAll (default limits)
// stop with query_too_large once the pages hold more than
// DefaultMaxQueryBytes, and return none of them; before the bound it kept
// every page to the page cap. The provider ends the query after 48 pages
// (48 MiB) so that an unbounded QueryAll succeeds and fails the test.
func TestHostileAgentCannotGrowQueryAllWithoutBound(t *testing.T) {
	p := newParties(t)
	var pp pagingProvider
	tr := pp.transport(t, p, 256, 4000, func(n int) string {
		if n >= 48 {
			return ""
		}
		return fmt.Sprintf("c%d", n)
	})
	c := pagingClient(t, p, tr, QueryLimits{})
	out, pages, err := c.QueryAllPages(context.Background(), queryX)
	if !errors.Is(err, ErrQueryTooLarge) || amp.CodeOf(err) != amp.CodeBadRequest {
		t.Fatalf("QueryAll over %d pages of %d body bytes: err %v, want %s (4001)", pp.served, pp.bodyBytes, err, ErrQueryTooLarge)
	}
	if out != nil || pages != 0 {
		t.Errorf("with the error QueryAll returned %d descriptors and %d pages, want none", len(out), pages)
	}
	// It reads one page past the bound, no more.
	perPage := pp.bodyBytes / pp.served
	if pp.bodyBytes-perPage > DefaultMaxQueryBytes || pp.served > DefaultMaxQueryBytes/perPage+1 {
		t.Errorf("read %d pages, %d body bytes, for a bound of %d bytes", pp.served, pp.bodyBytes, DefaultMaxQueryBytes)
	}
}

// TestHostileAgentCannotLoopQueryAllOnAlternatingCursors: a provider that
// alternates two cursors (a, b, a, ...), which a check of the previous
// cursor alone misses, is refused with cursor_loop at the first cursor
// named again; so is one that sends the caller back to the cursor it
// started from. The provider stops after 50 pages so that a client
// without the check succeeds and fails the test.
func TestHostileAgentCannotLoopQueryAllOnAlternatingCursors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start string
		next  func(n int) string
		pages int
	}{
		{"a b a", "", func(n int) string { return []string{"b", "a"}[n%2] }, 3},
		{"back to the start", "s", func(n int) string { return []string{"s", "x", "y"}[n%3] }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newParties(t)
			var pp pagingProvider
			tr := pp.transport(t, p, 1, 10, func(n int) string {
				if n >= 50 {
					return ""
				}
				return tc.next(n)
			})
			q := queryX
			q.Cursor = tc.start
			out, err := pagingClient(t, p, tr, QueryLimits{}).QueryAll(context.Background(), q)
			if !errors.Is(err, ErrCursorLoop) || amp.CodeOf(err) != amp.CodeBadRequest || out != nil {
				t.Fatalf("after %d pages (cursors %q): %d descriptors, err %v; want %s (4001)", pp.served, pp.cursors, len(out), err, ErrCursorLoop)
			}
			if pp.served != tc.pages {
				t.Errorf("served %d pages (cursors %q), want %d", pp.served, pp.cursors, tc.pages)
			}
		})
	}
}

// TestQueryAllLimitsAreConfigurable: QueryLimits set in Config bound the
// descriptors, the bytes and the pages, each with its named error, and
// a query within them returns every descriptor of every page.
func TestQueryAllLimitsAreConfigurable(t *testing.T) {
	upTo := func(last int) func(int) string {
		return func(n int) string {
			if n >= last {
				return ""
			}
			return fmt.Sprint("c", n)
		}
	}
	for _, tc := range []struct {
		name   string
		lim    QueryLimits
		served int
		want   error
	}{
		{"within", QueryLimits{MaxPages: 5, MaxDescriptors: 20, MaxBytes: 1 << 20}, 5, nil},
		{"descriptors", QueryLimits{MaxDescriptors: 10}, 3, ErrQueryTooLarge},
		{"bytes", QueryLimits{MaxBytes: 3000}, 3, ErrQueryTooLarge},
		{"pages", QueryLimits{MaxPages: 4}, 4, ErrTooManyPages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newParties(t)
			var pp pagingProvider
			tr := pp.transport(t, p, 4, 100, upTo(5)) // about 1 KiB a page
			out, pages, err := pagingClient(t, p, tr, tc.lim).QueryAllPages(context.Background(), queryX)
			if tc.want == nil {
				if err != nil || len(out) != 20 || pages != 5 {
					t.Fatalf("%d descriptors, %d pages, err %v; want 20, 5, nil", len(out), pages, err)
				}
			} else if !errors.Is(err, tc.want) || out != nil {
				t.Fatalf("%d descriptors, err %v; want %s", len(out), err, tc.want)
			}
			if pp.served != tc.served {
				t.Errorf("served %d pages (%d bytes), want %d", pp.served, pp.bodyBytes, tc.served)
			}
		})
	}
}
