package resolver

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestStatementRefusedWhileTheStoreClosesKeepsItsAuditEntry: attack: a
// signed statement (a revocation, a trust statement, a heartbeat) is
// being applied under s.mu when Store.Close runs. Close waited only for
// Imports (review 21): it closed the database at once, the statement's
// refusal was then audited on the closed database, the write's error was
// dropped (auditRefusal), and the caller was answered the refusal, which
// the chained audit log did not hold (MIRROR-11: every refusal is
// audited). Now a statement registers with Close once it holds s.mu
// (beginStatement), so Close waits for its audit; and a statement whose
// refusal could not be audited answers store_io.
func TestStatementRefusedWhileTheStoreClosesKeepsItsAuditEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	setFaults(s, func(step string) error {
		if step != "refusal-audit" {
			return nil
		}
		// The refusal is judged; Close runs before its audit is written.
		go func() { closed <- s.Close() }()
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			s.closeMu.Lock()
			c := s.closed
			s.closeMu.Unlock()
			if c {
				break
			}
		}
		select {
		case <-closed: // Close did not wait for the statement: the database is closed
			closed <- nil
		case <-time.After(300 * time.Millisecond): // Close waits for the statement
		}
		return nil
	})
	_, applyErr := s.ApplyRevocation([]byte("not a revocation statement at all"))
	if applyErr == nil {
		t.Fatal("junk was applied as a revocation")
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close has not returned 5s after the statement ended")
	}
	if !errors.Is(applyErr, ErrStoreIO) && !auditHoldsRefusalAfterReopen(t, path) {
		t.Fatalf("a statement applied while the store closed answered its caller %q (a refusal), yet the audit log has "+
			"no import_refused entry: the refusal was audited on the closed database and the error dropped", applyErr)
	}
}

// auditHoldsRefusalAfterReopen reports whether the audit log of the
// closed store at path, opened again, holds an import_refused entry.
func auditHoldsRefusalAfterReopen(t *testing.T, path string) bool {
	t.Helper()
	r, err := Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	entries, err := r.Audit()
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(entries, func(e AuditEntry) bool { return e.Action == "import_refused" })
}

// TestUnauditedStatementRefusalIsAnsweredStoreIO: attack: a statement's
// refusal whose audit entry the store cannot write (a full disk) was
// answered as the refusal, its write error dropped (auditRefusal).
// Now the statement answers store_io, as an Import does.
func TestUnauditedStatementRefusalIsAnsweredStoreIO(t *testing.T) {
	s := newStore(t)
	setFaults(s, func(step string) error {
		if step == "refusal-audit" {
			return errors.New("disk full")
		}
		return nil
	})
	junk := []byte("not a revocation statement at all")
	if _, err := s.ApplyRevocation(junk); !errors.Is(err, ErrStoreIO) {
		t.Fatalf("a statement's refusal whose audit entry could not be written answered %v, not store_io", err)
	}
	setFaults(s, nil)
	if _, err := s.ApplyRevocation(junk); err == nil || errors.Is(err, ErrStoreIO) {
		t.Fatalf("the junk offered again answered %v, not its refusal", err)
	}
}
