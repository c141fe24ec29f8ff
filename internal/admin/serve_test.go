//go:build unix

package admin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestAdminSocketOfAHeldStoreReachesItAndIsPrivate: a program that embeds the agent holds
// the store's single write lock; without the admin socket an operator
// cannot import a fix or remove a compromised bundle while it runs. Through
// Serve, a removal made over the socket takes effect in the running
// store, a second server on the same socket is refused, and Close removes
// the socket.
func TestAdminSocketOfAHeldStoreReachesItAndIsPrivate(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: now, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	importSampleBundle(t, store)

	srv, err := Serve(store, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := SocketPath(store.Path()); srv.Path() != want {
		t.Fatalf("socket %s, want %s", srv.Path(), want)
	}
	if st, err := os.Stat(srv.Path()); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("socket %v %v: must be private to its user", st, err)
	}
	if _, err := Serve(store, srv.Path(), nil); err == nil {
		t.Fatal("a second admin server on the same socket was allowed")
	}

	c, err := Dial(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bundles, err := c.Bundles()
	if err != nil || len(bundles) != 1 {
		t.Fatalf("bundles over the socket: %v %v", bundles, err)
	}
	if _, err := c.Remove(bundles[0].BundleID); err != nil {
		t.Fatal(err)
	}
	if local, _ := store.Bundles(); len(local) != 0 {
		t.Fatalf("the removal over the socket did not reach the running store: %v", local)
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.Path()); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there after Close: %v", err)
	}
	if err := <-srv.Done(); err != nil {
		t.Fatalf("Done after Close: %v", err)
	}
}

func importSampleBundle(t *testing.T, store *resolver.Store) {
	t.Helper()
	pubPEM, err := os.ReadFile("../../testdata/bundles/keys/TEST-ONLY-example-publisher.pub.pem")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keyfile.ParsePublicPEM(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.TrustAdd("example", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../testdata/bundles/translate.ampb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
}
