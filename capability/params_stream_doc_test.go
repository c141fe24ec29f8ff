package capability

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// docBetween returns the text of docs/FORMAT.md between two markers.
func docBetween(t *testing.T, doc []byte, begin, end string) string {
	t.Helper()
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatalf("docs/FORMAT.md has no %s", begin)
	}
	return string(doc[a+len(begin) : b])
}

// annotatedHex reads the hex words of an annotated dump, each line up to its
// annotation.
func annotatedHex(t *testing.T, text string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(text, "\n") {
		for _, w := range strings.Fields(strings.Trim(line, "`")) {
			x, err := hex.DecodeString(w)
			if err != nil {
				break
			}
			out = append(out, x...)
		}
	}
	return out
}

// TestFormatDocParamsStreamExample: the params_stream example of
// docs/FORMAT.md is what the code reads and writes (threat: a second
// implementation built from the doc whose references the agent misreads,
// running an invocation on other params than the caller signed for).
func TestFormatDocParamsStreamExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	content := annotatedHex(t, docBetween(t, doc, "<!-- params-stream-content:begin -->", "<!-- params-stream-content:end -->"))
	body := annotatedHex(t, docBetween(t, doc, "<!-- params-stream-hex:begin -->", "<!-- params-stream-hex:end -->"))
	if len(body) != 112 || len(content) == 0 {
		t.Fatalf("the example has %d bytes (content %d), the doc says 112", len(body), len(content))
	}
	inv, err := DecodeInvoke(body)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok, err := ParamsStreamOf(inv)
	if err != nil || !ok {
		t.Fatalf("no params stream: %v %v", ok, err)
	}
	sum := sha256.Sum256(content)
	if ref.StreamID != "s1" || !bytes.Equal(ref.SHA256, sum[:]) || inv.ID.String() != "org.example.greet.hello:1.0.0" {
		t.Fatalf("decoded %+v %s", ref, inv.ID)
	}
	again, err := Invoke{ID: inv.ID}.WithParamsStream("s1", content)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := again.Encode()
	if err != nil || !bytes.Equal(enc, body) {
		t.Fatalf("the encoder writes %x, the doc %x", enc, body)
	}
}

// TestParamsStreamReferenceIsStrict: a reference that could be read two
// ways, that names no stream or a hash of the wrong size, or that leaves
// room for inline params beside it, is refused (4001).
func TestParamsStreamReferenceIsStrict(t *testing.T) {
	id, _ := ParseID("org.example.greet.hello:1.0.0")
	sum := sha256.Sum256([]byte{0xf6})
	ref := func(v any) Invoke {
		raw, err := amp.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return Invoke{ID: id, Params: cbor.RawMessage{0xf6}, Extra: map[string]cbor.RawMessage{ParamsStreamField: raw}}
	}
	withParams := ref(map[string]any{"stream_id": "s1", "sha256": sum[:]})
	withParams.Params = cbor.RawMessage{0xa0}
	for _, c := range []struct {
		name string
		inv  Invoke
	}{
		{"not a map", ref("s1")},
		{"no stream_id", ref(map[string]any{"sha256": sum[:]})},
		{"empty stream_id", ref(map[string]any{"stream_id": "", "sha256": sum[:]})},
		{"stream_id too long", ref(map[string]any{"stream_id": strings.Repeat("s", MaxParamsStreamID+1), "sha256": sum[:]})},
		{"short hash", ref(map[string]any{"stream_id": "s1", "sha256": sum[:31]})},
		{"hash as text", ref(map[string]any{"stream_id": "s1", "sha256": hex.EncodeToString(sum[:])})},
		{"an extra key", ref(map[string]any{"stream_id": "s1", "sha256": sum[:], "offset": 0})},
		{"inline params beside it", withParams},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ok, err := ParamsStreamOf(c.inv)
			if !ok || amp.CodeOf(err) != amp.CodeBadRequest {
				t.Fatalf("got ok=%v %v, want a 4001 refusal", ok, err)
			}
		})
	}
	if _, ok, err := ParamsStreamOf(ref(map[string]any{"stream_id": "s1", "sha256": sum[:]})); !ok || err != nil {
		t.Fatalf("the well-formed reference: %v %v", ok, err)
	}
}

// FuzzDecodeParamsStream: any bytes give a reference that re-encodes to
// their canonical form (one reading only), or a 4001/1001 refusal; never a
// panic.
func FuzzDecodeParamsStream(f *testing.F) {
	sum := sha256.Sum256(nil)
	for _, v := range []any{map[string]any{"stream_id": "s1", "sha256": sum[:]}, map[string]any{"stream_id": "s1"}, "s1", []any{}} {
		raw, _ := amp.Marshal(v)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodeParamsStream(raw)
		if err != nil {
			if c := amp.CodeOf(err); c != amp.CodeBadRequest && c != amp.CodeInvalidMessage {
				t.Fatalf("refusal with code %d", c)
			}
			return
		}
		enc, err := p.encode()
		canon, cerr := amp.Limits{}.Canonical(raw)
		if err != nil || cerr != nil || !bytes.Equal(enc, canon) {
			t.Fatalf("accepted %+v; it re-encodes to %x, not %x (%v %v)", p, enc, canon, err, cerr)
		}
	})
}
