package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestOCISyncForgedCutTagWhosePullFailsHoldsNothingBack: the attack: a
// co-tenant who holds NO signing key pushes one tag, "forged": a manifest
// annotated with the victim's bundle_id at version 99 whose only layer is
// the attacker's own blob, and floods that manifest with more than
// MaxReferrers junk referrers so that it is cut at the plan. The
// attacker's blob then fails to come back (here: the registry answers 500
// for it; in the wild: a blob that stalls to the deadline). Were a cut
// candidate whose judgement failed for a reason that "says nothing of the
// file" to hold back by its ANNOTATIONS, every genuine version of the
// victim's bundle_id at or below 99 would be refused oci_too_many, run
// after run, by a tag that carries no valid signature and no readable
// file. A cut candidate holds back only by a header read from its file
// and judged by the store; this one holds nothing back, and the genuine
// version 2 is installed (docs/SPEC-DECISIONS.md OCI-9, amended in
// review 45).
func TestOCISyncForgedCutTagWhosePullFailsHoldsNothingBack(t *testing.T) {
	dir, genuine := layoutOfTwoVersions(t)
	junk := []byte("the attacker's own blob: not a bundle, never served in full")
	jd := digest.FromBytes(junk)
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", jd.Encoded()), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	layer := genuine.Manifest.Layers[0]
	layer.Digest, layer.Size, layer.Annotations = jd, int64(len(junk)), nil
	sum := sha256.Sum256(junk)
	forgedManifest := ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(junk)), sum[:], "", translateID, 99)
	addToLayout(t, dir, "forged", forgedManifest)
	forged := resolveLayoutTag(t, dir, "forged")
	repo, _ := cutLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		forged.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at the forged tag "),
	}, map[string]bool{jd.String(): true})
	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("a key-less tag annotated %s@99, cut by pushed referrers and whose blob failed to come back, held the genuine versions out (installed: %d)\nforged: %+v\nv2: %+v\nv1: %+v",
			translateID, v, got["forged/bundle"], got["v2/bundle"], got["v1/bundle"])
	}
	if f := got["forged/bundle"]; f.Outcome != ociRefused || f.Error == string(ocitransport.ErrTooMany) {
		t.Fatalf("the forged tag: %+v; want refused with its own error", f)
	}
}

// TestOCISyncHeldBackCandidateNamesTheCutTag: a co-tenant floods the
// genuine newest version 2 with junk referrers (it is cut, and holds
// version 1 back). The operator who reads version 1's refusal must learn
// which tag holds it back and how to sync without it: the refusal names
// the cut tag and --tag-pattern.
func TestOCISyncHeldBackCandidateNamesTheCutTag(t *testing.T) {
	dir, genuine := layoutOfTwoVersions(t)
	repo, _ := cutLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		genuine.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at v2 "),
	}, nil)
	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	v1 := syncEntries(t, r)["v1/bundle"]
	if v1.Outcome != ociRefused || v1.Error != string(ocitransport.ErrTooMany) {
		t.Fatalf("version 1, held back by the cut version 2: %+v; want refused %s", v1, ocitransport.ErrTooMany)
	}
	if !strings.Contains(v1.Message, ":v2") || !strings.Contains(v1.Message, "--tag-pattern") {
		t.Fatalf("version 1's refusal does not name the cut tag v2 and --tag-pattern: %q", v1.Message)
	}
}
