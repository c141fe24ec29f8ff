package resolver

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// ProblemSignature is the kind of the Problem Check reports for an
// installed bundle whose stored signed manifest carries a signature that
// does not verify (docs/SPEC-DECISIONS.md TRUST-20): Export refuses that
// bundle, and the mirror's /readyz calls it degraded, not damage
// (MIRROR-19).
const ProblemSignature = "signature"

// ProblemDescriptorUnreadable is the kind of the Problem Check reports
// for a stored descriptor entry that does not decode, or whose descriptor
// does not decode as the catalog decodes it (capability.DecodeDescriptor:
// a damaged record, or one an older build stored under other caps). The
// catalog leaves that bundle out, or the entry alone when it names no
// bundle (docs/SPEC-DECISIONS.md STORE-2).
const ProblemDescriptorUnreadable = "descriptor_unreadable"

// ProblemDIDDocumentInvalid is the kind of the Problem Check reports for a
// stored DID document, its bytes sound, that does not parse as
// ResolveDID parses it (amp.ParseDIDDocument), or that describes another
// DID than the one it is stored under: every resolution of that DID
// fails closed, 3001 (a document an older build installed before a
// stricter rule, docs/SPEC-DECISIONS.md AMP-28; STORE-3).
const ProblemDIDDocumentInvalid = "did_document_invalid"

// ProblemBundleUnreadable is the kind of the Problem Check reports for an
// installed bundle's record that does not decode (a torn or edited store
// file): the catalog leaves that bundle out, since whether it is revoked
// or expired cannot be read, and serves the rest (docs/SPEC-DECISIONS.md
// STORE-4). Remove removes such a bundle (STORE-9).
const ProblemBundleUnreadable = "bundle_unreadable"

// ProblemAliasUnreadable is the kind of the Problem Check reports for an
// alias record that does not decode: the catalog resolves its legacy type
// to no capability (AmbiguousAlias) and serves every other type
// (docs/SPEC-DECISIONS.md STORE-5).
const ProblemAliasUnreadable = "alias_unreadable"

// Problem is one inconsistency found by Check.
type Problem struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Check re-hashes every blob and checks every index of the store against
// every other (ampbundle check). It returns the problems found; none means
// the store is sound. It reads everything in one read transaction.
//
// Checked: bbolt's own page consistency; every blob's bytes against its
// content address; reference counts against the index; no blob without a
// reference; every index entry against an existing blob of its size; every
// installed bundle's signed manifest against its index entries, descriptors,
// aliases and DID entries; every descriptor, alias, DID and $id entry
// against an installed bundle; high-water marks not below installed
// versions; every schema compiling offline from its bundle; no interrupted import (kind "pending": the blobs it staged and
// the import itself, which the next read-write open rolls back); the audit
// chain; every floor, charge counter, threshold, high-water mark and the
// audit sequence of the right size, and every trust record decoding (kind
// "meta": the store refuses to read a damaged one, docs/SPEC-DECISIONS.md
// TSTATE-6); every installed bundle's signatures verifying, trusted or
// not, as import checks them (kind "signature": a copy an earlier build
// installed with a forged co-signature, TRUST-20); every stored
// descriptor decoding as the catalog decodes it (kind
// "descriptor_unreadable", STORE-2), every stored DID document parsing
// as ResolveDID parses it (kind "did_document_invalid", STORE-3), and
// every bundle and alias record decoding (kinds "bundle_unreadable",
// STORE-4, and "alias_unreadable", STORE-5).
func (s *Store) Check() ([]Problem, error) {
	var ps []Problem
	add := func(kind, format string, args ...any) {
		ps = append(ps, Problem{Kind: kind, Message: fmt.Sprintf(format, args...)})
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			add("bbolt", "%v", err)
		}
		if err := checkBlobs(tx, add); err != nil {
			return err
		}
		installed, err := checkBundles(tx, add)
		if err != nil {
			return err
		}
		checkOwners(tx, installed, add)
		checkDIDDocuments(tx, add)
		checkMetaValues(tx, add)
		if s.upgradeErr != nil {
			add("meta", "the store stays at schema version %d until its damaged value is repaired: %s", minSchemaVersion, amp.SafeMessage(s.upgradeErr))
		}
		if n := bucket(tx, bPending).Stats().KeyN; n > 0 {
			add("pending", "%d interrupted import(s) await recovery (any command that opens the store read-write recovers them: ampbundle import, rm, trust add or rm, or ampagent serve)", n)
		}
		if err := verifyAudit(tx); err != nil {
			add("audit", "%s", amp.SafeMessage(err))
		}
		return nil
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Kind < ps[j].Kind })
	return ps, nil
}

