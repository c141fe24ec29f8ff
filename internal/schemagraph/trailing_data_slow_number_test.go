package schemagraph

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestTrailingDataIsASyntaxErrorWhateverAnotherNumberCosts: with Float64
// and EncodingJSON (how internal/offlineschema reads a publisher's
// schema), data after the value was KindSyntax, json.Unmarshal's error,
// when every number of the document was one strconv rounds fast, but
// KindTrailing when one number elsewhere (1e-320) sent the document down
// the path that keeps numbers as text: the cause an invalid_schema
// carries turned on an unrelated number (and a truncated one was caused
// by io.ErrUnexpectedEOF, not json.Unmarshal's error). Both now give
// json.Unmarshal's own syntax error, for the same document with a fast
// and a slow number.
func TestTrailingDataIsASyntaxErrorWhateverAnotherNumberCosts(t *testing.T) {
	for _, doc := range []string{`{"a":%s} x`, `{"a":%s} {}`, `{"a":%s}]`, `[%s] 1`, `%s 1`, `{"a":[%s,"b"]}}`, `{"a":[%s,`, `[%s,1e400] x`} {
		for _, number := range []string{"1", "1e-320"} {
			data := []byte(strings.ReplaceAll(doc, "%s", number))
			_, err := Parse(data, Options{MaxBytes: 1000, MaxDepth: 10000, Float64: true, EncodingJSON: true})
			var v any
			want := json.Unmarshal(data, &v)
			var syntax *json.SyntaxError
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindSyntax || !errors.As(err, &syntax) || e.Cause.Error() != want.Error() {
				t.Errorf("%s: %v (kind %d), want KindSyntax caused by %v", data, err, KindOf(err), want)
			}
		}
	}
}
