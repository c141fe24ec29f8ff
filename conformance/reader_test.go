package conformance

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// loadKey reads an unencrypted PKCS#8 PEM Ed25519 key written by keygen.
func loadKey(t *testing.T, path string) ed25519.PrivateKey {
	t.Helper()
	blk, _ := pem.Decode(readFile(t, path))
	if blk == nil {
		t.Fatalf("%s is not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

// signer is one COSE_Signature as this package writes it (FORMAT.md §2).
type signer struct {
	prot []byte
	sig  []byte
}

func mustDet(t *testing.T, v any) []byte {
	t.Helper()
	b, err := detEnc.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signFor signs payload under the body protected header bodyProt with key,
// as FORMAT.md §2 says, with signature protected header sigProt (nil: the
// one allowed form {1: -8, 4: kid}).
func signFor(t *testing.T, key ed25519.PrivateKey, bodyProt, payload []byte, alg int) signer {
	t.Helper()
	kid := pubToDidKey(key.Public().(ed25519.PublicKey))
	sp := mustDet(t, map[int]any{1: alg, 4: []byte(kid)})
	tbs := mustDet(t, []any{"Signature", bodyProt, sp, []byte{}, payload})
	return signer{sp, ed25519.Sign(key, tbs)}
}

// coseBytes writes a COSE_Sign; payloadHead, when not nil, replaces the
// shortest head of the payload byte string.
func coseBytes(t *testing.T, bodyProt []byte, unprot map[int]any, payload []byte, sigs []signer, payloadHead []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	b.Write([]byte{0xd8, 0x62, 0x84})
	b.Write(mustDet(t, bodyProt))
	if unprot == nil {
		unprot = map[int]any{}
	}
	b.Write(mustDet(t, unprot))
	if payloadHead != nil {
		b.Write(payloadHead)
		b.Write(payload)
	} else {
		b.Write(mustDet(t, payload))
	}
	arr := make([]any, len(sigs))
	for i, s := range sigs {
		arr[i] = []any{s.prot, map[int]any{}, s.sig}
	}
	b.Write(mustDet(t, arr))
	return b.Bytes()
}

// TestReferenceReaderAgreesWithIndependentWriter writes bundles with this
// package's own COSE code (valid ones the document allows, and ones it says a
// reader refuses) and requires `ampbundle verify` to decide each exactly as
// docs/FORMAT.md §2 and §5 say, with the error name they give.
func TestReferenceReaderAgreesWithIndependentWriter(t *testing.T) {
	bin := buildCLI(t)
	run := runner(t, bin)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, k := range []string{"a", "b", "c"} {
		run("keygen", "-o", p(k+".pem"), "--pub", p(k+".pub"))
	}
	a, b, c := loadKey(t, p("a.pem")), loadKey(t, p("b.pem")), loadKey(t, p("c.pem"))
	src := filepath.Join("..", "testdata", "bundles", "translate")
	run("build", src, "-o", p("ab.ampb"), "--key", p("a.pem"), "--key", p("b.pem"), "--created", "2026-11-01T00:00:00Z")
	ab := readFile(t, p("ab.ampb"))
	vb, err := verifyBundle(ab)
	if err != nil {
		t.Fatal(err)
	}
	artifacts := ab[len(vb.item0):]
	bodyProt := mustDet(t, map[int]string{3: "application/ampbundle-manifest+cbor"})
	payload := vb.cose.payload
	sorted := func(s ...signer) []signer {
		// by kid: the kid is the last bstr of the protected header, so
		// comparing protected headers of equal length compares kids.
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if bytes.Compare(s[j].prot, s[i].prot) < 0 {
					s[i], s[j] = s[j], s[i]
				}
			}
		}
		return s
	}
	sa, sb, sc := signFor(t, a, bodyProt, payload, -8), signFor(t, b, bodyProt, payload, -8), signFor(t, c, bodyProt, payload, -8)
	two := sorted(sa, sb)
	bad := signer{two[1].prot, bytes.Clone(two[1].sig)}
	bad.sig[5] ^= 1

	// A manifest with a field §3 does not list, signed by a and b.
	var man map[string]any
	if err := strictDec.Unmarshal(payload, &man); err != nil {
		t.Fatal(err)
	}
	man["comment"] = "not in the closed manifest"
	extra := mustDet(t, man)
	longHead := make([]byte, 5)
	longHead[0] = 0x5a
	binary.BigEndian.PutUint32(longHead[1:], uint32(len(payload)))

	cases := []struct {
		name string
		file []byte
		want string // "" = verified
		mine bool   // this package's verifier (all signatures must verify, kids sorted) accepts it
	}{
		{"IndependentlySignedBundleVerifies", append(coseBytes(t, bodyProt, nil, payload, two, nil), artifacts...), "", true},
		{"SignaturesInAnyOrderAreAccepted", append(coseBytes(t, bodyProt, nil, payload, []signer{two[1], two[0]}, nil), artifacts...), "", false},
		{"UnknownCoSignerIsIgnored", append(coseBytes(t, bodyProt, nil, payload, sorted(sa, sb, sc), nil), artifacts...), "", true},
		{"SameKeyTwiceIsDuplicateSigner", append(coseBytes(t, bodyProt, nil, payload, []signer{sa, sa}, nil), artifacts...), "duplicate_signer", false},
		{"TrustedSignatureThatFailsIsBadSignature", append(coseBytes(t, bodyProt, nil, payload, []signer{two[0], bad}, nil), artifacts...), "bad_signature", false},
		{"OnlyUntrustedSignerIsUntrustedKey", append(coseBytes(t, bodyProt, nil, payload, []signer{sc}, nil), artifacts...), "untrusted_key", true},
		{"OtherAlgorithmIsUnsupported", append(coseBytes(t, bodyProt, nil, payload, []signer{signFor(t, a, bodyProt, payload, -7)}, nil), artifacts...), "unsupported_algorithm", false},
		{"NonEmptyUnprotectedHeaderIsUnknownFormat", append(coseBytes(t, bodyProt, map[int]any{4: []byte("x")}, payload, two, nil), artifacts...), "unknown_format", false},
		{"LongPayloadHeadIsMalformed", append(coseBytes(t, bodyProt, nil, payload, two, longHead), artifacts...), "malformed_bundle", false},
		{"UnknownManifestFieldIsRefused", append(coseBytes(t, bodyProt, nil, extra, sorted(signFor(t, a, bodyProt, extra, -8), signFor(t, b, bodyProt, extra, -8)), nil), artifacts...), "malformed_bundle", false},
		{"ByteAfterLastArtifactIsTrailingData", append(bytes.Clone(ab), 0x00), "trailing_data", false},
		{"ExtraByteStringIsCountMismatch", append(bytes.Clone(ab), 0x41, 0x00), "count_mismatch", false},
		{"MissingLastArtifactIsCountMismatch", ab[:len(ab)-lastItemLen(t, ab)], "count_mismatch", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "x.ampb")
			if err := os.WriteFile(f, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			// This package's verifier agrees on validity.
			if _, err := verifyBundle(tc.file); (err == nil) != tc.mine {
				t.Errorf("independent verifier: %v, want accepted=%v", err, tc.mine)
			}
			code := cliVerify(t, bin, f, p("a.pub"), p("b.pub"))
			if !matches(code, tc.want) {
				t.Fatalf("ampbundle verify: %q, the document says %q", code, tc.want)
			}
		})
	}
}

// lastItemLen is the encoded length of the last artifact of a bundle.
func lastItemLen(t *testing.T, file []byte) int {
	t.Helper()
	dec := strictDec.NewDecoder(bytes.NewReader(file))
	last := 0
	for {
		var raw cbor.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return last
		}
		last = len(raw)
	}
}

