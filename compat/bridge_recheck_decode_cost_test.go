package compat

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// keyCountingLoader counts the loads of each key of a memLoader.
type keyCountingLoader struct {
	memLoader
	loads map[string]int
}

func (l *keyCountingLoader) Load(key string) ([]byte, error) {
	l.loads[key]++
	return l.memLoader.Load(key)
}

// TestBridgeRecheckDecodesEachSchemaOncePerImport: VerifyClaims
// re-checked a descriptor's bridge (checkDescriptorBridge, claims.go) with
// CheckBridge once per covered caller, and CheckBridge read and decoded
// its target schemas from the loader on every call (loadJSON, bridge.go):
// the provider's input schema, the same for every caller, and the
// caller's output schema, however many callers share it.
//
// Attack: a publisher trusted for one namespace signs a descriptor under
// policy bridge whose supported_ranges cover 256 carried versions (the
// claims cap), all sharing one output schema of MaxDocumentSize (4 MiB),
// with a bridge that drops an optional member on each side. The
// import decoded 2 × 256 schemas of 4 MiB for that one descriptor (2 GiB
// of JSON), and every other descriptor of the bundle could repeat it: the
// cost grows with callers × schema size, not with the bundle's bytes.
// Want: each schema artifact read and decoded at most once per import
// (through the Source's parsed documents), the input side checked once
// per descriptor, not once per caller; a second bridged descriptor
// over the same callers decodes nothing more.
func TestBridgeRecheckDecodesEachSchemaOncePerImport(t *testing.T) {
	const callers = capability.MaxCompatClaims
	// A large, plain output schema: one optional member "r" and many
	// others, so that the bridge's drop-optional of /r is allowed.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"r":{"type":"string"}`)
	for i := 0; b.Len() < 16<<10; i++ { // small here: the reads are counted
		fmt.Fprintf(&b, `,"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	bridge := `{"bridge":1,"input":[{"op":"drop-optional","path":"/a"}],"output":[{"op":"drop-optional","path":"/r"}]}`
	sum := sha256.Sum256([]byte(bridge))
	l := &keyCountingLoader{memLoader: memLoader{files: map[string][]byte{
		"in.json":     []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`),
		"out.json":    []byte(b.String()),
		"bridge.json": []byte(bridge),
	}}, loads: map[string]int{}}

	descs := make([]capability.Descriptor, 0, callers+2)
	for i := 0; i <= callers; i++ {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		descs = append(descs, capability.Descriptor{Name: "org.example.bridged", Version: v,
			InputSchema:  capability.SchemaRef{ArtifactKey: "in.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "out.json"}})
	}
	r, err := capability.ParseRange(fmt.Sprintf(">=1.0.0 <1.%d.0", callers))
	if err != nil {
		t.Fatal(err)
	}
	p := &descs[callers]
	p.Policy, p.SupportedRanges = capability.PolicyBridge, []capability.Range{r}
	p.Bridge = &capability.SchemaRef{ArtifactKey: "bridge.json", HashAlg: capability.HashSHA256, Hash: sum[:]}
	q := *p
	q.Version, err = capability.ParseVersion("2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	descs = append(descs, q)
	claims := DeriveClaims(descs, NewSource(l.memLoader))
	for _, i := range []int{callers, callers + 1} {
		descs[i].CompatClaims = claims[i]
		if len(descs[i].CompatClaims) != callers {
			t.Fatalf("%d claims derived for %s, want %d", len(descs[i].CompatClaims), descs[i].Version, callers)
		}
	}

	if err := VerifyClaims(descs, NewSource(l)); err != nil {
		t.Fatalf("VerifyClaims: %v", err)
	}
	for _, k := range []string{"in.json", "out.json"} {
		if n := l.loads[k]; n > 2 {
			t.Errorf("%s read and decoded %d times for two descriptors' bridges (%d covered callers each), want at most 2", k, n, callers)
		}
	}
}
