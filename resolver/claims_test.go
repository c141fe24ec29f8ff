package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
)

const translate21 = "capabilities/org.example.translate.text/2.1.0/"

// translateSource copies the translate sample source into a temporary
// folder and applies edits (file path -> new content).
func translateSource(t *testing.T, edits map[string]string) string {
	t.Helper()
	src := filepath.Join(samplesDir, "translate")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range edits {
		if err := os.WriteFile(filepath.Join(dst, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func loadDraft(t *testing.T, dir string) (*bundle.Draft, error) {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	return bundlebuild.LoadSource(dir, bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(k)})
}

func signDraft(t *testing.T, d *bundle.Draft) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func descriptorOf(t *testing.T, d *bundle.Draft, version string) *capability.Descriptor {
	t.Helper()
	for i := range d.Capabilities {
		if d.Capabilities[i].Version.String() == version {
			return &d.Capabilities[i]
		}
	}
	t.Fatalf("no descriptor %s", version)
	return nil
}

const rangePolicy = `{"policy": "range", "supported_ranges": [">=2.0.0 <2.2.0"]}`

// A 2.1.0 whose input requires a property 2.0.0 callers do not send.
const stricterInput = `{"type": "object", "required": ["text", "target", "formality"],
 "properties": {"text": {"type": "string"}, "target": {"type": "string"}, "source": {"type": "string"},
  "formality": {"enum": ["default", "formal", "informal"]}}, "additionalProperties": false}`

// TestSignedClaimsMatchTheSchemas: build computes the verdicts into the
// descriptor, and import re-derives and accepts them.
func TestSignedClaimsMatchTheSchemas(t *testing.T) {
	d, err := loadDraft(t, translateSource(t, map[string]string{translate21 + "capability.json": rangePolicy}))
	if err != nil {
		t.Fatal(err)
	}
	got := descriptorOf(t, d, "2.1.0").CompatClaims
	if len(got) != 1 || got[0].Version.String() != "2.0.0" || !got[0].Compatible() {
		t.Fatalf("claims %+v, want 2.0.0 compatible", got)
	}
	if descriptorOf(t, d, "2.0.0").CompatClaims != nil {
		t.Fatal("a descriptor without a policy got claims")
	}
	s := newStore(t)
	mustImport(t, s, signDraft(t, d))
}

// TestBuildRefusesRangePolicyTheVerdictsContradict: a range policy whose
// supported_ranges cover a version whose callers would be refused.
func TestBuildRefusesRangePolicyTheVerdictsContradict(t *testing.T) {
	_, err := loadDraft(t, translateSource(t, map[string]string{
		translate21 + "capability.json":   rangePolicy,
		translate21 + "input.schema.json": stricterInput,
	}))
	if !hasName(err, compat.ErrClaimUnproven) {
		t.Fatalf("err %v, want %s", err, compat.ErrClaimUnproven)
	}
}

func hasName(err error, name amp.ErrName) bool {
	var e *amp.Error
	return errors.As(err, &e) && e.Name == name
}

// TestFalseCompatibilityClaimRefusedAtImport: claims forged after the
// checker ran (or by a buggy checker) are refused by the importer, which
// re-derives them from the bundle's own schemas; nothing is installed.
func TestFalseCompatibilityClaimRefusedAtImport(t *testing.T) {
	cases := []struct {
		name  string
		edits map[string]string
		forge func(d *capability.Descriptor)
	}{
		{"verdict flipped to compatible", map[string]string{
			translate21 + "capability.json":   `{"policy": "strict", "supported_ranges": [">=2.0.0 <2.2.0"]}`,
			translate21 + "input.schema.json": stricterInput,
		}, func(d *capability.Descriptor) {
			d.Policy = capability.PolicyRange
			for i := range d.CompatClaims {
				d.CompatClaims[i].Input, d.CompatClaims[i].Output = capability.VerdictCompatible, capability.VerdictCompatible
			}
		}},
		{"claim removed", map[string]string{translate21 + "capability.json": rangePolicy},
			func(d *capability.Descriptor) { d.CompatClaims = []capability.CompatClaim{} }},
		{"claim for an uncovered version", map[string]string{translate21 + "capability.json": rangePolicy},
			func(d *capability.Descriptor) {
				v, _ := capability.ParseVersion("1.5.0")
				d.CompatClaims = append([]capability.CompatClaim{{Version: v, Input: "compatible", Output: "compatible"}}, d.CompatClaims...)
			}},
		{"verdict strengthened to compatible", map[string]string{translate21 + "capability.json": `{"policy": "strict", "supported_ranges": [">=2.0.0 <2.2.0"]}`, translate21 + "input.schema.json": stricterInput},
			func(d *capability.Descriptor) { d.CompatClaims[0].Input = capability.VerdictCompatible }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := loadDraft(t, translateSource(t, c.edits))
			if err != nil {
				t.Fatal(err)
			}
			c.forge(descriptorOf(t, d, "2.1.0"))
			s := newStore(t)
			before := dumpBesidesAudit(t, s)
			_, err = importBytes(t, s, signDraft(t, d), ImportOptions{})
			if !hasName(err, compat.ErrFalseClaim) {
				t.Fatalf("err %v, want %s", err, compat.ErrFalseClaim)
			}
			if !strings.Contains(err.Error(), "2.1.0") {
				t.Errorf("the refusal does not name the descriptor: %v", err)
			}
			if after := dumpBesidesAudit(t, s); after != before {
				t.Error("a refused import changed the store")
			}
		})
	}
}

// TestWeakerSignedClaimFromAnOlderCheckerStillImports: a claim signed
// "unknown" or "incompatible" where the importer's checker decides
// "compatible" (a bundle built by an older checker that decided less)
// serves no caller the derived verdict would refuse, so it is accepted
// as signed (threat: every improvement of the checker turning every
// bundle in the field into a refused import). A strict policy, so the
// weaker claim contradicts no policy.
func TestWeakerSignedClaimFromAnOlderCheckerStillImports(t *testing.T) {
	for _, weaker := range []string{capability.VerdictUnknown, capability.VerdictIncompatible} {
		t.Run(weaker, func(t *testing.T) {
			d, err := loadDraft(t, translateSource(t, map[string]string{translate21 + "capability.json": `{"policy": "strict", "supported_ranges": [">=2.0.0 <2.2.0"]}`}))
			if err != nil {
				t.Fatal(err)
			}
			desc := descriptorOf(t, d, "2.1.0")
			if len(desc.CompatClaims) == 0 || desc.CompatClaims[0].Output != capability.VerdictCompatible {
				t.Fatalf("the fixture's first claim is not compatible on output: %+v", desc.CompatClaims)
			}
			desc.CompatClaims[0].Output = weaker
			s := newStore(t)
			if _, err := importBytes(t, s, signDraft(t, d), ImportOptions{}); err != nil {
				t.Fatalf("a claim weaker than the derived verdict was refused: %v", err)
			}
		})
	}
}

const (
	bridgePolicy  = `{"policy": "bridge", "supported_ranges": [">=1.0.0 <2.0.0"]}`
	goodBridge    = `{"bridge": 1, "input": [{"op": "rename", "from": "/lang", "to": "/target"}], "output": [{"op": "drop-optional", "path": "/detected_source"}]}`
	droppingInput = `{"bridge": 1, "input": [{"op": "drop-optional", "path": "/text"}]}`
	// The 1.x output schemas require text: a bridge must not remove it.
	droppingOutput = `{"bridge": 1, "output": [{"op": "rename", "from": "/text", "to": "/translated"}]}`
)

// TestBridgeBuiltAndImported: a bridge.json beside capability.json becomes
// a bridge artifact referenced (bundle_id, artifact_key, hash) from the
// descriptor, and the importer re-checks and accepts it.
func TestBridgeBuiltAndImported(t *testing.T) {
	d, err := loadDraft(t, translateSource(t, map[string]string{
		translate21 + "capability.json": bridgePolicy,
		translate21 + "bridge.json":     goodBridge,
	}))
	if err != nil {
		t.Fatal(err)
	}
	desc := descriptorOf(t, d, "2.1.0")
	if desc.Bridge == nil || desc.Bridge.ArtifactKey != translate21+"bridge.json" || desc.Bridge.MediaType != bundle.MediaTypeBridge || len(desc.Bridge.Hash) == 0 {
		t.Fatalf("bridge reference %+v", desc.Bridge)
	}
	if len(desc.CompatClaims) != 2 {
		t.Fatalf("claims %+v, want one per carried 1.x version", desc.CompatClaims)
	}
	s := newStore(t)
	mustImport(t, s, signDraft(t, d))
}

// TestBuildRefusesBridgeDroppingRequiredField: a bridge removing a member
// the provider's input schema, or a covered caller's output schema,
// requires is refused at build; so are a malformed bridge, a bridge
// policy without a bridge, and a bridge without the policy.
func TestBuildRefusesBridgeDroppingRequiredField(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  amp.ErrName
		text  string
	}{
		{"input drops required", map[string]string{translate21 + "capability.json": bridgePolicy, translate21 + "bridge.json": droppingInput}, compat.ErrBridgeDropsRequired, "/text"},
		{"output drops what callers require", map[string]string{translate21 + "capability.json": bridgePolicy, translate21 + "bridge.json": droppingOutput}, compat.ErrBridgeDropsRequired, "/text"},
		{"malformed", map[string]string{translate21 + "capability.json": bridgePolicy, translate21 + "bridge.json": `{"bridge": 1, "input": [{"op": "eval", "path": "/text"}]}`}, "", "not a valid bridge"},
		{"policy without bridge", map[string]string{translate21 + "capability.json": bridgePolicy}, "", "bridge"},
		{"bridge without policy", map[string]string{translate21 + "capability.json": rangePolicy, translate21 + "bridge.json": goodBridge}, "", "bridge"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadDraft(t, translateSource(t, c.edits))
			if err == nil {
				t.Fatal("built")
			}
			if c.want != "" && !hasName(err, c.want) {
				t.Fatalf("err %v, want %s", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err %v does not say %q", err, c.text)
			}
		})
	}
}

// TestForgedBridgeRefusedAtImport: a publisher whose builder skipped the
// checks signs a bridge that drops a required field; the importer
// re-checks it from the bundle's own bytes and installs nothing.
func TestForgedBridgeRefusedAtImport(t *testing.T) {
	for name, forged := range map[string]string{"drops required input": droppingInput, "drops required output": droppingOutput} {
		t.Run(name, func(t *testing.T) {
			d, err := loadDraft(t, translateSource(t, map[string]string{
				translate21 + "capability.json": bridgePolicy,
				translate21 + "bridge.json":     goodBridge,
			}))
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range d.Artifacts {
				if a.Key == translate21+"bridge.json" {
					d.Artifacts[i] = bundle.BytesSource(a.Key, bundle.MediaTypeBridge, []byte(forged))
				}
			}
			s := newStore(t)
			before := dumpBesidesAudit(t, s)
			_, err = importBytes(t, s, signDraft(t, d), ImportOptions{})
			if !hasName(err, compat.ErrBridgeDropsRequired) {
				t.Fatalf("err %v, want %s", err, compat.ErrBridgeDropsRequired)
			}
			if after := dumpBesidesAudit(t, s); after != before {
				t.Error("a refused import changed the store")
			}
		})
	}
}
