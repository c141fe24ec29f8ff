package main

import (
	"strings"
	"testing"
)

// TestTargetFlagWhoseValueDoesNotParseIsRefusedAsUsageNamingIt: a value
// of a target flag of invoke or query that does not parse (an id, a
// capability name, a version, a version range) is a usage error, exit 2,
// whose message names the flag ("--prefer: ...") before any file is read
// or any agent dialled; a flag that is not given is not read at all, so
// a target without it is not refused in its name. The rows cover every
// flag that setFlag or flagError serves (cmd/ampagent/query.go).
func TestTargetFlagWhoseValueDoesNotParseIsRefusedAsUsageNamingIt(t *testing.T) {
	const url = "http://127.0.0.1:1"
	flags := []string{"id", "capability", "version", "prefer", "accept", "range"}
	for _, tc := range []struct {
		name string
		args []string
		flag string // the flag named, "" for none of flags
	}{
		{"invoke bad id", []string{"invoke", url, "--id", "nope"}, "id"},
		{"invoke bad capability", []string{"invoke", url, "--capability", "Bad Name", "--version", "1.0.0"}, "capability"},
		{"invoke bad version", []string{"invoke", url, "--capability", translateCap, "--version", "one"}, "version"},
		{"invoke bad prefer", []string{"invoke", url, "--capability", translateCap, "--prefer", "one"}, "prefer"},
		{"invoke bad accept", []string{"invoke", url, "--capability", translateCap, "--accept", "1.0.0,one"}, "accept"},
		{"invoke bad range", []string{"invoke", url, "--capability", translateCap, "--range", "~~"}, "range"},
		{"invoke range alone", []string{"invoke", url, "--capability", translateCap, "--range", ">=1.0.0"}, ""},
		{"invoke prefer alone", []string{"invoke", url, "--capability", translateCap, "--prefer", "1.0.0"}, ""},
		{"invoke good id", []string{"invoke", url, "--id", translateCap + ":1.0.0"}, ""},
		{"query bad capability", []string{"query", url, "--capability", "Bad Name"}, "capability"},
		{"query bad version", []string{"query", url, "--capability", translateCap, "--version", "~~"}, "version"},
		{"query without version", []string{"query", url, "--capability", translateCap, "--limit", "0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", append(tc.args, "--json")...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2 (usage)\n%s%s", r.code, r.stdout, r.stderr)
			}
			code, _ := errorDoc(t, r)
			line, _, _ := strings.Cut(r.stderr, "\n")
			msg, ok := strings.CutPrefix(line, "ampagent: ")
			if !ok {
				t.Fatalf("stderr %q: no message first", r.stderr)
			}
			if code != "usage" {
				t.Fatalf("error code %q, want usage", code)
			}
			for _, f := range flags {
				named := strings.HasPrefix(msg, "--"+f+": ")
				if named != (f == tc.flag) {
					t.Fatalf("message %q: names --%s %v, want the flag %q named", msg, f, named, tc.flag)
				}
			}
			if tc.flag != "" && len(msg) <= len("--"+tc.flag+": ") {
				t.Fatalf("message %q says nothing of why", msg)
			}
		})
	}
}
