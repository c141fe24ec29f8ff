package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// largeBundle builds an org.example bundle of n artifacts of size bytes
// (plus one capability), signed by the example test key.
func largeBundle(t testing.TB, n, size int) []byte {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	d := &bundle.Draft{BundleID: "org.example.large", Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for i := 0; i < n; i++ {
		b := bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x5a, 0xa5}, size/4)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(fmt.Sprintf("blobs/%04d.bin", i), "application/octet-stream", b))
	}
	d.Artifacts = append(d.Artifacts,
		bundle.BytesSource("capabilities/org.example.large.op/1.0.0/input.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource("capabilities/org.example.large.op/1.0.0/output.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: "org.example.large.op", Version: v,
		InputSchema:  capability.SchemaRef{ArtifactKey: "capabilities/org.example.large.op/1.0.0/input.schema.json"},
		OutputSchema: capability.SchemaRef{ArtifactKey: "capabilities/org.example.large.op/1.0.0/output.schema.json"}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFaultAtEveryStep injects a failure at the 1st, 2nd, ... step of an
// import (every staging batch, the commit and points inside it) until the
// import gets through; after every failure the store is identical to the
// one before (full dump).
func TestFaultAtEveryStep(t *testing.T) {
	data := largeBundle(t, 12, 64<<10)
	v2 := variant(t, 2, nil) // replaces an installed version: exercises uninstall too
	for _, tc := range []struct {
		name string
		data []byte
	}{{"new bundle", data}, {"newer version", v2}} {
		t.Run(tc.name, func(t *testing.T) {
			failAt, calls := 0, 0
			s := newStore(t, func(o *Options) {
				o.StageBatchBytes = 100 << 10 // several staging transactions
			})
			setFaults(s, func(step string) error {
				calls++
				if calls == failAt {
					return errors.New("injected at " + step)
				}
				return nil
			})
			failAt = -1
			mustImport(t, s, variant(t, 1, nil))
			for failAt = 1; ; failAt++ {
				calls = 0
				before := dump(t, s)
				gen := s.Generation()
				_, err := importBytes(t, s, tc.data, ImportOptions{})
				if err == nil {
					if failAt < 3 {
						t.Fatalf("import succeeded with a fault at step %d", failAt)
					}
					break
				}
				if got := dump(t, s); got != before {
					t.Fatalf("fault at step %d changed the store", failAt)
				}
				if s.Generation() != gen {
					t.Fatalf("fault at step %d changed the generation", failAt)
				}
				if ps, _ := s.Check(); len(ps) > 0 {
					t.Fatalf("fault at step %d: check %v", failAt, ps)
				}
			}
		})
	}
}

// TestFailedStreamLeavesNothing: an artifact near the end fails its hash
// after earlier ones were staged; everything staged is removed.
func TestFailedStreamLeavesNothing(t *testing.T) {
	s := newStore(t, func(o *Options) { o.StageBatchBytes = 1 })
	data := largeBundle(t, 8, 32<<10)
	before := dumpBesidesAudit(t, s)
	bad := bytes.Clone(data)
	bad[len(bad)-200] ^= 1 // inside the last artifacts
	_, err := importBytes(t, s, bad, ImportOptions{})
	expectName(t, err, bundle.ErrHashMismatch)
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a failed import left staged blobs behind")
	}
	if e := lastAudit(t, s); e.Action != "import_refused" || e.Verdict != string(bundle.ErrHashMismatch) {
		t.Fatalf("refusal audited as %+v", e)
	}
	// Truncated files (truncation) likewise.
	_, err = importBytes(t, s, data[:len(data)/2], ImportOptions{})
	if err == nil || dumpBesidesAudit(t, s) != before {
		t.Fatalf("truncated import: %v", err)
	}
}

func TestFaultDuringRemove(t *testing.T) {
	fault := false
	s := newStore(t)
	setFaults(s, func(step string) error {
		if fault && step == "remove" {
			return errors.New("injected")
		}
		return nil
	})
	mustImport(t, s, sampleBytes(t, "translate"))
	before := dump(t, s)
	fault = true
	if _, err := s.Remove("org.example.translate"); err == nil {
		t.Fatal("remove with a fault succeeded")
	}
	if dump(t, s) != before {
		t.Fatal("a failed removal changed the store")
	}
	fault = false
}

const (
	envKillStore  = "AMPBUNDLE_KILL_CHILD_STORE"
	envKillBundle = "AMPBUNDLE_KILL_CHILD_BUNDLE"
	envKillRuns   = "AMPBUNDLE_KILL_RUNS"
)

// TestKillChild is the child process of TestKillDuringImport; it does
// nothing unless started by it.
func TestKillChild(t *testing.T) {
	path := os.Getenv(envKillStore)
	if path == "" {
		t.Skip("run by TestKillDuringImport")
	}
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, StageBatchBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(os.Getenv(envKillBundle))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), f, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
}

