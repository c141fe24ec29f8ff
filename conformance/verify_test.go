package conformance

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

// This file is the verifier, written from docs/FORMAT.md only.

var (
	detEnc, _    = cbor.CoreDetEncOptions().EncMode()
	strictDec, _ = cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		MaxNestedLevels:   16,
		DefaultMapType:    nil,
		TagsMd:            cbor.TagsAllowed,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}.DecMode()
)

// decodeDet decodes one CBOR item and requires that it re-encodes to the same
// bytes under RFC 8949 §4.2.1 core deterministic encoding.
func decodeDet(b []byte) (any, error) {
	var v any
	if err := strictDec.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	re, err := detEnc.Marshal(v)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(re, b) {
		return nil, errors.New("not deterministic CBOR")
	}
	return v, nil
}

const b58alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

func base58Decode(s string) ([]byte, error) {
	n := new(big.Int)
	for _, c := range []byte(s) {
		i := strings.IndexByte(b58alphabet, c)
		if i < 0 {
			return nil, errors.New("not base58")
		}
		n.Mul(n, big.NewInt(58))
		n.Add(n, big.NewInt(int64(i)))
	}
	out := n.Bytes()
	for i := 0; i < len(s) && s[i] == '1'; i++ {
		out = append([]byte{0}, out...)
	}
	return out, nil
}

