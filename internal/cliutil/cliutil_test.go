package cliutil

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
)

func TestNormalize(t *testing.T) {
	app := &cli.App{Name: "x", Commands: []*cli.Command{
		{Name: "verify", Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trust"}, &cli.BoolFlag{Name: "json"}, &cli.StringFlag{Name: "out", Aliases: []string{"o"}},
		}},
		{Name: "trust", Subcommands: []*cli.Command{{Name: "add", Flags: []cli.Flag{&cli.StringFlag{Name: "db"}}}}},
	}}
	tests := []struct{ in, want []string }{
		{[]string{"x", "verify", "FILE", "--trust", "K"}, []string{"x", "verify", "--trust", "K", "FILE"}},
		{[]string{"x", "verify", "--trust", "K", "FILE"}, []string{"x", "verify", "--trust", "K", "FILE"}},
		{[]string{"x", "verify", "FILE", "--json", "--trust=K", "-o", "OUT"}, []string{"x", "verify", "--json", "--trust=K", "-o", "OUT", "FILE"}},
		{[]string{"x", "verify", "FILE", "--bogus", "A"}, []string{"x", "verify", "--bogus", "FILE", "A"}},
		{[]string{"x", "verify", "-", "--json"}, []string{"x", "verify", "--json", "-"}},
		{[]string{"x", "verify", "--json", "--", "--not-a-flag"}, []string{"x", "verify", "--json", "--", "--not-a-flag"}},
		{[]string{"x", "trust", "add", "PUB", "--db", "D"}, []string{"x", "trust", "add", "--db", "D", "PUB"}},
		{[]string{"x"}, []string{"x"}},
	}
	for _, tt := range tests {
		if got := Normalize(app, tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestReadFile: a file the user names is read whole only when it is within
// its cap (threat: a huge or endless file exhausting memory; an endless
// pipe is TestOneShotInputPipeIsReadWithinItsBounds, and /dev/zero, a
// device, is never opened since CLI-57).
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 100, "file"); err != nil || len(b) != 100 {
		t.Fatalf("at the cap: %d %v", len(b), err)
	}
	if _, err := ReadFile(p, 99, "file"); !errors.Is(err, amp.ErrName("limit_exceeded")) {
		t.Fatalf("over the cap: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 10, "file"); !errors.Is(err, amp.ErrName("io_error")) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestRepeatedFlagLastWinsRefused: a flag that takes one value given twice
// is a usage error (threat: "build --key a --key b" silently signing with
// b only); slice flags stay repeatable.
func TestRepeatedFlagLastWinsRefused(t *testing.T) {
	app := &cli.App{Name: "x", Commands: []*cli.Command{
		{Name: "build", Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "key"}, &cli.BoolFlag{Name: "json"}, &cli.StringFlag{Name: "out", Aliases: []string{"o"}},
		}},
		{Name: "trust", Subcommands: []*cli.Command{{Name: "add", Flags: []cli.Flag{&cli.StringFlag{Name: "db"}}}}},
	}}
	tests := []struct {
		args []string
		bad  bool
	}{
		{[]string{"x", "build", "--key", "a", "--key", "b", "SRC"}, false},
		{[]string{"x", "build", "--out", "a", "--out", "b", "SRC"}, true},
		{[]string{"x", "build", "--out=a", "-o", "b", "SRC"}, true},
		{[]string{"x", "build", "--json", "--json", "SRC"}, false},
		{[]string{"x", "build", "--json", "--json=false", "SRC"}, true},
		{[]string{"x", "build", "--out", "--out", "SRC"}, false}, // "--out" is the value of the first
		{[]string{"x", "trust", "add", "--db", "a", "--db", "b", "P"}, true},
		{[]string{"x", "trust", "add", "--db", "a", "--", "--db", "b"}, false},
		{[]string{"x", "build", "--out", "a", "SRC"}, false},
	}
	for _, tt := range tests {
		err := RepeatedFlag(app, Normalize(app, tt.args))
		if (err != nil) != tt.bad {
			t.Errorf("%v: err %v, want refused=%v", tt.args, err, tt.bad)
		}
		if err != nil && !IsUsage(err) {
			t.Errorf("%v: %v is not a usage error", tt.args, err)
		}
	}
}

// TestPhasesDrawEachPhase: a long build shows where it is in every phase
// on a terminal, and nothing at all under --json.
func TestPhasesDrawEachPhase(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		json     bool
		want     []string
	}{
		{"terminal", true, false, []string{"indexing schemas", "checking schemas", "100%"}},
		{"json", true, true, nil},
		{"not a terminal", false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			clock := time.Unix(0, 0)
			env := &Env{Stderr: &buf, StderrIsTerminal: tc.terminal, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
			update, done := Phases(env, tc.json)
			update("indexing schemas", 50, 100)
			update("indexing schemas", 100, 100)
			update("checking schemas", 100, 100)
			done()
			out := buf.String()
			if tc.want == nil && out != "" {
				t.Fatalf("drew %q", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
		})
	}
}
