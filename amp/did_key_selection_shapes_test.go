package amp

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// scanEligible is DIDDocument.eligible as amp/did.go had it before
// docs/SPEC-DECISIONS.md AMP-34: every reference looked up in the method
// list one method at a time. It is the oracle the index is held to.
func scanEligible(d *DIDDocument, rel []string, t KeyType, now time.Time) []VerificationMethod {
	method := func(id string) (VerificationMethod, bool) {
		for _, m := range d.Methods {
			if m.ID == id {
				return m, true
			}
		}
		return VerificationMethod{}, false
	}
	var out []VerificationMethod
	seen := map[string]bool{}
	for _, id := range rel {
		if seen[id] || BareDID(id) != d.ID {
			continue
		}
		seen[id] = true
		if m, ok := method(id); ok && m.KeyType == t && m.Active(now) && d.controls(m) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// scanSigningKey is DIDDocument.signingKey as it was before AMP-34, over
// scanEligible.
func scanSigningKey(d *DIDDocument, didURL string, now time.Time) (VerificationMethod, error) {
	if !ValidDID(didURL) {
		return VerificationMethod{}, errNoKey("the key id is not a DID or a DID URL with only a fragment")
	}
	if BareDID(didURL) != d.ID {
		return VerificationMethod{}, errNoKey("did document does not belong to the sender")
	}
	if i := strings.IndexByte(didURL, '#'); i >= 0 {
		for _, rel := range [][]string{d.AssertionMethod, d.Authentication} {
			for _, m := range scanEligible(d, rel, KeyEd25519, now) {
				if m.ID == didURL {
					return m, nil
				}
			}
		}
		return VerificationMethod{}, errNoKey("the sender's key fragment names no active signing key")
	}
	if ms := scanEligible(d, d.AssertionMethod, KeyEd25519, now); len(ms) > 0 {
		return ms[0], nil
	}
	if ms := scanEligible(d, d.Authentication, KeyEd25519, now); len(ms) > 0 {
		return ms[0], nil
	}
	return VerificationMethod{}, errNoKey("the sender's did document has no active signing key")
}

// selection writes what key selection makes of d at now, for each id
// asked: the method signingKey selects (its id, type and key) or its
// error, then the ids AgreementKeys and the three eligible lists give.
func selection(d *DIDDocument, ids []string, now time.Time, signing func(string) (VerificationMethod, error),
	eligible func([]string, KeyType) []VerificationMethod) string {
	var b strings.Builder
	for _, id := range ids {
		m, err := signing(id)
		fmt.Fprintf(&b, "signing %q: %q %s %x %v\n", id, m.ID, m.KeyType, m.PublicKey, err)
	}
	for _, l := range []struct {
		name string
		rel  []string
		t    KeyType
	}{
		{"assertionMethod", d.AssertionMethod, KeyEd25519},
		{"authentication", d.Authentication, KeyEd25519},
		{"keyAgreement", d.KeyAgreement, KeyX25519},
		{"keyAgreement as Ed25519", d.KeyAgreement, KeyEd25519},
	} {
		fmt.Fprintf(&b, "%s:", l.name)
		for _, m := range eligible(l.rel, l.t) {
			fmt.Fprintf(&b, " %q %x", m.ID, m.PublicKey)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkSelectionUnchanged fails t when d's key selection differs from
// the oracle's for any of the ids asked, or for the ids d lists.
func checkSelectionUnchanged(t *testing.T, name string, d *DIDDocument, now time.Time, ask ...string) {
	t.Helper()
	ids := append([]string{d.ID, d.ID + "#absent", "did:web:other.example"}, ask...)
	for _, m := range d.Methods {
		ids = append(ids, m.ID)
	}
	for _, rel := range [][]string{d.AssertionMethod, d.Authentication, d.KeyAgreement} {
		ids = append(ids, rel...)
	}
	got := selection(d, ids, now, func(id string) (VerificationMethod, error) { return d.signingKey(id, now) },
		func(rel []string, kt KeyType) []VerificationMethod { return d.eligible(rel, kt, now) })
	want := selection(d, ids, now, func(id string) (VerificationMethod, error) { return scanSigningKey(d, id, now) },
		func(rel []string, kt KeyType) []VerificationMethod { return scanEligible(d, rel, kt, now) })
	if got != want {
		t.Errorf("%s: the index selects\n%s\nthe scan selected\n%s", name, got, want)
	}
}

// TestKeySelectionOfEveryDocumentShapeIsWhatTheScanSelected holds the
// index of key selection (docs/SPEC-DECISIONS.md AMP-34) to the scan it
// replaced, the rules of RFC 001 §8.9 as amp/did.go applied them: the
// smallest method id, a fragment naming its method exactly, the
// fallback from assertionMethod to authentication, active methods of
// the document's own DID only, 3001 no_eligible_key when none.
//
// Threat: a faster selection that selects another key (a revoked one,
// another DID's, a method shadowed by an earlier one of the same id)
// lets a message be verified under a key the document does not
// authorize, or refuses the one it does.
//
// Should: on every shape below, parsed or built in Go, and on 3,000
// documents drawn at random from a small set of ids (so that
// duplicates, absent references and ids of other DIDs abound), the
// selected key, every error and every eligible list, in order, are the
// scan's. The oracle being the code before, the test passes before and
// after by design; it guards the change.
func TestKeySelectionOfEveryDocumentShapeIsWhatTheScanSelected(t *testing.T) {
	const did = "did:web:a.example"
	now := time.Unix(1_700_000_000, 0)
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	key := func(i byte) []byte {
		return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{i}, 32)).Public().(ed25519.PublicKey)
	}
	xkey := func(i byte) []byte {
		k, err := NewAgreementKey([32]byte{i})
		if err != nil {
			t.Fatal(err)
		}
		return k.Public[:]
	}
	ed := func(id string, i byte) VerificationMethod {
		return VerificationMethod{ID: id, Type: "Multikey", Controller: did, KeyType: KeyEd25519, PublicKey: key(i)}
	}
	x := func(id string, i byte) VerificationMethod {
		return VerificationMethod{ID: id, Type: "Multikey", Controller: did, KeyType: KeyX25519, PublicKey: xkey(i)}
	}
	with := func(m VerificationMethod, f func(*VerificationMethod)) VerificationMethod { f(&m); return m }
	revoked := func(m *VerificationMethod) { m.Revoked = &past }
	expired := func(m *VerificationMethod) { m.Expires = &past }
	for _, c := range []struct {
		name string
		doc  DIDDocument
	}{
		{"no methods", DIDDocument{ID: did, AssertionMethod: []string{did + "#a"}}},
		{"no references", DIDDocument{ID: did, Methods: []VerificationMethod{ed(did+"#a", 1)}}},
		{"references to absent ids", DIDDocument{ID: did, Methods: []VerificationMethod{ed(did+"#b", 1), x(did+"#x", 2)},
			AssertionMethod: []string{did + "#a", did + "#c", did + "#b"}, KeyAgreement: []string{did + "#y", did + "#x"}}},
		{"smallest id first, not the first listed", DIDDocument{ID: did, Methods: []VerificationMethod{ed(did+"#k2", 1), ed(did+"#k10", 2), ed(did+"#K", 3), ed(did+"#k", 4)},
			AssertionMethod: []string{did + "#k2", did + "#k10", did + "#K", did + "#k"}}},
		{"a reference given twice", DIDDocument{ID: did, Methods: []VerificationMethod{ed(did+"#a", 1), ed(did+"#b", 2)},
			AssertionMethod: []string{did + "#b", did + "#b", did + "#a", did + "#b"}, Authentication: []string{did + "#a", did + "#a"}}},
		{"two methods of one id, the first inactive", DIDDocument{ID: did, Methods: []VerificationMethod{with(ed(did+"#a", 1), revoked), ed(did+"#a", 2), ed(did+"#b", 3)},
			AssertionMethod: []string{did + "#a", did + "#b"}}},
		{"two methods of one id, the first active", DIDDocument{ID: did, Methods: []VerificationMethod{ed(did+"#a", 1), ed(did+"#a", 2), x(did+"#a", 3)},
			AssertionMethod: []string{did + "#a"}, KeyAgreement: []string{did + "#a"}}},
		{"two methods of one id, the first X25519", DIDDocument{ID: did, Methods: []VerificationMethod{x(did+"#a", 1), ed(did+"#a", 2)},
			AssertionMethod: []string{did + "#a"}, KeyAgreement: []string{did + "#a"}}},
		{"fallback to authentication", DIDDocument{ID: did, Methods: []VerificationMethod{ed(did+"#z", 1), ed(did+"#a", 2)},
			AssertionMethod: []string{did + "#gone"}, Authentication: []string{did + "#z", did + "#a"}}},
		{"assertionMethod of inactive methods only", DIDDocument{ID: did, Methods: []VerificationMethod{with(ed(did+"#a", 1), revoked), with(ed(did+"#b", 2), expired), ed(did+"#c", 3)},
			AssertionMethod: []string{did + "#a", did + "#b"}, Authentication: []string{did + "#c"}}},
		{"revoked and expires in the future", DIDDocument{ID: did, Methods: []VerificationMethod{
			with(ed(did+"#a", 1), func(m *VerificationMethod) { m.Revoked = &future }),
			with(ed(did+"#b", 2), func(m *VerificationMethod) { m.Expires = &future }),
			with(ed(did+"#c", 3), func(m *VerificationMethod) { m.Expires = &now })},
			AssertionMethod: []string{did + "#c", did + "#b", did + "#a"}}},
		{"key types crossed", DIDDocument{ID: did, Methods: []VerificationMethod{x(did+"#a", 1), ed(did+"#b", 2)},
			AssertionMethod: []string{did + "#a"}, Authentication: []string{did + "#a"}, KeyAgreement: []string{did + "#b"}}},
		{"another controller, an empty one", DIDDocument{ID: did, Methods: []VerificationMethod{
			with(ed(did+"#a", 1), func(m *VerificationMethod) { m.Controller = "did:web:b.example" }),
			with(ed(did+"#b", 2), func(m *VerificationMethod) { m.Controller = "" }),
			with(x(did+"#x", 3), func(m *VerificationMethod) { m.Controller = did + "#x" })},
			AssertionMethod: []string{did + "#a", did + "#b"}, KeyAgreement: []string{did + "#x"}}},
		{"ids of other DIDs that share a prefix", DIDDocument{ID: did, Methods: []VerificationMethod{
			ed("did:web:a.example.evil#k", 1), ed("did:web:a.exampl#k", 2), ed("did:web:b.example#k", 3), ed(did+"#k", 4)},
			AssertionMethod: []string{"did:web:a.example.evil#k", "did:web:a.exampl#k", "did:web:b.example#k"},
			Authentication:  []string{did + "#k"}}},
		{"a method of the bare DID, and of a path or a query", DIDDocument{ID: did, Methods: []VerificationMethod{
			ed(did, 1), ed(did+"/p#k", 2), ed(did+"?q#k", 3), ed(did+"#k", 4)},
			AssertionMethod: []string{did, did + "/p#k", did + "?q#k"}, Authentication: []string{did + "#k"}}},
		{"a document id with a delimiter", DIDDocument{ID: did + "#k", Methods: []VerificationMethod{ed(did+"#k", 1), ed(did+"#k#k", 2)},
			AssertionMethod: []string{did + "#k", did + "#k#k"}}},
		{"a document id with a path", DIDDocument{ID: did + "/p", Methods: []VerificationMethod{ed(did+"/p#k", 1)},
			AssertionMethod: []string{did + "/p#k"}}},
		{"an empty document id", DIDDocument{Methods: []VerificationMethod{ed("", 1), ed("#k", 2), ed(did+"#k", 3)},
			AssertionMethod: []string{"", "#k", did + "#k"}}},
	} {
		checkSelectionUnchanged(t, c.name, &c.doc, now, did+"#k", did+"#a", did+"/p#k", did+"?q#k", did+"#k#k")
	}
	// Parsed documents: methods embedded in relationships, relative and
	// absolute references, a method listed and embedded elsewhere.
	mk := func(id string, i byte) string {
		return `{"id":"` + id + `","type":"Multikey","controller":"` + did + `","publicKeyMultibase":"` + EncodeMultikey(KeyEd25519, key(i)) + `"}`
	}
	mx := func(id string, i byte) string {
		return `{"id":"` + id + `","type":"Multikey","controller":"` + did + `","publicKeyMultibase":"` + EncodeMultikey(KeyX25519, xkey(i)) + `"}`
	}
	for _, c := range []struct{ name, lists string }{
		{"embedded in assertionMethod", `"assertionMethod":[` + mk("#b", 1) + `,"#a",` + mk("#a", 2) + `]`},
		{"embedded in authentication only", `"assertionMethod":["#b"],"authentication":[` + mk("#b", 1) + `,` + mk("#a", 2) + `]`},
		{"listed, then referenced absolutely and relatively", `"verificationMethod":[` + mk("#b", 1) + `,` + mk(did+"#a", 2) + `],"assertionMethod":["` + did + `#b","#a","#a","#c"]`},
		{"embedded X25519", `"keyAgreement":[` + mx("#x2", 1) + `,` + mx("#x1", 2) + `,"#x3"],"authentication":["#x1",` + mk("#k", 3) + `]`},
		{"a foreign controller embedded", `"assertionMethod":[{"id":"#f","type":"Multikey","controller":"did:web:b.example","publicKeyMultibase":"` +
			EncodeMultikey(KeyEd25519, key(4)) + `"}],"authentication":[` + mk("#k", 5) + `]`},
		{"references to another DID", `"verificationMethod":[` + mk("#k", 1) + `],"assertionMethod":["did:web:b.example#k","did:web:a.example.b#k"],"authentication":["#k"]`},
	} {
		d, err := ParseDIDDocument([]byte(`{"id":"` + did + `",` + c.lists + `}`))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkSelectionUnchanged(t, c.name, d, now, did+"#k", did+"#a", did+"#x1")
	}
	// Documents drawn at random from few ids, built in Go (duplicates
	// and ids of other DIDs included).
	rng := rand.New(rand.NewPCG(34, 34))
	pool := []string{did + "#a", did + "#b", did + "#c", did + "#a1", did, did + "/p#a", did + "?q#a", "did:web:a.example.b#a", "did:web:b.example#a", "#a", ""}
	for n := range 3000 {
		d := DIDDocument{ID: did}
		for range rng.IntN(7) {
			m := ed(pool[rng.IntN(len(pool))], byte(rng.IntN(4)+1))
			if rng.IntN(3) == 0 {
				m = x(m.ID, byte(rng.IntN(4)+1))
			}
			switch rng.IntN(6) {
			case 0:
				m.Revoked = &past
			case 1:
				m.Expires = &[]time.Time{past, now, future}[rng.IntN(3)]
			case 2:
				m.Controller = []string{"", "did:web:b.example", did + "#a"}[rng.IntN(3)]
			}
			d.Methods = append(d.Methods, m)
		}
		for _, rel := range []*[]string{&d.AssertionMethod, &d.Authentication, &d.KeyAgreement} {
			for range rng.IntN(6) {
				*rel = append(*rel, pool[rng.IntN(len(pool))])
			}
		}
		checkSelectionUnchanged(t, fmt.Sprintf("random document %d", n), &d, now, slices.Clone(pool)...)
	}
}