func base58Encode(b []byte) string {
	n := new(big.Int).SetBytes(b)
	var out []byte
	m := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), m)
		out = append(out, b58alphabet[m.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// didKeyToPub maps an Ed25519 did:key (multicodec 0xed01, base58btc, multibase z)
// to its public key, and requires the one canonical spelling.
func didKeyToPub(did string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(did, "did:key:z")
	if !ok {
		return nil, fmt.Errorf("kid %q is not a base58btc did:key", did)
	}
	raw, err := base58Decode(rest)
	if err != nil {
		return nil, err
	}
	if len(raw) != 34 || raw[0] != 0xed || raw[1] != 0x01 {
		return nil, errors.New("did:key is not an Ed25519 multikey")
	}
	if pubToDidKey(raw[2:]) != did {
		return nil, errors.New("did:key is not canonically encoded")
	}
	return ed25519.PublicKey(raw[2:]), nil
}

func pubToDidKey(pub []byte) string {
	return "did:key:z" + base58Encode(append([]byte{0xed, 0x01}, pub...))
}

// coseSign is a decoded and checked COSE_Sign of FORMAT.md §2.
type coseSign struct {
	payload []byte
	kids    []string // in file order
	sigs    [][]byte
}

// checkCOSESign checks item against FORMAT.md §2 (with the body content type
// of §20's table) and verifies every signature against the key its kid names.
// trusted, if not nil, lists the did:keys whose signatures must verify; with
// nil, every signature must verify.
func checkCOSESign(item []byte, contentType string) (*coseSign, error) {
	v, err := decodeDet(item)
	if err != nil {
		return nil, err
	}
	tag, ok := v.(cbor.Tag)
	if !ok || tag.Number != 98 {
		return nil, errors.New("not tag 98")
	}
	arr, ok := tag.Content.([]any)
	if !ok || len(arr) != 4 {
		return nil, errors.New("COSE_Sign is not an array of 4")
	}
	bodyProt, ok := arr[0].([]byte)
	if !ok {
		return nil, errors.New("body protected is not a bstr")
	}
	wantProt, _ := detEnc.Marshal(map[int]string{3: contentType})
	if !bytes.Equal(bodyProt, wantProt) {
		return nil, fmt.Errorf("body protected header %x, want %x", bodyProt, wantProt)
	}
	if m, ok := arr[1].(map[any]any); !ok || len(m) != 0 {
		return nil, errors.New("body unprotected is not {}")
	}
	payload, ok := arr[2].([]byte)
	if !ok {
		return nil, errors.New("payload is not an embedded bstr")
	}
	sigs, ok := arr[3].([]any)
	if !ok || len(sigs) < 1 || len(sigs) > 8 {
		return nil, errors.New("signatures is not an array of 1..8")
	}
	out := &coseSign{payload: payload}
	for i, s := range sigs {
		sa, ok := s.([]any)
		if !ok || len(sa) != 3 {
			return nil, fmt.Errorf("signature %d is not an array of 3", i)
		}
		sp, ok := sa[0].([]byte)
		if !ok {
			return nil, fmt.Errorf("signature %d: protected is not a bstr", i)
		}
		hv, err := decodeDet(sp)
		if err != nil {
			return nil, fmt.Errorf("signature %d protected: %w", i, err)
		}
		hm, ok := hv.(map[any]any)
		if !ok || len(hm) != 2 || hm[uint64(1)] != int64(-8) {
			return nil, fmt.Errorf("signature %d: protected is not {1: -8, 4: kid}", i)
		}
		kidB, ok := hm[uint64(4)].([]byte)
		if !ok || len(kidB) < 1 || len(kidB) > 256 {
			return nil, fmt.Errorf("signature %d: kid is not a bstr of 1..256 bytes", i)
		}
		if m, ok := sa[1].(map[any]any); !ok || len(m) != 0 {
			return nil, fmt.Errorf("signature %d: unprotected is not {}", i)
		}
		sig, ok := sa[2].([]byte)
		if !ok || len(sig) != 64 {
			return nil, fmt.Errorf("signature %d is not 64 bytes", i)
		}
		kid := string(kidB)
		if i > 0 && !(out.kids[i-1] < kid) {
			return nil, fmt.Errorf("signatures not sorted by kid or a duplicate signer at %d", i)
		}
		pub, err := didKeyToPub(kid)
		if err != nil {
			return nil, err
		}
		tbs, err := detEnc.Marshal([]any{"Signature", bodyProt, sp, []byte{}, payload})
		if err != nil {
			return nil, err
		}
		if !ed25519.Verify(pub, tbs, sig) {
			return nil, fmt.Errorf("signature %d by %s does not verify", i, kid)
		}
		out.kids = append(out.kids, kid)
		out.sigs = append(out.sigs, sig)
	}
	return out, nil
}

// payloadMap decodes a deterministic payload into a map with text keys and
// requires exactly the keys listed (required) plus any of optional.
func payloadMap(b []byte, required, optional []string) (map[string]any, error) {
	v, err := decodeDet(b)
	if err != nil {
		return nil, err
	}
	return closedMap(v, required, optional)
}

func closedMap(v any, required, optional []string) (map[string]any, error) {
	m, ok := v.(map[any]any)
	if !ok {
		return nil, errors.New("not a map")
	}
	out := map[string]any{}
	allowed := map[string]bool{}
	for _, k := range optional {
		allowed[k] = true
	}
	for _, k := range required {
		allowed[k] = true
	}
	for k, val := range m {
		ks, ok := k.(string)
		if !ok || !allowed[ks] {
			return nil, fmt.Errorf("unexpected key %v", k)
		}
		out[ks] = val
	}
	for _, k := range required {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("missing key %q", k)
		}
	}
	return out, nil
}

func isTimestamp(v any) bool {
	s, ok := v.(string)
	if !ok || len(s) != 20 {
		return false
	}
	// 2026-11-22T10:00:00Z
	for i, c := range []byte(s) {
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != 'T' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		case 19:
			if c != 'Z' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

func sortedUniqueStrings(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return nil, errors.New("not a non-empty array")
	}
	var out []string
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, errors.New("not a text")
		}
		if i > 0 && !(out[i-1] < s) {
			return nil, errors.New("not sorted and unique")
		}
		out = append(out, s)
	}
	return out, nil
}

func underScope(name, scope string) bool {
	return scope == "*" || name == scope || strings.HasPrefix(name, scope+".")
}

// verifiedBundle is what verifyBundle learned.
type verifiedBundle struct {
	cose      *coseSign
	item0     []byte
	manifest  map[string]any
	artifacts int
}

// verifyBundle checks a whole bundle file (FORMAT.md §1-§5): the CBOR Sequence,
// item 0, every signature, the manifest's closed shape, and every artifact's
// size, head and hash.
func verifyBundle(file []byte) (*verifiedBundle, error) {
	dec := strictDec.NewDecoder(bytes.NewReader(file))
	var item0 cbor.RawMessage
	if err := dec.Decode(&item0); err != nil {
		return nil, fmt.Errorf("item 0: %w", err)
	}
	return verifyManifestAndArtifacts(dec, item0, nil)
}