func matches(code, want string) bool {
	if want == "" {
		return code == ""
	}
	for _, w := range bytes.Split([]byte(want), []byte("|")) {
		if code == string(w) {
			return true
		}
	}
	return false
}

// cliVerify runs ampbundle verify --json and returns "" when it verified,
// else the error code.
func cliVerify(t *testing.T, bin, file string, trust ...string) string {
	t.Helper()
	args := []string{"verify", file, "--json"}
	for _, k := range trust {
		args = append(args, "--trust", k)
	}
	out, code := runAllowFail(t, bin, args...)
	var res struct {
		Verified bool `json:"verified"`
		Error    struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("verify --json printed %q: %v", out, err)
	}
	if code == 0 && res.Verified && res.Error.Code == "" {
		return ""
	}
	if code != 1 || res.Error.Code == "" {
		t.Fatalf("verify exit %d, output %q", code, out)
	}
	return res.Error.Code
}

// receiptVariant re-signs a receipt payload built from the given fields with
// key, as FORMAT.md §20.2 describes, and returns the file.
func receiptVariant(t *testing.T, key ed25519.PrivateKey, fields map[string]any, extraSigners ...ed25519.PrivateKey) []byte {
	t.Helper()
	bodyProt := mustDet(t, map[int]string{3: "application/ampbundle-receipt+cbor"})
	payload := mustDet(t, fields)
	sigs := []signer{signFor(t, key, bodyProt, payload, -8)}
	for _, k := range extraSigners {
		sigs = append(sigs, signFor(t, k, bodyProt, payload, -8))
	}
	return coseBytes(t, bodyProt, nil, payload, sigs, nil)
}

