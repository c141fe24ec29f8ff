package ampbundle_test

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestProjectFilesSayWhatTheyMustSay: the files every open project carries
// keep saying what a user, a reporter and a contributor look for in them
// (threat: a LICENSE that is not the license the README names, a security
// page without a way to report, a contributor guide whose checks drifted
// from what CI runs, a changelog whose newest entry is not on top).
func TestProjectFilesSayWhatTheyMustSay(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(b)
	}

	license := read("LICENSE")
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION"} {
		if !strings.Contains(license, want) {
			t.Errorf("LICENSE lacks %q: not the Apache-2.0 text", want)
		}
	}

	security := read("SECURITY.md")
	for _, heading := range []string{"## Reporting a vulnerability", "## Threat model, in short"} {
		if !strings.Contains(security, "\n"+heading+"\n") {
			t.Errorf("SECURITY.md lacks the section %q", heading)
		}
	}

	// Every command .ci/run runs is in CONTRIBUTING.md's list, so a
	// contributor can run each check CI runs.
	ci := read(".ci/run")
	contributing := read("CONTRIBUTING.md")
	steps := 0
	sc := bufio.NewScanner(strings.NewReader(ci))
	goCmd := regexp.MustCompile(`^(?:if ! )?(?:\./)?((?:go (?:vet|run|test)|scripts/test)[^>;]*?)\s*(?:>.*|;.*)?$`)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		m := goCmd.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		steps++
		if !strings.Contains(contributing, strings.TrimSpace(m[1])) {
			t.Errorf("CONTRIBUTING.md does not list the CI step %q", m[1])
		}
	}
	if steps < 5 {
		t.Errorf("found %d go steps in .ci/run, want at least vet, staticcheck, test, test -race and the benchmarks", steps)
	}
	if !strings.Contains(ci, "gofmt -l") || !strings.Contains(contributing, "gofmt -l") {
		t.Error("the gofmt step is missing from .ci/run or CONTRIBUTING.md")
	}

	// Newest first: the first section is Unreleased, then dates that
	// never increase.
	changelog := read("CHANGELOG.md")
	var sections []string
	for _, line := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(line, "## ") {
			sections = append(sections, strings.TrimPrefix(line, "## "))
		}
	}
	if len(sections) < 2 || sections[0] != "Unreleased" {
		t.Fatalf("CHANGELOG.md sections %q: want Unreleased first", sections)
	}
	date := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)
	prev := "9999-99-99"
	for _, s := range sections[1:] {
		d := date.FindString(s)
		if d == "" {
			t.Errorf("CHANGELOG.md section %q does not start with a date", s)
			continue
		}
		if d > prev {
			t.Errorf("CHANGELOG.md: %s comes after %s: not newest first", d, prev)
		}
		prev = d
	}
}
