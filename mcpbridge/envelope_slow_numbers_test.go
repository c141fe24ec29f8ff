package mcpbridge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
)

// slowNumberSeeds are numbers strconv.ParseFloat rounds on its decimal
// fallback, 15 to 80 µs each (docs/SPEC-DECISIONS.md AGH-20): a
// subnormal, and the midpoint of two doubles near 1e300 cut to 20 digits.
var slowNumberSeeds = []string{"5e-324", "1.0000000000000001269e+300"}

// numbersIn is a request of method whose params hold n copies of num,
// in _meta ("meta") or in arguments ("arguments").
func numbersIn(method, where, num string, n int) string {
	list := "[" + strings.TrimSuffix(strings.Repeat(num+",", n), ",") + "]"
	params := `{"_meta":{"x":` + list + `}}`
	if where == "arguments" {
		params = `{"name":"t","arguments":{"x":` + list + `}}`
	}
	return `{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":` + params + `}`
}

// slowOutsideArguments counts the numbers of a body the check passed
// that jsonnum.StrconvFast does not vouch for and that go-sdk v1.8.0
// decodes with strconv: all but a tools/call's arguments.
func slowOutsideArguments(body string) int {
	var m struct {
		Method string
		Params struct {
			Meta      struct{ X []json.Number } `json:"_meta"`
			Arguments struct{ X []json.Number }
		}
	}
	if json.Unmarshal([]byte(body), &m) != nil {
		return -1
	}
	nums := m.Params.Meta.X
	if m.Method != "tools/call" {
		nums = append(nums, m.Params.Arguments.X...)
	}
	n := 0
	for _, x := range nums {
		if !jsonnum.StrconvFast(string(x)) {
			n++
		}
	}
	return n
}

// TestEnvelopeOfSlowNumbersIsRefusedBeforeTheSDK: go-sdk v1.8.0 decodes a
// request's _meta (and another method's arguments) into maps, each number
// rounded by strconv.ParseFloat, before any handler (MCP-16); the body
// check counted 4,096 values there whatever they were, so a ping whose
// _meta held some 4,080 subnormals (29 KB) or 20-digit midpoints near
// 1e300 (110 KB) reached the SDK with all of them for strconv's decimal
// fallback: 0.17 s and 0.33 s per request on the 2-core build machine,
// against 2 ms for as many plain numbers. A number jsonnum.StrconvFast does not vouch for now
// counts SlowNumberValues (256) of the envelope's MaxEnvelopeValues, so
// at most 15 reach the SDK with a message's other values; a tools/call's
// arguments, which the SDK keeps as bytes and the bridge reads with
// jsonnum, are not charged (threat: a token holder's requests of slow
// numbers holding the CPU; docs/SPEC-DECISIONS.md JSON-7).
func TestEnvelopeOfSlowNumbersIsRefusedBeforeTheSDK(t *testing.T) {
	many := MaxEnvelopeValues - 7 // the message, its 4 members, _meta, x
	for _, num := range slowNumberSeeds {
		for _, c := range []struct {
			name, method, where string
			n                   int
			refused             bool
		}{
			{"a full _meta", "ping", "meta", many, true},
			{"16 in _meta", "ping", "meta", 16, true},
			{"15 in _meta", "ping", "meta", 15, false},
			{"a call's arguments", "tools/call", "arguments", many, false},
			{"another method's arguments", "prompts/get", "arguments", 16, true},
			{"15 in another method's arguments", "prompts/get", "arguments", 15, false},
		} {
			body := numbersIn(c.method, c.where, num, c.n)
			for _, check := range []func([]byte, int) error{checkBody, checkPostBody} {
				err := check([]byte(body), 1<<18)
				if c.refused {
					if amp.NameOf(err) != ErrTooManyValues {
						t.Errorf("%s of %s: %v passed %d slow numbers to the SDK, want %s", c.name, num, err, slowOutsideArguments(body), ErrTooManyValues)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s of %s: %v", c.name, num, err)
				}
			}
		}
	}
	plain := numbersIn("ping", "meta", "1.5", many)
	if err := checkPostBody([]byte(plain), 1<<18); err != nil {
		t.Errorf("a _meta of %d plain numbers: %v", many, err)
	}
}

// TestEnvelopeOfSlowNumbersIsAnswered413: the endpoint answers such a
// body with 413 too_many_json_values, before the SDK.
func TestEnvelopeOfSlowNumbersIsAnswered413(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	r := send(t, http.MethodPost, srv.URL, testToken, s.session, numbersIn("ping", "meta", "5e-324", MaxEnvelopeValues-7))
	var e struct{ Error struct{ Name string } }
	json.Unmarshal([]byte(r.body), &e)
	if r.status != http.StatusRequestEntityTooLarge || e.Error.Name != ErrTooManyValues {
		t.Fatalf("a ping of 4,089 subnormals in _meta: %d %q, want 413 %s", r.status, r.body, ErrTooManyValues)
	}
	if r := send(t, http.MethodPost, srv.URL, testToken, s.session, numbersIn("ping", "meta", "5e-324", 15)); r.status != http.StatusOK {
		t.Fatalf("a ping of 15 subnormals in _meta: %d %q", r.status, r.body)
	}
}
