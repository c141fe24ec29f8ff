package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestServeDocumentsTheAgentsDefaults: every default of an agent bound
// that serve's flags and config file fields state is the one the agent
// applies (agent.Bounds.WithDefaults), and serve's refusal of a bad
// max_timeout_ms names it (threat: an operator who sizes a deployment,
// or leaves a setting out, on a number the agent does not apply).
func TestServeDocumentsTheAgentsDefaults(t *testing.T) {
	d := agent.Bounds{ParamStreams: &agent.ParamStreamLimits{}}.WithDefaults()
	flags := map[string]string{
		"max-body":          "(default " + sizeText(int64(d.Limits.MaxMessageSize)) + ")",
		"ledger-budget":     "(default " + sizeText(d.LedgerLimits.Budget) + ")",
		"max-result-bytes":  "(default " + sizeText(d.LedgerLimits.ReplyReserve) + ";",
		"stream-max-bytes":  "(default " + sizeText(int64(d.StreamLimits.MaxBytes)) + ")",
		"stream-max-params": "(default " + sizeText(int64(d.ParamStreams.MaxSize)) + ")",
	}
	usage := serveFlagUsages(t)
	for name, want := range flags {
		if !strings.Contains(usage[name], want) {
			t.Errorf("--%s says %q, want %q (agent.Bounds.WithDefaults)", name, usage[name], want)
		}
	}
	if d.StreamLimits.MaxBytes != d.ParamStreams.MaxBytes || d.StreamLimits.PerSender != d.ParamStreams.PerSender {
		t.Errorf("serve documents one default for open streams and waiting params; the agent has %+v and %+v", d.StreamLimits, *d.ParamStreams)
	}
	fields := map[string][]string{
		"MaxParamItems":        {"(default " + thousands(d.MaxParamItems) + ")"},
		"LedgerBudgetBytes":    {"defaults " + sizeText(d.LedgerLimits.Budget), fmt.Sprintf("1/%d of the budget", d.LedgerLimits.Budget/d.LedgerLimits.PerCaller)},
		"MaxResultBytes":       {"default " + sizeText(d.LedgerLimits.ReplyReserve)},
		"StreamMaxBytes":       {"default " + sizeText(int64(d.StreamLimits.MaxBytes))},
		"StreamMaxParamsBytes": {"default " + sizeText(int64(d.ParamStreams.MaxSize))},
		"StreamPerSender":      {fmt.Sprintf("default %d each", d.StreamLimits.PerSender)},
	}
	docs := serveConfigDocs(t)
	for field, phrases := range fields {
		for _, p := range phrases {
			if !strings.Contains(docs[field], p) {
				t.Errorf("serveConfig.%s's comment does not say %q: %s", field, p, docs[field])
			}
		}
	}
	cfg := &serveConfig{Listen: "127.0.0.1:0", MaxTimeoutMS: -1}
	err := cfg.Validate()
	if want := fmt.Sprintf("the default, %d)", d.MaxTimeout.Milliseconds()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a negative max_timeout_ms: %v, want it refused naming %q", err, want)
	}
}

// serveFlagUsages returns the usage text of each of serve's flags.
func serveFlagUsages(t *testing.T) map[string]string {
	t.Helper()
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	out := map[string]string{}
	for _, c := range newApp(env).Commands {
		if c.Name != "serve" {
			continue
		}
		for _, f := range c.Flags {
			if u, ok := f.(cli.DocGenerationFlag); ok {
				out[f.Names()[0]] = u.GetUsage()
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the serve command has no flags")
	}
	return out
}

// serveConfigDocs returns the comment of each field of serveConfig in
// serve.go (by its name), its white space collapsed.
func serveConfigDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "serve.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "serveConfig" {
			return true
		}
		var last string
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			if len(fld.Names) == 0 {
				continue
			}
			// A comment may describe two fields; the second has it too.
			if fld.Doc != nil {
				last = strings.Join(strings.Fields(fld.Doc.Text()), " ")
			}
			docs[fld.Names[0].Name] = last
		}
		return false
	})
	if len(docs) == 0 {
		t.Fatal("no serveConfig fields found in serve.go")
	}
	return docs
}

// sizeText writes n bytes as the command line's documents do: "16 MiB",
// "256 KiB".
func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n>>10, 10) + " KiB"
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
