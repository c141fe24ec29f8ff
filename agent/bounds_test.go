package agent

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// TestNewAppliesTheBoundsWithDefaultsStates: the bounds an agent runs
// with are Bounds.WithDefaults of those it was given, for a zero Bounds
// and a partly set one (threat: a default documented, and restated by the
// command line from WithDefaults, that the agent does not apply).
func TestNewAppliesTheBoundsWithDefaultsStates(t *testing.T) {
	for name, b := range map[string]Bounds{
		"zero": {},
		"partly set": {MaxTimeout: 5 * time.Second, DefaultLimit: 500, MaxTTL: time.Hour,
			LedgerLimits: ledger.Limits{Budget: 8 << 20}, StreamLimits: StreamLimits{PerSender: 2}, ParamStreams: &ParamStreamLimits{MaxSize: 1 << 20}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, withConfig(func(c *Config) { c.Bounds = b }))
			if got, want := e.agent.cfg.Bounds, b.WithDefaults(); !reflect.DeepEqual(got, want) {
				t.Fatalf("the agent runs with\n%+v\nWithDefaults says\n%+v", got, want)
			}
		})
	}
}

// TestBoundsWithDefaultsKeepsWhatIsSetAndOpensNothing: a set bound is
// kept (clamped where it must be), a zero or negative one takes its
// default, params streams stay off unless asked for, and the caller's
// ParamStreamLimits is never written (threat: defaults that widen what an
// operator narrowed, or turn on a way in they left off).
func TestBoundsWithDefaultsKeepsWhatIsSetAndOpensNothing(t *testing.T) {
	zero := Bounds{}.WithDefaults()
	want := Bounds{MaxClockSkew: amp.DefaultMaxClockSkew, MaxTTL: 7 * 24 * time.Hour, DefaultTimeout: 30 * time.Second,
		MaxTimeout: time.Minute, MaxBatchDuration: time.Minute, MaxOverdueHandlers: DefaultMaxOverdueHandlers, MaxParamItems: offlineschema.DefaultMaxItems,
		DefaultLimit: 20, MaxLimit: 100, CursorTTL: 10 * time.Minute, SweepEvery: time.Minute,
		Limits: amp.DefaultLimits(), LedgerLimits: ledger.Limits{}.Resolved(), StreamLimits: zero.StreamLimits}
	if !reflect.DeepEqual(zero, want) {
		t.Fatalf("defaults\n%+v\nwant\n%+v", zero, want)
	}
	if zero.StreamLimits.MaxBytes != 256<<20 || zero.StreamLimits.PerSender != 4 || zero.ParamStreams != nil {
		t.Fatalf("stream defaults %+v, params streams %v", zero.StreamLimits, zero.ParamStreams)
	}
	tests := []struct {
		name  string
		in    Bounds
		check func(b Bounds) bool
	}{
		{"a shorter MaxTimeout bounds the default timeout and the batch", Bounds{MaxTimeout: 10 * time.Second},
			func(b Bounds) bool { return b.DefaultTimeout == 10*time.Second && b.MaxBatchDuration == 10*time.Second }},
		{"a default timeout over MaxTimeout is clamped", Bounds{DefaultTimeout: 90 * time.Second},
			func(b Bounds) bool { return b.DefaultTimeout == time.Minute && b.MaxTimeout == time.Minute }},
		{"a page size over MaxLimit is clamped", Bounds{DefaultLimit: 50, MaxLimit: 30},
			func(b Bounds) bool { return b.DefaultLimit == 30 && b.MaxLimit == 30 }},
		{"a small MaxLimit bounds the default page", Bounds{MaxLimit: 5}, func(b Bounds) bool { return b.DefaultLimit == 5 }},
		{"a negative ttl takes the default", Bounds{MaxTTL: -time.Hour}, func(b Bounds) bool { return b.MaxTTL == 7*24*time.Hour }},
		{"a set bound is kept", Bounds{MaxTTL: time.Hour, MaxParamItems: 10, CursorTTL: time.Second, SweepEvery: time.Hour, MaxClockSkew: time.Second},
			func(b Bounds) bool {
				return b.MaxTTL == time.Hour && b.MaxParamItems == 10 && b.CursorTTL == time.Second && b.SweepEvery == time.Hour && b.MaxClockSkew == time.Second
			}},
		{"a partly set message cap is kept for amp to complete", Bounds{Limits: amp.Limits{MaxMessageSize: 1 << 20}},
			func(b Bounds) bool { return b.Limits == amp.Limits{MaxMessageSize: 1 << 20} }},
		{"a smaller ledger keeps its budget", Bounds{LedgerLimits: ledger.Limits{Budget: 8 << 20}},
			func(b Bounds) bool { return b.LedgerLimits.Budget == 8<<20 && b.LedgerLimits.PerCaller == 1<<20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); !tt.check(got) {
				t.Fatalf("%+v", got)
			}
		})
	}
	mine := &ParamStreamLimits{MaxBytes: 1 << 20}
	got := Bounds{ParamStreams: mine}.WithDefaults()
	if *mine != (ParamStreamLimits{MaxBytes: 1 << 20}) || got.ParamStreams == mine {
		t.Fatalf("the caller's ParamStreamLimits was written or shared: %+v", *mine)
	}
	if got.ParamStreams.MaxBytes != 1<<20 || got.ParamStreams.MaxSize != 64<<20 {
		t.Fatalf("params stream bounds %+v", *got.ParamStreams)
	}
}

