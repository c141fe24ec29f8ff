package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// sharingBundle builds bundle id (capability id+".op") of n artifacts of
// size bytes whose bytes do not depend on id: two such bundles share
// every blob.
func sharingBundle(t testing.TB, id string, n, size int) []byte {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for i := 0; i < n; i++ {
		b := bytes.Repeat([]byte{byte(i), 0x33, 0x5a, 0xa5}, size/4)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(fmt.Sprintf("blobs/%04d.bin", i), "application/octet-stream", b))
	}
	in, out := "capabilities/"+id+".op/1.0.0/input.schema.json", "capabilities/"+id+".op/1.0.0/output.schema.json"
	d.Artifacts = append(d.Artifacts,
		bundle.BytesSource(in, bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource(out, bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: id + ".op", Version: v,
		InputSchema: capability.SchemaRef{ArtifactKey: in}, OutputSchema: capability.SchemaRef{ArtifactKey: out}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCancelAtEveryImportStepIsAllOrNothing: the import's context is
// cancelled (as a Ctrl-C does, CLI-22) at the 1st, 2nd, … step of an
// import (every staging batch, the commit and points inside it), for a
// new bundle and for a newer version replacing an installed one. Either
// the import succeeded and is installed and audited as an import, or it
// failed and the store is byte for byte as before, audit log included:
// no half-installed bundle, no staged blob left, no audit entry for an
// import that did not happen (threat: a Ctrl-C between two steps leaving
// what Resolve would serve, or a log that lies).
func TestCancelAtEveryImportStepIsAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		version uint64
	}{
		{"new bundle", largeBundle(t, 6, 48<<10), 1},
		{"newer version", variant(t, 2, nil), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rolledBack := 0
			for cancelAt := 1; ; cancelAt++ {
				// A fresh store each time: an import that stands
				// raises the high-water mark for good.
				s := newStore(t, func(o *Options) { o.StageBatchBytes = 64 << 10 })
				mustImport(t, s, variant(t, 1, nil))
				ctx, cancel := context.WithCancel(context.Background())
				calls := 0
				setFaults(s, func(string) error {
					if calls++; calls == cancelAt {
						cancel()
					}
					return nil
				})
				before, gen := dump(t, s), s.Generation()
				res, err := s.Import(ctx, bytes.NewReader(tc.data), ImportOptions{})
				setFaults(s, nil)
				cancel()
				if ps, cerr := s.Check(); cerr != nil || len(ps) > 0 {
					t.Fatalf("cancel at step %d: check %v %v", cancelAt, ps, cerr)
				}
				if err != nil {
					if got := dump(t, s); got != before || s.Generation() != gen {
						t.Fatalf("cancel at step %d failed the import (%v) but changed the store", cancelAt, err)
					}
					rolledBack++
					continue
				}
				if e := lastAudit(t, s); e.Action != "import" || e.BundleID != res.BundleID || e.Version != tc.version || s.Generation() == gen {
					t.Fatalf("cancel at step %d: the import stands but is audited as %+v (generation %d)", cancelAt, e, s.Generation())
				}
				if calls < cancelAt {
					// Every step passed without a cancel: done.
					if rolledBack == 0 {
						t.Fatal("no cancel rolled an import back")
					}
					return
				}
			}
		})
	}
}

// TestInterruptedImportSharingBlobsLeavesTheOtherBundleWhole: two imports
// whose bundles share every artifact, one cancelled while staging, the
// other waiting on the store (as two imports through a running agent's
// admin socket do), or already installed: the rollback deletes only what
// nothing shares, so the other bundle is whole and every blob of it
// readable (threat: "the blobs nothing shares" including one another
// import is about to reference, leaving an installed bundle whose
// artifacts are gone).
func TestInterruptedImportSharingBlobsLeavesTheOtherBundleWhole(t *testing.T) {
	a := sharingBundle(t, "org.example.a", 6, 32<<10)
	b := sharingBundle(t, "org.example.b", 6, 32<<10)
	t.Run("concurrent", func(t *testing.T) {
		s := newStore(t, func(o *Options) { o.StageBatchBytes = 1 })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		var errB error
		var once sync.Once
		stages := 0
		var mu sync.Mutex
		setFaults(s, func(step string) error {
			mu.Lock()
			defer mu.Unlock()
			if step != "stage" {
				return nil
			}
			if stages++; stages == 3 {
				once.Do(func() {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errB = s.Import(context.Background(), bytes.NewReader(b), ImportOptions{})
					}()
					cancel()
				})
			}
			return nil
		})
		_, errA := s.Import(ctx, bytes.NewReader(a), ImportOptions{})
		wg.Wait()
		setFaults(s, nil)
		if errA == nil {
			t.Fatal("the cancelled import succeeded")
		}
		if errB != nil {
			t.Fatalf("the other import: %v", errB)
		}
		if err := s.Export("org.example.b", &bytes.Buffer{}); err != nil {
			t.Fatalf("the other bundle is not whole: %v", err)
		}
		if ps, err := s.Check(); err != nil || len(ps) > 0 {
			t.Fatalf("check: %v %v", ps, err)
		}
	})
	t.Run("installed", func(t *testing.T) {
		s := newStore(t, func(o *Options) { o.StageBatchBytes = 1 })
		mustImport(t, s, b)
		before := dump(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		setFaults(s, func(step string) error {
			if step == "stage" {
				cancel()
			}
			return nil
		})
		if _, err := s.Import(ctx, bytes.NewReader(a), ImportOptions{}); err == nil {
			t.Fatal("the cancelled import succeeded")
		}
		setFaults(s, nil)
		if dump(t, s) != before {
			t.Fatal("a cancelled import sharing every blob changed the store")
		}
		if err := s.Export("org.example.b", &bytes.Buffer{}); err != nil {
			t.Fatalf("the installed bundle is not whole: %v", err)
		}
	})
}

