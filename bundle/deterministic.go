package bundle

import (
	"bytes"

	"github.com/ampbundle/ampbundle/amp"
)

// checkDeterministic refuses, with ErrMalformed, data that is not one
// item of valid CBOR within lim or not in its deterministic encoding
// (RFC 8949 §4.2.1); what names the item in the message ("manifest").
func checkDeterministic(lim amp.Limits, data []byte, what string) error {
	canon, err := lim.Canonical(data)
	if err != nil {
		return fail(ErrMalformed, "%s is not valid cbor", what).WithCause(err)
	}
	if !bytes.Equal(canon, data) {
		return fail(ErrMalformed, "%s is not in deterministic cbor encoding", what)
	}
	return nil
}

// decodeExact is DecodeDelta and DecodePartIndex: data must be
// deterministic CBOR (arrays of at most maxArray elements) that decodes
// into a T and re-encodes, by T's Encode, to the same bytes, so that it
// holds exactly the fields of its format; what names it in messages.
func decodeExact[T any, P interface {
	*T
	Encode() ([]byte, error)
}](data []byte, maxArray int, what, format string) (*T, error) {
	lim := amp.Limits{MaxMessageSize: len(data) + 1, MaxArrayLen: maxArray, MaxMapPairs: 16}
	if err := checkDeterministic(lim, data, what); err != nil {
		return nil, err
	}
	var x T
	if err := lim.Unmarshal(data, &x); err != nil {
		return nil, fail(ErrMalformed, "%s has a field of the wrong type", what).WithCause(err)
	}
	again, err := P(&x).Encode()
	if err != nil {
		return nil, err
	}
	// A missing field re-encodes as its zero value, an unknown one not at
	// all: either way the bytes differ.
	if !bytes.Equal(again, data) {
		return nil, fail(ErrMalformed, "%s lacks a field, has one format %s does not define, or does not re-encode to the same bytes", what, format)
	}
	return &x, nil
}