// verifyManifestAndArtifacts checks the signed manifest item0 and reads the
// artifacts that follow it from dec, skipping the keys in omitted (§12.3).
func verifyManifestAndArtifacts(dec *cbor.Decoder, item0 []byte, omitted map[string]bool) (*verifiedBundle, error) {
	cs, err := checkCOSESign(item0, "application/ampbundle-manifest+cbor")
	if err != nil {
		return nil, err
	}
	man, err := payloadMap(cs.payload,
		[]string{"format", "bundle_id", "version", "created_at", "publisher", "artifacts", "capabilities"},
		[]string{"expires_at", "aliases"})
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if man["format"] != "ampbundle/1" {
		return nil, errors.New("manifest format")
	}
	if v, ok := man["version"].(uint64); !ok || v < 1 {
		return nil, errors.New("manifest version")
	}
	if !isTimestamp(man["created_at"]) {
		return nil, errors.New("manifest created_at")
	}
	if p, ok := man["publisher"].(string); !ok || !strings.HasPrefix(p, "did:") || strings.Contains(p, "#") {
		return nil, errors.New("manifest publisher")
	}
	arts, ok := man["artifacts"].([]any)
	if !ok {
		return nil, errors.New("manifest artifacts")
	}
	prevKey := ""
	for i, a := range arts {
		am, err := closedMap(a, []string{"key", "media_type", "size", "hash_alg", "hash"}, nil)
		if err != nil {
			return nil, fmt.Errorf("artifact %d: %w", i, err)
		}
		key, _ := am["key"].(string)
		if i > 0 && !(prevKey < key) {
			return nil, errors.New("artifacts not sorted by key")
		}
		prevKey = key
		size, ok := am["size"].(uint64)
		if !ok {
			return nil, errors.New("artifact size")
		}
		want, _ := am["hash"].([]byte)
		if omitted[key] {
			delete(omitted, key)
			continue
		}
		var raw cbor.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("artifact %d (%s): %w", i, key, err)
		}
		var content []byte
		if err := strictDec.Unmarshal(raw, &content); err != nil || raw[0]>>5 != 2 {
			return nil, fmt.Errorf("artifact %d is not a byte string", i)
		}
		if re, _ := detEnc.Marshal(content); !bytes.Equal(re, raw) {
			return nil, fmt.Errorf("artifact %d head is not the shortest", i)
		}
		if uint64(len(content)) != size {
			return nil, fmt.Errorf("artifact %d size", i)
		}
		var got []byte
		switch am["hash_alg"] {
		case "sha-256":
			h := sha256.Sum256(content)
			got = h[:]
		case "sha-512":
			h := sha512.Sum512(content)
			got = h[:]
		default:
			return nil, errors.New("artifact hash_alg")
		}
		if !bytes.Equal(got, want) {
			return nil, fmt.Errorf("artifact %d (%s): hash mismatch", i, key)
		}
	}
	var extra cbor.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, errors.New("data after the last artifact")
	}
	if len(omitted) != 0 {
		return nil, errors.New("an omitted key is not a key of the manifest")
	}
	return &verifiedBundle{cose: cs, item0: item0, manifest: man, artifacts: len(arts)}, nil
}

// readSingleItem requires the file to be exactly one CBOR item (§20).
func readSingleItem(file []byte) ([]byte, error) {
	dec := strictDec.NewDecoder(bytes.NewReader(file))
	var item cbor.RawMessage
	if err := dec.Decode(&item); err != nil {
		return nil, err
	}
	if dec.NumBytesRead() != len(file) {
		return nil, errors.New("bytes follow the item")
	}
	return item, nil
}

