package ocitransport

import (
	"testing"
)

// FuzzDecodeRefs: an index.json or manifest of a layout never panics the
// bounded decoder of the layout pre-check, and never yields more
// descriptors than its bound.
func FuzzDecodeRefs(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","size":2}]}`))
	f.Add([]byte(`{"config":{"size":2},"subject":null,"layers":[{},{}],"Layers":[]}`))
	f.Add([]byte(`{"manifests":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, all := range []bool{false, true} {
			refs, err := decodeRefs(data, 3, all)
			if err == nil && len(refs) > 3 {
				t.Fatalf("%d descriptors past the bound of 3", len(refs))
			}
		}
	})
}