// checkMetaValues reports each floor, charge counter, threshold,
// high-water mark and the audit sequence whose value does not have its
// size (strictU64, pinnedFloor, highwaterOf), and each trust record that
// does not decode (loadState).
func checkMetaValues(tx *bolt.Tx, add problems) {
	meta := bucket(tx, bMeta)
	for _, prefix := range [][]byte{keyFloorKey(""), chargeKey(""), statementChargeKey("")} {
		c := meta.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(v) != 8 {
				add("meta", "%s has %d bytes, not 8", printableKey(k), len(v))
			}
		}
	}
	for _, k := range []string{kTimeFloor, kAuditSeq} {
		if v := meta.Get([]byte(k)); v != nil && len(v) != 8 {
			add("meta", "%s has %d bytes, not 8", k, len(v))
		}
	}
	_ = bucket(tx, bHighwater).ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			add("meta", "the high-water mark of %s has %d bytes, not 8", printableKey(k), len(v))
		}
		return nil
	})
	prefix := bundleFloorKey("")
	c := meta.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) < 16 {
			add("meta", "%s has %d bytes, fewer than 16", printableKey(k), len(v))
		}
	}
	_ = bucket(tx, bTrustPolicy).ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			add("meta", "the threshold of %s has %d bytes, not 8", printableKey(k), len(v))
		}
		return nil
	})
	// loadState decodes every trust record strictly: one that does not
	// decode stops the trust state from being read (TSTATE-6).
	_ = bucket(tx, bTrust).ForEach(func(k, v []byte) error {
		var r trustRecord
		if decode(v, &r) != nil {
			add("meta", "the trust record %q does not decode", printableKey(k))
		}
		return nil
	})
}

// problems is how the parts of Check report a problem.
type problems func(kind, format string, args ...any)