// TestRecoveredCountsWhatOpeningRolledBack: Recovered says how many
// interrupted imports and staged blobs opening the store read-write
// removed, and zero once there were none (threat: check --repair saying
// it removed nothing, or more than it did).
func TestRecoveredCountsWhatOpeningRolledBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true, StageBatchBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	data := largeBundle(t, 6, 16<<10)
	n := 0
	// Closing the store mid-import stands for a kill: the rollback
	// cannot run, the journal stays.
	if _, err := importBytes(t, s, data, ImportOptions{Progress: func(int64) {
		if n++; n == 4 {
			s.Close()
		}
	}}); err == nil {
		t.Fatal("the interrupted import succeeded")
	}
	var journaled int
	r, err := Open(path, Options{Now: func() time.Time { return testNow }, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := r.Check()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Kind == "pending" && bytes.HasPrefix([]byte(p.Message), []byte("blob ")) {
			journaled++
		}
	}
	if got := r.Recovered(); got != (Recovery{}) {
		t.Fatalf("a read-only open recovered %+v", got)
	}
	r.Close()
	if journaled == 0 {
		t.Fatalf("setup: nothing staged: %v", ps)
	}
	w, err := Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Recovered(); got != (Recovery{Imports: 1, Blobs: journaled}) {
		t.Fatalf("recovered %+v, want 1 import and %d blobs", got, journaled)
	}
	w.Close()
	w, err = Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.Recovered(); got != (Recovery{}) {
		t.Fatalf("a second open recovered %+v", got)
	}
	if ps, err := w.Check(); err != nil || len(ps) > 0 {
		t.Fatalf("check after recovery: %v %v", ps, err)
	}
}

// cutOff is a request body whose sender went away after limit bytes: it
// cancels the import's context and fails the read, as net/http does for
// an import through the admin socket whose command took Ctrl-C.
type cutOff struct {
	r      *bytes.Reader
	limit  int
	cancel context.CancelFunc
}

func (c *cutOff) Read(p []byte) (int, error) {
	if c.limit <= 0 {
		c.cancel()
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > c.limit {
		p = p[:c.limit]
	}
	n, err := c.r.Read(p)
	c.limit -= n
	return n, err
}

// TestCancelledImportWhoseStreamBreaksIsNotAuditedAsARefusal: an import
// through a running agent's admin socket interrupted by Ctrl-C sees its
// context cancelled and its body cut off at once. A cancelled import is
// not a refusal (auditRefusal), so the store must be exactly as before,
// audit log included (threat: the audit log recording that this operator
// presented a truncated or forged file, an entry for a refusal that never
// happened, at every Ctrl-C).
func TestCancelledImportWhoseStreamBreaksIsNotAuditedAsARefusal(t *testing.T) {
	s := newStore(t, func(o *Options) { o.StageBatchBytes = 1 })
	data := largeBundle(t, 6, 16<<10)
	before := dump(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.Import(ctx, &cutOff{r: bytes.NewReader(data), limit: len(data) / 2, cancel: cancel}, ImportOptions{})
	if err == nil {
		t.Fatal("a cut-off import succeeded")
	}
	if ctx.Err() == nil {
		t.Fatal("setup: the context was not cancelled")
	}
	if got := dump(t, s); got != before {
		e := lastAudit(t, s)
		t.Fatalf("a cancelled import (%v) changed the store: last audit entry %s verdict %s for %s@%d", err, e.Action, e.Verdict, e.BundleID, e.Version)
	}
}

// TestRefusalOfACallerThatWentAwayIsStillAudited: a caller that hangs up
// (its context cancelled) right after sending a bundle its store refuses
// (an unknown signer) does not keep the refusal out of the audit log:
// only a cancellation, or a stream cut with it, goes unaudited (threat: an
// admin-socket client forging bundles and hanging up to stay unseen).
func TestRefusalOfACallerThatWentAwayIsStillAudited(t *testing.T) {
	s := newStore(t)
	_, stranger, _ := ed25519.GenerateKey(nil)
	d := &bundle.Draft{BundleID: "org.example.forged", Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{stranger}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Import(ctx, bytes.NewReader(file.Bytes()), ImportOptions{})
	if err == nil {
		t.Fatal("a bundle of an unknown signer was imported")
	}
	if e := lastAudit(t, s); e.Action != "import_refused" || e.Verdict != string(amp.NameOf(err)) {
		t.Fatalf("refused with %v by a caller that went away: the last audit entry is %s %s", err, e.Action, e.Verdict)
	}
}
