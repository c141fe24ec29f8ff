package bundle

import (
	"bufio"
	"io"
)

// Inspection is what can be said of a bundle without trusting anyone: its
// manifest and who claims to have signed it. Nothing is verified: not the
// signatures, not the artifacts.
type Inspection struct {
	Manifest       *Manifest
	Signatures     []Signature
	SignedManifest []byte
	// Delta is the (unverified) delta header when the file is a delta
	// bundle (FORMAT.md §12); Manifest is then the full bundle's, which the
	// delta carries.
	Delta *Delta
}

// Inspect reads the signed manifest of the bundle in r without verifying
// any signature, and checks the manifest's own rules. It reads no artifact.
// maxManifestSize caps the signed manifest as ReaderOptions.MaxManifestSize
// does: 0 is the default, more than the default is refused.
func Inspect(r io.Reader, maxManifestSize int64) (*Inspection, error) {
	maxManifestSize, err := manifestCap(maxManifestSize, "Inspect's maxManifestSize")
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, readBufferSize)
	item, err := readItem(br, maxManifestSize)
	if err != nil {
		return nil, err
	}
	var delta *Delta
	if coseContentType(item) == MediaTypeDelta {
		hdr, err := decodeCOSE(item, MediaTypeDelta)
		if err != nil {
			return nil, err
		}
		if delta, err = DecodeDelta(hdr.payload); err != nil {
			return nil, err
		}
		if item, err = readItem(br, maxManifestSize); err != nil {
			return nil, err
		}
	}
	obj, err := decodeSigned(item)
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(obj.payload)
	if err != nil {
		return nil, err
	}
	return &Inspection{Manifest: m, Signatures: obj.signatures, SignedManifest: item, Delta: delta}, nil
}