// checkBlobs checks every blob against its content address and the
// reference counts against the index.
func checkBlobs(tx *bolt.Tx, add problems) error {
	// Blobs staged by an interrupted import are referenced by its
	// pending record only, until recovery deletes them.
	staged := map[string]bool{}
	_ = bucket(tx, bPending).ForEach(func(_, v []byte) error {
		var p pendingRecord
		if decode(v, &p) == nil {
			for _, b := range p.Blobs {
				staged[b] = true
			}
		}
		return nil
	})
	// Blobs and reference counts.
	refs := map[string]uint64{}
	if err := bucket(tx, bIndex).ForEach(func(k, v []byte) error {
		var ir indexRecord
		if err := decode(v, &ir); err != nil {
			add("index", "an index entry does not decode")
			return nil
		}
		refs[ir.Blob]++
		data := getBlob(tx, []byte(ir.Blob))
		switch {
		case data == nil:
			add("index", "index entry %q points at a missing blob", printableKey(k))
		case uint64(len(data)) != ir.Size:
			add("index", "index entry %q has size %d, its blob %d", printableKey(k), ir.Size, len(data))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := forEachBlob(tx, func(k, v []byte) error {
		key := string(k)
		if v == nil {
			add("blob", "blob %s is not stored as a blob", key)
		} else if err := checkBlob(v, key, "", ""); err != nil {
			add("blob", "blob %s does not match its hash (tampered or corrupted)", key)
		}
		if refs[key] == 0 {
			if staged[key] {
				add("pending", "blob %s was staged by an interrupted import", key)
			} else {
				add("blob", "blob %s is referenced by no index entry", key)
			}
		}
		if got := getU64(bucket(tx, bBlobRefs).Get(k)); got != refs[key] {
			add("blob", "blob %s has reference count %d, the index references it %d times", key, got, refs[key])
		}
		return nil
	}); err != nil {
		return err
	}
	if err := bucket(tx, bBlobRefs).ForEach(func(k, _ []byte) error {
		if !hasBlob(tx, k) {
			add("blob", "reference count kept for missing blob %s", k)
		}
		return nil
	}); err != nil {
		return err
	}
	return nil
}

// checkBundles checks every installed bundle against its signed manifest
// and returns the manifests by bundle id.
func checkBundles(tx *bolt.Tx, add problems) (map[string]*bundle.Manifest, error) {
	// Bundles against their signed manifests.
	installed := map[string]*bundle.Manifest{}
	if err := bucket(tx, bBundles).ForEach(func(k, v []byte) error {
		var rec bundleRecord
		if err := decode(v, &rec); err != nil {
			add(ProblemBundleUnreadable, "the record of bundle %q does not decode: the catalog leaves the bundle out (an import of it fails store_io; rm of it removes every entry of it the store holds)", printableKey(k))
			return nil
		}
		in, err := bundle.Inspect(bytes.NewReader(rec.Signed), storedManifestCap(rec.Signed))
		if err != nil {
			add("bundle", "the signed manifest of bundle %s does not decode: %s", k, amp.SafeMessage(err))
			return nil
		}
		m := in.Manifest
		installed[m.BundleID] = m
		if m.BundleID != string(k) || m.Version != rec.Version {
			add("bundle", "bundle record %s does not match its signed manifest", k)
		}
		if hw, err := highwaterOf(tx, string(k)); err == nil && hw < rec.Version { // a damaged one: checkMetaValues
			add("bundle", "high-water mark of %s (%d) is below its installed version %d", k, hw, rec.Version)
		}
		if err := verifyStoredSignatures(rec.Signed); err != nil {
			add(ProblemSignature, "bundle %s version %d: its stored signed manifest carries a signature that does not verify (%s: %s): an earlier build installed this copy; import the publisher's file of this release to replace it, or a newer version", k, rec.Version, amp.NameOf(err), amp.SafeMessage(err))
		}
		checkBundleIndex(tx, m, add)
		checkSchemas(tx, m, add)
		return nil
	}); err != nil {
		return nil, err
	}
	return installed, nil
}

// verifyStoredSignatures checks every signature of an installed bundle's
// signed manifest against the key its kid names, trusted or not, with the
// bundle package's one check (bundle.SignedObject.VerifyAll, as
// bundle.NewReader checks a file at import; docs/SPEC-DECISIONS.md
// TRUST-20): bad_signature or unknown_format for a copy an earlier build
// installed with a forged co-signature. At most bundle.MaxSignatures
// Ed25519 verifications.
func verifyStoredSignatures(signed []byte) error {
	obj, err := bundle.DecodeObject(signed, bundle.MediaTypeManifest)
	if err != nil {
		return err
	}
	return obj.VerifyAll()
}

// checkSchemas checks that every schema of m compiles offline from its
// bundle, as import requires (a store written before that check, or
// altered), checked as import checks it (offlineschema.QuickCheck).
func checkSchemas(tx *bolt.Tx, m *bundle.Manifest, add problems) {
	l := &checkLoader{tx: tx, bundle: m.BundleID}
	q := offlineschema.NewQuickCheck()
	for _, a := range m.Artifacts {
		if a.MediaType != bundle.MediaTypeSchema {
			continue
		}
		// Unreadable, refused or over offlineschema.MaxCompileBytes (not
		// parsed, as at import: docs/SPEC-DECISIONS.md STORE-7): Check
		// compiles it.
		if a.Size > offlineschema.MaxCompileBytes {
			continue
		}
		if data, err := l.Load(a.Key); err == nil {
			_, _ = q.Add(a.Key, data)
		}
	}
	for _, a := range m.Artifacts {
		if a.MediaType != bundle.MediaTypeSchema {
			continue
		}
		// Altered or missing bytes are the blob and index checks'
		// problems; reported here only when the bytes are sound.
		if err := q.Check(l, a.Key, offlineschema.Options{}); err != nil &&
			!errors.Is(err, ErrHashMismatch) && !errors.Is(err, ErrBlobUnreadable) {
			add("schema", "schema %s of bundle %s does not compile offline: %s", a.Key, m.BundleID, amp.SafeMessage(err))
		}
	}
}

// checkOwners checks that every other index names an installed bundle
// whose signed manifest has the entry.
func checkOwners(tx *bolt.Tx, installed map[string]*bundle.Manifest, add problems) {
	// Every other index names an installed bundle.
	ownerOf := func(kind string, b string, match func(m *bundle.Manifest) bool) {
		m, ok := installed[b]
		if !ok {
			add(kind, "a %s entry belongs to bundle %s, which is not installed", kind, b)
			return
		}
		if !match(m) {
			add(kind, "a %s entry of bundle %s is not in its signed manifest", kind, b)
		}
	}
	_ = bucket(tx, bIndex).ForEach(func(k, _ []byte) error {
		b, key, _ := bytes.Cut(k, []byte{0})
		ownerOf("index", string(b), func(m *bundle.Manifest) bool { _, ok := m.Artifact(string(key)); return ok })
		return nil
	})
	signed := signedDescriptors{}
	_ = bucket(tx, bDescriptors).ForEach(func(k, v []byte) error {
		var dr descRecord
		if decode(v, &dr) != nil {
			add(ProblemDescriptorUnreadable, "the descriptor entry %q does not decode: the catalog leaves that capability out", printableKey(k))
			return nil
		}
		if _, err := capability.DecodeDescriptor(dr.Descriptor); err != nil {
			add(ProblemDescriptorUnreadable, "the stored descriptor %q of bundle %s does not decode (%s: %s): the catalog leaves the bundle out; import a newer version of it, or remove it", printableKey(k), dr.BundleID, amp.NameOf(err), amp.SafeMessage(err))
		}
		ownerOf("descriptor", dr.BundleID, func(m *bundle.Manifest) bool {
			enc, ok := signed.of(m)[string(k)]
			return ok && bytes.Equal(enc, dr.Descriptor)
		})
		return nil
	})
	_ = bucket(tx, bAliases).ForEach(func(k, v []byte) error {
		var ar aliasRecord
		if decode(v, &ar) != nil {
			add(ProblemAliasUnreadable, "the alias record of the legacy type %q does not decode: the catalog resolves that type to no capability (an import or rm of a bundle declaring it fails store_io: restore the store from a backup)", printableKey(k))
			return nil
		}
		for _, c := range ar.claims() {
			if len(c.Owners) == 0 {
				add("alias", "alias %q has no owner", k)
			}
			for _, o := range c.Owners {
				ownerOf("alias", o, func(m *bundle.Manifest) bool { return m.Aliases[string(k)] == c.Name })
			}
		}
		return nil
	})
	_ = bucket(tx, bDIDs).ForEach(func(_, v []byte) error {
		var dr didRecord
		if decode(v, &dr) != nil {
			add("did", "a did entry does not decode")
			return nil
		}
		ownerOf("did", dr.BundleID, func(m *bundle.Manifest) bool {
			a, ok := m.Artifact(dr.ArtifactKey)
			return ok && a.MediaType == bundle.MediaTypeDID
		})
		return nil
	})
	_ = bucket(tx, bSchemaIDs).ForEach(func(k, v []byte) error {
		b, _, _ := bytes.Cut(k, []byte{0})
		ownerOf("schema id", string(b), func(m *bundle.Manifest) bool { _, ok := m.Artifact(string(v)); return ok })
		return nil
	})
}

// checkDIDDocuments parses every stored DID document whose bytes are
// sound as ResolveDID does (amp.ParseDIDDocument, its id the DID it is
// stored under), and names each that fails (ProblemDIDDocumentInvalid): a
// document an older build installed stays installed after a stricter
// parser (docs/SPEC-DECISIONS.md AMP-28), and every resolution of it
// fails closed. Missing or altered bytes are the index and blob checks'
// problems. Each document is read once, bounded as its blob is.
func checkDIDDocuments(tx *bolt.Tx, add problems) {
	_ = bucket(tx, bDIDs).ForEach(func(k, v []byte) error {
		var dr didRecord
		if decode(v, &dr) != nil {
			return nil // checkOwners: a did entry that does not decode
		}
		data, err := (&checkLoader{tx: tx, bundle: dr.BundleID}).Load(dr.ArtifactKey)
		if err != nil {
			return nil
		}
		doc, err := amp.ParseDIDDocument(data)
		switch {
		case err != nil:
			add(ProblemDIDDocumentInvalid, "the did document %s of bundle %s no longer parses (%s: %s): every resolution of %q fails closed (3001); import a newer version of the bundle whose document parses, or remove it",
				dr.ArtifactKey, dr.BundleID, amp.NameOf(err), amp.SafeMessage(err), k)
		case doc.ID != string(k):
			add(ProblemDIDDocumentInvalid, "the did document %s of bundle %s does not describe the did %q it is stored under: every resolution of it fails closed", dr.ArtifactKey, dr.BundleID, k)
		}
		return nil
	})
}

// signedDescriptors indexes the descriptors of each installed bundle's
// signed manifest by their descriptor key (name, version), each encoded
// once, when a descriptor entry first names the bundle: matching each
// entry against every descriptor of its bundle, encoded again each time,
// cost n² encodings (10,000 capabilities, the most a bundle holds: 99 GB
// allocated and nearly 7 minutes of every check, /readyz's included;
// docs/SPEC-DECISIONS.md CLI-62).
type signedDescriptors map[*bundle.Manifest]map[string][]byte

// of returns m's index, made on first use.
func (s signedDescriptors) of(m *bundle.Manifest) map[string][]byte {
	idx, ok := s[m]
	if !ok {
		idx = make(map[string][]byte, len(m.Capabilities))
		for _, d := range m.Capabilities {
			if enc, err := d.Encode(); err == nil {
				idx[string(key2(d.Name, d.Version.String()))] = enc
			}
		}
		s[m] = idx
	}
	return idx
}

// checkLoader loads a bundle's artifacts for Check: from the index and the
// blobs, hash-checked, whatever the bundle's revocation or expiry (those are
// refusals at use, not damage).
type checkLoader struct {
	tx     *bolt.Tx
	bundle string
}

func (l *checkLoader) Load(key string) ([]byte, error) {
	raw := bucket(l.tx, bIndex).Get(key2(l.bundle, key))
	if raw == nil {
		return nil, fail(ErrArtifactMissing, "bundle %s has no artifact %s", l.bundle, key)
	}
	var ir indexRecord
	if err := decode(raw, &ir); err != nil {
		return nil, fail(ErrBlobUnreadable, "the index entry of %s is unreadable", key)
	}
	data := getBlob(l.tx, []byte(ir.Blob))
	if data == nil {
		return nil, fail(ErrBlobUnreadable, "the bytes of %s are missing", key)
	}
	if err := checkBlob(data, ir.Blob, l.bundle, key); err != nil {
		return nil, err
	}
	return clone(data), nil
}

func (l *checkLoader) KeyForID(id string) (string, bool) {
	k := bucket(l.tx, bSchemaIDs).Get(key2(l.bundle, id))
	return string(k), k != nil
}

// checkBundleIndex compares one manifest with the store's entries for it.
func checkBundleIndex(tx *bolt.Tx, m *bundle.Manifest, add problems) {
	index := bucket(tx, bIndex)
	for _, a := range m.Artifacts {
		raw := index.Get(key2(m.BundleID, a.Key))
		if raw == nil {
			add("index", "bundle %s lacks the index entry of %s", m.BundleID, a.Key)
			continue
		}
		var ir indexRecord
		if decode(raw, &ir) != nil || ir.Blob != BlobKey(a.HashAlg, a.Hash) || ir.Size != a.Size || ir.MediaType != a.MediaType {
			add("index", "the index entry of %s in bundle %s differs from the signed manifest", a.Key, m.BundleID)
		}
	}
	descs := bucket(tx, bDescriptors)
	for _, d := range m.Capabilities {
		raw := descs.Get(key2(d.Name, d.Version.String()))
		var dr descRecord
		if raw == nil || decode(raw, &dr) != nil || dr.BundleID != m.BundleID {
			add("descriptor", "capability %s of bundle %s is not indexed", capability.ID{Name: d.Name, Version: d.Version}, m.BundleID)
		}
	}
	for typ, name := range m.Aliases {
		raw := bucket(tx, bAliases).Get([]byte(typ))
		var ar aliasRecord
		if raw == nil || decode(raw, &ar) != nil || !slices.ContainsFunc(ar.claims(), func(c aliasClaim) bool {
			return c.Name == name && slices.Contains(c.Owners, m.BundleID)
		}) {
			add("alias", "alias %q of bundle %s is not indexed", typ, m.BundleID)
		}
	}
}

// printableKey shows a NUL-joined key as "a/b".
func printableKey(k []byte) string { return string(bytes.ReplaceAll(k, []byte{0}, []byte("/"))) }
