package capability

import (
	"crypto/sha256"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// Params carried by a stream (docs/SPEC-DECISIONS.md STREAM-6): params
// too large for one message travel first as an RFC 001 §6.2 stream whose
// content_type is ParamsContentType and whose content is the params as
// one CBOR item; the CAP_INVOKE then carries "params": null and the
// extension field ParamsStreamField = {"stream_id": text, "sha256":
// bstr(32)}, naming that stream (sent by the same sender) and the SHA-256
// of its content. The signature of the CAP_INVOKE thus covers the exact
// params bytes.
const (
	// ParamsContentType is the content_type of a stream of params.
	ParamsContentType = "application/vnd.amp.invoke-params+cbor"
	// ParamsStreamField is the CAP_INVOKE field that names the stream.
	ParamsStreamField = "params_stream"
	// MaxParamsStreamID bounds the stream_id of a params stream (bytes).
	MaxParamsStreamID = 256
)

// ParamsStream is the value of a CAP_INVOKE's params_stream field.
type ParamsStream struct {
	StreamID string // "stream_id": the stream that carried the params
	SHA256   []byte // "sha256": SHA-256 of the stream's content (32 bytes)
}

// cborNull is the encoding of CBOR null.
var cborNull = []byte{0xf6}

// WithParamsStream returns inv carrying the reference to the stream of
// content (its params as one CBOR item) with id streamID: params null,
// params_stream set.
func (inv Invoke) WithParamsStream(streamID string, content []byte) (Invoke, error) {
	sum := sha256.Sum256(content)
	ref := ParamsStream{StreamID: streamID, SHA256: sum[:]}
	raw, err := ref.encode()
	if err != nil {
		return Invoke{}, err
	}
	extra := make(map[string]cbor.RawMessage, len(inv.Extra)+1)
	for k, v := range inv.Extra {
		extra[k] = v
	}
	extra[ParamsStreamField] = raw
	inv.Extra, inv.Params = extra, cbor.RawMessage(cborNull)
	return inv, nil
}

func (p ParamsStream) check() error {
	switch {
	case p.StreamID == "" || len(p.StreamID) > MaxParamsStreamID || !utf8.ValidString(p.StreamID):
		return badRequest(ErrInvalidField, "%s.stream_id must be 1 to %d bytes of UTF-8", ParamsStreamField, MaxParamsStreamID)
	case len(p.SHA256) != sha256.Size:
		return badRequest(ErrInvalidField, "%s.sha256 must be %d bytes", ParamsStreamField, sha256.Size)
	}
	return nil
}

func (p ParamsStream) encode() (cbor.RawMessage, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	raw, err := amp.Marshal(map[string]any{"stream_id": p.StreamID, "sha256": p.SHA256})
	return cbor.RawMessage(raw), err
}

// ParamsStreamOf reports whether inv names a params stream and decodes the
// reference. A params_stream that is not a map of exactly stream_id
// (1..256 bytes of UTF-8) and sha256 (32 bytes), or that comes with params
// other than null, is 4001.
func ParamsStreamOf(inv Invoke) (ParamsStream, bool, error) {
	raw, ok := inv.Extra[ParamsStreamField]
	if !ok {
		return ParamsStream{}, false, nil
	}
	p, err := DecodeParamsStream(raw)
	if err != nil {
		return ParamsStream{}, true, err
	}
	if string(inv.Params) != string(cborNull) {
		return ParamsStream{}, true, badRequest(ErrInvalidField, "params must be null when %s names the stream that carries them", ParamsStreamField)
	}
	return p, true, nil
}

// DecodeParamsStream decodes the value of a params_stream field: CBOR that
// is not well-formed is 1001, any other shape than the map of stream_id and
// sha256 is 4001.
func DecodeParamsStream(raw []byte) (ParamsStream, error) {
	canon, err := canonicalBody(raw)
	if err != nil {
		return ParamsStream{}, err
	}
	o, err := decodeObject(canon, ParamsStreamField, ParamsStreamField)
	if err != nil {
		return ParamsStream{}, err
	}
	var p ParamsStream
	if p.StreamID, err = o.requiredText("stream_id"); err != nil {
		return ParamsStream{}, err
	}
	if p.SHA256, err = o.bytes("sha256"); err != nil {
		return ParamsStream{}, err
	}
	if len(o.extra()) != 0 {
		return ParamsStream{}, badRequest(ErrInvalidField, "%s has fields other than stream_id and sha256", ParamsStreamField)
	}
	return p, p.check()
}
