package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io/fs"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

const (
	summarizeIn205  = `{"type":"object","required":["text"],"properties":{"text":{"type":"string"}},"additionalProperties":false}`
	summarizeIn210  = `{"type":"object","required":["text"],"properties":{"text":{"type":"string"},"lang":{"enum":["en","fr"]}},"additionalProperties":false}`
	summarizeOut205 = `{"type":"object","required":["summary"],"properties":{"summary":{"type":"string"}}}`
	summarizeOut210 = `{"type":"object","required":["summary","served"],"properties":{"summary":{"type":"string"},"served":{"type":"string"}}}`
)

type mapLoader map[string][]byte

func (m mapLoader) Load(k string) ([]byte, error) {
	if b, ok := m[k]; ok {
		return b, nil
	}
	return nil, fs.ErrNotExist
}
func (m mapLoader) KeyForID(string) (string, bool) { return "", false }

// policyBundle carries org.agentries.summarize and .summarize-strict, each
// in 2.0.5 and 2.1.0; 2.1.0 declares supported_ranges >=2.0.0 <2.2.0 and
// deprecates <2.1.0, under policy range and strict respectively. The
// claims are computed the way build computes them.
func policyBundle(t *testing.T, key ed25519.PrivateKey) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: "org.agentries.policies", Version: 1, CreatedAt: t0.Add(-time.Hour)}
	files := mapLoader{}
	for _, name := range []string{"org.agentries.summarize", "org.agentries.summarize-strict"} {
		for _, v := range []string{"2.0.5", "2.1.0"} {
			dir := "capabilities/" + name + "/" + v + "/"
			in, out := summarizeIn205, summarizeOut205
			if v == "2.1.0" {
				in, out = summarizeIn210, summarizeOut210
			}
			files[dir+"input.schema.json"], files[dir+"output.schema.json"] = []byte(in), []byte(out)
			d.Artifacts = append(d.Artifacts,
				bundle.BytesSource(dir+"input.schema.json", bundle.MediaTypeSchema, []byte(in)),
				bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, []byte(out)))
			ver, _ := capability.ParseVersion(v)
			desc := capability.Descriptor{Name: name, Version: ver,
				InputSchema:  capability.SchemaRef{ArtifactKey: dir + "input.schema.json"},
				OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}}
			if v == "2.1.0" {
				sr, _ := capability.ParseRange(">=2.0.0 <2.2.0")
				dr, _ := capability.ParseRange("<2.1.0")
				desc.SupportedRanges, desc.DeprecatedRanges = []capability.Range{sr}, []capability.Range{dr}
				desc.Policy = capability.PolicyRange
				if name == "org.agentries.summarize-strict" {
					desc.Policy = capability.PolicyStrict
				}
			}
			d.Capabilities = append(d.Capabilities, desc)
		}
	}
	annotated, err := compat.Annotate(d.Capabilities, compat.NewSource(files))
	if err != nil {
		t.Fatal(err)
	}
	d.Capabilities = annotated
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withPolicyBundle installs policyBundle and serves only the 2.1.0
// versions, with a handler that says which version ran.
func withPolicyBundle(t *testing.T) envOption {
	return func(e *env) {
		e.importBundle(policyBundle(t, seedKey(21)))
		for _, id := range []string{"org.agentries.summarize:2.1.0", "org.agentries.summarize-strict:2.1.0"} {
			e.handlers[id] = func(ctx context.Context, p any) (any, error) {
				return map[string]any{"summary": "short", "served": id}, nil
			}
		}
	}
}

// TestRangePolicyServesCoveredVersionOverHTTP: a 2.0.5 caller is served by
// the 2.1.0 handler under policy range (the claim is proven and signed),
// the result says which version ran and that 2.0.5 is deprecated; under
// strict, or for a version the ranges do not cover, the answer is 4003.
func TestRangePolicyServesCoveredVersionOverHTTP(t *testing.T) {
	e := newEnv(t, withPolicyBundle(t))
	url, _ := serveHTTP(t, e, amphttp.Options{})
	c := httpClient(t, e, url, e.caller, false)
	params, _ := amp.Marshal(map[string]any{"text": "a long text"})
	byID := func(s string) capability.Invoke {
		id, err := capability.ParseID(s)
		if err != nil {
			t.Fatal(err)
		}
		return capability.Invoke{ID: id, Params: params}
	}
	r, _, err := c.Invoke(context.Background(), byID("org.agentries.summarize:2.0.5"))
	if err != nil {
		t.Fatalf("a covered, proven-compatible version was refused: %v", err)
	}
	var out map[string]any
	if err := amp.Unmarshal(r.Result, &out); err != nil || out["served"] != "org.agentries.summarize:2.1.0" {
		t.Fatalf("result %v (%v)", out, err)
	}
	var served string
	var deprecated bool
	if err := amp.Unmarshal(r.Extra[ResultServedID], &served); err != nil || served != "org.agentries.summarize:2.1.0" {
		t.Fatalf("served_id %q (%v)", served, err)
	}
	if err := amp.Unmarshal(r.Extra[ResultDeprecated], &deprecated); err != nil || !deprecated {
		t.Fatalf("deprecated %v (%v)", deprecated, err)
	}

	// Negotiation with a preferred version goes the same way.
	pref, _ := capability.ParseVersion("2.0.5")
	r, _, err = c.Invoke(context.Background(), capability.Invoke{Capability: "org.agentries.summarize",
		Negotiate: &capability.NegotiateHints{Preferred: pref}, Params: params})
	if err != nil || r.Extra[ResultServedID] == nil {
		t.Fatalf("negotiated 2.0.5: %v %+v", err, r)
	}

	// The exact version: no served_id, no deprecation.
	r, _, err = c.Invoke(context.Background(), byID("org.agentries.summarize:2.1.0"))
	if err != nil || r.Extra != nil {
		t.Fatalf("exact 2.1.0: %v extra %v", err, r.Extra)
	}

	for _, id := range []string{"org.agentries.summarize-strict:2.0.5", "org.agentries.summarize:1.0.0", "org.agentries.summarize:2.2.0"} {
		_, _, err := c.Invoke(context.Background(), byID(id))
		if amp.CodeOf(err) != amp.CodeVersionMismatch {
			t.Errorf("%s: err %v, want 4003", id, err)
		}
	}
}

// TestQueryListsRangeServedVersions: a CAP_QUERY for a range only older
// versions fall in lists the descriptor that serves them under policy
// range (its claims say which); under strict the answer stays 4003.
func TestQueryListsRangeServedVersions(t *testing.T) {
	e := newEnv(t, withPolicyBundle(t))
	url, _ := serveHTTP(t, e, amphttp.Options{})
	c := httpClient(t, e, url, e.caller, false)
	r, _ := capability.ParseRange(">=2.0.0 <2.1.0")
	d, _, err := c.Query(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.agentries.summarize", Version: r}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Capabilities) != 1 || d.Capabilities[0].ID().String() != "org.agentries.summarize:2.1.0" || len(d.Capabilities[0].CompatClaims) != 1 {
		t.Fatalf("declare %+v", d.Capabilities)
	}
	_, _, err = c.Query(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.agentries.summarize-strict", Version: r}})
	if amp.CodeOf(err) != amp.CodeVersionMismatch {
		t.Fatalf("strict: err %v, want 4003", err)
	}
}