// verifyReceipt checks a receipt file as FORMAT.md §20.2 says and returns
// its decoded entries.
func verifyReceipt(file []byte, site string) ([]map[string]any, error) {
	item, err := readSingleItem(file)
	if err != nil {
		return nil, err
	}
	cs, err := checkCOSESign(item, "application/ampbundle-receipt+cbor")
	if err != nil {
		return nil, err
	}
	if len(cs.kids) != 1 {
		return nil, errors.New("receipt has not exactly one signature")
	}
	r, err := payloadMap(cs.payload, []string{"format", "site", "issued_at", "first_seq", "prev", "head", "entries"}, nil)
	if err != nil {
		return nil, err
	}
	if r["format"] != "ampbundle-receipt/1" || r["site"] != cs.kids[0] || r["site"] != site {
		return nil, errors.New("receipt format or site")
	}
	if !isTimestamp(r["issued_at"]) {
		return nil, errors.New("receipt issued_at")
	}
	first, ok := r["first_seq"].(uint64)
	prev, ok2 := r["prev"].([]byte)
	head, ok3 := r["head"].([]byte)
	ents, ok4 := r["entries"].([]any)
	if !ok || !ok2 || !ok3 || !ok4 || first < 1 || len(prev) != 32 || len(head) != 32 || len(ents) == 0 {
		return nil, errors.New("receipt fields")
	}
	if first == 1 && !bytes.Equal(prev, make([]byte, 32)) {
		return nil, errors.New("receipt prev for first_seq 1")
	}
	var out []map[string]any
	chain := prev
	for i, e := range ents {
		eb, ok := e.([]byte)
		if !ok {
			return nil, errors.New("entry is not a bstr")
		}
		em, err := payloadMap(eb, []string{"seq", "at", "action", "prev"},
			[]string{"verdict", "actor", "file_sha256", "bundle_id", "version", "previous_version",
				"signers", "manifest_sha256", "trust_name", "key", "scopes", "threshold",
				"revoked_keys", "revoked_bundles", "sequence", "added_keys", "retired_keys"})
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if em["seq"] != first+uint64(i) {
			return nil, fmt.Errorf("entry %d: seq", i)
		}
		if p, _ := em["prev"].([]byte); !bytes.Equal(p, chain) {
			return nil, fmt.Errorf("entry %d: prev does not chain", i)
		}
		switch em["action"] {
		case "import", "downgrade", "import_unchanged", "import_refused", "remove", "trust_add",
			"trust_remove", "trust_threshold", "revoke", "fail_closed", "rotate", "heartbeat", "trust_freshness", "heartbeat_reset":
		default:
			return nil, fmt.Errorf("entry %d: action %v is not one of §20.1", i, em["action"])
		}
		if !isTimestamp(em["at"]) {
			return nil, fmt.Errorf("entry %d: at", i)
		}
		for _, k := range []string{"file_sha256", "manifest_sha256"} {
			if v, ok := em[k]; ok {
				if b, _ := v.([]byte); len(b) != 32 {
					return nil, fmt.Errorf("entry %d: %s", i, k)
				}
			}
		}
		h := sha256.Sum256(eb)
		chain = h[:]
		out = append(out, em)
	}
	if !bytes.Equal(chain, head) {
		return nil, errors.New("head is not the hash of the last entry")
	}
	return out, nil
}

// verifyRevocation checks a revocation statement file (FORMAT.md §21).
func verifyRevocation(file []byte) (*coseSign, map[string]any, error) {
	if len(file) > 1<<20 {
		return nil, nil, errors.New("over 1 MiB")
	}
	item, err := readSingleItem(file)
	if err != nil {
		return nil, nil, err
	}
	cs, err := checkCOSESign(item, "application/ampbundle-revocation+cbor")
	if err != nil {
		return nil, nil, err
	}
	m, err := payloadMap(cs.payload, []string{"format", "scope", "created_at"}, []string{"keys", "bundles"})
	if err != nil {
		return nil, nil, err
	}
	scope, _ := m["scope"].(string)
	if m["format"] != "ampbundle-revocation/1" || scope == "" || strings.HasSuffix(scope, ".") || !isTimestamp(m["created_at"]) {
		return nil, nil, errors.New("revocation header fields")
	}
	if m["keys"] == nil && m["bundles"] == nil {
		return nil, nil, errors.New("revocation names nothing")
	}
	if v, ok := m["keys"]; ok {
		keys, err := sortedUniqueStrings(v)
		if err != nil {
			return nil, nil, fmt.Errorf("keys: %w", err)
		}
		for _, k := range keys {
			if _, err := didKeyToPub(k); err != nil {
				return nil, nil, err
			}
		}
	}
	if v, ok := m["bundles"]; ok {
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return nil, nil, errors.New("bundles")
		}
		type bv struct {
			id string
			v  uint64
		}
		var all []bv
		for _, e := range a {
			em, err := closedMap(e, []string{"bundle_id", "version"}, nil)
			if err != nil {
				return nil, nil, err
			}
			id, _ := em["bundle_id"].(string)
			ver, ok := em["version"].(uint64)
			if !ok || ver < 1 || !underScope(id, scope) {
				return nil, nil, errors.New("bundle version out of scope or bad")
			}
			all = append(all, bv{id, ver})
		}
		if !sort.SliceIsSorted(all, func(i, j int) bool {
			return all[i].id < all[j].id || (all[i].id == all[j].id && all[i].v < all[j].v)
		}) {
			return nil, nil, errors.New("bundles not sorted")
		}
	}
	return cs, m, nil
}

