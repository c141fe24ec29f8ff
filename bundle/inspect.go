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
}

// Inspect reads the signed manifest of the bundle in r without verifying
// any signature, and checks the manifest's own rules. It reads no artifact.
func Inspect(r io.Reader, maxManifestSize int64) (*Inspection, error) {
	if maxManifestSize <= 0 {
		maxManifestSize = DefaultMaxManifestSize
	}
	item, obj, err := readSigned(bufio.NewReaderSize(r, readBufferSize), maxManifestSize)
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(obj.payload)
	if err != nil {
		return nil, err
	}
	return &Inspection{Manifest: m, Signatures: obj.signatures, SignedManifest: item}, nil
}
