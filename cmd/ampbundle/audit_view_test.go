package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// didOf is the did:key of the public key file pub.
func didOf(t *testing.T, pub string) string {
	t.Helper()
	k, err := keyfile.ParsePublic(pub)
	if err != nil {
		t.Fatal(err)
	}
	return amp.DIDKey(k)
}

// TestAuditWhoseRevocationAndRotationFieldsWereDroppedShowsThem: a store
// applies two trust statements (a rotation chain) and a revocation;
// audit and receipt verify, in JSON and in text, show what each rotated
// (its sequence, the keys added and retired, the threshold) and what the
// revocation revoked (keys, bundle versions), under docs/FORMAT.md
// §20.1's names, absent from the entries that have none
// (docs/SPEC-DECISIONS.md CLI-87, CLI-88).
func TestAuditWhoseRevocationAndRotationFieldsWereDroppedShowsThem(t *testing.T) {
	keys, pubs := officers(t, 3)
	dids := []string{didOf(t, pubs[0]), didOf(t, pubs[1]), didOf(t, pubs[2])}
	dir := t.TempDir()
	s1, s2, rev := filepath.Join(dir, "s1.cbor"), filepath.Join(dir, "s2.cbor"), filepath.Join(dir, "rev.cbor")
	mustRun(t, "rotate", "-o", s1, "--scope", "org.example", "--add", "b="+pubs[1], "--key", keys[0], "--created", "2026-11-20T00:00:00Z")
	mustRun(t, "rotate", "-o", s2, "--scope", "org.example", "--after", s1, "--add", "c="+pubs[2], "--retire", pubs[0],
		"--threshold", "2", "--key", keys[1], "--created", "2026-11-21T00:00:00Z")
	mustRun(t, "revoke", "-o", rev, "--scope", "org.example", "--revoke-key", pubs[0], "--revoke-bundle", translateID+"@1",
		"--key", keys[1], "--created", "2026-11-22T00:00:00Z")
	mustRun(t, "sign", rev, "--key", keys[2])
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "a", "--scope", "org.example")
	for _, f := range []string{s1, s2, rev} {
		mustRun(t, "import", f, "--db", db)
	}
	site, sitePub := officers(t, 1)
	receipt := filepath.Join(t.TempDir(), "r.receipt")
	mustRun(t, "receipt", "--db", db, "--key", site[0], "-o", receipt)

	// want: the keys each entry must carry, by action; every other key
	// of the five must be absent.
	want := map[string]map[string]any{
		"trust_add": {},
		"rotate#1":  {"sequence": float64(1), "added_keys": []any{dids[1]}, "threshold": float64(1)},
		"rotate#2":  {"sequence": float64(2), "added_keys": []any{dids[2]}, "retired_keys": []any{dids[0]}, "threshold": float64(2)},
		"revoke":    {"revoked_keys": []any{dids[0]}, "revoked_bundles": []any{translateID + "@1"}, "scopes": []any{"org.example"}},
	}
	wantText := []string{
		"trust_add",
		"rotate            scope org.example sequence 1 added " + dids[1] + " threshold 1 signed by a file sha256 ",
		"rotate            scope org.example sequence 2 added " + dids[2] + " retired " + dids[0] + " threshold 2 signed by b file sha256 ",
		// The signers as the entry holds them (in the order of their
		// keys, which the test draws afresh each run): either order.
		"revoke            scope org.example revoked keys " + dids[0] + " revoked bundles " + translateID + "@1 signed by {b, c|c, b} file sha256 ",
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"audit", []string{"audit", "--db", db}},
		{"receipt verify", []string{"receipt", "verify", receipt, "--site", sitePub[0]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var doc struct {
				Entries []map[string]any `json:"entries"`
			}
			mustJSON(t, &doc, c.args...)
			if len(doc.Entries) != len(want) {
				t.Fatalf("%d entries, want %d: %v", len(doc.Entries), len(want), doc.Entries)
			}
			for _, e := range doc.Entries {
				name, _ := e["action"].(string)
				if seq, ok := e["sequence"].(float64); ok {
					name = fmt.Sprintf("%s#%d", name, int(seq))
				}
				w, ok := want[name]
				if !ok {
					t.Fatalf("unexpected entry %v", e)
				}
				for _, k := range []string{"revoked_keys", "revoked_bundles", "sequence", "added_keys", "retired_keys"} {
					if _, has := w[k]; !has && e[k] != nil {
						t.Errorf("%s: %s present (%v), want absent", name, k, e[k])
					}
				}
				for k, v := range w {
					if !reflect.DeepEqual(e[k], v) {
						t.Errorf("%s: %s = %v, want %v", name, k, e[k], v)
					}
				}
			}
			out := mustRun(t, c.args...).stdout
			lines := strings.Split(out, "\n")
			for i, w := range wantText {
				if i >= len(lines) || !containsEither(lines[i], w) {
					t.Errorf("text line %d lacks %q:\n%s", i+1, w, out)
				}
			}
		})
	}
}

