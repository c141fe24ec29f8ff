package capability

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

const policyBase = `{"id":"org.example.t:2.1.0","name":"org.example.t","version":"2.1.0",
"input_schema":{"bundle_id":"org.example","artifact_key":"i.json","hash_alg":"sha-256","hash":"` + zeros64 + `"},
"output_schema":{"bundle_id":"org.example","artifact_key":"o.json","hash_alg":"sha-256","hash":"` + zeros64 + `"}`

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// TestForgedOrMalformedPolicyAndClaimsRefused: policy and compat_claims are
// signed claims an agent acts on; anything but their one valid form is
// refused when decoded, and the valid form round-trips.
func TestForgedOrMalformedPolicyAndClaimsRefused(t *testing.T) {
	cases := []struct {
		name, extra string
		want        amp.ErrName // "" = valid
	}{
		{"absent", ``, ""},
		{"bridge policy with its bridge", `,"policy":"bridge","bridge":{"bundle_id":"org.example.b","artifact_key":"b.json","hash_alg":"sha-256","hash":"abababababababababababababababababababababababababababababababab"}`, ""},
		{"bridge policy without a bridge", `,"policy":"bridge"`, ErrInvalidField},
		{"bridge without the policy", `,"policy":"range","bridge":{"bundle_id":"org.example.b","artifact_key":"b.json","hash_alg":"sha-256","hash":"abababababababababababababababababababababababababababababababab"}`, ErrInvalidField},
		{"bridge without a hash", `,"policy":"bridge","bridge":{"bundle_id":"org.example.b","artifact_key":"b.json","hash_alg":"sha-256"}`, ErrMissingField},
		{"range with claims", `,"policy":"range","compat_claims":[{"version":"2.0.0","input":"compatible","output":"compatible"},{"version":"2.0.5","input":"unknown","output":"incompatible"}]`, ""},
		{"unknown policy", `,"policy":"lenient"`, ErrInvalidField},
		{"empty policy", `,"policy":""`, ErrInvalidField},
		{"policy not text", `,"policy":1`, ErrWrongType},
		{"claim for own version", `,"compat_claims":[{"version":"2.1.0","input":"compatible","output":"compatible"}]`, ErrInvalidField},
		{"claims unsorted", `,"compat_claims":[{"version":"2.0.5","input":"compatible","output":"compatible"},{"version":"2.0.0","input":"compatible","output":"compatible"}]`, ErrInvalidField},
		{"claim twice", `,"compat_claims":[{"version":"2.0.0","input":"compatible","output":"compatible"},{"version":"2.0.0","input":"compatible","output":"compatible"}]`, ErrInvalidField},
		{"verdict invented", `,"compat_claims":[{"version":"2.0.0","input":"mostly","output":"compatible"}]`, ErrInvalidField},
		{"verdict missing", `,"compat_claims":[{"version":"2.0.0","input":"compatible"}]`, ErrMissingField},
		{"claim extra field", `,"compat_claims":[{"version":"2.0.0","input":"compatible","output":"compatible","proof":"trust me"}]`, ErrInvalidField},
		{"claim bad version", `,"compat_claims":[{"version":"2.0","input":"compatible","output":"compatible"}]`, ErrInvalidVersion},
		{"claims not an array", `,"compat_claims":{}`, ErrWrongType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := DecodeDescriptorJSON([]byte(policyBase + c.extra + "}"))
			if c.want != "" {
				var e *amp.Error
				if !errors.As(err, &e) || e.Name != c.want {
					t.Fatalf("err %v, want %s", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			enc, err := d.Encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeDescriptor(enc)
			if err != nil {
				t.Fatal(err)
			}
			if back.Policy != d.Policy || len(back.CompatClaims) != len(d.CompatClaims) {
				t.Fatalf("round trip lost policy or claims: %+v", back)
			}
			if strings.Contains(c.extra, "range") && (!d.CompatClaims[0].Compatible() || d.CompatClaims[1].Compatible()) {
				t.Fatalf("claims read wrong: %+v", d.CompatClaims)
			}
		})
	}
}
