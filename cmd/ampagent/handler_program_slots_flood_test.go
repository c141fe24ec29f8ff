//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
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
// their share (CLI-37).//
// What is checked, without timing: the strangers' programs are held
// until the test releases them (they wait for a file), so that their
// share stays taken; at most 4 of them start (1, from one
// address: CLI-41) and every other one is refused programs_busy; then
// the named caller's program, which is not held, must run and answer
// while theirs still run (it counts the programs running with it). Waiting behind the strangers, it could
// not start before the release: the test gives it a hang guard, then
// releases them, and fails.

func TestManyCallersSlowProgramsStrangerCannotTakeEverySlot(t *testing.T) {
	db, key := serveStore(t)
	namedID := newNamedCaller(t)
	runs, gate := t.TempDir(), t.TempDir()
	// A program marks itself running in $RUNS; a stranger's waits for
	// $GATE/release; the named caller's writes how many ran beside it.
	script := `touch "$RUNS/$$"
if [ "$AMP_CALLER" = "$NAMED" ]; then ls "$RUNS" | wc -l > "$GATE/named-saw"
else while [ ! -e "$GATE/release" ]; do sleep 0.02; done; fi
rm -f "$RUNS/$$"; echo '{"text":"x","detected_source":"en"}'`
	cfg := writeConfig(t, map[string]any{
		"allow": []string{"*=org.example.", namedID.DID() + "=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.0.0": map[string]any{
			"command": []string{"/bin/sh", "-c", script},
			"env":     map[string]string{"RUNS": runs, "GATE": gate, "NAMED": namedID.DID()}}},
	})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	defer r.stop()
	release := sync.OnceFunc(func() {
		if err := os.WriteFile(filepath.Join(gate, "release"), nil, 0o600); err != nil {
			t.Error(err)
		}
	})
	defer release()
	running := func() int {
		ents, _ := os.ReadDir(runs)
		return len(ents)
	}

	params := map[string]any{"text": "hello", "target": "fr"}
	const strangers = 15
	var wg sync.WaitGroup
	var failed, busy atomic.Int64
	for range strangers {
		c := newTestClient(t, r.url, r.did)
		wg.Go(func() {
			_, err := invokeID(t, c, "org.example.translate.text:2.0.0", params, 60000)
			switch {
			case isProgramsBusy(err):
				busy.Add(1)
			case err != nil:
				failed.Add(1)
			}
		})
	}
	defer wg.Wait()
	// Hang guard: the refusals come at once, and the programs admitted
	// start: every stranger's invocation is one or the other.
	for deadline := time.Now().Add(30 * time.Second); running() == 0 || int64(running())+busy.Load()+failed.Load() < strangers; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the strangers' programs run and %d of their invocations were refused programs_busy, %d failed otherwise; want %d in all",
				running(), busy.Load(), failed.Load(), strangers)
		}
	}
	held := running()
	// While the strangers hold their share, the named caller's program
	// starts and answers; theirs still run.
	named := namedID.client(r.url, r.did)
	answered := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := invokeID(t, named, "org.example.translate.text:2.0.0", params, 60000)
		answered <- err
	}()
	var nerr error
	select {
	case nerr = <-answered:
	case <-time.After(30 * time.Second): // hang guard: behind the strangers, it waits for the release
		release()
		<-answered
		t.Fatalf("the named caller's program did not run while the strangers' %d held their share: it waited behind them", held)
	}
	namedTook := time.Since(start)
	saw, _ := os.ReadFile(filepath.Join(gate, "named-saw"))
	release()
	wg.Wait()
	t.Logf("the strangers' programs held: %d, refused: %d; the named caller answered after %s, its program saw %s running",
		held, busy.Load(), namedTook, strings.TrimSpace(string(saw)))

	if nerr != nil {
		t.Fatalf("the named caller's invocation failed: %v", nerr)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of the strangers' invocations failed other than programs_busy", n)
	}
	if n := busy.Load(); n != int64(strangers-held) {
		t.Errorf("%d of the strangers' %d invocations were refused programs_busy and %d ran, want every one of the others refused", n, strangers, held)
	}
	// The strangers' share is 4 of the default 16 (from one address, 1 of
	// those: CLI-41); the named caller's one program runs beside them.
	if held < 1 || held > 4 || strings.TrimSpace(string(saw)) != strconv.Itoa(held+1) {
		t.Fatalf("%d of the strangers' programs ran at once, and the named caller's saw %q running with it; want 1 to 4 (the strangers' share: 4), and those plus its own", held, strings.TrimSpace(string(saw)))
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
