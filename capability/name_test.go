package capability

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// wantErr checks that err is an *amp.Error with the code and name, and
// that its text does not contain input (messages never echo raw input).
func wantErr(t *testing.T, err error, code amp.Code, name amp.ErrName, input string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d %s, got nil", code, name)
	}
	var e *amp.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *amp.Error", err)
	}
	if e.Code != code {
		t.Fatalf("code = %d, want %d (%v)", e.Code, code, err)
	}
	if name != "" && !errors.Is(err, name) {
		t.Fatalf("name = %s, want %s (%v)", e.Name, name, err)
	}
	if len(input) >= 4 && strings.Contains(err.Error(), input) {
		t.Fatalf("error %q echoes its input %q", err, input)
	}
	if e.Message == "" || strings.ToLower(e.Message[:1]) != e.Message[:1] || strings.HasSuffix(e.Message, ".") {
		t.Fatalf("message %q is empty, capitalized or ends with a period", e.Message)
	}
}

func TestValidateName(t *testing.T) {
	long := func(n int, c string) string { return strings.Repeat(c, n) }
	valid := []string{
		"org.agentries.code-review",
		"com.acme.risk-evaluator",
		"a.b.c",
		"org.example.sub.x",
		"org.example.x_y",
		"org.example.x-",
		"org.example.x_",
		"org.example.0slug",
		"org.0example.x",
		"xn--d1acufc.example.s",
		"org.example." + long(64, "s"),
		"org." + long(63, "l") + ".x",
		// exactly 255 bytes: 4 labels of 63 + 3 dots = 255 - 2 ("." + slug "x")
		long(63, "a") + "." + long(63, "b") + "." + long(63, "c") + "." + long(61, "d") + ".x",
	}
	if n := len(valid[len(valid)-1]); n != MaxNameLen {
		t.Fatalf("test name is %d bytes, want %d", n, MaxNameLen)
	}
	for _, n := range valid {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v", n, err)
		}
	}
	invalid := []struct{ name, why string }{
		{"", "is empty"},
		{"example", "has no namespace"},
		{"org.example", "namespace needs at least two labels"},
		{"Org.example.x", "uppercase"},
		{"org.Example.x", "uppercase"},
		{"org.example.X", "uppercase"},
		{"org.example.xY", "uppercase"},
		{"org.-example.x", "hyphen"},
		{"org.example-.x", "hyphen"},
		{"org..x", "empty label"},
		{".org.example.x", "empty label"},
		{"org.example.", "empty slug"},
		{"org.example._x", "does not start with [a-z0-9]"},
		{"org.example.-x", "does not start with [a-z0-9]"},
		{"org.exam_ple.x", "outside [a-z0-9-]"},
		{"org.exa mple.x", "outside [a-z0-9-]"},
		{"org.exämple.x", "outside [a-z0-9-]"},
		{"org.example.x!", "outside [a-z0-9_-]"},
		{"org.example.x:1", "outside [a-z0-9_-]"},
		{"org.example." + long(65, "s"), "slug longer than 64"},
		{"org." + long(64, "l") + ".x", "label longer than 63"},
		{long(63, "a") + "." + long(63, "b") + "." + long(63, "c") + "." + long(62, "d") + ".x", "longer than 255"},
	}
	for _, c := range invalid {
		err := ValidateName(c.name)
		wantErr(t, err, amp.CodeBadRequest, ErrInvalidName, c.name)
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("ValidateName(%q) = %v, want reason %q", c.name, err, c.why)
		}
	}
}

func TestSplitName(t *testing.T) {
	for _, c := range []struct{ name, ns, slug string }{
		{"org.agentries.code-review", "org.agentries", "code-review"},
		{"org.example.sub.x_1", "org.example.sub", "x_1"},
	} {
		ns, slug, err := SplitName(c.name)
		if err != nil || ns != c.ns || slug != c.slug {
			t.Errorf("SplitName(%q) = %q, %q, %v", c.name, ns, slug, err)
		}
	}
	if _, _, err := SplitName("org.example"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("SplitName of an invalid name: %v", err)
	}
}

func TestInNamespace(t *testing.T) {
	for _, c := range []struct {
		name, prefix string
		want         bool
	}{
		{"org.example.x", "org.example", true},
		{"org.example.x", "org.example.", true},
		{"org.example.sub.x", "org.example", true},
		{"org.example.sub.x", "org.example.", true},
		{"org.example.sub.x", "org.example.sub", true},
		{"org.example.x", "org", true},
		{"org.examples.x", "org.example", false},
		{"org.examples.x", "org.example.", false},
		{"org.example.x", "org.example.x", false}, // a name is not under itself
		{"org.example.x", "org.example.x.", false},
		{"org.example.x", "com.example", false},
		{"org.example.x", "*", true},
		{"com.acme.y", "*", true},
		{"org.Example.x", "*", false},   // invalid name
		{"org.example.x", "", false},    // invalid prefix
		{"org.example.x", ".", false},   // invalid prefix
		{"org.example.x", "org.", true}, // one-label prefix with dot
		{"org.example.x", "org..", false},
		{"org.example.x", "Org.example", false},
		{"org.example.x", "org.example*", false},
		{"org.example.x", "*.example", false},
		{"org.example.x", "org.*", false},
	} {
		if got := InNamespace(c.name, c.prefix); got != c.want {
			t.Errorf("InNamespace(%q, %q) = %v, want %v", c.name, c.prefix, got, c.want)
		}
	}
}

func TestValidateNamespacePrefix(t *testing.T) {
	for _, p := range []string{"*", "org", "org.", "org.example", "org.example.", "org.example.sub"} {
		if err := ValidateNamespacePrefix(p); err != nil {
			t.Errorf("ValidateNamespacePrefix(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", ".", "..", "org..", "Org.example", "org.exa_mple", "org.*", "**", "org.example.." + strings.Repeat("a", 300)} {
		wantErr(t, ValidateNamespacePrefix(p), amp.CodeBadRequest, ErrInvalidName, p)
	}
}

func TestParseID(t *testing.T) {
	for _, s := range []string{
		"org.agentries.code-review:2.1.0",
		"com.acme.risk-evaluator:1.4.2",
		"org.example.x:1.0.0-rc.1+build.5",
		"org.example.x:0.0.0",
	} {
		id, err := ParseID(s)
		if err != nil {
			t.Errorf("ParseID(%q) = %v", s, err)
			continue
		}
		if id.String() != s {
			t.Errorf("ParseID(%q).String() = %q", s, id.String())
		}
		if id.IsZero() {
			t.Errorf("ParseID(%q) is zero", s)
		}
	}
	for _, s := range []string{
		"", "org.agentries.code-review", "org.agentries.code-review:", ":2.1.0",
		"org.agentries.code-review:2.1", "org.agentries.code-review:v2.1.0",
		"org.agentries.code-review:2.1.0:1", "Org.agentries.code-review:2.1.0",
		"org.agentries:2.1.0", "org.agentries.code-review :2.1.0", "org.agentries.code-review: 2.1.0",
	} {
		_, err := ParseID(s)
		wantErr(t, err, amp.CodeBadRequest, ErrInvalidID, s)
	}
	var zero ID
	if !zero.IsZero() || zero.String() != "" {
		t.Error("zero ID")
	}
}
