package capability

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func versions(t testing.TB, ss ...string) []Version {
	t.Helper()
	out := make([]Version, len(ss))
	for i, s := range ss {
		out[i] = mustVersion(t, s)
	}
	return out
}

// TestNegotiateOrder checks each step of §6.3 and that earlier steps win.
func TestNegotiateOrder(t *testing.T) {
	const name = "org.agentries.code-review"
	provider := []string{"2.0.0", "2.1.0", "2.2.0-rc.1", "3.0.0", "3.1.0+b.1", "3.1.0+b.2", "1.0.0"}
	for _, c := range []struct {
		name       string
		preferred  string
		acceptable []string
		rng        string
		provided   []string
		want       string // version, or "4003"/"4002"
	}{
		{"preferred", "2.1.0", nil, "", provider, "2.1.0"},
		{"preferred beats acceptable and range", "2.0.0", []string{"2.1.0"}, ">=3.0.0", provider, "2.0.0"},
		{"preferred prerelease", "2.2.0-rc.1", nil, "", provider, "2.2.0-rc.1"},
		{"preferred is identity, not precedence", "3.1.0", nil, "", provider, "4003"},
		{"first acceptable, not highest", "9.9.9", []string{"4.0.0", "2.0.0", "3.0.0"}, "", provider, "2.0.0"},
		{"acceptable beats range", "", []string{"2.1.0"}, ">=3.0.0", provider, "2.1.0"},
		{"acceptable with build metadata", "", []string{"3.1.0+b.1"}, "", provider, "3.1.0+b.1"},
		{"range highest", "9.9.9", []string{"8.0.0"}, ">=2.0.0 <3.0.0", provider, "2.1.0"},
		{"range excludes prerelease", "", nil, ">=2.0.0 <3.0.0", versions2("2.0.0", "2.2.0-rc.1"), "2.0.0"},
		{"range admits same-core prerelease", "", nil, ">=2.2.0-rc.0 <3.0.0", provider, "2.2.0-rc.1"},
		{"range tie broken by string", "", nil, ">=3.1.0", provider, "3.1.0+b.2"},
		{"range tie, other input order", "", nil, ">=3.1.0", versions2("3.1.0+b.2", "3.1.0+b.1"), "3.1.0+b.2"},
		{"range no match", "", nil, ">=4.0.0", provider, "4003"},
		{"nothing matches anywhere", "9.0.0", []string{"8.0.0"}, "<1.0.0", provider, "4003"},
		{"empty hints", "", nil, "", provider, "4003"},
		{"no provider versions", "2.1.0", nil, "", nil, "4002"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h NegotiateHints
			if c.preferred != "" {
				h.Preferred = mustVersion(t, c.preferred)
			}
			if c.acceptable != nil {
				h.Acceptable = versions(t, c.acceptable...)
			}
			if c.rng != "" {
				h.Range = mustRange(t, c.rng)
			}
			id, err := Negotiate(name, h, versions(t, c.provided...))
			switch c.want {
			case "4003":
				wantErr(t, err, amp.CodeVersionMismatch, "version_mismatch", "")
			case "4002":
				wantErr(t, err, amp.CodeCapabilityNotFound, "capability_not_found", "")
			default:
				if err != nil {
					t.Fatal(err)
				}
				if id.String() != name+":"+c.want {
					t.Fatalf("negotiated %s, want %s", id, c.want)
				}
			}
		})
	}
}

func versions2(ss ...string) []string { return ss }

func TestMatchExact(t *testing.T) {
	provided := versions(t, "2.0.0", "2.1.0+b")
	id, err := MatchExact("org.x.y", mustVersion(t, "2.0.0"), provided)
	if err != nil || id.String() != "org.x.y:2.0.0" {
		t.Fatalf("%v %v", id, err)
	}
	_, err = MatchExact("org.x.y", mustVersion(t, "2.1.0"), provided)
	wantErr(t, err, amp.CodeVersionMismatch, "", "")
	_, err = MatchExact("org.x.y", Version{}, provided)
	wantErr(t, err, amp.CodeVersionMismatch, "", "")
	_, err = MatchExact("org.x.y", mustVersion(t, "2.0.0"), nil)
	wantErr(t, err, amp.CodeCapabilityNotFound, "", "")
}

func TestNegotiateDoesNotModifyInput(t *testing.T) {
	p := versions(t, "3.0.0", "1.0.0", "2.0.0")
	if _, err := Negotiate("org.x.y", NegotiateHints{Range: mustRange(t, ">=1.0.0")}, p); err != nil {
		t.Fatal(err)
	}
	if p[0].String() != "3.0.0" || p[1].String() != "1.0.0" {
		t.Fatal("Negotiate reordered its input")
	}
}

