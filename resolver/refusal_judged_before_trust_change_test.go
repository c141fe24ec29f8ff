package resolver

import (
	"context"
	"crypto/sha256"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRefusalJudgedBeforeATrustChangeIsNotRecordedAfterIt: the drain of
// a refused stream runs without the store's write lock (MIRROR-13), so
// a trust change can land between the verdict and the record. Attack: a
// caller offers a bundle of a key the store does not trust yet and keeps
// the rest of the stream open while the operator trusts the key; then
// it ends the stream. Were the record written at the generation of its
// own transaction, RefusedAt would answer "refused" at the generation of
// the trust change, and sync would skip the very file the key was
// trusted for, for a day. The refusal is recorded only when the store is
// still at the generation it was judged at; otherwise it is audited and
// recorded nowhere.
func TestRefusalJudgedBeforeATrustChangeIsNotRecordedAfterIt(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := variant(t, 2, nil)
	sum := sha256.Sum256(data)
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), pr, ImportOptions{FileSHA256: sum[:]})
		done <- err
	}()
	// Write returns once the store has read every byte: refused at the
	// manifest, the rest drained; the drain now waits for the end.
	if _, err := pw.Write(data); err != nil {
		t.Fatal(err)
	}
	trusted := make(chan error, 1)
	go func() {
		trusted <- s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"})
	}()
	select {
	case err := <-trusted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		pw.Close()
		<-done
		<-trusted
		t.Fatal("a trust change waited 5s behind the drain of a refused stream: the drain holds the store's write lock")
	}
	pw.Close()
	if err := <-done; amp.NameOf(err) == "" {
		t.Fatalf("a bundle of an untrusted key: %v, want a refusal", err)
	}
	if v, ok, err := s.RefusedAt(sum[:]); err != nil || ok {
		t.Fatalf("a refusal judged before the key was trusted answers after it: RefusedAt = %q %v %v; "+
			"sync skips the file the key was trusted for, for a day", v, ok, err)
	}
	if _, err := importBytes(t, s, data, ImportOptions{FileSHA256: sum[:]}); err != nil {
		t.Fatalf("the file, its key now trusted: %v", err)
	}
}