// checkReceiptReaderAgrees writes receipts with this package's own code from
// the entries of a receipt the CLI wrote, and requires `ampbundle receipt
// verify --site` to accept the valid ones and refuse the others with
// invalid_receipt, as FORMAT.md §20.2 says.
func checkReceiptReaderAgrees(t *testing.T, bin string, cliReceipt []byte, site, other ed25519.PrivateKey, sitePub string) {
	t.Helper()
	item, err := readSingleItem(cliReceipt)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := checkCOSESign(item, "application/ampbundle-receipt+cbor")
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := strictDec.Unmarshal(cs.payload, &r); err != nil {
		t.Fatal(err)
	}
	ents, _ := r["entries"].([]any)
	if len(ents) < 3 {
		t.Fatalf("receipt has %d entries", len(ents))
	}
	siteDid := pubToDidKey(site.Public().(ed25519.PublicKey))
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range r {
			m[kk] = vv
		}
		m["site"] = siteDid
		m["issued_at"] = "2026-11-03T00:00:00Z"
		if k != "" {
			m[k] = v
		}
		return m
	}
	tail := with("entries", ents[1:])
	tail["first_seq"] = uint64(2)
	tail["prev"] = sha256Of(ents[0].([]byte))
	swapped := append([]any{}, ents...)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	extra := with("note", "not in the closed receipt")
	cases := []struct {
		name string
		file []byte
		ok   bool
	}{
		{"IndependentlySignedReceiptVerifies", receiptVariant(t, site, with("", nil)), true},
		{"ReceiptOfALaterRangeVerifies", receiptVariant(t, site, tail), true},
		{"ReorderedEntriesBreakTheChain", receiptVariant(t, site, with("entries", swapped)), false},
		{"DroppedEntryBreaksTheChain", receiptVariant(t, site, with("entries", append([]any{ents[0]}, ents[2:]...))), false},
		{"WrongHeadIsRefused", receiptVariant(t, site, with("head", sha256Of(ents[0].([]byte)))), false},
		{"SiteFieldNotTheKidIsRefused", receiptVariant(t, site, with("site", pubToDidKey(other.Public().(ed25519.PublicKey)))), false},
		{"SignedByAnotherKeyIsNotTheSite", receiptVariant(t, other, with("site", pubToDidKey(other.Public().(ed25519.PublicKey)))), false},
		{"TwoSignaturesAreRefused", receiptVariant(t, site, with("", nil), other), false},
		{"UnknownReceiptFieldIsRefused", receiptVariant(t, site, extra), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "r.receipt")
			if err := os.WriteFile(f, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, mineErr := verifyReceipt(tc.file, siteDid)
			if (mineErr == nil) != tc.ok {
				t.Errorf("independent verifier: %v, want accepted=%v", mineErr, tc.ok)
			}
			out, code := runAllowFail(t, bin, "receipt", "verify", f, "--site", sitePub, "--json")
			var res struct {
				Verified bool `json:"verified"`
				Error    struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("receipt verify --json printed %q", out)
			}
			if tc.ok && (code != 0 || !res.Verified) {
				t.Fatalf("receipt verify refused a receipt the document allows: %s", out)
			}
			if !tc.ok && (code != 1 || res.Error.Code != "invalid_receipt") {
				t.Fatalf("receipt verify: exit %d %s, the document says invalid_receipt", code, out)
			}
		})
	}
}

// statementFile signs a statement payload with the keys (sorted by kid, as
// FORMAT.md §2 asks of writers) under content type ct.
func statementFile(t *testing.T, ct string, fields map[string]any, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	bodyProt := mustDet(t, map[int]string{3: ct})
	payload := mustDet(t, fields)
	var sigs []signer
	for _, k := range keys {
		sigs = append(sigs, signFor(t, k, bodyProt, payload, -8))
	}
	for i := range sigs {
		for j := i + 1; j < len(sigs); j++ {
			if bytes.Compare(sigs[j].prot, sigs[i].prot) < 0 {
				sigs[i], sigs[j] = sigs[j], sigs[i]
			}
		}
	}
	return coseBytes(t, bodyProt, nil, payload, sigs, nil)
}