func TestSortDescriptors(t *testing.T) {
	mk := func(name, v string) Descriptor {
		d := mustDescriptor(t)
		d.Name, d.Version = name, mustVersion(t, v)
		return d
	}
	input := func() []Descriptor {
		return []Descriptor{
			mk("org.b.x", "1.0.0"), mk("org.a.x", "1.0.0-rc.1"), mk("org.a.x", "1.10.0"),
			mk("org.a.x", "1.2.0"), mk("org.a.x", "1.0.0"), mk("org.a.x", "1.2.0+b"),
			mk("org.a.x", "1.2.0+a"), mk("org.b.x", "0.1.0"), mk("com.z.x", "9.0.0"),
			mk("org.a.x-y", "1.0.0"), mk("org.a.x", "1.0.0-alpha"),
		}
	}
	ids := func(ds []Descriptor) string {
		var s []string
		for _, d := range ds {
			s = append(s, d.ID().String())
		}
		return strings.Join(s, " ")
	}
	newest := "com.z.x:9.0.0 " +
		"org.a.x:1.10.0 org.a.x:1.2.0+b org.a.x:1.2.0+a org.a.x:1.2.0 org.a.x:1.0.0 org.a.x:1.0.0-rc.1 org.a.x:1.0.0-alpha " +
		"org.a.x-y:1.0.0 org.b.x:1.0.0 org.b.x:0.1.0"
	oldest := "com.z.x:9.0.0 " +
		"org.a.x:1.0.0-alpha org.a.x:1.0.0-rc.1 org.a.x:1.0.0 org.a.x:1.2.0 org.a.x:1.2.0+a org.a.x:1.2.0+b org.a.x:1.10.0 " +
		"org.a.x-y:1.0.0 org.b.x:0.1.0 org.b.x:1.0.0"
	for _, c := range []struct {
		o    Order
		want string
	}{{OrderNewestFirst, newest}, {"", newest}, {OrderOldestFirst, oldest}} {
		ds := input()
		SortDescriptors(ds, c.o)
		if got := ids(ds); got != c.want {
			t.Errorf("order %q:\n got %s\nwant %s", c.o, got, c.want)
		}
		// CompareIDs agrees with the sort, and is a strict order.
		for i := 1; i < len(ds); i++ {
			if c.o.CompareIDs(ds[i-1].ID(), ds[i].ID()) >= 0 {
				t.Errorf("order %q: CompareIDs(%s, %s) >= 0", c.o, ds[i-1].ID(), ds[i].ID())
			}
			if c.o.CompareIDs(ds[i].ID(), ds[i-1].ID()) <= 0 {
				t.Errorf("order %q: CompareIDs is not antisymmetric", c.o)
			}
		}
	}
	a, b := mustVersion(t, "1.0.0+a"), mustVersion(t, "1.0.0+b")
	if OrderOldestFirst.CompareVersions(a, b) >= 0 || OrderNewestFirst.CompareVersions(a, b) <= 0 || OrderOldestFirst.CompareVersions(a, a) != 0 {
		t.Error("CompareVersions tie-break")
	}
}

func TestResolveType(t *testing.T) {
	known := []string{"org.agentries.code-review", "com.example.code-review", "org.agentries.translate", "org.agentries.translate", "com.acme.risk-evaluator"}
	for _, c := range []struct {
		name    string
		typ     string
		aliases map[string]string
		want    string
		code    amp.Code
		errName amp.ErrName
	}{
		{"unique slug", "risk-evaluator", nil, "com.acme.risk-evaluator", 0, ""},
		{"unique slug, duplicates in known", "translate", nil, "org.agentries.translate", 0, ""},
		{"alias wins over ambiguity", "code-review", map[string]string{"code-review": "org.agentries.code-review"}, "org.agentries.code-review", 0, ""},
		{"alias wins over a slug match", "translate", map[string]string{"translate": "com.example.code-review"}, "com.example.code-review", 0, ""},
		{"alias to unknown name", "translate", map[string]string{"translate": "org.gone.translate"}, "", amp.CodeCapabilityNotFound, "capability_not_found"},
		{"canonical name", "org.agentries.translate", nil, "org.agentries.translate", 0, ""},
		{"ambiguous slug", "code-review", map[string]string{"other": "org.agentries.translate"}, "", amp.CodeBadRequest, ErrAmbiguousType},
		{"no match", "summarize", nil, "", amp.CodeCapabilityNotFound, "capability_not_found"},
		{"slug is case-sensitive", "Translate", nil, "", amp.CodeCapabilityNotFound, ""},
		{"namespace is not a slug", "agentries", nil, "", amp.CodeCapabilityNotFound, ""},
		{"empty type", "", nil, "", amp.CodeBadRequest, ErrMissingField},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveType(c.typ, c.aliases, known)
			if c.code != 0 {
				echo := c.typ
				if c.errName == ErrAmbiguousType {
					echo = "" // the candidates' names contain the slug
				}
				wantErr(t, err, c.code, c.errName, echo)
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ResolveType(%q) = %q, %v; want %q", c.typ, got, err, c.want)
			}
		})
	}
	_, err := ResolveType("code-review", nil, known)
	var e *amp.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "com.example.code-review, org.agentries.code-review") {
		t.Fatalf("ambiguous message should list the sorted candidates: %v", err)
	}
	cands, _ := e.Details.(map[string]any)["candidates"].([]string)
	if strings.Join(cands, " ") != "com.example.code-review org.agentries.code-review" {
		t.Fatalf("candidates = %v", e.Details)
	}
}
