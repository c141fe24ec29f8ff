package ocitransport_test

import (
	"bytes"
	"crypto/sha256"
	"os"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestFormatManifestExample: the annotated manifest of docs/FORMAT.md
// ("Bundles in OCI registries and layouts") is, byte for byte, what
// BundleManifest writes for the sample bundle, with the digest and size the
// text gives, and DecodeManifest reads it back.
func TestFormatManifestExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- oci-manifest-example:begin -->\n```json\n", "\n```\n<!-- oci-manifest-example:end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatal("no oci-manifest-example block in docs/FORMAT.md")
	}
	example := doc[i+len(begin) : j]
	file, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(file)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(file), Size: int64(len(file))}
	got := ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(file)), sum[:], "translate.ampb", "org.example.translate", 1)
	if !bytes.Equal(got, example) {
		t.Fatalf("docs/FORMAT.md's example differs from BundleManifest:\n%s\n%s", example, got)
	}
	d := digest.FromBytes(got)
	for _, want := range []string{d.String(), "(717 bytes", "(8517\nbytes)"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/FORMAT.md does not say %q", want)
		}
	}
	if len(got) != 717 {
		t.Errorf("the example is %d bytes", len(got))
	}
	a, err := ocitransport.DecodeManifest(got, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: int64(len(got))}, 0)
	if err != nil || a.Kind != ocitransport.KindBundle || a.BundleID != "org.example.translate" || a.Version != 1 || a.FileSize != 8517 {
		t.Fatalf("decode: %+v %v", a, err)
	}
}

// TestDecodeManifestRefusesMalformed: each rule of the manifest's shape is
// checked.
func TestDecodeManifestRefusesMalformed(t *testing.T) {
	file, _ := os.ReadFile(sampleBundle)
	sum := sha256.Sum256(file)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(file), Size: int64(len(file))}
	good := string(ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(file)), sum[:], "", "org.example.translate", 1))
	for _, tc := range []struct{ name, old, new, want string }{
		{"not JSON", "{", "[", string(ocitransport.ErrManifest)},
		{"trailing data", good, good + "{}", string(ocitransport.ErrManifest)},
		{"other artifact type", "vnd.ampbundle.bundle.v1", "vnd.other.v1", string(ocitransport.ErrNotBundle)},
		{"docker media type", "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json", string(ocitransport.ErrNotBundle)},
		{"config not empty", `"size":2`, `"size":3`, string(ocitransport.ErrManifest)},
		{"layer type", `"mediaType":"application/ampbundle"`, `"mediaType":"application/octet-stream"`, string(ocitransport.ErrManifest)},
		{"size annotation", `"vnd.ampbundle.file.size":"8517"`, `"vnd.ampbundle.file.size":"08517"`, string(ocitransport.ErrManifest)},
		{"size sum", `"vnd.ampbundle.file.size":"8517"`, `"vnd.ampbundle.file.size":"8518"`, string(ocitransport.ErrManifest)},
		{"sha annotation", `"vnd.ampbundle.file.sha256":"5`, `"vnd.ampbundle.file.sha256":"6`, string(ocitransport.ErrManifest)},
		{"version hint", `"vnd.ampbundle.version":"1"`, `"vnd.ampbundle.version":"0"`, string(ocitransport.ErrManifest)},
		{"huge layer", `"size":8517`, `"size":9000000000000`, string(ocitransport.ErrBlobTooBig)},
		{"subject on a bundle", `"annotations":{"vnd`, `"subject":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:` + hex64 + `","size":1},"annotations":{"vnd`, string(ocitransport.ErrManifest)},
	} {
		data := strings.Replace(good, tc.old, tc.new, 1)
		if data == good {
			t.Fatalf("%s: the edit changed nothing", tc.name)
		}
		_, err := ocitransport.DecodeManifest([]byte(data), ocispec.Descriptor{}, 0)
		if nameOf(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}