// TestAuditTextWhoseEntryListsManyKeysIsBounded: an entry may list up to
// 1,000 revoked keys and as many bundles (docs/FORMAT.md §21), and one
// of a store or receipt from elsewhere any number of signers or scopes:
// the text line shows MaxAuditListed of each list and counts the rest,
// so one entry is one short line (docs/SPEC-DECISIONS.md CLI-89).
func TestAuditTextWhoseEntryListsManyKeysIsBounded(t *testing.T) {
	many := func(n int, f string) []string {
		ss := make([]string, n)
		for i := range ss {
			ss[i] = fmt.Sprintf(f, i)
		}
		return ss
	}
	did := "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta%04d"
	for _, c := range []struct {
		name  string
		entry resolver.AuditEntry
		more  []string
	}{
		{"revoked keys and bundles", resolver.AuditEntry{Action: "revoke", Scopes: []string{"org.example"},
			RevokedKeys: many(1000, did), RevokedBundles: many(1000, "org.example.b%d@1")},
			[]string{"revoked keys ", ", … and 992 more revoked bundles ", ", … and 992 more"}},
		{"added and retired keys", resolver.AuditEntry{Action: "rotate", Scopes: []string{"org.example"}, Sequence: 3,
			AddedKeys: many(9, did), RetiredKeys: many(100, did)}, []string{"added ", ", … and 1 more retired ", ", … and 92 more"}},
		{"signers", resolver.AuditEntry{Action: "import", BundleID: "org.example.a", Version: 1, Signers: many(100, "s%d")},
			[]string{"signed by s0, s1, s2, s3, s4, s5, s6, s7, … and 92 more"}},
		{"scopes", resolver.AuditEntry{Action: "trust_threshold", Scopes: many(50, "org.s%d"), Threshold: 2},
			[]string{"org.s7, … and 42 more threshold 2"}},
		{"fail closed", resolver.AuditEntry{Action: "fail_closed", TrustName: "a", RevokedBundles: many(20, "org.example.b%d@1")},
			[]string{"fail_closed       a revoked bundles org.example.b0@1, ", "org.example.b7@1, … and 12 more"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printAudit(&b, c.entry)
			line := b.String()
			if strings.Count(line, "\n") != 1 || len(line) > 2048 {
				t.Fatalf("one entry printed as %d lines, %d bytes", strings.Count(line, "\n"), len(line))
			}
			at := 0
			for _, m := range c.more {
				i := strings.Index(line[at:], m)
				if i < 0 {
					t.Fatalf("line lacks %q after byte %d:\n%s", m, at, line)
				}
				at += i + len(m)
			}
		})
	}
}

