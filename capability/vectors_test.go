package capability

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// The RFC 004 Appendix A vectors live as files under
// testdata/vectors/rfc004, each with its expected outcome (format in the
// folder's README.md). Each named test loads one file; TestVectorFiles runs
// every file of a kind this package owns.

const vectorDir = "../testdata/vectors/rfc004"

type vectorFile struct {
	Vector string          `json:"vector"`
	Title  string          `json:"title"`
	Source string          `json:"source"`
	Kind   string          `json:"kind"`
	Input  json.RawMessage `json:"input"`
	Expect vectorExpect    `json:"expect"`
}

type vectorExpect struct {
	Outcome    string   `json:"outcome"`
	Code       amp.Code `json:"code"`
	Name       string   `json:"name"`
	IDs        []string `json:"ids"`
	Profiles   []string `json:"profiles"`
	ID         string   `json:"id"`
	Capability string   `json:"capability"`
	Order      string   `json:"order"`
}

type vectorInput struct {
	Type             string            `json:"type"`
	Body             json.RawMessage   `json:"body"`
	BodyHex          string            `json:"body_hex"`
	Artifacts        map[string]string `json:"artifacts"`
	ProviderVersions []string          `json:"provider_versions"`
	Aliases          map[string]string `json:"aliases"`
	Known            []string          `json:"known"`
}

// ownedKind returns the runner of a vector kind this package owns.
func ownedKind(kind string) (func(*testing.T, vectorFile), bool) {
	switch kind {
	case "decode_body":
		return runDecodeBody, true
	case "negotiate":
		return runNegotiate, true
	case "resolve_type":
		return runResolveType, true
	}
	return nil, false
}

func loadVector(t *testing.T, name, wantVector string) vectorFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if v.Vector != wantVector {
		t.Fatalf("%s: vector = %q, want %q", name, v.Vector, wantVector)
	}
	return v
}

func runVectorFile(t *testing.T, name, wantVector string) {
	t.Helper()
	v := loadVector(t, name, wantVector)
	run, ok := ownedKind(v.Kind)
	if !ok {
		t.Fatalf("%s: kind %q is not run by this package", name, v.Kind)
	}
	run(t, v)
}

func TestA01_CapDeclarePositive(t *testing.T) {
	runVectorFile(t, "a01-cap-declare-positive.json", "A.1")
}

func TestA02_NegotiationExact(t *testing.T) {
	runVectorFile(t, "a02-negotiation-exact.json", "A.2")
}

func TestA03_NegotiationFallback(t *testing.T) {
	runVectorFile(t, "a03-negotiation-fallback.json", "A.3")
}

func TestA04_NegotiationMismatch(t *testing.T) {
	runVectorFile(t, "a04-negotiation-mismatch.json", "A.4")
}

func TestA07_LegacyAlias(t *testing.T) {
	runVectorFile(t, "a07-legacy-alias.json", "A.7")
}

func TestA08_IdentityMismatch(t *testing.T) {
	runVectorFile(t, "a08-identity-mismatch.json", "A.8")
}

func TestA16_IdentityFormConflict(t *testing.T) {
	runVectorFile(t, "a16-identity-form-conflict.json", "A.16")
}