// checkStatementReaderAgrees imports statements written by this package's own
// code into the store db, where a and c are trusted for org.example with
// threshold 2 and statements 1 and 2 (lastFile) are applied, and requires
// each to be applied or refused as FORMAT.md §21 and §22 say.
func checkStatementReaderAgrees(t *testing.T, bin, db string, lastFile []byte, a, c, stranger ed25519.PrivateKey) {
	t.Helper()
	const trustCT, revCT, hbCT = "application/ampbundle-trust+cbor", "application/ampbundle-revocation+cbor", "application/ampbundle-heartbeat+cbor"
	hb := func(version uint64) map[string]any {
		return map[string]any{"format": "ampbundle-heartbeat/1", "bundle_id": "org.example.conformance", "version": version,
			"created_at": "2026-11-04T00:00:00Z"}
	}
	ts := func(seq uint64, prev []byte, created string) map[string]any {
		return map[string]any{"format": "ampbundle-trust/1", "scope": "org.example", "sequence": seq,
			"prev": prev, "created_at": created, "threshold": uint64(2)}
	}
	s3 := statementFile(t, trustCT, ts(3, sha256Of(lastFile), "2026-11-04T00:00:00Z"), a, c)
	strangerDid := pubToDidKey(stranger.Public().(ed25519.PublicKey))
	rev := func(keys ...any) map[string]any {
		return map[string]any{"format": "ampbundle-revocation/1", "scope": "org.example",
			"created_at": "2026-11-04T00:00:00Z", "keys": keys}
	}
	other := pubToDidKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey))
	lo, hi := strangerDid, other
	if hi < lo {
		lo, hi = hi, lo
	}
	cases := []struct {
		name string
		file []byte
		want string // "" = applied
	}{
		{"StatementAheadOfTheChainIsRotationGap", statementFile(t, trustCT, ts(4, make([]byte, 32), "2026-11-04T00:00:00Z"), a, c), "rotation_gap"},
		{"StatementChainingElsewhereIsRotationFork", statementFile(t, trustCT, ts(3, make([]byte, 32), "2026-11-04T00:00:00Z"), a, c), "rotation_fork"},
		{"StatementBelowTheThresholdIsRefused", statementFile(t, trustCT, ts(3, sha256Of(lastFile), "2026-11-04T00:00:00Z"), a), "threshold_not_met"},
		{"IndependentlyWrittenStatementIsApplied", s3, ""},
		{"TheSameStatementAgainIsANoOp", s3, ""},
		{"AnotherStatementThreeIsRotationFork", statementFile(t, trustCT, ts(3, sha256Of(lastFile), "2026-11-05T00:00:00Z"), a, c), "rotation_fork"},
		{"UnsortedRevokedKeysAreInvalid", statementFile(t, revCT, rev(hi, lo), a, c), "invalid_statement"},
		{"EmptyRevocationIsInvalid", statementFile(t, revCT, map[string]any{"format": "ampbundle-revocation/1", "scope": "org.example", "created_at": "2026-11-04T00:00:00Z"}, a, c), "invalid_statement"},
		{"RevocationBelowTheThresholdIsRefused", statementFile(t, revCT, rev(strangerDid), a), "threshold_not_met"},
		{"RevocationByAnUntrustedKeyIsRefused", statementFile(t, revCT, rev(strangerDid), stranger), "untrusted_key"},
		{"IndependentlyWrittenRevocationIsApplied", statementFile(t, revCT, rev(lo, hi), a, c), ""},
		// §23 version cap: more than 1,000,000 above what the store knows
		// of the line (never imported: 0) is refused; at the cap, applied.
		{"HeartbeatBeyondTheVersionCapIsRefused", statementFile(t, hbCT, hb(1_000_001), a, c), "heartbeat_too_far"},
		{"HeartbeatBelowTheThresholdIsRefused", statementFile(t, hbCT, hb(1_000_000), a), "threshold_not_met"},
		{"HeartbeatAtTheVersionCapIsApplied", statementFile(t, hbCT, hb(1_000_000), a, c), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "s.cbor")
			if err := os.WriteFile(f, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			out, code := runAllowFail(t, bin, "import", f, "--db", db, "--json")
			var res struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("import --json printed %q", out)
			}
			if tc.want == "" && code != 0 {
				t.Fatalf("import refused a statement the document allows: %s", out)
			}
			if tc.want != "" && (code != 1 || res.Error.Code != tc.want) {
				t.Fatalf("import: exit %d %s, the document says %s", code, out, tc.want)
			}
		})
	}
}
