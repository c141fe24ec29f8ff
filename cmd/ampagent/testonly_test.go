package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/keyfile"
)

// testOnlyKeys returns the Ed25519 private keys of testdata/bundles/keys.
func testOnlyKeys(t *testing.T) []ed25519.PrivateKey {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "keys", "TEST-ONLY-*.key.pem"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no TEST-ONLY key files (%v): the check would check nothing", err)
	}
	var keys []ed25519.PrivateKey
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		k, err := keyfile.ParsePrivate(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if k.Ed25519 != nil {
			keys = append(keys, k.Ed25519)
		}
	}
	return keys
}

// TestProductionBinaryHoldsNoTestOnlyKey: the private keys published in
// testdata/bundles/keys sign anything for anyone. A binary that carries
// them (embedded for the demo, say) hands every operator a key that the
// demo's transcript invites them to trust. Both tools are built as a user
// builds them and searched for each key in every form it could take: the
// PEM file, its base64 body, the PKCS#8 DER, and the raw 32-byte seed.
func TestProductionBinaryHoldsNoTestOnlyKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both tools")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	type needle struct {
		what string
		b    []byte
	}
	var needles []needle
	files, _ := filepath.Glob(filepath.Join(samplesDir, "keys", "TEST-ONLY-*.key.pem"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, needle{filepath.Base(f) + " (PEM file)", data})
		for rest := data; ; {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			needles = append(needles,
				needle{filepath.Base(f) + " (DER)", block.Bytes},
				needle{filepath.Base(f) + " (base64 body)", []byte(base64.StdEncoding.EncodeToString(block.Bytes)[:40])})
		}
	}
	for _, k := range testOnlyKeys(t) {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, needle{"a TEST-ONLY seed", k.Seed()}, needle{"a TEST-ONLY PKCS#8", der})
	}
	if len(needles) < 5*len(files) {
		t.Fatalf("%d needles for %d key files", len(needles), len(files))
	}
	dir := t.TempDir()
	for _, cmd := range []string{"ampagent", "ampbundle"} {
		bin := filepath.Join(dir, cmd)
		build := exec.Command(goTool, "build", "-o", bin, "./cmd/"+cmd)
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", cmd, err, out)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(data, n.b) {
				t.Errorf("the %s binary contains %s", cmd, n.what)
			}
		}
	}
}
