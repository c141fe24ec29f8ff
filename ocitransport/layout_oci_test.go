package ocitransport_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/ocitransport"
)

const sampleBundle = "../testdata/bundles/translate.ampb"

// nameOf is the error name of err ("" for none).
func nameOf(err error) string {
	var e *amp.Error
	if errors.As(err, &e) {
		return string(amp.NameOf(e))
	}
	if err != nil {
		return "unnamed: " + err.Error()
	}
	return ""
}

func mustOpen(t *testing.T, loc string, o ocitransport.Options, mode ocitransport.Mode) *ocitransport.Endpoint {
	t.Helper()
	l, err := ocitransport.ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ocitransport.Open(context.Background(), l, o, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func pushSample(t *testing.T, ep *ocitransport.Endpoint, tag string) *ocitransport.Artifact {
	t.Helper()
	f, err := os.Open(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := ep.PushBundle(context.Background(), f, "translate.ampb", tag)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// signedStatement is a statement of the given content type signed by a
// key of the test (its payload is not a valid statement: only a store
// applying it would look).
func signedStatement(t *testing.T, ctype string) []byte {
	t.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	data, err := bundle.SignObject(ctype, []byte{0xa1, 0x61, 0x61, 0x01}, []ed25519.PrivateKey{key})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLayoutPushPullIsByteIdentical: a bundle pushed to a layout folder and
// to a layout tar, in one layer and cut into layers, pulls back byte for
// byte, by tag and by digest; the manifest is deterministic.
func TestLayoutPushPullIsByteIdentical(t *testing.T) {
	want, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		dest      string
		maxLayer  int64
		wantLayer int
	}{
		{"folder one layer", "layout", 0, 1},
		{"folder parts", "layout", 1000, 9},
		{"tar one layer", "layout.tar", 0, 1},
		{"tar parts", "layout.tar", 4096, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			loc := "oci-layout:" + filepath.Join(dir, tc.dest)
			dst := mustOpen(t, loc, ocitransport.Options{MaxLayerSize: tc.maxLayer}, ocitransport.ReadWrite)
			a := pushSample(t, dst, "v1")
			if err := dst.Commit(); err != nil {
				t.Fatal(err)
			}
			if len(a.Manifest.Layers) != tc.wantLayer || a.FileSize != int64(len(want)) {
				t.Fatalf("layers %d size %d", len(a.Manifest.Layers), a.FileSize)
			}
			src := mustOpen(t, loc, ocitransport.Options{}, ocitransport.ReadOnly)
			for _, ref := range []string{"v1", a.Descriptor.Digest.String()} {
				got, err := src.Resolve(context.Background(), ref)
				if err != nil {
					t.Fatal(ref, err)
				}
				if !bytes.Equal(got.Raw, a.Raw) {
					t.Fatal("the manifest read back differs")
				}
				out := filepath.Join(dir, "out.ampb")
				if err := src.PullFile(context.Background(), got, out); err != nil {
					t.Fatal(err)
				}
				if data, _ := os.ReadFile(out); !bytes.Equal(data, want) {
					t.Fatal("the pulled file is not the pushed file")
				}
			}
		})
	}
}

// TestLayoutStatementsAreReferrers: statements pushed onto a bundle in a
// layout are its referrers (subject), read back byte for byte; a statement
// cannot be pushed onto a statement, a non-statement is refused.
func TestLayoutStatementsAreReferrers(t *testing.T) {
	loc := "oci-layout:" + filepath.Join(t.TempDir(), "layout")
	ctx := context.Background()
	dst := mustOpen(t, loc, ocitransport.Options{}, ocitransport.ReadWrite)
	b := pushSample(t, dst, "v1")
	var pushed []*ocitransport.Artifact
	for _, ct := range []string{bundle.MediaTypeRevocation, bundle.MediaTypeRotation, bundle.MediaTypeHeartbeat} {
		s, err := dst.PushStatement(ctx, signedStatement(t, ct), b)
		if err != nil {
			t.Fatal(err)
		}
		if s.Manifest.Subject == nil || s.Manifest.Subject.Digest != b.Descriptor.Digest {
			t.Fatal("no subject")
		}
		pushed = append(pushed, s)
	}
	if _, err := dst.PushStatement(ctx, signedStatement(t, bundle.MediaTypeRevocation), pushed[0]); nameOf(err) != string(ocitransport.ErrNotBundle) {
		t.Fatalf("a statement onto a statement: %v", err)
	}
	if _, err := dst.PushStatement(ctx, []byte("not a statement"), b); nameOf(err) != string(ocitransport.ErrUnsupportedKind) {
		t.Fatalf("not a statement: %v", err)
	}
	src := mustOpen(t, loc, ocitransport.Options{}, ocitransport.ReadOnly)
	rb, err := src.Resolve(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Statements(ctx, rb)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d statements, want 3", len(got))
	}
	kinds := map[string]bool{}
	for _, s := range got {
		data, err := src.Statement(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if ocitransport.StatementKind(data) != s.Kind {
			t.Fatal("kind")
		}
		kinds[s.Kind] = true
	}
	if len(kinds) != 3 {
		t.Fatalf("kinds %v", kinds)
	}
}

// TestLayoutCopyCarriesStatementsAndMakesNoNetworkCall: a bundle copied
// from one layout to a layout tar keeps its digest and its statements, and
// no connection is dialled (a layout is read from disk only).
func TestLayoutCopyCarriesStatementsAndMakesNoNetworkCall(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	dials := 0
	o := ocitransport.Options{DialContext: func(context.Context, string, string) (net.Conn, error) {
		dials++
		return nil, errors.New("no network")
	}}
	a := mustOpen(t, "oci-layout:"+filepath.Join(dir, "a"), o, ocitransport.ReadWrite)
	b := pushSample(t, a, "v1")
	if _, err := a.PushStatement(ctx, signedStatement(t, bundle.MediaTypeRevocation), b); err != nil {
		t.Fatal(err)
	}
	src := mustOpen(t, "oci-layout:"+filepath.Join(dir, "a"), o, ocitransport.ReadOnly)
	dst := mustOpen(t, "oci-layout:"+filepath.Join(dir, "b.tar"), o, ocitransport.ReadWrite)
	got, n, err := ocitransport.Copy(ctx, src, "v1", dst, "stable")
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Commit(); err != nil {
		t.Fatal(err)
	}
	if n != 1 || got.Descriptor.Digest != b.Descriptor.Digest {
		t.Fatalf("copied %d statements, digest %s", n, got.Descriptor.Digest)
	}
	tar := mustOpen(t, "oci-layout:"+filepath.Join(dir, "b.tar"), o, ocitransport.ReadOnly)
	rb, err := tar.Resolve(ctx, "stable")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := tar.Statements(ctx, rb); err != nil || len(st) != 1 {
		t.Fatalf("statements in the tar: %d, %v", len(st), err)
	}
	if dials != 0 {
		t.Fatalf("a layout dialled %d times", dials)
	}
}

// TestRefusedReferences: malformed references and plain HTTP to a host
// neither loopback nor named are refused before any connection.
func TestRefusedReferences(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"oci://", string(ocitransport.ErrReference)},
		{"oci://registry.example", string(ocitransport.ErrReference)},
		{"oci://registry.example/repo:bad tag", string(ocitransport.ErrReference)},
		{"oci://registry.example/repo@sha512:" + string(bytes.Repeat([]byte("a"), 128)), string(ocitransport.ErrReference)},
		{"oci://registry.example/repo?x=1", string(ocitransport.ErrReference)},
		{"oci-layout:", string(ocitransport.ErrReference)},
		{"oci-layout:dir@sha256:zz", string(ocitransport.ErrReference)},
		{"docker://x/y", string(ocitransport.ErrReference)},
	} {
		if _, err := ocitransport.ParseLocation(tc.in); nameOf(err) != tc.want {
			t.Errorf("%q: %v, want %s", tc.in, err, tc.want)
		}
	}
	loc, err := ocitransport.ParseLocation("oci://registry.example:5000/amp/x:v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocitransport.Open(context.Background(), loc, ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly); nameOf(err) != string(ocitransport.ErrPlainHTTP) {
		t.Fatalf("plain HTTP to a remote host: %v", err)
	}
	if _, err := ocitransport.Open(context.Background(), loc, ocitransport.Options{PlainHTTP: true, PlainHTTPHosts: []string{"registry.example"}}, ocitransport.ReadOnly); err != nil {
		t.Fatalf("plain HTTP to a named host: %v", err)
	}
}

// TestParseLocation: the forms a location takes.
func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ocitransport.Location
	}{
		{"oci://127.0.0.1:5000/amp/translate:v1", ocitransport.Location{Kind: ocitransport.KindRegistry, Registry: "127.0.0.1:5000", Repository: "amp/translate", Reference: "v1"}},
		{"oci://r.example/a/b", ocitransport.Location{Kind: ocitransport.KindRegistry, Registry: "r.example", Repository: "a/b"}},
		{"oci://r.example/a@sha256:" + hex64, ocitransport.Location{Kind: ocitransport.KindRegistry, Registry: "r.example", Repository: "a", Reference: "sha256:" + hex64}},
		{"oci-layout:/media/usb/layout:stable", ocitransport.Location{Kind: ocitransport.KindLayout, Path: "/media/usb/layout", Reference: "stable"}},
		{"oci-layout:/media/usb/layout", ocitransport.Location{Kind: ocitransport.KindLayout, Path: "/media/usb/layout"}},
		{"oci-layout:carry.tar@sha256:" + hex64, ocitransport.Location{Kind: ocitransport.KindLayoutTar, Path: "carry.tar", Reference: "sha256:" + hex64}},
		{"oci-layout:carry.tar:v2", ocitransport.Location{Kind: ocitransport.KindLayoutTar, Path: "carry.tar", Reference: "v2"}},
	} {
		got, err := ocitransport.ParseLocation(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := ocitransport.ParseLocation(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q does not parse back", tc.in, got.String())
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