// TestBoundsDocCommentsStateTheDefaults: each default a Bounds field's doc
// comment states is the one WithDefaults fills in (threat: a reader who
// sizes a deployment on a number the code no longer applies).
func TestBoundsDocCommentsStateTheDefaults(t *testing.T) {
	d := Bounds{}.WithDefaults()
	mib := func(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }
	want := map[string][]string{
		"Limits":         {mib(int64(d.Limits.MaxMessageSize))},
		"MaxClockSkew":   {fmt.Sprintf("default %d s", d.MaxClockSkew/time.Second)},
		"MaxTTL":         {fmt.Sprintf("default %d days", d.MaxTTL/(24*time.Hour))},
		"DefaultTimeout": {fmt.Sprintf("default %d s", d.DefaultTimeout/time.Second), fmt.Sprintf("default %d s", d.MaxTimeout/time.Second)},
		"MaxParamItems":  {thousands(d.MaxParamItems)},
		"DefaultLimit":   {fmt.Sprintf("default %d, %d", d.DefaultLimit, d.MaxLimit)},
		"CursorTTL":      {fmt.Sprintf("default %d min", d.CursorTTL/time.Minute)},
		"SweepEvery":     {fmt.Sprintf("default %d min", d.SweepEvery/time.Minute)},
		"LedgerLimits": {"default: " + mib(d.LedgerLimits.Budget), fmt.Sprintf("1/%d of it", d.LedgerLimits.Budget/d.LedgerLimits.PerCaller),
			strconv.FormatInt(d.LedgerLimits.ReplyReserve>>10, 10) + " KiB"},
	}
	docs := boundsFieldDocs(t)
	for field, phrases := range want {
		for _, p := range phrases {
			if !strings.Contains(docs[field], p) {
				t.Errorf("the doc comment of Bounds.%s does not say %q: %s", field, p, docs[field])
			}
		}
	}
}

// boundsFieldDocs returns the doc comment of each field of Bounds in
// agent.go (by its first name), its white space collapsed.
func boundsFieldDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "agent.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Bounds" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			if len(fld.Names) > 0 && fld.Doc != nil {
				docs[fld.Names[0].Name] = strings.Join(strings.Fields(fld.Doc.Text()), " ")
			}
		}
		return false
	})
	if len(docs) == 0 {
		t.Fatal("no Bounds fields found in agent.go")
	}
	return docs
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