// TestVectorFiles checks the common fields of every vector file and runs
// the kinds this package owns. It fails if the glob matches nothing, and
// if the Appendix A vectors this package is responsible for are missing.
func TestVectorFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vector files match %s/*.json", vectorDir)
	}
	ran := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vectorFile
		if err := json.Unmarshal(data, &v); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if v.Vector == "" || v.Title == "" || v.Kind == "" || len(v.Input) == 0 {
			t.Errorf("%s: vector, title, kind and input are required", name)
		}
		switch v.Expect.Outcome {
		case "accept":
		case "error":
			if v.Expect.Code == 0 {
				t.Errorf("%s: an error outcome needs expect.code", name)
			}
		default:
			t.Errorf("%s: expect.outcome must be accept or error", name)
		}
		run, ok := ownedKind(v.Kind)
		if !ok {
			t.Logf("%s: kind %q belongs to another package", name, v.Kind)
			continue
		}
		ran[v.Vector] = true
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) { run(t, v) })
	}
	for _, want := range []string{"A.1", "A.2", "A.3", "A.4", "A.7", "A.8", "A.16"} {
		if !ran[want] {
			t.Errorf("vector %s was not run", want)
		}
	}
}

func vectorInputOf(t *testing.T, v vectorFile) (vectorInput, []byte) {
	t.Helper()
	var in vectorInput
	if err := json.Unmarshal(v.Input, &in); err != nil {
		t.Fatal(err)
	}
	body, err := hex.DecodeString(in.BodyHex)
	if err != nil || len(body) == 0 {
		t.Fatalf("bad body_hex: %v", err)
	}
	return in, body
}

// checkOutcome compares err with an error expectation, or fails on an
// unexpected error for an accept expectation. It reports whether the
// vector expects acceptance.
func checkOutcome(t *testing.T, e vectorExpect, err error) bool {
	t.Helper()
	switch e.Outcome {
	case "accept":
		if err != nil {
			t.Fatalf("want accept, got %v", err)
		}
		return true
	case "error":
		if err == nil {
			t.Fatalf("want error %d %s, got acceptance", e.Code, e.Name)
		}
		var ae *amp.Error
		if !errors.As(err, &ae) {
			t.Fatalf("error %v is not an *amp.Error", err)
		}
		if !errors.Is(err, e.Code) {
			t.Fatalf("error = %v, want code %d", err, e.Code)
		}
		if e.Name != "" && !errors.Is(err, amp.ErrName(e.Name)) {
			t.Fatalf("error = %v, want name %s", err, e.Name)
		}
		return false
	}
	t.Fatalf("unknown outcome %q", e.Outcome)
	return false
}

// checkBodyJSON checks that the informative JSON form of a vector body
// agrees with body_hex.
func checkBodyJSON(t *testing.T, in vectorInput, body []byte) {
	t.Helper()
	if len(in.Body) == 0 {
		return
	}
	if in.Type == "CAP_DECLARE" {
		var j struct {
			Capabilities []json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(in.Body, &j); err != nil {
			t.Fatal(err)
		}
		var d Declare
		for _, c := range j.Capabilities {
			desc, err := DecodeDescriptorJSON(c)
			if err != nil {
				t.Fatalf("json descriptor: %v", err)
			}
			d.Capabilities = append(d.Capabilities, desc)
		}
		got, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("json body encodes to\n%x\nwant body_hex\n%x", got, body)
		}
		return
	}
	v, err := readJSON(in.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := amp.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("json body encodes to\n%x\nwant body_hex\n%x", got, body)
	}
}

// decodeAny decodes body by message type and re-encodes it.
func decodeAny(typ string, body []byte) (any, func() ([]byte, error), error) {
	switch typ {
	case "CAP_QUERY":
		q, err := DecodeQuery(body)
		return q, q.Encode, err
	case "CAP_DECLARE":
		d, err := DecodeDeclare(body)
		return d, d.Encode, err
	case "CAP_INVOKE":
		inv, err := DecodeInvoke(body)
		return inv, inv.Encode, err
	case "CAP_RESULT":
		r, err := DecodeResult(body)
		return r, r.Encode, err
	}
	return nil, nil, errors.New("unknown body type " + typ)
}

func runDecodeBody(t *testing.T, v vectorFile) {
	in, body := vectorInputOf(t, v)
	checkBodyJSON(t, in, body)
	val, encode, err := decodeAny(in.Type, body)
	if !checkOutcome(t, v.Expect, err) {
		return
	}
	again, err := encode()
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	if !bytes.Equal(again, body) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", again, body)
	}
	d, ok := val.(Declare)
	if !ok {
		return
	}
	if v.Expect.IDs != nil {
		var ids []string
		for _, c := range d.Capabilities {
			ids = append(ids, c.ID().String())
		}
		if strings.Join(ids, " ") != strings.Join(v.Expect.IDs, " ") {
			t.Fatalf("ids = %v, want %v", ids, v.Expect.IDs)
		}
	}
	for _, p := range v.Expect.Profiles {
		prof := map[string]Profile{"default": ProfileDefault, "offline": ProfileOffline}[p]
		if err := d.Validate(prof); err != nil {
			t.Fatalf("profile %s: %v", p, err)
		}
	}
	for _, c := range d.Capabilities {
		for _, ref := range []SchemaRef{c.InputSchema, c.OutputSchema} {
			art, ok := in.Artifacts[ref.ArtifactKey]
			if !ok {
				continue
			}
			if !ref.Matches([]byte(art)) {
				t.Fatalf("artifact %s does not match its hash", ref.ArtifactKey)
			}
			if ref.Matches([]byte(art + " ")) {
				t.Fatalf("a changed artifact matches its hash")
			}
		}
	}
}

func runNegotiate(t *testing.T, v vectorFile) {
	in, body := vectorInputOf(t, v)
	checkBodyJSON(t, in, body)
	inv, err := DecodeInvoke(body)
	if err != nil {
		t.Fatalf("decode invoke: %v", err)
	}
	if inv.ByID() {
		t.Fatal("a negotiate vector needs a by-name invoke")
	}
	var provided []Version
	for _, s := range in.ProviderVersions {
		pv, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		provided = append(provided, pv)
	}
	var id ID
	if inv.Negotiate != nil {
		id, err = Negotiate(inv.Capability, *inv.Negotiate, provided)
	} else {
		id, err = MatchExact(inv.Capability, inv.Version, provided)
	}
	if !checkOutcome(t, v.Expect, err) {
		return
	}
	if id.String() != v.Expect.ID {
		t.Fatalf("negotiated %s, want %s", id, v.Expect.ID)
	}
}

func runResolveType(t *testing.T, v vectorFile) {
	in, body := vectorInputOf(t, v)
	checkBodyJSON(t, in, body)
	q, err := DecodeQuery(body)
	if err != nil {
		t.Fatalf("decode query: %v", err)
	}
	if q.Filter.Capability != "" {
		t.Fatal("a resolve_type vector needs a query without capability")
	}
	name, err := ResolveType(q.Filter.Type, in.Aliases, in.Known)
	if !checkOutcome(t, v.Expect, err) {
		return
	}
	if name != v.Expect.Capability {
		t.Fatalf("resolved %q, want %q", name, v.Expect.Capability)
	}
	if v.Expect.Order != "" && string(q.EffectiveOrder()) != v.Expect.Order {
		t.Fatalf("effective order %q, want %q", q.EffectiveOrder(), v.Expect.Order)
	}
}
