package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// TestRefusalJudgedWhileTheStoreClosesKeepsItsAuditEntry: attack: an
// Import is in flight (past its trust read, reading the caller's stream
// under s.mu) when Store.Close runs. Close waited only for the drains
// already registered: none was, so it closed the database at once. The
// stream then turned out to be junk; the refusal was judged and audited
// "without a drain" on the closed database: the write failed, its error
// was dropped, and Import still answered the caller with the refusal
// (unknown_format), which the chained audit log did not hold (MIRROR-11:
// every refusal is audited). Now every Import registers with Close at
// its start (Store.beginImport) and Close waits for it; and an Import
// whose refusal could not be audited answers store_io
// (TestUnauditedRefusalIsAnsweredStoreIO).
func TestRefusalJudgedWhileTheStoreClosesKeepsItsAuditEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), pr, ImportOptions{})
		done <- err
	}()
	// The Import holds s.mu, registered with Close, and waits for its
	// first bytes (20 s: a hang guard for a loaded machine).
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, n := closeState(s); n == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("test setup: the Import never registered with Close")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("test setup: the Import returned before its stream sent anything: %v", err)
	default:
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	closeReturned := false
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
		closeReturned = true
	case <-time.After(2 * time.Second):
		// Close waits for the Import in flight: that is the fix's
		// first form; let the stream end and check the audit.
	}
	go func() {
		_, _ = pw.Write(bytes.Repeat([]byte("not a bundle at all\n"), 64))
		pw.Close()
	}()
	var importErr error
	select {
	case importErr = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the Import has not returned 5s after its stream ended")
	}
	if !closeReturned {
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close has not returned 5s after the Import in flight ended")
		}
	}
	if importErr == nil {
		t.Fatal("junk was imported")
	}
	if errors.Is(importErr, ErrStoreIO) {
		return // not reported as a refusal: nothing to audit
	}
	r, err := Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	entries, err := r.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == "import_refused" {
			return
		}
	}
	t.Fatalf("an Import in flight when the store was closed answered its caller %q (a refusal), "+
		"yet the audit log has no import_refused entry: the refusal was audited on the closed database and the error dropped", importErr)
}

// TestUnauditedRefusalIsAnsweredStoreIO: attack: a refusal whose audit
// entry the store cannot write (a full disk, a database closed under it)
// was still answered as the refusal, its write error dropped: the caller
// (and sync, which trusts a refusal's verdict) was told of a refusal the
// chained audit log does not hold. Now Import answers store_io, and
// nothing is recorded that RefusedAt would answer.
func TestUnauditedRefusalIsAnsweredStoreIO(t *testing.T) {
	s := newStore(t)
	setFaults(s, func(step string) error {
		if step == "refusal-audit" {
			return errors.New("disk full")
		}
		return nil
	})
	junk := bytes.Repeat([]byte("not a bundle at all\n"), 64)
	_, err := s.Import(context.Background(), bytes.NewReader(junk), ImportOptions{})
	if !errors.Is(err, ErrStoreIO) {
		t.Fatalf("a refusal whose audit entry could not be written answered %v, not store_io", err)
	}
	setFaults(s, nil)
	entries, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == "import_refused" {
			t.Fatalf("the fault did not keep the refusal's audit entry out: %+v", e)
		}
	}
	sum := sha256.Sum256(junk)
	if v, ok, err := s.RefusedAt(sum[:]); err != nil || ok {
		t.Fatalf("RefusedAt answers %q %v %v for a refusal never audited", v, ok, err)
	}
	// Offered again with the audit working, it is refused and audited.
	if _, err := s.Import(context.Background(), bytes.NewReader(junk), ImportOptions{}); err == nil || errors.Is(err, ErrStoreIO) {
		t.Fatalf("the junk offered again answered %v, not its refusal", err)
	}
}
