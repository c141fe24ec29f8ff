//go:build linux

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReaperNoteWhoseProgramFloodsStderrIsStillLogged: the reaper says on
// its stderr that the program left processes it could not kill (CLI-48),
// and the agent logs the first maxLoggedStderr bytes (4 KiB) of that
// stderr for a failed program. The reaper wrote its note after the
// program's own stderr, which it shared: a program (or a caller's params
// making it print) that wrote 4 KiB to stderr first pushed the note out
// of the log line, so the operator read a plain failure and never learnt
// that processes were left running. The reaper now keeps the program's
// stderr (at most maxProgramStderr bytes) and writes its note first. A
// program that leaves nothing says on stderr exactly what it wrote.
func TestReaperNoteWhoseProgramFloodsStderrIsStillLogged(t *testing.T) {
	const note = "ampagent: processes the handler program started may be left running"
	for _, tc := range []struct {
		name     string
		script   string
		stuck    bool // a child the reaper cannot kill (fake process table)
		wantCode int
		wantNote bool
	}{
		{"succeeds after 8 KiB of stderr, a child left", `head -c 8192 /dev/zero | tr '\0' x >&2`, true, abandonedCode, true},
		{"fails after 8 KiB of stderr, a child left", `head -c 8192 /dev/zero | tr '\0' x >&2; exit 3`, true, 3, true},
		{"fails after 200 KiB of stderr, a child left", `head -c 204800 /dev/zero | tr '\0' x >&2; exit 3`, true, 3, true},
		{"fails after a line of stderr, nothing left", `echo "it broke" >&2; exit 3`, false, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeChildren{t: t, clock: time.Unix(0, 0), alive: map[int]bool{}, stuck: map[int]bool{}, killed: map[int]int{}}
			if tc.stuck {
				f.alive[10], f.stuck[10] = true, true
			}
			// What the agent keeps of the reaper's stderr, as runProgram does.
			stderr := &cappedWriter{max: maxProgramStderr}
			code := superviseProgram(exec.Command("/bin/sh", "-c", tc.script), nil, f.ops(), stderr)
			if code != tc.wantCode {
				t.Fatalf("the reaper exits %d, want %d", code, tc.wantCode)
			}
			logged, _ := stderr.Excerpt(maxLoggedStderr)
			if got := strings.Contains(logged, note); got != tc.wantNote {
				t.Fatalf("the logged stderr holds the reaper's note: %v, want %v (%d bytes kept, the note at %d)",
					got, tc.wantNote, len(stderr.Bytes()), bytes.Index(stderr.Bytes(), []byte(note)))
			}
			if !tc.wantNote && string(stderr.Bytes()) != "it broke\n" {
				t.Fatalf("the program's stderr reaches the agent as %q", stderr.Bytes())
			}
			if n := bytes.Count(stderr.Bytes(), []byte("x")); tc.stuck && n == 0 {
				t.Fatal("the program's stderr was lost behind the note")
			}
		})
	}
}