// TestReceiptVerifyWhoseEntryHoldsControlBytesPrintsThemSanitized: a
// receipt signed by the expected site key may still carry any text in
// its entries' lists (it comes from a store the auditor does not hold):
// receipt verify shows a revoked key, a revoked bundle and a scope
// holding an escape sequence, a bell and a bidi override escaped in
// text, never raw, and carries them exactly in JSON
// (docs/SPEC-DECISIONS.md CLI-88).
func TestReceiptVerifyWhoseEntryHoldsControlBytesPrintsThemSanitized(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostile := resolver.AuditEntry{Seq: 1, At: "2026-11-22T00:00:00Z", Action: "revoke", Verdict: "accepted",
		Scopes: []string{"org.example\a"}, RevokedKeys: []string{"did:key:z6Mk\x1b[2Jx"}, RevokedBundles: []string{"org.ex\u202eelpmaxe@1"},
		AddedKeys: []string{"\x1b]0;title\a"}, Prev: make([]byte, 32)}
	data, err := resolver.BuildReceipt([]resolver.AuditEntry{hostile}, 1, 1, priv, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "hostile.receipt")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	site := amp.DIDKey(pub)
	out := mustRun(t, "receipt", "verify", f, "--site", site).stdout
	for _, raw := range []string{"\x1b", "\a", "\u202e"} {
		if strings.Contains(out, raw) {
			t.Errorf("text output holds the raw %q:\n%s", raw, out)
		}
	}
	for _, shown := range []string{`scope org.example\x07`, `revoked keys did:key:z6Mk\x1b[2Jx`, `revoked bundles org.ex\u202eelpmaxe@1`, `added \x1b]0;title\x07`} {
		if !strings.Contains(out, shown) {
			t.Errorf("text output lacks %q:\n%s", shown, out)
		}
	}
	r := mustRun(t, "receipt", "verify", f, "--site", site, "--json")
	if strings.Contains(r.stdout, "\u202e") {
		t.Errorf("JSON output holds the raw bidi override:\n%s", r.stdout)
	}
	var doc struct {
		Entries []struct {
			RevokedKeys    []string `json:"revoked_keys"`
			RevokedBundles []string `json:"revoked_bundles"`
			AddedKeys      []string `json:"added_keys"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Entries) != 1 || !reflect.DeepEqual(doc.Entries[0].RevokedKeys, hostile.RevokedKeys) ||
		!reflect.DeepEqual(doc.Entries[0].RevokedBundles, hostile.RevokedBundles) || !reflect.DeepEqual(doc.Entries[0].AddedKeys, hostile.AddedKeys) {
		t.Fatalf("JSON entries %+v, want the lists of %+v", doc.Entries, hostile)
	}
}

// TestAuditTextWhosePolicyOrFailClosedEntryShowedNothingShowsIt: a
// freshness policy entry has no file, yet its line read "file sha256 "
// with nothing after it, and a fail_closed entry "NAME  scopes " with an
// empty key and no bundle: each now shows what it holds
// (docs/FORMAT.md §23 for trust_freshness; docs/SPEC-DECISIONS.md
// CLI-88).
func TestAuditTextWhosePolicyOrFailClosedEntryShowedNothingShowsIt(t *testing.T) {
	for _, c := range []struct {
		name  string
		entry resolver.AuditEntry
		want  string
	}{
		{"freshness both bounds", resolver.AuditEntry{Action: "trust_freshness", Scopes: []string{"org.example"}, Threshold: 3, Version: 86400},
			"trust_freshness   org.example max versions 3 max age 86400s\n"},
		{"freshness no bound", resolver.AuditEntry{Action: "trust_freshness", Scopes: []string{"*"}, Threshold: math.MaxUint64},
			"trust_freshness   * max versions none max age none\n"},
		{"fail closed", resolver.AuditEntry{Action: "fail_closed", TrustName: "acme", RevokedBundles: []string{"com.acme.geo@4"}},
			"fail_closed       acme revoked bundles com.acme.geo@4\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printAudit(&b, c.entry)
			if !strings.HasSuffix(b.String(), c.want) || strings.Contains(b.String(), "file sha256") {
				t.Fatalf("line %q, want it to end %q", b.String(), c.want)
			}
		})
	}
}

// containsEither reports whether line holds w, where one "{x|y}" in w
// stands for either x or y.
func containsEither(line, w string) bool {
	before, rest, ok := strings.Cut(w, "{")
	if !ok {
		return strings.Contains(line, w)
	}
	alts, after, _ := strings.Cut(rest, "}")
	for _, a := range strings.Split(alts, "|") {
		if strings.Contains(line, before+a+after) {
			return true
		}
	}
	return false
}
