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
	return bundle.LoadSource(dir, bundle.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(k)})
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
		{"verdict weakened", map[string]string{translate21 + "capability.json": rangePolicy},
			func(d *capability.Descriptor) { d.CompatClaims[0].Output = capability.VerdictUnknown }},
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