// TestKillDuringImport kills a real child process (SIGKILL) at random
// moments while it imports a large bundle, reopens the store and finds it
// either unchanged or fully updated, with check clean. Set
// AMPBUNDLE_KILL_RUNS for a longer soak (README).
func TestKillDuringImport(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	runs := 10
	if n, err := strconv.Atoi(os.Getenv(envKillRuns)); err == nil && n > 0 {
		runs = n
	}
	dir := t.TempDir()
	bundlePath := filepath.Join(dir, "large.ampb")
	if err := os.WriteFile(bundlePath, largeBundle(t, 48, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	// The state before: a store with the translate sample installed.
	base := filepath.Join(dir, "base.db")
	s, err := Open(base, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"})
	mustImport(t, s, sampleBytes(t, "translate"))
	before := dump(t, s)
	s.Close()
	// The state after: the same import, in process, to completion.
	ref := filepath.Join(dir, "ref.db")
	copyFile(t, base, ref)
	start := time.Now()
	runChild(t, ref, bundlePath, -1)
	full := time.Since(start)
	s, err = Open(ref, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	after := dump(t, s)
	s.Close()
	if after == before {
		t.Fatal("the reference import changed nothing")
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	outcome := map[string]int{}
	for i := 0; i < runs; i++ {
		work := filepath.Join(dir, fmt.Sprintf("run%d.db", i))
		copyFile(t, base, work)
		runChild(t, work, bundlePath, time.Duration(rng.Int64N(int64(full))))
		// Look before recovery: was the child killed while staging?
		if ro, err := Open(work, Options{ReadOnly: true}); err == nil {
			var pending int
			ro.db.View(func(tx *bolt.Tx) error { pending = bucket(tx, bPending).Stats().KeyN; return nil })
			ro.Close()
			if pending > 0 {
				outcome["killed while staging"]++
			}
		}
		s, err := Open(work, Options{Now: func() time.Time { return testNow }})
		if err != nil {
			t.Fatalf("run %d: reopen: %v", i, err)
		}
		got := dump(t, s)
		ps, err := s.Check()
		s.Close()
		if err != nil || len(ps) > 0 {
			t.Fatalf("run %d: check after kill: %v %v", i, ps, err)
		}
		switch got {
		case before:
			outcome["unchanged"]++
		case after:
			outcome["updated"]++
		default:
			t.Fatalf("run %d: the store is neither unchanged nor fully updated", i)
		}
		os.Remove(work)
	}
	t.Logf("%d kills (import takes %v): %v", runs, full, outcome)
}

// runChild imports bundlePath into store in a child process, killing it
// with SIGKILL after killAfter (never, when negative).
func runChild(t *testing.T, store, bundlePath string, killAfter time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKillStore+"="+store, envKillBundle+"="+bundlePath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter < 0 {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child import failed: %v\n%s", err, out.String())
		}
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(killAfter):
		cmd.Process.Kill() // SIGKILL: no cleanup of any kind runs
		<-done
	}
}
