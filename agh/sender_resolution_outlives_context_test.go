package agh

import (
	"context"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// didsFunc is an amp.DIDResolver of a function.
type didsFunc func(ctx context.Context, did string) (*amp.DIDDocument, error)

func (f didsFunc) ResolveDID(ctx context.Context, did string) (*amp.DIDDocument, error) {
	return f(ctx, did)
}

// webDocument is the DID document of did with key as its one signing key.
func webDocument(did string, key ed25519.PrivateKey) *amp.DIDDocument {
	return &amp.DIDDocument{ID: did, Methods: []amp.VerificationMethod{{ID: did + "#k1", Type: "Multikey", Controller: did,
		KeyType: amp.KeyEd25519, PublicKey: key.Public().(ed25519.PublicKey)}}, AssertionMethod: []string{did + "#k1"}}
}

// TestSenderResolutionThatOutlivesTheCallersContextIsRefused: attack: a
// signed transfer from a did:web sender makes the receiver resolve that
// DID (a DID document read from a store, which may wait on the store's
// lock). ReceiveOptions.Resolve was a callback with no context, so a
// resolution that waited held the caller's goroutine with no deadline
// the caller could set, and a late answer was acted on after the caller
// had given up. The resolver is now an amp.DIDResolver given the
// caller's context (ReceiveTransferContext), and a sender still
// unresolved when that context ends is sender_unresolved, whatever the
// resolver returns (AGH-18). A did:key needs no resolution and is
// unaffected.
func TestSenderResolutionThatOutlivesTheCallersContextIsRefused(t *testing.T) {
	key := testKey(3)
	did := "did:web:agent.example"
	env, err := TransferEnvelope(pageCatalog()[0], &Signer{DID: did, Key: key}, "", envOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		env       []byte
		cancelled bool // the context has ended before ReceiveTransferContext
		// resolve is the resolver; cancel ends the caller's context.
		resolve   func(ctx context.Context, cancel func()) (*amp.DIDDocument, error)
		want      amp.ErrName // "" accepted
		wantCalls int
	}{
		{"a resolver that waits for the context, which then ends", env, false, func(ctx context.Context, cancel func()) (*amp.DIDDocument, error) {
			cancel() // the caller's deadline passes while the resolver waits
			<-ctx.Done()
			return nil, ctx.Err()
		}, ErrSenderUnresolved, 1},
		{"a resolver that ignores the context and answers late", env, false, func(_ context.Context, cancel func()) (*amp.DIDDocument, error) {
			cancel()
			return webDocument(did, key), nil
		}, ErrSenderUnresolved, 1},
		{"a context that ended before the transfer is read", env, true, func(context.Context, func()) (*amp.DIDDocument, error) {
			return webDocument(did, key), nil
		}, ErrSenderUnresolved, 0},
		{"a resolver that fails within the deadline", env, false, func(context.Context, func()) (*amp.DIDDocument, error) {
			return nil, errors.New("no such DID")
		}, ErrUnknownSender, 1},
		{"a resolver that answers within the deadline", env, false, func(context.Context, func()) (*amp.DIDDocument, error) {
			return webDocument(did, key), nil
		}, "", 1},
		{"a did:key sender, the context ended", signed(t, testKey(1)), true, func(context.Context, func()) (*amp.DIDDocument, error) {
			return nil, errors.New("a did:key is never resolved")
		}, "", 0},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		if tc.cancelled {
			cancel()
		}
		calls := 0
		dids := didsFunc(func(rctx context.Context, got string) (*amp.DIDDocument, error) {
			calls++
			if got != did {
				t.Errorf("%s: resolved %q", tc.name, got)
			}
			return tc.resolve(rctx, cancel)
		})
		tr, err := ReceiveTransferContext(ctx, tc.env, ReceiveOptions{Now: clock, DIDs: dids})
		cancel()
		switch {
		case tc.want == "" && (err != nil || !tr.Verified):
			t.Errorf("%s: %+v %v, want it verified", tc.name, tr, err)
		case tc.want != "" && (errName(err) != string(tc.want) || tr != nil):
			t.Errorf("%s: %+v %v, want %s", tc.name, tr, err, tc.want)
		case tc.want == ErrSenderUnresolved && !errors.Is(err, context.Canceled):
			t.Errorf("%s: %v does not carry the context's error", tc.name, err)
		}
		if calls != tc.wantCalls {
			t.Errorf("%s: the resolver was asked %d times, want %d", tc.name, calls, tc.wantCalls)
		}
	}
}
