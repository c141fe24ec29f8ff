//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// slowProgramConfig is a config whose one handler program appends a line
// to runs/log, sleeps secs and answers; max_programs 4 (a principal's
// share: 1), strangers admitted.
func slowProgramConfig(t *testing.T, runs, secs string) map[string]any {
	t.Helper()
	return map[string]any{
		"allow":        []string{"*=org.example."},
		"max_programs": 4,
		"handlers": map[string]any{"org.example.translate.text:2.0.0": map[string]any{
			"command": []string{"/bin/sh", "-c", `echo run >> "$RUNS/log"; sleep ` + secs + `; echo '{"text":"x","detected_source":"en"}'`},
			"env":     map[string]string{"RUNS": runs}}},
	}
}

// runCount is the number of programs started (lines of runs/log).
func runCount(t *testing.T, runs string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runs, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// waitRuns waits until n programs started.
func waitRuns(t *testing.T, runs string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); runCount(t, runs) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d programs never started", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isProgramsBusy reports whether err is the retryable refusal of an
// invocation beyond its principal's program slots: 5004 with details
// {"reason": "programs_busy"} (the wire carries no name).
func isProgramsBusy(err error) bool {
	var ae *amp.Error
	if !errors.As(err, &ae) || ae.Code != amp.CodeOverloaded {
		return false
	}
	raw, ok := ae.Details.(cbor.RawMessage)
	var d map[string]any
	return ok && amp.Unmarshal(raw, &d) == nil && d["reason"] == "programs_busy"
}

// TestInvocationBeyondProgramShareRefusedNotHeldForDeadline: attack:
// a stranger (its principal's share is 1 of max_programs 4) invokes a
// slow program, then again with a 20 s deadline. The second invocation
// waited for a slot inside its handler: it held a listener slot, a
// goroutine and its params until the first program ended (or its whole
// deadline), and the stranger could stack as many such waits as the
// listeners let in (review 106). It is refused at once, 5004
// programs_busy, retryable and not recorded (CLI-37, AGENT-25).
func TestInvocationBeyondProgramShareRefusedNotHeldForDeadline(t *testing.T) {
	db, key := serveStore(t)
	runs := t.TempDir()
	r := startServe(t, "--db", db, "--key", key, "--config", writeConfig(t, slowProgramConfig(t, runs, "3")))
	defer r.stop()
	params := map[string]any{"text": "hello", "target": "fr"}
	first := make(chan error, 1)
	go func() {
		_, err := invokeID(t, newTestClient(t, r.url, r.did), "org.example.translate.text:2.0.0", params, 20000)
		first <- err
	}()
	waitRuns(t, runs, 1)
	start := time.Now()
	_, err := invokeID(t, newTestClient(t, r.url, r.did), "org.example.translate.text:2.0.0", params, 20000)
	took := time.Since(start)
	if !isProgramsBusy(err) {
		t.Errorf("beyond the stranger's share: %v after %s, want 5004 programs_busy at once", err, took)
	}
	// The refusal needs no program, only one round trip: the time is
	// logged; what shows that it did not wait for a slot is that it is
	// programs_busy (a wait ends in a run) and that no program of it ran.
	t.Logf("the refusal came after %s", took)
	if err := <-first; err != nil {
		t.Fatalf("the first invocation: %v", err)
	}
	if n := runCount(t, runs); n != 1 {
		t.Errorf("%d programs ran, want the first invocation's only: the refused one waited for a slot and ran", n)
	}
}

// TestRetriedIDAfterProgramsBusyRunsOnce: attack: an invocation
// refused for want of a slot, retried by its sender with the same message
// id (RFC 001 §16.3) once the slot is free. It must run its program then,
// exactly once: a refusal recorded as the id's final result would answer
// the retry without a run, and a refusal after the run started would run
// it twice (CLI-37, AGENT-25).
func TestRetriedIDAfterProgramsBusyRunsOnce(t *testing.T) {
	db, key := serveStore(t)
	runs := t.TempDir()
	r := startServe(t, "--db", db, "--key", key, "--config", writeConfig(t, slowProgramConfig(t, runs, "1")))
	defer r.stop()
	params := map[string]any{"text": "hello", "target": "fr"}
	first := make(chan error, 1)
	go func() {
		_, err := invokeID(t, newTestClient(t, r.url, r.did), "org.example.translate.text:2.0.0", params, 20000)
		first <- err
	}()
	waitRuns(t, runs, 1)

	var retries atomic.Int64
	c := retryingClient(t, r.url, r.did, func(ctx context.Context, d time.Duration) error {
		retries.Add(1)
		select { // the retry comes once the first program is done
		case err := <-first:
			first <- err
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	if _, err := invokeID(t, c, "org.example.translate.text:2.0.0", params, 20000); err != nil {
		t.Fatalf("the retried invocation: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first invocation: %v", err)
	}
	if retries.Load() == 0 {
		t.Errorf("the second invocation was never refused (it waited for the slot), want 5004 programs_busy and a retry")
	}
	if n := runCount(t, runs); n != 2 {
		t.Errorf("%d programs ran for two invocations, want 2", n)
	}
}

// TestReloadKeepsProgramSlots: attack: a stranger (share 1 of
// max_programs 4) starts a slow program, the operator reloads (SIGHUP,
// the same config), and the stranger starts another one. Each loaded
// config had slots of its own, so the programs the replaced agent still
// ran were not counted: after each reload a principal ran its share again
// (and all of them max_programs again; review 106). The start's slots
// outlive a reload (max_programs cannot change without a restart): the
// second program is refused, 5004 programs_busy (CLI-37).
func TestReloadKeepsProgramSlots(t *testing.T) {
	db, key := serveStore(t)
	runs := t.TempDir()
	cfg := writeConfig(t, slowProgramConfig(t, runs, "3"))
	r := startServe(t, "--db", db, "--key", key, "--config", cfg)
	defer r.stop()
	params := map[string]any{"text": "hello", "target": "fr"}
	first := make(chan error, 1)
	go func() {
		_, err := invokeID(t, newTestClient(t, r.url, r.did), "org.example.translate.text:2.0.0", params, 20000)
		first <- err
	}()
	waitRuns(t, runs, 1)
	r.signal(syscall.SIGHUP)
	waitLog(t, r, "config reloaded", 1)
	_, err := invokeID(t, newTestClient(t, r.url, r.did), "org.example.translate.text:2.0.0", params, 20000)
	if !isProgramsBusy(err) {
		t.Errorf("after a reload, the stranger's second program: %v (%d programs started), want 5004 programs_busy", err, runCount(t, runs))
	}
	if err := <-first; err != nil {
		t.Fatalf("the first invocation: %v", err)
	}
}