// verifyTrustStatement checks a trust statement file (FORMAT.md §22) and,
// given the previous statement's file (nil for sequence 1), its chain link.
func verifyTrustStatement(file, prevFile []byte) (*coseSign, map[string]any, error) {
	if len(file) > 1<<20 {
		return nil, nil, errors.New("over 1 MiB")
	}
	item, err := readSingleItem(file)
	if err != nil {
		return nil, nil, err
	}
	cs, err := checkCOSESign(item, "application/ampbundle-trust+cbor")
	if err != nil {
		return nil, nil, err
	}
	m, err := payloadMap(cs.payload, []string{"format", "scope", "sequence", "prev", "created_at", "threshold"}, []string{"add", "retire"})
	if err != nil {
		return nil, nil, err
	}
	scope, _ := m["scope"].(string)
	seq, _ := m["sequence"].(uint64)
	th, _ := m["threshold"].(uint64)
	prev, _ := m["prev"].([]byte)
	if m["format"] != "ampbundle-trust/1" || scope == "" || strings.HasSuffix(scope, ".") || seq < 1 || th < 1 || th > 8 || len(prev) != 32 || !isTimestamp(m["created_at"]) {
		return nil, nil, errors.New("trust statement fields")
	}
	// §22: prev is the SHA-256 of statement n−1's payload (readers also
	// accept that of its whole file, the form of earlier writers); 32 zero
	// bytes for statement 1.
	ok := bytes.Equal(prev, make([]byte, 32)) && prevFile == nil
	if prevFile != nil {
		file := sha256.Sum256(prevFile)
		ok = bytes.Equal(prev, file[:])
		if pi, err := readSingleItem(prevFile); err == nil {
			if pcs, err := checkCOSESign(pi, "application/ampbundle-trust+cbor"); err == nil {
				payload := sha256.Sum256(pcs.payload)
				ok = ok || bytes.Equal(prev, payload[:])
			}
		}
	}
	if !ok {
		return nil, nil, errors.New("prev is not the SHA-256 of the previous statement's payload or file")
	}
	added := map[string]bool{}
	if v, ok := m["add"]; ok {
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return nil, nil, errors.New("add")
		}
		last := ""
		for _, e := range a {
			em, err := closedMap(e, []string{"name", "key"}, nil)
			if err != nil {
				return nil, nil, err
			}
			k, _ := em["key"].(string)
			n, _ := em["name"].(string)
			if _, err := didKeyToPub(k); err != nil || n == "" || len(n) > 64 {
				return nil, nil, errors.New("add entry")
			}
			if last != "" && !(last < k) {
				return nil, nil, errors.New("add not sorted by key")
			}
			last = k
			added[k] = true
		}
	}
	if v, ok := m["retire"]; ok {
		keys, err := sortedUniqueStrings(v)
		if err != nil {
			return nil, nil, fmt.Errorf("retire: %w", err)
		}
		for _, k := range keys {
			if added[k] {
				return nil, nil, errors.New("a key both added and retired")
			}
		}
	}
	return cs, m, nil
}

