package capability

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// TestSuccessResultEncodingIsTheGenericEncoding: a success CAP_RESULT
// without extensions is written directly instead of through a map. A
// shortcut that signed other bytes than the generic encoder (a result
// left in a non-deterministic form, an ill-formed result let through)
// would make the agent sign what a second implementation would encode
// differently; so for each result, deterministic or not, well-formed or
// not, both paths must give the same bytes or both refuse.
func TestSuccessResultEncodingIsTheGenericEncoding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		result  string
		refused bool
	}{
		{"null", "f6", false},
		{"deterministic map", "a266697373756573806776657273696f6e646e6f6f70", false},
		{"keys out of order", "a26776657273696f6e646e6f6f706669737375657380", false},
		{"long heads", "b8020118ff19010002", false},
		{"float that shrinks", "fb3ff8000000000000", false},
		{"nested arrays", "8383010203820405f5", false},
		{"duplicate keys", "a2616101616102", true},
		{"truncated", "a2616101", true},
		{"indefinite length", "9f01ff", true},
		{"invalid utf-8", "62c328", true},
		{"trailing bytes", "0101", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := hex.DecodeString(tc.result)
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := Result{Status: StatusSuccess, Result: raw}.Encode()
			want, werr := amp.Marshal(map[string]any{"status": StatusSuccess, "result": cbor.RawMessage(raw)})
			if (gerr != nil) != tc.refused || (werr != nil) != tc.refused {
				t.Fatalf("direct encoding: %x (%v); generic encoding: %x (%v)", got, gerr, want, werr)
			}
			if gerr == nil && !bytes.Equal(got, want) {
				t.Fatalf("direct encoding %x, generic encoding %x", got, want)
			}
		})
	}
}
