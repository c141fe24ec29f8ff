package amp

import (
	"crypto/sha256"
	"crypto/subtle"
)

// StreamStartBody is the STREAM_START body (RFC 001 §6.2).
type StreamStartBody struct {
	StreamID    string `cbor:"stream_id"`
	ContentType string `cbor:"content_type"`
	Filename    string `cbor:"filename"`
	TotalSize   uint64 `cbor:"total_size"`
	TotalChunks uint64 `cbor:"total_chunks"`
	ChunkSize   uint64 `cbor:"chunk_size"`
	HashAlgo    string `cbor:"hash_algo"`
}

// StreamDataBody is the STREAM_DATA body.
type StreamDataBody struct {
	StreamID string `cbor:"stream_id"`
	Index    uint64 `cbor:"index"`
	Data     []byte `cbor:"data"`
}

// StreamEndBody is the STREAM_END body.
type StreamEndBody struct {
	StreamID string `cbor:"stream_id"`
	Hash     []byte `cbor:"hash"`
}

// DecodeStreamStart decodes a STREAM_START body.
func DecodeStreamStart(body []byte) (StreamStartBody, error) {
	var b StreamStartBody
	return b, decodeBody(body, "stream_start", &b, "stream_id", "content_type", "filename", "total_size", "total_chunks", "chunk_size", "hash_algo")
}

// DecodeStreamData decodes a STREAM_DATA body.
func DecodeStreamData(body []byte) (StreamDataBody, error) {
	var b StreamDataBody
	return b, decodeBody(body, "stream_data", &b, "stream_id", "index", "data")
}

// DecodeStreamEnd decodes a STREAM_END body.
func DecodeStreamEnd(body []byte) (StreamEndBody, error) {
	var b StreamEndBody
	return b, decodeBody(body, "stream_end", &b, "stream_id", "hash")
}

func streamErr(name ErrName, format string, args ...any) *Error {
	return Named(CodeInvalidMessage, name, format, args...)
}

// Reassembler rebuilds one streamed transfer (RFC 001 §6.2). It accepts
// chunks in any order, ignores an exact duplicate (idempotent), and refuses:
// a transfer larger than its cap (at STREAM_START, before any memory is
// used), an inconsistent chunk layout, an index out of range, a chunk of the
// wrong size, a duplicate index with different bytes, a STREAM_END with
// chunks missing, and a hash mismatch. Memory grows with the chunks received
// and never exceeds the cap. Not safe for concurrent use.
type Reassembler struct {
	start    StreamStartBody
	chunks   map[uint64][]byte // by index; grows only with what arrived
	received uint64
	done     bool
}

// NewReassembler checks a STREAM_START against maxSize (bytes) and returns a
// Reassembler for it. The hash algorithm must be SHA-256 ("sha256", as in
// RFC 001 A.5, or "sha-256").
func NewReassembler(start StreamStartBody, maxSize uint64) (*Reassembler, error) {
	switch {
	case start.StreamID == "":
		return nil, streamErr("wrong_shape", "stream_id must not be empty")
	case start.HashAlgo != "sha256" && start.HashAlgo != "sha-256":
		return nil, streamErr("unsupported_hash", "stream hash_algo must be sha256")
	case start.TotalSize > maxSize:
		return nil, streamErr("limit_exceeded", "stream of %d bytes is over the %d-byte limit", start.TotalSize, maxSize)
	}
	// The layout is total_chunks-1 chunks of chunk_size, then a last chunk
	// of 1..chunk_size bytes (§6.2): total_chunks = ceil(total_size /
	// chunk_size). An empty transfer has no chunks.
	consistent := start.TotalChunks == 0
	if start.TotalSize > 0 {
		consistent = start.ChunkSize > 0 && start.TotalChunks == (start.TotalSize-1)/start.ChunkSize+1
	}
	if !consistent {
		return nil, streamErr("wrong_shape", "stream total_size, total_chunks and chunk_size are inconsistent")
	}
	return &Reassembler{start: start, chunks: make(map[uint64][]byte)}, nil
}

// chunkLen is the required length of chunk i.
func (r *Reassembler) chunkLen(i uint64) uint64 {
	if i+1 < r.start.TotalChunks {
		return r.start.ChunkSize
	}
	return r.start.TotalSize - (r.start.TotalChunks-1)*r.start.ChunkSize
}

// Add accepts one STREAM_DATA.
func (r *Reassembler) Add(d StreamDataBody) error {
	switch {
	case r.done:
		return streamErr("stream_closed", "stream is already complete")
	case d.StreamID != r.start.StreamID:
		return streamErr("wrong_stream", "chunk belongs to another stream")
	case d.Index >= r.start.TotalChunks:
		return streamErr("chunk_out_of_range", "chunk index is out of range")
	case uint64(len(d.Data)) != r.chunkLen(d.Index):
		return streamErr("wrong_chunk_size", "chunk has the wrong size")
	}
	if prev, ok := r.chunks[d.Index]; ok {
		if subtle.ConstantTimeCompare(prev, d.Data) == 1 {
			return nil // duplicate: idempotent
		}
		return streamErr("conflicting_chunk", "chunk was received twice with different bytes")
	}
	r.chunks[d.Index] = append([]byte{}, d.Data...)
	r.received++
	return nil
}

// Finish checks a STREAM_END: every chunk received and SHA-256 over the
// chunks in index order equal to its hash. It returns the reassembled bytes.
func (r *Reassembler) Finish(end StreamEndBody) ([]byte, error) {
	if end.StreamID != r.start.StreamID {
		return nil, streamErr("wrong_stream", "stream end belongs to another stream")
	}
	if r.received != r.start.TotalChunks {
		return nil, streamErr("missing_chunks", "%d of %d chunks are missing", r.start.TotalChunks-r.received, r.start.TotalChunks)
	}
	out := make([]byte, 0, r.start.TotalSize)
	for i := uint64(0); i < r.start.TotalChunks; i++ {
		out = append(out, r.chunks[i]...)
	}
	sum := sha256.Sum256(out)
	if subtle.ConstantTimeCompare(sum[:], end.Hash) != 1 {
		return nil, streamErr("hash_mismatch", "stream hash does not match the chunks")
	}
	r.done = true
	return out, nil
}
