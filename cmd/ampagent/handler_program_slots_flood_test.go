//go:build unix

package main

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestManyCallersSlowProgramsStrangerCannotTakeEverySlot: strangers
// (admitted by a "*" rule, one principal) invoke a capability whose
// program is slow, 15 at once (the HTTP listener's share of one peer is 16
// requests in flight; over TCP 128, and many peers get 64 or 512 in all)
// (threat: every invocation started a process at once, each able to hold a
// 16 MiB stdout buffer and about 60 MiB of parsed result: 11 to 15
// programs ran together, as many as the listeners let in). At most
// max_programs (default 16) run at once, one principal at most a quarter
// of them (4), the others are refused at once, retryably (5004
// programs_busy, before the agent records anything); a caller an allow
// rule names still starts its program at once while the strangers hold
// their share (CLI-37).
func TestManyCallersSlowProgramsStrangerCannotTakeEverySlot(t *testing.T) {
	db, key := serveStore(t)
	namedID := newNamedCaller(t)
	runs := t.TempDir()
	cfg := writeConfig(t, map[string]any{
		"allow": []string{"*=org.example.", namedID.DID() + "=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.0.0": map[string]any{
			"command": []string{"/bin/sh", "-c", `touch "$RUNS/$$"; sleep 0.4; rm -f "$RUNS/$$"; echo '{"text":"x","detected_source":"en"}'`},
			"env":     map[string]string{"RUNS": runs}}},
	})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	defer r.stop()

	// The peak of programs running at once, sampled.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if ents, err := os.ReadDir(runs); err == nil && int64(len(ents)) > peak.Load() {
				peak.Store(int64(len(ents)))
			}
		}
	}()

	params := map[string]any{"text": "hello", "target": "fr"}
	const strangers = 15
	var wg sync.WaitGroup
	var failed, busy atomic.Int64
	for range strangers {
		c := newTestClient(t, r.url, r.did)
		wg.Go(func() {
			_, err := invokeID(t, c, "org.example.translate.text:2.0.0", params, 20000)
			switch {
			case isProgramsBusy(err):
				busy.Add(1)
			case err != nil:
				failed.Add(1)
			}
		})
	}
	// While the strangers hold their share, the named caller's program
	// starts at once: 0.4 s of its own run, a generous 1.5 s in all
	// (a wave of strangers ahead of it would take 0.4 s each).
	time.Sleep(200 * time.Millisecond)
	named := namedID.client(r.url, r.did)
	start := time.Now()
	_, nerr := invokeID(t, named, "org.example.translate.text:2.0.0", params, 20000)
	namedTook := time.Since(start)
	wg.Wait()
	close(stop)
	<-sampled

	if nerr != nil {
		t.Fatalf("the named caller's invocation failed: %v", nerr)
	}
	if namedTook > 1500*time.Millisecond {
		t.Errorf("the named caller waited %s behind the strangers' programs", namedTook)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of the strangers' invocations failed other than programs_busy", n)
	}
	if n := busy.Load(); n < strangers-4 {
		t.Errorf("%d of the strangers' %d invocations were refused programs_busy, want at least %d (their share is 4)", n, strangers, strangers-4)
	}
	// The strangers' share is 4 of the default 16; the named caller's one
	// program may run beside them.
	if p := peak.Load(); p > 4+1 {
		t.Fatalf("%d handler programs ran at once (strangers' share: 4, plus the named caller's one)", p)
	}
}

// TestServeMaxProgramsReachesHandlers: --max-programs and the config
// file's "max_programs" (the flag over the file) are the slots of the
// config's handlers, 16 when left out; under 1 it is refused before
// anything, as a usage error (the flag) or invalid_config (the file)
// (threat: a bound the operator cannot fit to the host, or a 0 that reads
// as the default; CLI-37).
func TestServeMaxProgramsReachesHandlers(t *testing.T) {
	handlers := map[string]any{"org.example.a:1.0.0": map[string]any{"command": []string{"/bin/sh"}},
		"org.example.b:1.0.0": map[string]any{"command": []string{"/bin/sh"}}}
	file := writeConfig(t, map[string]any{"max_programs": 8, "handlers": handlers})
	plain := writeConfig(t, map[string]any{"handlers": handlers})
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"left out", []string{"--config", plain}, defaultMaxPrograms},
		{"the file's", []string{"--config", file}, 8},
		{"the flag over the file", []string{"--config", file, "--max-programs", "2"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := serveConfigOf(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.slots == nil || cfg.slots.most != tc.want {
				t.Fatalf("the config's program slots are %+v, want %d", cfg.slots, tc.want)
			}
		})
	}
	for _, args := range [][]string{{"--max-programs", "0"}, {"--max-programs=-1"},
		{"--config", writeConfig(t, map[string]any{"max_programs": -1})}} {
		if _, err := serveConfigOf(t, args...); err == nil || !strings.Contains(err.Error(), "must be at least 1") {
			t.Fatalf("%v: %v, want a refusal naming the minimum", args, err)
		}
	}
}
