package resolver

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestCheckInFlightAtCloseAnswersStoreIO: the attack: a
// judgement (CheckImport, POST /v1/import/check through an agent) is in
// flight, its body sent slowly, when the store closes (the agent stops).
// Import is registered with Close and its stream is cut once Close begins
// (beginImport); CheckImport was neither. Before (review 46): stalled in the manifest,
// the check then reads the store through a closed database and answers
// bolt's bare "database not open" (checkBeforeStaging does not wrap its
// first View's error: no name, an internal error through the socket);
// stalled in the artifacts, Close returns while the check still reads, and
// once the body ends the check answers nil ("the store would take it") of
// a store that is closed, its goroutine and connection having outlived the
// store for as long as the caller chose to send (up to the 8 GiB cap at
// the minimum data rate). Now: a check in flight when Close begins is
// waited for by Close and stops with store_io (as an Import does, within
// its cancel grace); never a bare bolt error, never a verdict of a closed
// store.
func TestCheckInFlightAtCloseAnswersStoreIO(t *testing.T) {
	for _, tc := range []struct {
		name string
		sent func(file []byte) int // bytes sent before Close
	}{
		{"stalled in the manifest", func([]byte) int { return 8 }},
		{"stalled in the artifacts", func(file []byte) int { return len(file) - 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			file := variant(t, 4, nil)
			n := tc.sent(file)
			pr, pw := io.Pipe()
			defer pw.Close()
			type verdict struct {
				res *ImportResult
				err error
			}
			done := make(chan verdict, 1)
			go func() {
				res, err := s.CheckImport(pr)
				done <- verdict{res, err}
			}()
			if _, err := pw.Write(file[:n]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the check consumes what was sent
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			// A Read that never returns holds Close, for a check as for an
			// Import (MIRROR-13); the admin socket's minimum data rate ends
			// a stalled body, as this does once Close has begun (seen in
			// the store's own state, then a second more: no fixed sleep
			// that a loaded machine outlasts before Close even starts).
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
				if closing, _ := closeState(s); closing {
					break
				}
				if time.Now().After(end) {
					t.Fatal("Close never began")
				}
			}
			time.Sleep(time.Second)
			pw.CloseWithError(io.ErrUnexpectedEOF)
			select {
			case v := <-done:
				if amp.NameOf(v.err) != ErrStoreIO {
					t.Fatalf("a check in flight at Close answered %+v, %v; want store_io", v.res, v.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the check in flight at Close did not end")
			}
			select {
			case err := <-closed:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return once the check ended")
			}
		})
	}
}
