package client

import (
	"errors"
	"io"
	"os"

	"github.com/ampbundle/ampbundle/amp"
)

// ReadDIDDocuments reads DID documents (W3C DID Core JSON, at most
// amp.MaxDIDDocumentSize bytes each) from files the operator supplies, for
// OutboxConfig.Documents: offline, nothing is fetched. A file that cannot be
// read, is too large or does not parse strictly (amp.ParseDIDDocument) is
// an error that names the file by its position in paths, never its
// content.
func ReadDIDDocuments(paths ...string) ([]*amp.DIDDocument, error) {
	out := make([]*amp.DIDDocument, 0, len(paths))
	for i, p := range paths {
		data, err := readCapped(p, amp.MaxDIDDocumentSize)
		if err != nil {
			return nil, amp.Named(amp.CodeUnauthorized, "invalid_did_document", "did document %d cannot be read, or is larger than %d bytes", i+1, amp.MaxDIDDocumentSize).WithCause(err)
		}
		d, err := amp.ParseDIDDocument(data)
		if err != nil {
			return nil, amp.Named(amp.CodeUnauthorized, "invalid_did_document", "did document %d: %s", i+1, amp.SafeMessage(err))
		}
		out = append(out, d)
	}
	return out, nil
}

var errTooLarge = errors.New("the file is larger than the limit")

// readCapped reads at most max bytes of the file at path; a longer file is
// an error, and no more than max+1 bytes are ever held.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, errTooLarge
	}
	return data, nil
}