func sha256Of(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

// verifyDelta checks a delta file (FORMAT.md §12.1-§12.3, without the base):
// the signed header, the full signed manifest and the carried artifacts, and
// binds them. It returns the header and the full bundle's item 1.
func verifyDelta(file []byte) (map[string]any, *verifiedBundle, error) {
	dec := strictDec.NewDecoder(bytes.NewReader(file))
	var item0, item1 cbor.RawMessage
	if err := dec.Decode(&item0); err != nil {
		return nil, nil, err
	}
	cs, err := checkCOSESign(item0, "application/ampbundle-delta+cbor")
	if err != nil {
		return nil, nil, err
	}
	h, err := payloadMap(cs.payload, []string{"format", "bundle_id", "version", "manifest_sha256", "base", "omitted"}, nil)
	if err != nil {
		return nil, nil, err
	}
	base, err := closedMap(h["base"], []string{"bundle_id", "version", "manifest_sha256"}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("base: %w", err)
	}
	ver, _ := h["version"].(uint64)
	bver, _ := base["version"].(uint64)
	if h["format"] != "ampbundle-delta/1" || base["bundle_id"] != h["bundle_id"] || bver < 1 || bver >= ver {
		return nil, nil, errors.New("delta header fields")
	}
	if b, _ := base["manifest_sha256"].([]byte); len(b) != 32 {
		return nil, nil, errors.New("base manifest_sha256")
	}
	omitted := map[string]bool{}
	if a, ok := h["omitted"].([]any); !ok {
		return nil, nil, errors.New("omitted")
	} else if len(a) > 0 {
		keys, err := sortedUniqueStrings(a)
		if err != nil {
			return nil, nil, fmt.Errorf("omitted: %w", err)
		}
		for _, k := range keys {
			omitted[k] = true
		}
	}
	if err := dec.Decode(&item1); err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(bs(h["manifest_sha256"]), sha256Of(item1)) {
		return nil, nil, errors.New("manifest_sha256 is not the hash of item 1")
	}
	vb, err := verifyManifestAndArtifacts(dec, item1, omitted)
	if err != nil {
		return nil, nil, err
	}
	if vb.manifest["bundle_id"] != h["bundle_id"] || vb.manifest["version"] != h["version"] {
		return nil, nil, errors.New("header and manifest name different releases")
	}
	shared := false
	for _, k := range cs.kids {
		for _, m := range vb.cose.kids {
			shared = shared || k == m
		}
	}
	if !shared {
		return nil, nil, errors.New("no header signer signed the manifest")
	}
	return h, vb, nil
}

// verifyPartIndex checks a part index file (FORMAT.md §13.1-§13.2) and the
// parts against it; parts are the part files' bytes in order.
func verifyPartIndex(index []byte, parts [][]byte) (map[string]any, error) {
	if len(index) > 4<<20 {
		return nil, errors.New("index over 4 MiB")
	}
	item, err := readSingleItem(index)
	if err != nil {
		return nil, err
	}
	cs, err := checkCOSESign(item, "application/ampbundle-parts+cbor")
	if err != nil {
		return nil, err
	}
	m, err := payloadMap(cs.payload, []string{"format", "bundle_id", "version", "name", "size", "sha256", "parts"}, nil)
	if err != nil {
		return nil, err
	}
	name, _ := m["name"].(string)
	if m["format"] != "ampbundle-parts/1" || name == "" || len(name) > 200 || strings.Contains(name, "/") {
		return nil, errors.New("part index fields")
	}
	pa, ok := m["parts"].([]any)
	if !ok || len(pa) < 1 || len(pa) > 10000 || len(pa) != len(parts) {
		return nil, errors.New("parts count")
	}
	digits := 3
	for n := len(pa); n >= 1000; n /= 10 {
		digits++
	}
	var whole []byte
	for i, e := range pa {
		pm, err := closedMap(e, []string{"name", "size", "sha256"}, nil)
		if err != nil {
			return nil, err
		}
		if pm["name"] != fmt.Sprintf("%s.part%0*d", name, digits, i+1) {
			return nil, fmt.Errorf("part %d is named %v", i+1, pm["name"])
		}
		if sz, _ := pm["size"].(uint64); sz < 1 || sz != uint64(len(parts[i])) {
			return nil, fmt.Errorf("part %d size", i+1)
		}
		if !bytes.Equal(bs(pm["sha256"]), sha256Of(parts[i])) {
			return nil, fmt.Errorf("part %d sha256", i+1)
		}
		whole = append(whole, parts[i]...)
	}
	if m["size"] != uint64(len(whole)) || !bytes.Equal(bs(m["sha256"]), sha256Of(whole)) {
		return nil, errors.New("whole size or sha256")
	}
	return m, nil
}

// bs is v as a byte string, or nil.
func bs(v any) []byte {
	b, _ := v.([]byte)
	return b
}
