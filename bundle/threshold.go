package bundle

import (
	"sort"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// SignerView describes one verified signer in an error's details: who it
// is, what it is trusted for, and whether it counted toward the threshold.
type SignerView struct {
	Name       string   `json:"name"`
	Key        string   `json:"key"` // did:key
	TrustedFor []string `json:"trusted_for"`
	Counted    bool     `json:"counted"`
}

// ThresholdDetails are the details of an untrusted_namespace or
// threshold_not_met error (the --json error document carries them).
type ThresholdDetails struct {
	Subject   string       `json:"subject"` // bundle id, or artifact key of a DID document
	Name      string       `json:"name"`    // the name that needs the signatures
	Scope     string       `json:"scope,omitempty"`
	Threshold int          `json:"threshold"`
	Valid     int          `json:"valid_signatures"`
	Signers   []SignerView `json:"signers"`
}

// admit applies the scope and threshold rules of FORMAT.md §5 step 4 to the
// distinct verified trusted keys of a manifest: a key counts when it is
// trusted for the bundle id and every capability namespace; the number of
// keys that count must reach the largest threshold of those names.
func admit(p *Policy, m *Manifest, verified []*TrustedKey) ([]*TrustedKey, error) {
	var in []*TrustedKey
	for _, k := range verified {
		if k.coversManifest(m) {
			in = append(in, k)
		}
	}
	need, name, scope := p.requiredFor(m)
	if len(in) >= need && len(in) > 0 {
		return in, nil
	}
	d := ThresholdDetails{Subject: m.BundleID, Name: name, Scope: scope, Threshold: need, Valid: len(in), Signers: views(verified, in)}
	if len(in) == 0 {
		return nil, fail(ErrUntrustedNamespace, "no signer is trusted for bundle %s and every capability namespace it carries (%s)", m.BundleID, describe(d.Signers)).WithDetails(d)
	}
	return nil, fail(ErrThreshold, "bundle %s needs %d valid signatures by distinct keys trusted for %s (threshold of scope %s); found %d (%s)",
		m.BundleID, need, name, scopeLabel(scope), len(in), describe(d.Signers)).WithDetails(d)
}

// admitDID checks a DID document artifact: enough of the manifest's
// admitted signers are trusted for its DID (FORMAT.md §5 step 7).
func admitDID(p *Policy, signers []*TrustedKey, key, did string) error {
	var in []*TrustedKey
	for _, k := range signers {
		if k.coversDID(did) {
			in = append(in, k)
		}
	}
	need, scope := 1, ""
	if name, ok := DIDScopeName(did); ok {
		need, scope = p.Required(name)
	} else {
		// A DID without a domain is published only by "*" keys, under the
		// threshold of "*".
		if n, ok := p.Thresholds["*"]; ok && n > need {
			need, scope = n, "*"
		}
	}
	if len(in) >= need && len(in) > 0 {
		return nil
	}
	d := ThresholdDetails{Subject: key, Name: amp.BareDID(did), Scope: scope, Threshold: need, Valid: len(in), Signers: views(signers, in)}
	if len(in) == 0 {
		return fail(ErrUntrustedNamespace, "no signer is trusted for the did of artifact %s (%s)", key, describe(d.Signers)).WithDetails(d)
	}
	return fail(ErrThreshold, "the did document %s needs %d valid signatures by distinct keys trusted for its domain (threshold of scope %s); found %d (%s)",
		key, need, scopeLabel(scope), len(in), describe(d.Signers)).WithDetails(d)
}

func views(all, counted []*TrustedKey) []SignerView {
	out := []SignerView{}
	for _, k := range all {
		v := SignerView{Name: k.Name, Key: amp.DIDKey(k.Key), TrustedFor: append([]string(nil), k.Scopes...)}
		for _, c := range counted {
			if c == k {
				v.Counted = true
			}
		}
		sort.Strings(v.TrustedFor)
		out = append(out, v)
	}
	return out
}

// describe names the verified signers and what each is trusted for.
func describe(vs []SignerView) string {
	if len(vs) == 0 {
		return "no verified trusted signer"
	}
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		st := "counted"
		if !v.Counted {
			st = "not counted"
		}
		parts = append(parts, v.Name+" trusted for "+strings.Join(v.TrustedFor, ", ")+": "+st)
	}
	return "valid signers: " + strings.Join(parts, "; ")
}

func scopeLabel(s string) string {
	if s == "" {
		return "(default 1)"
	}
	return s
}

// VerifyDIDFor checks that signers — keys that counted for a bundle's
// manifest (VerifyFor) — vouch for a DID document it carries as import
// requires (FORMAT.md §5 step 7): as many of them trusted for the DID's
// domain as the threshold of that name (of "*" for a DID without a domain).
// key names the artifact in errors.
func VerifyDIDFor(p *Policy, signers []TrustedKey, key, did string) error {
	ptrs := make([]*TrustedKey, len(signers))
	for i := range signers {
		ptrs[i] = &signers[i]
	}
	return admitDID(p, ptrs, key, did)
}
