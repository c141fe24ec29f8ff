package ocitransport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/ocitransport"
	"github.com/ampbundle/ampbundle/ocitransport/ocitest"
)

// TestRegistryRoundTripWithCrane: against the real distribution registry
// on loopback (plain HTTP), a bundle pushed in one layer and in parts pulls
// back byte for byte; crane, an independent client, reads our manifest and
// blob, and copies the artifact, which we then pull identically; a
// statement pushed onto the bundle is found again through the referrers
// tag schema (distribution 2.8 has no referrers API); a deleted tag is gone.
func TestRegistryRoundTripWithCrane(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Config{})
	crane := ocitest.Crane(t)
	_ = crane
	ctx := context.Background()
	want, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	o := ocitransport.Options{PlainHTTP: true}
	repo := "oci://" + reg.Host + "/amp/translate"
	ep := mustOpen(t, repo, o, ocitransport.ReadWrite)
	a := pushSample(t, ep, "v1")
	o.MaxLayerSize = 1000
	parts := pushSample(t, mustOpen(t, repo, o, ocitransport.ReadWrite), "parts")
	if len(parts.Manifest.Layers) != 9 {
		t.Fatalf("%d layers", len(parts.Manifest.Layers))
	}
	dir := t.TempDir()
	for _, ref := range []string{"v1", "parts", a.Descriptor.Digest.String()} {
		got, err := ep.Resolve(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out.ampb")
		if err := ep.PullFile(ctx, got, out); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(out); !bytes.Equal(data, want) {
			t.Fatalf("%s: pulled bytes differ", ref)
		}
	}
	// crane reads what we pushed.
	var m struct {
		ArtifactType string `json:"artifactType"`
		Layers       []struct {
			MediaType string        `json:"mediaType"`
			Digest    digest.Digest `json:"digest"`
		} `json:"layers"`
	}
	raw := ocitest.RunCrane(t, "manifest", reg.Host+"/amp/translate:v1")
	if !bytes.Equal(raw, a.Raw) {
		t.Fatal("crane manifest differs from the manifest pushed")
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ArtifactType != ocitransport.ArtifactTypeBundle || m.Layers[0].MediaType != ocitransport.MediaTypeBundleFile {
		t.Fatalf("crane manifest: %s", raw)
	}
	if blob := ocitest.RunCrane(t, "blob", reg.Host+"/amp/translate@"+m.Layers[0].Digest.String()); !bytes.Equal(blob, want) {
		t.Fatal("crane blob is not the bundle file")
	}
	// crane pushes (copies) what we then pull.
	ocitest.RunCrane(t, "copy", reg.Host+"/amp/translate:parts", reg.Host+"/other/copy:c1")
	other := mustOpen(t, "oci://"+reg.Host+"/other/copy", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	got, err := other.Resolve(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "copy.ampb")
	if err := other.PullFile(ctx, got, out); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(out); !bytes.Equal(data, want) {
		t.Fatal("the bundle crane copied pulls back different")
	}
	// A statement is a referrer; distribution 2.8 answers 404 to the
	// referrers API, so oras keeps the referrers tag sha256-HEX.
	if _, err := ep.PushStatement(ctx, signedStatement(t, bundle.MediaTypeRevocation), a); err != nil {
		t.Fatal(err)
	}
	st, err := ep.Statements(ctx, a)
	if err != nil || len(st) != 1 || st[0].Kind != ocitransport.KindRevocation {
		t.Fatalf("statements: %v %v", st, err)
	}
	tags, err := ep.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fallback := "sha256-" + a.Descriptor.Digest.Encoded()
	if !strings.Contains(strings.Join(tags, ","), fallback) || !ocitransport.IsReferrersTag(fallback) {
		t.Fatalf("no referrers tag %s in %v", fallback, tags)
	}
	// Delete the tag "parts" (its manifest): it is gone for us and crane.
	ocitest.RunCrane(t, "delete", reg.Host+"/amp/translate@"+parts.Descriptor.Digest.String())
	if _, err := ep.Resolve(ctx, "parts"); nameOf(err) != string(ocitransport.ErrNotFound) {
		t.Fatalf("deleted tag: %v", err)
	}
}

// TestRegistryTLSAndBasicAuth: over TLS with a CA of the test and basic
// auth, a push and a pull work with --tls-ca and the credentials file;
// without the CA the connection is refused, without the credentials the
// registry refuses, and the pull lands nothing.
func TestRegistryTLSAndBasicAuth(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Config{TLS: true, Auth: true})
	ctx := context.Background()
	want, _ := os.ReadFile(sampleBundle)
	tlsCfg := newTLS(t, reg)
	o := ocitransport.Options{TLS: tlsCfg, CredentialsFile: reg.DockerConfig}
	repo := "oci://" + reg.Host + "/amp/translate"
	ep := mustOpen(t, repo, o, ocitransport.ReadWrite)
	a := pushSample(t, ep, "v1")
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ampb")
	if err := ep.PullFile(ctx, a, out); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(out); !bytes.Equal(data, want) {
		t.Fatal("pulled bytes differ")
	}
	for name, o := range map[string]ocitransport.Options{
		"no CA":          {CredentialsFile: reg.DockerConfig},
		"no credentials": {TLS: tlsCfg},
	} {
		bad := mustOpen(t, repo, o, ocitransport.ReadOnly)
		if _, err := bad.Resolve(ctx, "v1"); nameOf(err) != string(ocitransport.ErrRegistry) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files", len(entries))
	}
}
